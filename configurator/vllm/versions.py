"""vLLM releases and the start-up behaviour that changed between them, one row per change.

Each row applies from its `since` release until the next row. The facts were read from the
released wheels' Python source (vllm/config/cache.py, vllm/envs.py, vllm/v1/core/kv_cache_utils.py,
vllm/v1/worker/gpu_worker.py, vllm/engine/arg_utils.py); docs/vllm-versions.md lists them with
their source lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import Literal

from configurator.errors import InputError

# Every V1 release this tool models; the newest is what `latest` and unknown tags mean.
SUPPORTED = (
    "0.8.0", "0.8.1", "0.8.2", "0.8.3", "0.8.4", "0.8.5", "0.9.0", "0.9.1", "0.9.2",
    "0.10.0", "0.10.1", "0.10.1.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0",
    "0.14.0", "0.14.1", "0.15.0", "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0", "0.18.1",
    "0.19.0", "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0",
    "0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0",
    "0.31.0", "0.32.0", "0.33.0",
)
NEWEST = SUPPORTED[-1]
OLDEST = SUPPORTED[0]


@lru_cache(maxsize=512)
def _key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


@dataclass(frozen=True)
class Behaviour:
    """What one vLLM release does at start-up, as far as memory is concerned."""

    version: str = NEWEST
    # 'v1': modelled; 'v0': a release before 0.8 (V0 engine by default), only weights and per-token KV
    engine: Literal["v0", "v1"] = "v1"
    # 0.8.0-0.10.1.1 fall back to the V0 engine on GPUs below compute capability 8.0
    # (EngineArgs._is_v1_supported_oracle "Compute Capability < 8.0"; gone in 0.10.2)
    v1_needs_sm80: bool = False
    # an explicit --kv-cache-dtype (fp8) falls back to V0 unless V1 runs it (EngineArgs._is_v1_supported_oracle):
    #   'never'            any explicit KV dtype falls back (engine/arg_utils.py 0.8.0, 0.8.1: "No Fp8 KV cache so far")
    #   'fa3_hopper'       only FlashAttention 3 on compute capability 9.x (engine/arg_utils.py 0.8.2, 0.8.3, 0.8.5,
    #                      0.9.0, 0.9.2)
    #   'hopper_or_cc100'  also any KV dtype on compute capability 10.0 exactly (platforms/cuda.py
    #                      is_kv_cache_dtype_supported: `if cls.is_device_capability(100): supported = True`,
    #                      0.10.0, 0.10.1.1): a B200 stays on V1, a B300 (10.3) or an RTX 50xx (12.0) does not
    #   'mla_hopper_cc100' the same, and MLA models always (FlashMLA / CUTLASS MLA run fp8; 0.10.2)
    #   'none'             no fallback: V0 is gone (0.11.0 arg_utils.py has no _is_v1_supported_oracle check)
    v1_fp8_kv: Literal["never", "fa3_hopper", "hopper_or_cc100", "mla_hopper_cc100", "none"] = "none"
    # CacheConfig.gpu_memory_utilization default (vllm/config/cache.py)
    default_gpu_memory_utilization: float = 0.92
    # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default (vllm/envs.py): graphs counted before KV
    cudagraph_estimate: bool = True
    # How "Available KV cache memory" is formed (gpu_worker.determine_available_memory):
    #   'weights_peak'  requested - (weights + torch peak increase + non-torch increase)
    #   'consumed'      requested - (free-memory drop since baseline + transient peak)
    #   'peak_all'      total x util - (torch peak + every non-torch byte on the device, CUDA context and
    #                   other processes included) (0.8.0-0.9.0, gpu_worker.determine_available_memory)
    accounting: Literal["peak_all", "weights_peak", "consumed"] = "consumed"
    # "GPU KV cache size":
    #   'uniform_blocks' num_blocks x block_size (uniform models; else as 'blocks')  0.10
    #   'blocks'         num_blocks // num_groups x min block size                   0.11-0.20
    #   'concurrency'    int(num_blocks / blocks_per_request x max_model_len)        0.21+
    tokens: Literal["uniform_blocks", "blocks", "concurrency"] = "concurrency"
    # start-up fit check (needed vs available):
    #   'layers'       sum of every layer's max usage vs the worker's memory       0.10-0.13
    #   'first_group'  group_size x page x blocks of the first group only (bug)    0.15-0.17
    #   'groups'       bytes_per_block x blocks_per_request vs the memory          0.19-0.28
    #   'blocks'       the same vs memory minus the null block                     0.29+
    fit_check: Literal["layers", "first_group", "groups", "blocks"] = "blocks"
    # sliding-window / chunked in-flight tokens: 'mnbt', or 'batches' (max_concurrent_batches x mnbt)
    in_flight: Literal["mnbt", "batches"] = "batches"
    # model runner V2 is the default (max_concurrent_batches = pp + 1 with async scheduling); for
    #   'none' (<= 0.22), 'llama_qwen3' (0.23: Llama / Mistral / Qwen3, dense, unquantized), 'listed' (0.24:
    #   the architecture list only), 'dense_no_hybrid' (0.25-0.26: listed or dense, never a hybrid),
    #   'dense_listed_hybrid' (0.27-0.28: listed or dense; a hybrid only when listed), 'all' (0.29+)
    v2_runner: bool = True
    v2_scope: Literal["none", "llama_qwen3", "listed", "dense_no_hybrid", "dense_listed_hybrid", "all"] = "all"
    # V2's CUDA-graph estimate exists (it returned 0 before 0.29)
    v2_cudagraph_estimate: bool = True
    # prefix caching (and so Mamba 'align' mode) on by default for hybrid models
    hybrid_prefix_caching: bool = True
    # hybrids may use prefix caching at all (0.10 / 0.11 force it off: "not yet supported")
    hybrid_prefix_caching_supported: bool = True
    # Nemotron-H's default SSM-state dtype: the model dtype (0.11), float16 (0.13-0.19), float32 (0.20+)
    nemotron_h_ssm_dtype: Literal["model", "float16", "float32"] = "float32"
    # a user-enabled prefix cache on Mamba1/Mamba2 hybrids uses mamba_cache_mode 'all' (0.15-0.27)
    mamba_all_mode: bool = False
    # Mamba 'align' mode holds one more checkpoint block (Mamba2, and GDN on FlashInfer) (0.33)
    mamba_checkpoint_block: bool = True
    # hybrid attention block alignment (model_executor/models/config.py HybridAttentionMambaModelConfig):
    #   'fixed16' 16 for every model (0.10.1.1, 0.11.0: `attn_block_size = 16 * cdiv(...)`)
    #   'backend' 16; MLA models 64 (128 when the user picks CUTLASS_MLA: VLLM_ATTENTION_BACKEND in 0.12,
    #             --attention-backend from 0.13; not read by this tool) (0.12.0-0.19.1: kernel_block_alignment_size)
    #   'kernel'  max(kernel block, block size) (platforms/interface.py::_align_hybrid_block_size, 0.20+)
    hybrid_align: Literal["fixed16", "backend", "kernel"] = "kernel"
    # 'backend' alignment of head-size-256 attention on data-centre Blackwell with the default / FlashInfer
    # backend: 32 (flashinfer issue 1993): on compute capability 10.0 exactly (0.12.0: is_device_capability(100)),
    # the sm10x family (0.13.0-0.17.0: is_device_capability_family(100)); gone in 0.18.0
    hybrid_hd256_blackwell_32: Literal["none", "cc100", "sm10x"] = "none"
    # Llama 4 chunked-local attention keeps the hybrid KV manager (env default flipped in 0.15)
    chunked_local_hma: bool = True
    # MLA default block size: 'flashmla' (64 on Hopper, 128 Blackwell: <= 0.13), 'fi_mla' (0.15-0.17:
    # Blackwell 64), 'fa_mla' (0.19+: Hopper 16 (64 with fp8 KV), Blackwell 32)
    #   'flashmla_hopper' (<= 0.10.0: FlashMLA 64 on Hopper, Triton 16 elsewhere, Blackwell included);
    #   'cutlass_cc100' (0.10.1-0.12: CUTLASS MLA 128 on compute capability 10.0 exactly, so not B300);
    #   'flashmla' (0.13: CUTLASS 128 on the sm10x family); sm12x GPUs always get Triton MLA (16)
    mla_block: Literal["flashmla_hopper", "cutlass_cc100", "flashmla", "fi_mla", "fa_mla"] = "fa_mla"
    # default batch limits: 'two_tiers' (>= 70 GiB non-A100 / else) or 'three_tiers' (adds >= 160 GiB)
    #   'h100_name' (0.8.0-0.8.4: 8,192 tokens on H100 / H200 by name, else 2,048), 'mem70' (0.8.5: >= 70 GiB,
    #   A100 included)
    batch_tiers: Literal["h100_name", "mem70", "two_tiers", "three_tiers"] = "three_tiers"
    # max_num_seqs default on the small tier: 1,024 for every GPU in 0.8.0-0.8.3, 256 from 0.8.4
    small_tier_seqs: int = 256
    # GB10 (DGX Spark) on the small tier: explicitly from 0.33; before, because get_batch_defaults reads the
    # device memory through NVML (platforms/cuda.py get_device_total_memory), which GB10 does not implement,
    # and its `except Exception: device_memory = 0` (engine/arg_utils.py, 0.10.1.1-0.25.1) picks the small tier
    gb10_small_tier: bool = True
    # a defaulted max_num_batched_tokens is raised to the largest single multimodal item of a prefix-LM
    # model (EngineArgs._get_min_mm_batched_tokens; read in 0.24.0, 0.25.1, 0.33.0; absent in 0.20.0)
    mm_prefix_lm_batch_floor: bool = True
    # defaulted max_num_batched_tokens clamped to max_num_seqs x max_model_len (0.11.1+)
    mnbt_clamp: bool = True
    # defaulted max_num_seqs clamped to max_num_batched_tokens (0.10.1+)
    seqs_clamp: bool = True
    # V1 forces chunked prefill on for generative models (EngineArgs._set_default_args, <= 0.11.0)
    chunked_forced: bool = False
    # requested memory: 'float' (total x util, <= 0.13) or 'ceil' (0.15+)
    requested_rounding: Literal["float", "ceil"] = "ceil"
    # `--kv-cache-dtype auto` follows a checkpoint's declared quantized KV scheme:
    #   ModelOpt (quant_method modelopt*, kv_cache_quant_algo / kv_cache_scheme) from 0.14.0: EngineArgs.
    #   create_engine_config resolves it (utils/torch_utils.py::resolve_kv_cache_dtype_string; absent in 0.13.0)
    modelopt_kv_auto: bool = True
    #   any other declared kv_cache_scheme (compressed-tensors / llm-compressor) from 0.15.0: the attention
    #   layer sets cache_config.cache_dtype = "fp8" (attention/layer.py 0.15.0-0.17.0,
    #   model_executor/layers/attention/attention.py 0.18.0+; absent in 0.14.0)
    checkpoint_kv_auto: bool = True
    # YaRN: 'scale' (original_max_position_embeddings x factor) or 'as_is' (max_position_embeddings)
    yarn_max_len: Literal["scale", "as_is"] = "as_is"
    # wording of the refusal messages (configurator.vllm.messages)
    messages: Literal["v0_11", "v0_13", "v0_15", "v0_23"] = "v0_23"
    # --max-model-len auto / -1 fits the length to memory
    auto_max_model_len: bool = True
    # start-up log lines (configurator.vllm.messages.startup_log): 'v0_10' "%.4f GiB and" (<= 0.11),
    # 'v0_12' "%.4f GiB memory and", 'v0_14' format_gib, 'v0_28' one combined capacity line (0.28+)
    #   'v0_8gb' "%.4f GB and" with no available-memory line (0.8.0-0.8.2), 'v0_8' the same in GiB (0.8.3-0.9.0)
    log_style: Literal["v0_8gb", "v0_8", "v0_10", "v0_12", "v0_14", "v0_28"] = "v0_28"
    # LongRoPE: the default max_model_len is the top-level original_max_position_embeddings (0.11.1+)
    longrope_default_original: bool = True
    # hybrid groups pad to the largest layer-type bucket when it is under this x the smallest
    # (kv_cache_utils._get_kv_cache_groups_uniform_page_size: none until 0.11, 1.25 0.12-0.17, 1.5 0.19+)
    group_pad_ratio: float = 1.5
    # default CUDA-graph capture sizes (VllmConfig._set_cudagraph_sizes): max_num_batched_tokens appended
    # when it fits (0.21+); a 1,024 ceiling on data-centre Blackwell (0.28+); max_num_seqs appended without
    # speculative decoding (0.31.0 config/vllm.py: `elif max_num_seqs <= max_cudagraph_capture_size:
    # uniform_decode_sizes = [max_num_seqs]`; 0.29.0 / 0.30.0 add decode sizes only when decode_query_len > 1)
    capture_mnbt: bool = True
    capture_blackwell_1024: bool = True
    capture_decode_size: bool = True
    # Mamba state stored in the KV-cache dtype (gpu_model_runner.get_kv_cache_spec, <= 0.10.0)
    mamba_state_in_kv_dtype: bool = False
    # hybrid MLA + Mamba models align the attention block to a multiple of 128 (TRTLLM / FlashInfer MLA
    # decode) (platforms/interface.py::_align_hybrid_block_size, 0.27+)
    hybrid_mla_align_128: bool = True
    # Qwen3.5 architectures take their SSM-state dtype from the config's mamba_ssm_dtype (0.17+)
    qwen35_ssm_key: bool = True
    # --kv-cache-memory-bytes exists (EngineArgs, 0.10.2+)
    kv_cache_memory_bytes_flag: bool = True
    # --dtype auto on a GPU without bfloat16 falls back to float16 (config/model.py, 0.10+)
    auto_dtype_fallback: bool = True
    # the fused-MoE workspaces live in the persistent WorkspaceManager (v1/worker/workspace.py;
    # fused_moe/modular_kernel.py::_allocate_buffers calls current_workspace_manager().get_simultaneous):
    # they stay allocated through the profiling run's sampler step (0.19.0+; not in 0.11.0)
    moe_workspace_persistent: bool = True
    # V1's top-k / top-p sampler is FlashInfer's by default on CUDA *when FlashInfer is importable*
    # (VLLM_USE_FLASHINFER_SAMPLER unset means on: v1/sample/ops/topk_topp_sampler.py 0.9.0, 0.9.2, 0.10.1.1,
    # 0.11.0; "FlashInfer is not available. Falling back to the PyTorch-native implementation" otherwise);
    # 0.8.0-0.8.5 turn it off for FlashInfer >= 0.2.3 (0.8.0, 0.8.3, 0.8.5); from 0.11.1 the PyTorch-native
    # sort-based path is the default and FlashInfer is opt-in (0.11.1, 0.11.2, 0.12.0, 0.13.0, 0.15.0, 0.19.0,
    # 0.25.1, 0.33.0: "Users must opt in explicitly via VLLM_USE_FLASHINFER_SAMPLER=1")
    flashinfer_sampler: bool = False
    # the wheel requires flashinfer-python (Requires-Dist: an extra of the 0.9.0 / 0.11.0 wheels, required by
    # 0.11.1's and 0.11.2's): where it does not, a plain `pip install vllm` has no FlashInfer and runs the native
    # sampler, while the official vllm/vllm-openai image installs it (see flashinfer_sampler_runs)
    flashinfer_in_wheel: bool = True
    # model runner V2 falls back to V1 for features it does not support (VllmConfig.use_v2_model_runner /
    # _get_v2_model_runner_unsupported_features): 'none' before 0.29, then that release's list (v2_fallback)
    v2_fallback_rules: Literal["none", "v0_29", "v0_30", "v0_31", "v0_32", "v0_33"] = "v0_33"


# One row per change; each row lists only what changed at that release (first release seen with it
# among the wheels read; see docs/vllm-versions.md).
_CHANGES: tuple[tuple[str, dict], ...] = (
    ("0.8.0", dict(v1_needs_sm80=True, v1_fp8_kv="never", default_gpu_memory_utilization=0.9,
                   cudagraph_estimate=False,
                   mamba_checkpoint_block=False, tokens="uniform_blocks", fit_check="layers",
                    in_flight="mnbt", v2_runner=False, v2_scope="none", v2_cudagraph_estimate=False,
                    hybrid_prefix_caching=False, hybrid_prefix_caching_supported=False,
                    nemotron_h_ssm_dtype="model",
                    hybrid_align="fixed16", chunked_local_hma=False,
                    mla_block="flashmla_hopper", mm_prefix_lm_batch_floor=False,
                    mnbt_clamp=False, seqs_clamp=False, chunked_forced=True, requested_rounding="float",
                    checkpoint_kv_auto=False, modelopt_kv_auto=False, flashinfer_in_wheel=False,
                    v2_fallback_rules="none",
                    yarn_max_len="scale", messages="v0_11", auto_max_model_len=False,
                    log_style="v0_8gb", accounting="peak_all", batch_tiers="h100_name", small_tier_seqs=1024,
                    auto_dtype_fallback=False, longrope_default_original=False,
                    kv_cache_memory_bytes_flag=False, group_pad_ratio=0.0, capture_mnbt=False,
                    capture_blackwell_1024=False, capture_decode_size=False, qwen35_ssm_key=False,
                    hybrid_mla_align_128=False, mamba_state_in_kv_dtype=True,
                    moe_workspace_persistent=False, flashinfer_sampler=False)),
    ("0.8.2", dict(v1_fp8_kv="fa3_hopper")),
    ("0.8.3", dict(log_style="v0_8")),
    ("0.8.4", dict(small_tier_seqs=256)),
    ("0.8.5", dict(batch_tiers="mem70")),
    ("0.9.0", dict(batch_tiers="two_tiers", auto_dtype_fallback=True, flashinfer_sampler=True)),
    ("0.9.1", dict(accounting="weights_peak", log_style="v0_10")),
    ("0.10.0", dict(v1_fp8_kv="hopper_or_cc100")),
    ("0.10.1", dict(mla_block="cutlass_cc100", seqs_clamp=True, mamba_state_in_kv_dtype=False)),
    ("0.10.2", dict(v1_needs_sm80=False, v1_fp8_kv="mla_hopper_cc100", kv_cache_memory_bytes_flag=True)),
    ("0.11.0", dict(tokens="blocks", v1_fp8_kv="none")),
    ("0.11.1", dict(longrope_default_original=True, mnbt_clamp=True, chunked_forced=False,
                    flashinfer_in_wheel=True, flashinfer_sampler=False)),
    ("0.12.0", dict(log_style="v0_12", group_pad_ratio=1.25, hybrid_align="backend",
                    hybrid_hd256_blackwell_32="cc100")),
    ("0.13.0", dict(mla_block="flashmla", messages="v0_13", hybrid_prefix_caching_supported=True,
                    nemotron_h_ssm_dtype="float16", hybrid_hd256_blackwell_32="sm10x")),
    ("0.14.0", dict(log_style="v0_14", modelopt_kv_auto=True)),
    ("0.15.0", dict(fit_check="first_group", messages="v0_15", auto_max_model_len=True,
                    requested_rounding="ceil", checkpoint_kv_auto=True,
                    mamba_all_mode=True, chunked_local_hma=True, mla_block="fi_mla")),
    ("0.17.0", dict(qwen35_ssm_key=True)),
    ("0.18.0", dict(hybrid_hd256_blackwell_32="none")),
    ("0.19.0", dict(fit_check="groups", mla_block="fa_mla", group_pad_ratio=1.5,
                    moe_workspace_persistent=True)),
    ("0.20.0", dict(default_gpu_memory_utilization=0.92, cudagraph_estimate=True, hybrid_align="kernel",
                    nemotron_h_ssm_dtype="float32")),
    ("0.21.0", dict(tokens="concurrency", capture_mnbt=True)),
    ("0.23.0", dict(messages="v0_23", v2_scope="llama_qwen3")),
    ("0.24.0", dict(v2_scope="listed", mm_prefix_lm_batch_floor=True)),
    ("0.25.0", dict(v2_scope="dense_no_hybrid")),
    ("0.26.0", dict(in_flight="batches")),
    ("0.27.0", dict(accounting="consumed", v2_scope="dense_listed_hybrid", hybrid_mla_align_128=True)),
    ("0.28.0", dict(capture_blackwell_1024=True, log_style="v0_28",
                    hybrid_prefix_caching=True, mamba_all_mode=False, batch_tiers="three_tiers")),
    ("0.29.0", dict(fit_check="blocks", v2_fallback_rules="v0_29",
                    v2_runner=True, v2_scope="all", v2_cudagraph_estimate=True)),
    ("0.30.0", dict(yarn_max_len="as_is", v2_fallback_rules="v0_30")),
    ("0.31.0", dict(capture_decode_size=True, v2_fallback_rules="v0_31")),
    ("0.32.0", dict(v2_fallback_rules="v0_32")),
    ("0.33.0", dict(mamba_checkpoint_block=True, gb10_small_tier=True, v2_fallback_rules="v0_33")),
)


# Quantization methods whose config class names checkpoint config files (get_config_filenames is not
# empty) and that no online shorthand covers: on a checkpoint without that config vLLM's loader
# raises "Cannot find the config file for <method>" (model_executor/model_loader/weight_utils.py
# get_quant_config, 0.10-0.33; the classes in model_executor/layers/quantization/: awq, awq_marlin,
# gptq*, bitblas, hqq, moe_wna16, auto-round / inc, modelopt*, petit). Online methods (fp8,
# fbgemm_fp8, experts_int8, bitsandbytes, mxfp4, ...) quantize a full-precision checkpoint while loading.
CHECKPOINT_CONFIG_METHODS = frozenset({
    "awq", "awq_marlin", "gptq", "gptq_marlin", "gptq_marlin_24", "gptq_bitblas", "bitblas", "hqq",
    "moe_wna16", "auto-round", "inc", "modelopt", "modelopt_fp4", "modelopt_mxfp8", "modelopt_mixed",
    "petit_nvfp4",
})


# VllmConfig._is_default_v2_model_runner_model's architecture lists (vllm/config/vllm.py)
_V2_ARCHS = {
    "llama_qwen3": frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"}),  # 0.23
    "listed": frozenset({"Qwen3ForCausalLM", "DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM",  # 0.24
                         "GraniteMoeForCausalLM", "LlamaForCausalLM", "MistralForCausalLM"}),
    "dense_no_hybrid": frozenset({"DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM",
                                  "InklingForCausalLM", "InklingForConditionalGeneration",
                                  "LongcatFlashNgramForCausalLM"}),  # 0.25-0.26
    "dense_listed_hybrid": frozenset({"DeepseekV2ForCausalLM", "DeepseekV4ForCausalLM", "GraniteMoeForCausalLM",
                                      "InklingForCausalLM", "InklingForConditionalGeneration",
                                      "KimiK3ForConditionalGeneration", "LongcatFlashNgramForCausalLM",
                                      "Qwen2MoeForCausalLM"}),  # 0.27-0.28
}


def uses_v2_runner(b: Behaviour, architectures: tuple[str, ...], is_moe: bool, quantized: bool,
                   hybrid: bool) -> bool:
    """Whether this release runs this model on model runner V2 by default
    (VllmConfig.use_v2_model_runner / _is_default_v2_model_runner_model, per release)."""
    if b.v2_scope == "all":
        return True
    if b.v2_scope == "none":
        return False
    listed = any(a in _V2_ARCHS[b.v2_scope] for a in architectures)
    if b.v2_scope == "llama_qwen3":  # 0.23: listed, dense and unquantized
        return listed and not is_moe and not quantized
    if b.v2_scope == "listed":  # 0.24: the list only
        return listed
    if b.v2_scope == "dense_no_hybrid":  # 0.25-0.26: no hybrid; listed or dense
        return not hybrid and (listed or not is_moe)
    # 0.27-0.28: a hybrid only when listed; otherwise listed or dense
    return listed if hybrid else (listed or not is_moe)


def hybrid_alignment(b: Behaviour, sm: int, is_mla: bool, head_size: int) -> int:
    """The attention-block alignment of a hybrid (attention + Mamba) model before 0.20
    (HybridAttentionMambaModelConfig.verify_and_update_config's kernel_block_alignment_size,
    model_executor/models/config.py 0.12.0-0.19.1; 16 everywhere in 0.10-0.11). Kimi-Linear-48B (MLA) at
    0.19.1: 64 x cdiv(Mamba page, 64 x page per token) = 1,920 tokens, where a 16 alignment gives 1,888."""
    if b.hybrid_align == "fixed16":
        return 16
    if is_mla:
        return 64  # 128 only when the user selects CUTLASS_MLA, which the tool does not read
    if head_size == 256 and ((b.hybrid_hd256_blackwell_32 == "cc100" and sm == 100)
                             or (b.hybrid_hd256_blackwell_32 == "sm10x" and sm // 10 == 10)):
        return 32  # FlashInfer (the default there) has no head-256 kernel at block 16 on Blackwell
    return 16


def checkpoint_kv_followed(b: Behaviour, quant_method: str | None) -> bool:
    """Whether `--kv-cache-dtype auto` takes the KV dtype a checkpoint declares, for its quantization method
    (ModelOpt from 0.14.0, every declared kv_cache_scheme from 0.15.0; see Behaviour.checkpoint_kv_auto)."""
    if b.checkpoint_kv_auto:
        return True
    return b.modelopt_kv_auto and str(quant_method or "").lower().startswith("modelopt")


def v1_runs_kv_dtype(b: Behaviour, sm: int, kv_cache_dtype: str, is_mla: bool) -> bool:
    """Whether V1 accepts an explicit --kv-cache-dtype on this GPU (else 0.8-0.10.2 fall back to V0).
    `sm` is the compute capability x 10 (0: unknown, taken as accepted)."""
    if b.v1_fp8_kv == "none" or kv_cache_dtype in ("", "auto") or sm <= 0:
        return True
    if b.v1_fp8_kv == "never":
        return False
    if b.v1_fp8_kv == "mla_hopper_cc100" and is_mla:
        return True  # platforms/cuda.py 0.10.2: FlashMLA / CUTLASS MLA are the defaults and both run fp8
    if b.v1_fp8_kv in ("hopper_or_cc100", "mla_hopper_cc100") and sm == 100:
        return True  # is_device_capability(100): any KV dtype (0.10.0-0.10.2)
    # FlashAttention 3 (fa_utils.flash_attn_supports_fp8: FA version 3 and capability major 9) runs fp8
    return kv_cache_dtype.startswith("fp8") and sm // 10 == 9


# VllmConfig._get_v2_model_runner_unsupported_features (config/vllm.py 0.29.0-0.33.0): the speculative methods
# each release's model runner V2 does not run (0.29 runs only the listed ones)
_V2_SPEC_OK_0_29 = frozenset({"eagle", "eagle3", "mtp", "dflash", "dspark", "extract_hidden_states"})
_V2_SPEC_UNSUPPORTED = {
    "v0_30": frozenset({"ngram", "ngram_gpu", "draft_model", "suffix", "medusa", "mlp_speculator", "custom_class"}),
    "v0_31": frozenset({"ngram", "ngram_gpu", "suffix", "medusa", "mlp_speculator", "custom_class"}),
    "v0_32": frozenset({"suffix", "medusa", "mlp_speculator", "custom_class"}),
    "v0_33": frozenset({"suffix", "custom_class"}),
}


def v2_fallback(b: Behaviour, flags: dict, spec_method: str | None, *, tp: int, pp: int,
                mamba_all: bool = False) -> tuple[str, ...]:
    """The features for which this release's model runner V2 hands the model to runner V1 ("Model Runner V2
    does not yet support %s; using the V1 model runner instead"), as far as the flags show them
    (VllmConfig.use_v2_model_runner / _get_v2_model_runner_unsupported_features, config/vllm.py 0.29.0-0.33.0)."""
    rules = b.v2_fallback_rules
    if rules == "none":
        return ()
    early = rules in ("v0_29", "v0_30", "v0_31")  # stock torch.compile, SP, elastic EP: gone in 0.32.0
    out: list[str] = []
    comp = flags.get("compilation_config")
    comp = comp if isinstance(comp, dict) else {}
    mode = str(comp.get("mode", comp.get("level", "")))
    if early and mode in ("1", "STOCK_TORCH_COMPILE", "CompilationMode.STOCK_TORCH_COMPILE"):
        out.append("stock torch.compile")
    pass_cfg = comp.get("pass_config") if isinstance(comp.get("pass_config"), dict) else {}
    if early and (pass_cfg.get("enable_sp") or pass_cfg.get("enable_sequence_parallelism")) and tp > 1:
        out.append("sequence parallelism")
    if flags.get("distributed_executor_backend") == "external_launcher" and pp > 1:
        out.append("pipeline parallelism with external_launcher")
    if spec_method:
        if rules == "v0_29":
            if spec_method in ("ngram", "ngram_gpu"):
                out.append("ngram/ngram_gpu speculative decoding")
            elif spec_method not in _V2_SPEC_OK_0_29:
                out.append(f"speculative method '{spec_method}'")
        elif spec_method in _V2_SPEC_UNSUPPORTED[rules]:
            out.append(f"speculative method '{spec_method}'")
    if flags.get("enable_dbo") or int(flags.get("ubatch_size") or 1) > 1:
        # 0.29 outright; 0.30+ _get_dbo_unsupported_features: ["dual batch overlap"] while
        # VLLM_USE_V2_MODEL_RUNNER is unset (the default)
        out.append("dual batch overlap")
    if early and flags.get("enable_elastic_ep"):
        out.append("elastic expert parallelism")
    if rules in ("v0_29", "v0_30") and flags.get("logits_processors"):
        out.append("custom logits processors")
    if rules == "v0_29" and flags.get("kv_sharing_fast_prefill"):
        out.append("KV sharing fast prefill")
    if rules in ("v0_30", "v0_31") and mamba_all:
        out.append("mamba cache mode 'all'")
    return tuple(out)


def behaviour(version: str) -> Behaviour:
    """The behaviour of a supported release (raises InputError for an unknown one)."""
    return _behaviour(normalize(version))


# Pure and per release: each release's row is folded once per process, not once per estimate (`check`
# on 2,000 manifests called this 4,000 times, 14 of its 45 s). Behaviour is frozen, so sharing it is safe.
@lru_cache(maxsize=256)
def _behaviour(v: str) -> Behaviour:
    if _key(v) < _key(OLDEST):
        return replace(_behaviour(OLDEST), version=v, engine="v0")
    b = Behaviour()
    for since, changes in _CHANGES:
        if _key(since) <= _key(v):
            b = replace(b, **changes)
    return replace(b, version=v)


@lru_cache(maxsize=1024)
def normalize(version: str) -> str:
    """'0.11.0', 'v0.11.0', '0.11.0+cu128', '0.11' -> a supported release string."""
    s = str(version).strip().lower().lstrip("v")
    s = re.split(r"[+\-]", s)[0]
    if s in ("", "latest", "newest"):
        return NEWEST
    # PEP 440 pre- and post-releases: '0.16.1rc1.dev111' (a nightly of main after 0.16.0, on its way to the
    # release it names), '0.11.0rc2', '0.10.1.post1'. A pre-release of X runs X's code as far as it has landed:
    # it is modelled as the first modelled release >= X (0.16.1rc1.dev111 -> 0.17.0: the nightlies that ran
    # Qwen3.5, which no 0.16.0 wheel has, already read its config's mamba_ssm_dtype); a post-release as X.
    m = re.fullmatch(r"(\d+(?:\.\d+){1,3})((?:\.?(?:rc|a|b|dev|post)\d*)+)", s)
    if m:
        s, tail = m.group(1), m.group(2)
        pre = re.search(r"(rc|a|b|dev)", tail.replace("post", "")) is not None
        if pre and s not in SUPPORTED and _key(OLDEST) <= _key(s) <= _key(NEWEST):
            return min((x for x in SUPPORTED if _key(x) >= _key(s)), key=_key)
    if not re.fullmatch(r"\d+(\.\d+){1,3}", s):
        raise InputError(f"unknown vLLM version '{version}' (supported: {OLDEST} to {NEWEST})")
    if s in SUPPORTED:
        return s
    same_minor = [x for x in SUPPORTED if x.startswith(s + ".") or x.rsplit(".", 1)[0] == s.rsplit(".", 1)[0]]
    if _key(s) < _key(OLDEST):
        return s  # a V0-engine release: behaviour() marks it, estimate says what it can

    if _key(s) > _key(NEWEST):
        raise InputError(f"vLLM {s} is newer than the newest modelled release {NEWEST}")
    if same_minor:
        return same_minor[0]
    # a release between two modelled ones behaves like the one before it
    return max((x for x in SUPPORTED if _key(x) <= _key(s)), key=_key)


def version_from_image(image: str) -> tuple[str, str | None]:
    """Container image -> (version, warning). vllm/vllm-openai:v0.11.0 -> 0.11.0; latest -> newest."""
    ref = image.split("@", 1)[0]  # a digest (repo:tag@sha256:...) is no tag: the tag is before it
    tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else "latest"
    m = re.search(r"v?(\d+\.\d+(?:\.\d+){0,2}(?:\.?(?:rc|dev|post)\d*)*)", tag)  # pre-releases: normalize
    if not m:
        return NEWEST, f"image tag '{tag}' names no vLLM release: assuming the newest modelled, {NEWEST}"
    try:
        return normalize(m.group(1)), None
    except InputError as e:
        return NEWEST, f"{e}: assuming {NEWEST}"


def flashinfer_sampler_runs(b: Behaviour, installed: bool | None = None) -> bool:
    """Whether the profiling run samples with FlashInfer. `installed`: whether FlashInfer is importable where vLLM
    runs (True: the official vllm/vllm-openai image, which ships it; False: a plain `pip install vllm`; None: not
    known, taken as the wheel's own requirements). FlashInfer's sampler is the default only in 0.9.0-0.11.0, whose
    wheels do not require FlashInfer, so unless the install is named the PyTorch-native sampler's larger peak is
    the one counted (the cautious side for `fits`; the band's high end reaches FlashInfer's: sampler_uncertain)."""
    return b.flashinfer_sampler and (b.flashinfer_in_wheel or bool(installed))


def sampler_uncertain(b: Behaviour, installed: bool | None = None) -> bool:
    """The profiling sampler depends on an install the estimate does not know: FlashInfer's sampler is the
    release's default where FlashInfer is importable (v1/sample/ops/topk_topp_sampler.py, 0.9.0-0.11.0) and the
    wheel does not require it (METADATA: an extra of 0.9.0 / 0.11.0), and `installed` is None."""
    return b.flashinfer_sampler and not b.flashinfer_in_wheel and installed is None


def image_ships_flashinfer(image: str) -> bool | None:
    """Whether a container image is known to ship FlashInfer: the official vllm/vllm-openai image installs it
    (docker/Dockerfile of 0.9.0-0.11.0 installs flashinfer-python into the image); None for any other image (a
    custom image may or may not install it)."""
    name = str(image or "").split("@", 1)[0].lower()
    if ":" in name.rsplit("/", 1)[-1]:
        name = name.rsplit(":", 1)[0]
    return True if name in ("vllm/vllm-openai", "docker.io/vllm/vllm-openai") else None


def sampler_note(b: Behaviour, installed: bool | None = None) -> str | None:
    """Where the profiling sampler depends on how vLLM was installed (FlashInfer's by default only when it is
    importable, and the wheel does not require it), what the estimate assumes; else None."""
    if not b.flashinfer_sampler or b.flashinfer_in_wheel:
        return None
    if installed is not None:
        return (f"vLLM {b.version} samples with FlashInfer by default where it is installed: counted with "
                f"{'FlashInfer' if installed else 'the PyTorch-native'} sampler's profiling peak (FlashInfer "
                f"{'installed, as in the official vllm/vllm-openai image' if installed else 'not installed'})")
    return (f"vLLM {b.version} samples with FlashInfer only when it is installed: a plain `pip install "
            f"vllm=={b.version}` does not install it (the low end of the band and the estimate: the PyTorch-native "
            f"sampler's larger profiling peak); the official vllm/vllm-openai image ships it, and there the sampler "
            f"holds less, so the band's high end reaches the KV cache with FlashInfer's sampler")


BEHAVIOUR_FIELDS = tuple(f.name for f in fields(Behaviour))
