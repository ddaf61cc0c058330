"""Stage 1a / 2a, features: which optional engine features apply, and the memory each adds (with its line).

Resolves --enable-lora and its options into the LoRA adapter slots vLLM preallocates (counted in
"Model loading took", like the weights) and the LoRA kernels' buffers in the profiling run; and
--speculative-config into the draft's weights (also inside "Model loading took"), the draft's
attention layers (their KV joins the same pool) and the speculative tokens' effect on CUDA-graph
capture sizes and recurrent state. The arithmetic lives in configurator/memory/features.py; this
stage reads the model description and the release, and says in words what it added.

Each feature has its module (lora, speculative, parallel, multimodal; issue 29); this one gathers them for one
rank and keeps the names they had here importable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from configurator.estimate.multimodal import (
    MM_DEFAULT_LIMIT,
    MultimodalPlan,
    flag_mm_limits,
    mm_limits,
    plan_multimodal,
)
from configurator.estimate.option_values import json_object, truthy, version_key
from configurator.estimate.parallel import ParallelPlan, plan_parallel
from configurator.memory.features import csa_fit_check_bytes
from configurator.memory.kv_dtype import DTYPE_BYTES
from configurator.model.spec import ModelSpec
from configurator.units import human_bytes
from configurator.vllm.memory_options import LORA_EXTRA_VOCAB, UNMODELLED_FEATURE_FLAGS

if TYPE_CHECKING:
    from configurator.estimate.lora import LoraPlan
    from configurator.estimate.speculative import SpecPlan

# moved to the feature modules (issue 29); importable from here as before
__all__ = ["LORA_EXTRA_VOCAB", "MM_DEFAULT_LIMIT", "UNMODELLED_FEATURE_FLAGS", "MultimodalPlan", "ParallelPlan",
           "flag_mm_limits", "mm_limits", "plan_multimodal", "plan_parallel"]
# and, imported on first use (a plain estimate sets neither --enable-lora nor --speculative-config):
_LORA_NAMES = frozenset({"EMBEDDING_LORA_ARCHITECTURES", "EXTRA_VOCAB_UNTIL", "LORA_RANKS", "MOE_3D_ARCHITECTURES",
                         "MOE_LORA_SINCE", "LoraPlan", "is_moe_layer", "lora_modules", "plan_lora"})
_SPEC_NAMES = frozenset({"DRAFT_MODEL_REFUSED", "DRAFT_MODEL_SINCE", "NO_WEIGHT_METHODS", "PROPOSER_METHODS",
                         "SPEC_KEYS_NO_GPU", "SPEC_KEYS_READ", "SpecPlan", "plan_speculative", "spec_buffer_bytes",
                         "spec_capture_sizes"})


def __getattr__(name: str) -> Any:
    """The LoRA and speculative-decoding names this module held, from their modules on first use (PEP 562)."""
    if name in _LORA_NAMES:
        import configurator.estimate.lora as lora

        return getattr(lora, name)
    if name in _SPEC_NAMES:
        import configurator.estimate.speculative as speculative

        return getattr(speculative, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class FeatureMemory:
    """What the optional features add, per GPU on the tightest rank, and how it is explained."""

    lora: LoraPlan | None = None
    spec: SpecPlan | None = None
    cpu_offload_bytes: int = 0  # decoder-layer parameters kept in host memory (--cpu-offload-gb)
    cpu_offload_requested: float = 0.0
    parallel: ParallelPlan | None = None  # -dp / --enable-expert-parallel: the routed experts per GPU
    mm: MultimodalPlan | None = None  # the multimodal encoder's dummy batch in the profiling run
    # a KV layout whose per-request reservation the tool does not reproduce: its 'fits' is not a promise
    unmodelled_layout: str | None = None
    unmodelled_flags: tuple[str, ...] = ()  # memory-changing options given and not modelled, with what they do
    # a model-based drafter's persistent input buffers (memory/features.py drafter_buffer_bytes): allocated before
    # profiling, so outside "Model loading took" and the profiled peak; they count where vLLM subtracts the
    # free-memory drop since start-up (the 'consumed' accounting, 0.27+)
    drafter_buffers_bytes: int = 0
    # buffers the model class allocates while loading, sized by the scheduler (inside "Model loading took")
    model_buffers_bytes: int = 0
    model_buffers_line: str = ""

    @property
    def weights_bytes(self) -> int:
        """What the features add to (LoRA, draft) or take from (CPU offload) 'Model loading took'."""
        return (self.lora.weights_bytes if self.lora else 0) + (self.spec.weights_bytes if self.spec else 0) \
            - self.cpu_offload_bytes + (self.parallel.weights_delta if self.parallel else 0) + self.model_buffers_bytes

    @property
    def activation_bytes(self) -> int:
        return (self.lora.activation_bytes if self.lora else 0) + (self.mm.activation_bytes if self.mm else 0) \
            + (self.parallel.activation_bytes if self.parallel else 0)

    def warnings(self) -> list[str]:
        """What a modelled feature still leaves out, for the result's warnings."""
        out = [f"not-modelled: {p.warning}" for p in (self.parallel, self.mm) if p is not None and p.warning]
        if self.spec is not None and self.spec.unmodelled_keys:
            out.append(f"not-modelled: --speculative-config {', '.join(self.spec.unmodelled_keys)}: vLLM reads "
                       f"{'these keys' if len(self.spec.unmodelled_keys) > 1 else 'this key'} (vllm/config/"
                       f"speculative.py SpeculativeConfig) and may allocate differently; the estimate ignores "
                       f"{'them' if len(self.spec.unmodelled_keys) > 1 else 'it'}")
        out += [f"not-modelled: {f}" for f in self.unmodelled_flags]
        return out + ([f"not-modelled: {self.unmodelled_layout}"] if self.unmodelled_layout else [])

    def lines(self) -> list[str]:
        """One line per modelled feature, for the derivation."""
        out = []
        if self.parallel:
            out.append(self.parallel.line())
        if self.lora:
            s = self.lora.settings
            parts = ", ".join(f"{name} {human_bytes(b)}" for name, b in self.lora.parts if b)
            out.append(f"LoRA buffers: {s.max_loras} adapters x rank {s.max_lora_rank} x {s.dtype_bytes} B "
                       f"preallocated on every LoRA-capable layer ({parts}) = "
                       f"{human_bytes(self.lora.weights_bytes)} per GPU, "
                       f"counted in 'Model loading took'; the profiling run's LoRA kernel buffers add "
                       f"{human_bytes(self.lora.activation_bytes)}; --max-cpu-loras {self.lora.max_cpu_loras} "
                       f"is host memory only")
        if self.spec:
            out.append(self.spec.line())
            if self.drafter_buffers_bytes:
                out.append(f"drafter input buffers: {human_bytes(self.drafter_buffers_bytes)} per GPU (max_num_batched_"
                           f"tokens x the draft's hidden size, twice, plus ids and positions: llm_base_proposer.py), "
                           f"allocated before profiling, so outside 'Model loading took' and the profiled peak; vLLM "
                           f"takes them from the KV pool only where it subtracts the free-memory drop (0.27+)")
        if self.mm:
            out.append(self.mm.line())
        if self.model_buffers_line:
            out.append(self.model_buffers_line)
        if self.cpu_offload_bytes:
            out.append(f"--cpu-offload-gb {self.cpu_offload_requested:g}: {human_bytes(self.cpu_offload_bytes)} of "
                       f"decoder-layer parameters stay in host memory, read over PCIe each step (UVA), so the GPU "
                       f"weights shrink by that much (whole parameters, until the budget is reached)")
        return out


