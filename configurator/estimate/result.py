"""What `estimate` takes (EstimateRequest) and returns (EstimateResult and its parts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from configurator.memory.overheads import OverheadCoefficients
from configurator.model.spec import ModelSpec


class MemoryBreakdown(BaseModel):
    """Per GPU, on the tightest rank. Integer bytes."""

    total_bytes: int = Field(description="GPU memory as CUDA reports it (cudaMemGetInfo total)")
    requested_bytes: int = Field(description="ceil(total x gpu_memory_utilization): vLLM's budget")
    weights_bytes: int = Field(description="model weights on this rank ('Model loading took')")
    activation_bytes: int = Field(description="peak of the profiling forward pass and sampler")
    non_torch_bytes: int = Field(description="non-torch memory that grows after the baseline (NCCL, cuBLAS)")
    cudagraph_bytes: int = Field(description="CUDA-graph pool estimate subtracted before KV (0.20+)")
    other_bytes: int = Field(0, description="persistent runner / sampler buffers")
    lora_bytes: int = Field(0, description="LoRA adapter slots vLLM preallocates (max_loras x max_lora_rank on every "
                                           "LoRA-capable layer); already inside weights_bytes, as in 'Model loading "
                                           "took'")
    lora_activation_bytes: int = Field(0, description="LoRA kernel buffers in the profiling run; already inside "
                                                      "activation_bytes")
    draft_weights_bytes: int = Field(0, description="speculative-decoding drafter's weights (draft model, EAGLE head, "
                                                    "MTP layers); already inside weights_bytes")
    cpu_offload_bytes: int = Field(0, description="weights kept in host memory by --cpu-offload-gb; already taken "
                                                  "out of weights_bytes")
    encoder_cache_bytes: int = Field(0, description="multimodal encoder outputs the profiling run keeps in the "
                                                    "encoder cache during the decoder's dummy pass; already inside "
                                                    "activation_bytes")
    moe_parallel_delta_bytes: int = Field(0, description="what data / expert parallelism changes in the routed "
                                                         "experts' bytes per GPU against plain TP (negative: fewer); "
                                                         "already inside weights_bytes")
    kv_cache_bytes: int = Field(description="'Available KV cache memory' vLLM logs and sizes the pool from")


class GroupInfo(BaseModel):
    kind: str
    num_layers: int
    num_padding: int
    block_size: int
    page_bytes: int
    blocks_per_request: int
    window_tokens: int = Field(0, description="sliding window / attention chunk (tokens); 0 when the group keeps "
                                              "every token or a fixed state")


class KVCacheInfo(BaseModel):
    dtype: str = Field(description="element type actually stored")
    bytes_per_token: int = Field(description="what one more token of context costs on one GPU, "
                                             "across the layers that keep it")
    window_bytes_per_sequence: int = Field(0, description="sliding-window / chunked layers' KV per "
                                                          "sequence (bounded by the window)")
    state_bytes_per_sequence: int = Field(description="fixed recurrent state per sequence (Mamba / linear attention)")
    block_size: int
    bytes_per_block: int
    num_blocks: int = Field(description="blocks in the pool (min over workers, null block included)")
    blocks_per_request: int
    bytes_per_request: int = Field(0, description="what vLLM reserves for one request of max_model_len: "
                                                  "blocks_per_request x bytes_per_block (windows include the "
                                                  "in-flight tokens)")
    in_flight_tokens: int = Field(0, description="tokens a request may have scheduled beyond its window "
                                                 "(max_num_batched_tokens x concurrent batches)")
    tokens: int = Field(description="'GPU KV cache size: N tokens'")
    max_concurrency: float = Field(description="'Maximum concurrency for L tokens per request: Cx'")
    groups: list[GroupInfo]


class ModelInfo(BaseModel):
    name: str
    model_type: str
    dtype: str
    num_hidden_layers: int
    layers_with_kv: dict[str, int]
    quantization: str | None
    weights_source: str
    notes: list[str]


class GPUInfo(BaseModel):
    name: str
    display_name: str
    total_bytes: int
    total_source: str
    count: int


class EstimateResult(BaseModel):
    """Everything `estimate` predicts; schemas/estimate.schema.json is generated from this."""

    fits: bool | None = Field(description="vLLM would start at the central prediction (no refusal predicted); "
                                          "null when nothing is predicted (verdict 'not-predicted')")
    verdict: Literal["fits", "at-risk", "refused", "not-predicted"] = Field(
        "fits", description="'refused': vLLM refuses even at the optimistic end of the error band (or before "
                            "memory: an architecture the release removed, a block-quantized shard width); "
                            "'at-risk': it refuses somewhere inside the band; 'fits': it starts across the band; "
                            "'not-predicted': no GPU named or vLLM would run its V0 engine, so no start-up "
                            "verdict (exit code 3)")
    kv_cache_bytes_low: int | None = Field(None, description="pessimistic end of the available-KV band (bytes)")
    kv_cache_bytes_high: int | None = Field(None, description="optimistic end of the available-KV band (bytes)")
    band_basis: str | None = Field(None, description="what the band rests on: 'validated by N logs of this kind "
                                                     "...' or 'no log of this kind: band widened to +-X GiB "
                                                     "because ...' (profiles/error_bands.yaml)")
    vllm_version: str
    model: ModelInfo
    gpu: GPUInfo
    flags: dict[str, Any] = Field(description="every resolved engine argument, defaults filled in")
    memory: MemoryBreakdown
    kv_cache: KVCacheInfo
    not_modelled: str | None = Field(None, description="set when the KV pool cannot be predicted (no GPU named, "
                                                        "or vLLM would run its V0 engine): why; only weights and "
                                                        "per-token / per-sequence KV are given")
    vllm_log: list[str] = Field(default_factory=list, description="the memory lines vLLM would log at start-up, "
                                                                   "in this release's format")
    errors: list[str] = Field(description="vLLM's own refusal text, when it would refuse")
    warnings: list[str]
    derivation: list[str] = Field(description="the arithmetic, step by step, with the model's numbers")


class MeasuredLike(Protocol):
    """The measured figures a calibration carries (configurator.calibration.MeasuredMemory)."""

    total_bytes: int | None
    weights_bytes: int | None
    non_torch_bytes: int | None
    cudagraph_bytes: int | None
    overhead_bytes: int


class CalibrationLike(Protocol):
    """What `estimate` reads from a calibration (configurator.calibration.Calibration). A protocol,
    so the estimate does not import the calibration module that itself calls `estimate`."""

    model: str
    gpu: str
    vllm_version: str
    flags: dict
    measured: MeasuredLike
    predicted_overhead_bytes: int
    source: str


@dataclass
class EstimateRequest:
    """Inputs: a model, a GPU, a vLLM release and vLLM flags by their EngineArgs names."""

    model: str | ModelSpec
    gpu: str | None = None
    gpu_memory: str | None = None
    vllm_version: str | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    gpu_memory_used: int = 0
    entry: str = "server"
    coefficients: OverheadCoefficients | None = None  # None: the release's fitted coefficients
    calibration: CalibrationLike | None = None  # measured weights and overheads from a real log
    # FlashInfer importable where vLLM runs (True: the official vllm/vllm-openai image; False: a plain pip install;
    # None: unknown, so at 0.9.0-0.11.0 the band's high end reaches FlashInfer's smaller sampler peak)
    flashinfer_installed: bool | None = None
