"""What `estimate` takes (EstimateRequest) and returns (EstimateResult and its parts).

The result is output the estimate builds itself: its parts are plain dataclasses (configurator/record.py), so
that `estimate` starts without importing pydantic (issue 29's cold start); schemas/estimate.schema.json is still
generated from them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from configurator.memory.overheads import OverheadCoefficients
from configurator.model.spec import ModelSpec
from configurator.record import doc, to_json


@dataclass(kw_only=True)
class MemoryBreakdown:
    """Per GPU, on the tightest rank. Integer bytes."""

    total_bytes: int = doc(description="GPU memory as CUDA reports it (cudaMemGetInfo total)")
    requested_bytes: int = doc(description="ceil(total x gpu_memory_utilization): vLLM's budget")
    weights_bytes: int = doc(description="model weights on this rank ('Model loading took')")
    activation_bytes: int = doc(description="peak of the profiling forward pass and sampler")
    non_torch_bytes: int = doc(description="non-torch memory that grows after the baseline (NCCL, cuBLAS)")
    cudagraph_bytes: int = doc(description="CUDA-graph pool estimate subtracted before KV (0.20+)")
    other_bytes: int = doc(0, description="persistent runner / sampler buffers")
    lora_bytes: int = doc(0, description="LoRA adapter slots vLLM preallocates (max_loras x max_lora_rank on every "
                                           "LoRA-capable layer); already inside weights_bytes, as in 'Model loading "
                                           "took'")
    lora_activation_bytes: int = doc(0, description="LoRA kernel buffers in the profiling run; already inside "
                                                      "activation_bytes")
    draft_weights_bytes: int = doc(0, description="speculative-decoding drafter's weights (draft model, EAGLE head, "
                                                    "MTP layers); already inside weights_bytes")
    cpu_offload_bytes: int = doc(0, description="weights kept in host memory by --cpu-offload-gb; already taken "
                                                  "out of weights_bytes")
    encoder_cache_bytes: int = doc(0, description="multimodal encoder outputs the profiling run keeps in the "
                                                    "encoder cache during the decoder's dummy pass; already inside "
                                                    "activation_bytes")
    moe_parallel_delta_bytes: int = doc(0, description="what data / expert parallelism changes in the routed "
                                                         "experts' bytes per GPU against plain TP (negative: fewer); "
                                                         "already inside weights_bytes")
    kv_cache_bytes: int = doc(description="'Available KV cache memory' vLLM logs and sizes the pool from")


@dataclass(kw_only=True)
class GroupInfo:
    kind: str
    num_layers: int
    num_padding: int
    block_size: int
    page_bytes: int
    blocks_per_request: int
    window_tokens: int = doc(0, description="sliding window / attention chunk (tokens); 0 when the group keeps "
                                              "every token or a fixed state")


@dataclass(kw_only=True)
class KVCacheInfo:
    dtype: str = doc(description="element type actually stored")
    bytes_per_token: int = doc(description="what one more token of context costs on one GPU, "
                                             "across the layers that keep it")
    window_bytes_per_sequence: int = doc(0, description="sliding-window / chunked layers' KV per "
                                                          "sequence (bounded by the window)")
    state_bytes_per_sequence: int = doc(description="fixed recurrent state per sequence (Mamba / linear attention)")
    block_size: int
    bytes_per_block: int
    num_blocks: int = doc(description="blocks in the pool (min over workers, null block included)")
    blocks_per_request: int
    bytes_per_request: int = doc(0, description="what vLLM reserves for one request of max_model_len: "
                                                  "blocks_per_request x bytes_per_block (windows include the "
                                                  "in-flight tokens)")
    in_flight_tokens: int = doc(0, description="tokens a request may have scheduled beyond its window "
                                                 "(max_num_batched_tokens x concurrent batches)")
    tokens: int = doc(description="'GPU KV cache size: N tokens'")
    max_concurrency: float = doc(description="'Maximum concurrency for L tokens per request: Cx'")
    groups: list[GroupInfo]


@dataclass(kw_only=True)
class ModelInfo:
    name: str
    model_type: str
    dtype: str
    num_hidden_layers: int
    layers_with_kv: dict[str, int]
    quantization: str | None
    weights_source: str
    notes: list[str]


@dataclass(kw_only=True)
class GPUInfo:
    name: str
    display_name: str
    total_bytes: int
    total_source: str
    count: int


@dataclass(kw_only=True)
class EstimateResult:
    """Everything `estimate` predicts; schemas/estimate.schema.json is generated from this."""

    fits: bool | None = doc(description="vLLM would start at the central prediction (no refusal predicted); "
                                          "null when nothing is predicted (verdict 'not-predicted')")
    verdict: Literal["fits", "at-risk", "refused", "not-predicted"] = doc(
        "fits", description="'refused': vLLM refuses even at the optimistic end of the error band (or before "
                            "memory: an architecture the release removed, a block-quantized shard width); "
                            "'at-risk': it refuses somewhere inside the band; 'fits': it starts across the band; "
                            "'not-predicted': no GPU named or vLLM would run its V0 engine, so no start-up "
                            "verdict (exit code 3)")
    kv_cache_bytes_low: int | None = doc(None, description="pessimistic end of the available-KV band (bytes)")
    kv_cache_bytes_high: int | None = doc(None, description="optimistic end of the available-KV band (bytes)")
    band_basis: str | None = doc(None, description="what the band rests on: 'validated by N logs of this kind "
                                                     "...' or 'no log of this kind: band widened to +-X GiB "
                                                     "because ...' (profiles/error_bands.yaml)")
    vllm_version: str
    model: ModelInfo
    gpu: GPUInfo
    flags: dict[str, Any] = doc(description="every resolved engine argument, defaults filled in")
    memory: MemoryBreakdown
    kv_cache: KVCacheInfo
    not_modelled: str | None = doc(None, description="set when the KV pool cannot be predicted (no GPU named, "
                                                        "or vLLM would run its V0 engine): why; only weights and "
                                                        "per-token / per-sequence KV are given")
    vllm_log: list[str] = doc(default_factory=list, description="the memory lines vLLM would log at start-up, "
                                                                   "in this release's format")
    errors: list[str] = doc(description="vLLM's own refusal text, when it would refuse")
    warnings: list[str]
    derivation: list[str] = doc(description="the arithmetic, step by step, with the model's numbers")

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data, its fields in schema order."""
        return asdict(self)

    def to_json(self, indent: int | None = 2) -> str:
        """`estimate --format json`: the result as one JSON document (UTF-8, not escaped)."""
        return to_json(self, indent)


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