def cpu_offload_bytes(requested_gib: float, base_weights_bytes: int) -> int:
    """--cpu-offload-gb: vLLM moves whole decoder-layer parameters to host memory until the total reaches the
    budget (model_executor/offloader/uva.py UVAOffloader._maybe_offload_to_cpu, 0.33.0; models/utils.py
    maybe_offload_to_cpu before): at most the weights the rank holds."""
    return min(int(requested_gib * (1 << 30)), base_weights_bytes)


def plan_features(model: ModelSpec, flags: dict[str, Any], *, version: str, dtype: str, tp: int, layers: range,
                  num_tokens: int, spec: SpecPlan | None = None, base_weights_bytes: int = 0, max_num_seqs: int = 256,
                  max_model_len: int = 0, chunked: bool = True, first_stage: bool = True) -> FeatureMemory:
    """Every modelled feature for one rank holding `layers` (`spec` was resolved with the inputs). The encoder
    budget applies on the first pipeline stage, which runs the encoder (`first_stage`)."""
    gib = float(flags.get("cpu_offload_gb") or 0)
    par = plan_parallel(model, flags, tp=tp, dtype=dtype, layers=layers, base_weights_bytes=base_weights_bytes,
                        num_tokens=num_tokens, version=version)
    base = base_weights_bytes + (par.weights_delta if par else 0)
    buf, buf_line = model_load_buffers(model, num_tokens, dtype)  # the last PP stage's (the rank planned here)
    lora = None  # plan_lora's answer without --enable-lora
    if truthy(flags.get("enable_lora", False)):
        from configurator.estimate.lora import plan_lora

        lora = plan_lora(model, flags, version=version, dtype=dtype, tp=tp, layers=layers, num_tokens=num_tokens)
    return FeatureMemory(lora=lora, spec=spec, parallel=par,
                         mm=plan_multimodal(model, flags, dtype=dtype, num_tokens=num_tokens, max_num_seqs=max_num_seqs,
                                            max_model_len=max_model_len or num_tokens, chunked=chunked,
                                            version=version)
                         if first_stage else None,
                         cpu_offload_bytes=cpu_offload_bytes(gib, base), cpu_offload_requested=gib,
                         unmodelled_layout=unmodelled_layout(model, flags, max_model_len=max_model_len or num_tokens,
                                                             num_tokens=num_tokens),
                         unmodelled_flags=unmodelled_flags(flags), model_buffers_bytes=buf, model_buffers_line=buf_line,
                         drafter_buffers_bytes=_drafter_buffers(spec, num_tokens, dtype))



