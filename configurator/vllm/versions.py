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
    # 0.8.0-0.10.1.1 fall back to the V0 engine on GPUs below compute capability 8.0, and for an fp8
    # KV cache unless FlashAttention 3 on Hopper runs it (EngineArgs._is_v1_supported_oracle)
    v1_needs_sm80: bool = False
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
    # hybrid attention block alignment: 'fixed16' (<= 0.19) or 'kernel' (max(kernel block, block size))
    hybrid_align: Literal["fixed16", "kernel"] = "kernel"
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
    # `--kv-cache-dtype auto` follows a checkpoint's declared FP8 KV scheme (0.19+)
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
    # when it fits (0.21+); a 1,024 ceiling on data-centre Blackwell (0.28+); max_num_seqs appended (0.29+)
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
    # V1's top-k / top-p sampler is FlashInfer's by default on CUDA (VLLM_USE_FLASHINFER_SAMPLER unset
    # means on: v1/sample/ops/topk_topp_sampler.py 0.9.0-0.11.0); from 0.13.0 the PyTorch-native sort-based
    # path is the default and FlashInfer is opt-in (0.13.0, 0.15.0, 0.19.0, 0.25.1, 0.33.0)
    flashinfer_sampler: bool = False


# One row per change; each row lists only what changed at that release (first release seen with it
# among the wheels read; see docs/vllm-versions.md).
_CHANGES: tuple[tuple[str, dict], ...] = (
    ("0.8.0", dict(v1_needs_sm80=True, default_gpu_memory_utilization=0.9, cudagraph_estimate=False,
                   mamba_checkpoint_block=False, tokens="uniform_blocks", fit_check="layers",
                    in_flight="mnbt", v2_runner=False, v2_scope="none", v2_cudagraph_estimate=False,
                    hybrid_prefix_caching=False, hybrid_prefix_caching_supported=False,
                    nemotron_h_ssm_dtype="model",
                    hybrid_align="fixed16", chunked_local_hma=False,
                    mla_block="flashmla_hopper", mm_prefix_lm_batch_floor=False,
                    mnbt_clamp=False, seqs_clamp=False, chunked_forced=True, requested_rounding="float",
                    checkpoint_kv_auto=False,
                    yarn_max_len="scale", messages="v0_11", auto_max_model_len=False,
                    log_style="v0_8gb", accounting="peak_all", batch_tiers="h100_name", small_tier_seqs=1024,
                    auto_dtype_fallback=False, longrope_default_original=False,
                    kv_cache_memory_bytes_flag=False, group_pad_ratio=0.0, capture_mnbt=False,
                    capture_blackwell_1024=False, capture_decode_size=False, qwen35_ssm_key=False,
                    hybrid_mla_align_128=False, mamba_state_in_kv_dtype=True,
                    moe_workspace_persistent=False, flashinfer_sampler=True)),
    ("0.8.3", dict(log_style="v0_8")),
    ("0.8.4", dict(small_tier_seqs=256)),
    ("0.8.5", dict(batch_tiers="mem70")),
    ("0.9.0", dict(batch_tiers="two_tiers", auto_dtype_fallback=True)),
    ("0.9.1", dict(accounting="weights_peak", log_style="v0_10")),
    ("0.10.1", dict(mla_block="cutlass_cc100", seqs_clamp=True, mamba_state_in_kv_dtype=False)),
    ("0.10.2", dict(v1_needs_sm80=False, kv_cache_memory_bytes_flag=True)),
    ("0.11.0", dict(tokens="blocks")),
    ("0.11.1", dict(longrope_default_original=True, mnbt_clamp=True, chunked_forced=False)),
    ("0.12.0", dict(log_style="v0_12", group_pad_ratio=1.25)),
    ("0.13.0", dict(mla_block="flashmla", messages="v0_13", hybrid_prefix_caching_supported=True,
                    nemotron_h_ssm_dtype="float16", flashinfer_sampler=False)),
    ("0.14.0", dict(log_style="v0_14")),
    ("0.15.0", dict(fit_check="first_group", messages="v0_15", auto_max_model_len=True,
                    requested_rounding="ceil",
                    mamba_all_mode=True, chunked_local_hma=True, mla_block="fi_mla")),
    ("0.17.0", dict(qwen35_ssm_key=True)),
    ("0.19.0", dict(fit_check="groups", mla_block="fa_mla", checkpoint_kv_auto=True, group_pad_ratio=1.5,
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
    ("0.29.0", dict(capture_decode_size=True, fit_check="blocks",
                    v2_runner=True, v2_scope="all", v2_cudagraph_estimate=True)),
    ("0.30.0", dict(yarn_max_len="as_is")),
    ("0.33.0", dict(mamba_checkpoint_block=True, gb10_small_tier=True)),
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
    m = re.search(r"v?(\d+\.\d+(?:\.\d+){0,2})", tag)
    if not m:
        return NEWEST, f"image tag '{tag}' names no vLLM release: assuming the newest modelled, {NEWEST}"
    try:
        return normalize(m.group(1)), None
    except InputError as e:
        return NEWEST, f"{e}: assuming {NEWEST}"


BEHAVIOUR_FIELDS = tuple(f.name for f in fields(Behaviour))