def _drafter_buffers(spec: SpecPlan | None, num_tokens: int, dtype: str) -> int:
    """spec_buffer_bytes, its module imported only with a drafter (0 without one, as spec_buffer_bytes answers)."""
    if spec is None:
        return 0
    from configurator.estimate.speculative import spec_buffer_bytes

    return spec_buffer_bytes(spec, num_tokens, dtype)

def unmodelled_flags(flags: dict[str, Any]) -> tuple[str, ...]:
    """The memory-changing feature options given with a value other than the modelled one, as warning text."""
    out = []
    for key, (neutral, what) in UNMODELLED_FEATURE_FLAGS.items():
        v = flags.get(key)
        quiet = neutral if isinstance(neutral, tuple) else (neutral,)
        if v is None or any(v == q or str(v).strip().lower() == str(q).lower() for q in quiet):
            continue
        if isinstance(neutral, bool) and not truthy(v):
            continue
        out.append(f"{what} (given: {v})")
    return tuple(out)


def model_load_buffers(model: ModelSpec, num_tokens: int, dtype: str) -> tuple[int, str]:
    """Buffers a model class allocates in __init__, so inside "Model loading took", sized by the scheduler: a
    compressed-sparse-attention model with hyper-connections (config compress_ratios and hc_mult) keeps the
    pre-hc_head residual stream for an MTP draft, (max_num_batched_tokens, hc_mult x H) in the model dtype, on
    the last PP rank, with or without speculative decoding (models/deepseek_v4/nvidia/model.py
    DeepseekV4Model._mtp_hidden_buffer, 0.25.0)."""
    c = model.text_config
    hc = int(c.get("hc_mult") or 0)
    if not (hc and isinstance(c.get("compress_ratios"), list) and num_tokens):
        return 0, ""
    b = num_tokens * hc * model.hidden_size * DTYPE_BYTES.get(dtype, 2)
    return b, (f"residual-stream buffer for an MTP draft: {num_tokens:,} tokens x {hc} x {model.hidden_size:,} x "
               f"{DTYPE_BYTES.get(dtype, 2)} B = {human_bytes(b)}, allocated while the model loads (DeepseekV4Model "
               f"_mtp_hidden_buffer), so counted in 'Model loading took'")


def unmodelled_layout(model: ModelSpec, flags: dict[str, Any] | None = None, *, max_model_len: int = 0,
                      num_tokens: int = 0) -> str | None:
    """Why the KV layout is only approximated, or None. Compressed sparse attention (config compress_ratios with
    o_lora_rank, vllm/models/deepseek_v4/, 0.25.0): every KV group is a UniformTypeKVCacheSpecs and vLLM's fit
    check reserves, per group, its pages times the global number of layer tuples times a whole tuple's page
    bytes (v1/core/kv_cache_utils.py _max_memory_usage_bytes_from_groups, 'only DeepseekV4 for now'); the
    compressors keep fp32 state caches (compressor.py CompressorStateCache) and the sparse-MLA metadata
    builders max_model_len-wide buffers (sparse_mla.py). The layout stages do not reproduce that; the warning
    gives what 0.25.0's check asks for one request (memory/features.py csa_fit_check_bytes)."""
    c = model.text_config
    ratios = c.get("compress_ratios")
    if not (isinstance(ratios, list) and c.get("o_lora_rank")):
        return None
    text = ("compressed sparse attention (compress_ratios): vLLM pads every KV group to a shared layer-tuple "
            "layout and reserves whole tuples per group in its fit check (v1/core/kv_cache_utils.py "
            "_max_memory_usage_bytes_from_groups), keeps fp32 compressor states and max_model_len-wide "
            "sparse-attention buffers; the layout shown does not reproduce that")
    f = flags or {}
    if max_model_len and num_tokens:
        fp8 = str(f.get("kv_cache_dtype") or "auto").startswith("fp8")
        need = csa_fit_check_bytes([int(r or 0) for r in ratios], num_layers=model.num_hidden_layers,
                                   sliding_window=int(c.get("sliding_window") or 128),
                                   head_dim=int(c.get("head_dim") or 512),
                                   index_head_dim=int(c.get("index_head_dim") or 128), max_model_len=max_model_len,
                                   max_num_batched_tokens=num_tokens, block_size=int(f.get("block_size") or 256),
                                   fp8_ds_mla=fp8)
        text += (f"; by vLLM 0.25.0's rule its start-up check asks {human_bytes(need)} of KV for one request of "
                 f"{max_model_len:,} tokens (max_num_batched_tokens {num_tokens:,}; "
                 f"{'fp8_ds_mla rows' if fp8 else 'bf16 rows'}), which the verdict here does not use: a 'fits' "
                 f"is at risk")
    else:
        text += "; a 'fits' here is at risk"
    return text


# Features that made vLLM fall back to its V0 engine (engine/arg_utils.py _is_v1_supported_oracle):
# LoRA "is experimental on VLLM_USE_V1=1. Falling back to V0 Engine." in 0.8.0 and 0.8.2 (read), not in 0.8.5;
# speculative decoding: every method in 0.8.0 / 0.8.2 / 0.8.5 (ngram and EAGLE as experimental); in 0.9.0 all but
# ngram, medusa, eagle, eagle3, deepseek_mtp (judged on the "method" key as given, or model "ngram"). 0.10.1.1
# refuses draft_model instead (DRAFT_MODEL_REFUSED).
LORA_ON_V1_SINCE = "0.8.5"
SPEC_ON_V1_SINCE = "0.9.0"
SPEC_V0_FALLBACK_UNTIL = "0.10.1"
V1_SPEC_METHODS_0_9 = frozenset({"ngram", "[ngram]", "medusa", "eagle", "eagle3", "deepseek_mtp"})


def v0_fallback(version: str, flags: dict[str, Any]) -> str | None:
    """Why this release would run a feature on its V0 engine (not modelled), or None. VLLM_USE_V1=1 is not read."""
    v = version_key(version)
    if truthy(flags.get("enable_lora", False)) and v < version_key(LORA_ON_V1_SINCE):
        return (f"vLLM {version} logs 'LORA is experimental on VLLM_USE_V1=1. Falling back to V0 Engine.' "
                f"(engine/arg_utils.py _is_v1_supported_oracle); V0 is not modelled")
    raw = flags.get("speculative_config")
    if raw in (None, "", "{}") or v >= version_key(SPEC_V0_FALLBACK_UNTIL):
        return None
    d = json_object(raw)
    method = d.get("method")
    on_v1 = v >= version_key(SPEC_ON_V1_SINCE) and (
        method in V1_SPEC_METHODS_0_9 if method else d.get("model") in ("ngram", "[ngram]"))
    if on_v1:
        return None
    return (f"vLLM {version} logs 'Speculative Decoding is not supported by the V1 Engine. Falling back to V0.' "
            f"(engine/arg_utils.py _is_v1_supported_oracle); V0 is not modelled")
