"""--speculative-config: the drafter's weights, its KV layers, its input buffers and the capture sizes it changes."""


from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from configurator.errors import InputError, NotFoundError
from configurator.estimate.option_values import json_object, version_key
from configurator.memory.features import drafter_buffer_bytes
from configurator.memory.kv_dtype import DTYPE_BYTES
from configurator.memory.weights import count_params, weight_bytes
from configurator.model.spec import LayerGeometry, ModelSpec
from configurator.units import cdiv, human_bytes


@dataclass(frozen=True)
class SpecPlan:
    """--speculative-config resolved (vllm/config/speculative.py SpeculativeConfig, 0.33.0)."""

    method: str  # ngram | suffix | eagle | eagle3 | mtp | draft_model | dflash | ...
    num_speculative_tokens: int
    draft: str | None  # the draft model id or path; None for ngram / suffix / MTP (the target's own layers)
    weights_bytes: int  # the drafter's weights on this rank, loaded inside "Model loading took"
    kv_layers: tuple[LayerGeometry, ...] = ()  # the drafter's attention layers: their KV joins the pool
    draft_model: ModelSpec | None = None  # the model those layers' KV shapes come from
    weights_note: str = ""
    warning: str | None = None  # the draft could not be loaded: its weights and KV are left out
    error: str | None = None  # vLLM refuses this method in this release
    unmodelled_keys: tuple[str, ...] = ()  # keys of the JSON vLLM reads and this estimate does not

    def line(self) -> str:
        k = self.num_speculative_tokens
        head = f"speculative decoding ({self.method}, {k} speculative token{'s' if k != 1 else ''}"
        head += f", draft {self.draft})" if self.draft else ")"
        if self.warning:
            return f"{head}: {self.warning}"
        if not self.weights_bytes and not self.kv_layers:
            return (f"{head}: no draft weights and no draft KV; each request may hold {k} lookahead slot"
                    f"{'s' if k != 1 else ''} and decode CUDA graphs are captured at multiples of {k + 1} tokens")
        return (f"{head}: draft weights {human_bytes(self.weights_bytes)} per GPU{self.weights_note}, counted in "
                f"'Model loading took'; the draft's {len(self.kv_layers)} attention layer"
                f"{'s keep' if len(self.kv_layers) != 1 else ' keeps'} KV in the same pool (more bytes per token); "
                f"decode CUDA graphs are captured at multiples of {k + 1} tokens")


# drafters built on SpecDecodeBaseProposer (v1/spec_decode/eagle.py, draft_model.py, dflash.py, 0.25.0)
PROPOSER_METHODS = frozenset({"eagle", "eagle3", "mtp", "draft_model", "dflash"})


def spec_buffer_bytes(spec: SpecPlan | None, num_tokens: int, dtype: str) -> int:
    """The drafter's persistent input buffers for max_num_batched_tokens `num_tokens` (0 without a model-based
    drafter, or when the draft could not be loaded)."""
    if spec is None or spec.method not in PROPOSER_METHODS or spec.draft_model is None:
        return 0
    dm = spec.draft_model
    c = dm.text_config
    rope = c.get("rope_parameters") if isinstance(c.get("rope_parameters"), dict) else {}
    mrope = "mrope_section" in rope or "mrope_section" in (c.get("rope_scaling") or {})
    mult = int(c.get("hc_mult") or 1) if isinstance(c.get("compress_ratios"), list) else 1
    return drafter_buffer_bytes(num_tokens, dm.hidden_size, dm.hidden_size, DTYPE_BYTES.get(dtype, 2), mrope=mrope,
                                hidden_mult=mult)


# vllm/config/speculative.py MTPModelTypes (0.33.0): a draft config of one of these types is the target's
# own multi-token-prediction layers; every *_mtp type maps to method "mtp".
# A separate draft model (method "draft_model"): the V1 engine refuses it in 0.10.1.1 and 0.11.0
# (engine/arg_utils.py _is_v1_supported_oracle raises NotImplementedError); 0.15.0 has
# v1/spec_decode/draft_model.py. 0.12-0.14 were not read; they are taken to behave like 0.15.
DRAFT_MODEL_SINCE = "0.12.0"
DRAFT_MODEL_REFUSED = ("Draft model speculative decoding is not supported yet. Please consider using other "
                       "speculative decoding methods such as ngram, medusa, eagle, or mtp.")
NO_WEIGHT_METHODS = frozenset({"ngram", "ngram_gpu", "suffix", "extract_hidden_states", "custom_class"})


def _mtp_layers(model: ModelSpec) -> int:
    """How many MTP layers the checkpoint has: num_nextn_predict_layers (DeepSeek, GLM, MiMo) or
    mtp_num_hidden_layers (Qwen3-Next / Qwen3.5), as vllm/config/speculative.py reads n_predict."""
    c = model.text_config
    return int(c.get("num_nextn_predict_layers") or c.get("mtp_num_hidden_layers") or 0)


def _last_attention_layer(model: ModelSpec) -> LayerGeometry | None:
    attn = [g for g in model.layers if g.kind in ("full", "mla")] or [g for g in model.layers if g.kind != "mamba"]
    return attn[-1] if attn else None


# SpeculativeConfig fields (vllm/config/speculative.py, 0.25.0 / 0.33.0) this estimate reads, and those that
# allocate nothing on the GPU: the checkpoint's revision, the n-gram window (proposed on the CPU), suffix
# decoding's tree (arctic-inference, host memory), synthetic acceptance (benchmarking). Any other key is named.
SPEC_KEYS_READ = frozenset({"method", "model", "num_speculative_tokens", "draft_tensor_parallel_size",
                            "quantization"})
SPEC_KEYS_NO_GPU = frozenset({"revision", "code_revision", "prompt_lookup_max", "prompt_lookup_min",
                              "suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
                              "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob",
                              "synthetic_acceptance_rates", "synthetic_acceptance_length"})


def plan_speculative(model: ModelSpec, flags: dict[str, Any], *, tp: int, dtype: str, quantization: str | None,
                     resolve: Any, version: str = "0.33.0") -> SpecPlan | None:
    """--speculative-config -> the drafter (None without it). `resolve` loads a draft model by id or path
    (configurator.model.resolve.resolve_model); a draft it cannot load raises InputError. Keys the estimate
    does not read (and that may change GPU memory) are kept in `unmodelled_keys`, to be named."""
    raw = flags.get("speculative_config")
    if raw in (None, "", "{}"):
        return None
    d = json_object(raw)
    if not d:
        return None
    plan = _plan_speculative(model, d, tp=tp, dtype=dtype, quantization=quantization, resolve=resolve,
                             version=version)
    unread = tuple(sorted(str(k) for k in d if k not in SPEC_KEYS_READ | SPEC_KEYS_NO_GPU))
    return replace(plan, unmodelled_keys=unread) if unread else plan


def _plan_speculative(model: ModelSpec, d: dict, *, tp: int, dtype: str, quantization: str | None, resolve: Any,
                      version: str) -> SpecPlan:
    """The drafter of one --speculative-config object: no weights (ngram, suffix, ...), MTP, or a draft model."""
    method = str(d.get("method") or "").lower() or None
    draft = d.get("model")
    k = d.get("num_speculative_tokens")
    # SpeculativeConfig.__post_init__ (0.33.0): no method -> "ngram" for model "ngram", else by the draft's name
    # ("eagle-" -> eagle, "eagle3" -> eagle3) or config model_type (*_mtp -> mtp), else "draft_model"
    if method is None and draft in ("ngram", "[ngram]"):
        method = "ngram"
    if method and method.endswith("_mtp"):
        method = "mtp"  # deprecated spellings, "replaced with mtp"
    if method in NO_WEIGHT_METHODS:
        if not isinstance(k, int) or k < 1:
            raise InputError(f"--speculative-config: {method} needs num_speculative_tokens >= 1")
        return SpecPlan(method=method, num_speculative_tokens=k, draft=None, weights_bytes=0)
    if method == "mtp" or (method is None and draft is None):
        return _mtp_plan(model, k, tp=tp, dtype=dtype, quantization=quantization)
    if not draft:
        raise InputError(f"--speculative-config: method {method} needs a draft \"model\"")
    if not isinstance(k, int) or k < 1:
        raise InputError("--speculative-config: num_speculative_tokens must be a positive integer")
    try:
        dm = resolve(str(draft))
    except NotFoundError as e:
        return SpecPlan(method=method or "draft_model", num_speculative_tokens=k, draft=str(draft), weights_bytes=0,
                        warning=f"the draft model could not be loaded ({e}): its weights and KV are not counted; "
                                f"pass a config.json path or a cached model as \"model\"")
    name = str(draft).lower()
    if method is None:
        method = "eagle" if "eagle-" in name else "eagle3" if "eagle3" in name else \
            "mtp" if dm.model_type.endswith("_mtp") else "draft_model"
    dtp = int(d.get("draft_tensor_parallel_size") or tp)
    dw = weight_bytes(dm, tp=dtp, pp=1, quantization=d.get("quantization"), dtype=dtype)
    bytes_ = dw.per_rank_bytes
    note = ""
    if method in ("eagle", "eagle3", "dflash") and dw.source == "config":
        bytes_ = _eagle_head_bytes(dm, method, bytes_, dtype=dtype, dtp=dtp)
        note = " (embeddings shared with the target)"
    error = DRAFT_MODEL_REFUSED if method == "draft_model" and version_key(version) < version_key(DRAFT_MODEL_SINCE) \
        else None
    return SpecPlan(method=method, num_speculative_tokens=k, draft=str(draft), weights_bytes=bytes_,
                    kv_layers=tuple(dm.layers), draft_model=dm, weights_note=note, error=error)


def _mtp_plan(model: ModelSpec, k: Any, *, tp: int, dtype: str, quantization: str | None) -> SpecPlan:
    """Method mtp: the target's own multi-token-prediction layers (their weights unless the checkpoint size holds
    them, and KV layers like the target's last attention layer)."""
    n = _mtp_layers(model)
    if n == 0:
        raise InputError("--speculative-config: method mtp needs a checkpoint with MTP layers "
                         "(num_nextn_predict_layers / mtp_num_hidden_layers); this config declares none")
    k = int(k or n)
    p = count_params(model)
    w = weight_bytes(model, tp=tp, pp=1, quantization=quantization, dtype=dtype)
    layer = max(p.per_layer_linear) + max(p.per_layer_other) + 2 * model.hidden_size * model.hidden_size
    per_param = w.total_bytes / max(p.total, 1)
    if w.source == "checkpoint":
        # the checkpoint's tensor size already holds its MTP layers (e.g. DeepSeek-V3 model.layers.61)
        mtp_bytes, note = 0, " (already inside the checkpoint size the weights come from)"
    else:
        mtp_bytes, note = int(n * layer * per_param / tp), f" ({n} MTP layer{'s' if n > 1 else ''} like the " \
                                                          f"target's last, plus eh_proj 2H x H; embeddings and " \
                                                          f"lm_head shared)"
    last = _last_attention_layer(model)
    layers = tuple(replace(last, index=model.num_hidden_layers + i) for i in range(n)) if last else ()
    return SpecPlan(method="mtp", num_speculative_tokens=k, draft=None, weights_bytes=mtp_bytes,
                    kv_layers=layers, draft_model=model, weights_note=note)


def _eagle_head_bytes(dm: ModelSpec, method: str, bytes_: int, *, dtype: str, dtp: int) -> int:
    """An EAGLE / DFlash head's bytes counted from its config: less the embeddings (and lm_head) it shares with
    the target, plus its fc input projection."""
    # llm_base_proposer.py _maybe_share_embeddings / _maybe_share_lm_head (0.33.0): an EAGLE head without its own
    # embed_tokens (or with the target's) uses the target's; EAGLE-1 also shares lm_head
    dt = DTYPE_BYTES.get(dtype, 2)
    vocab = cdiv(dm.vocab_size, 64) * 64
    shared = vocab * dm.hidden_size * dt // dtp
    if method == "eagle" and not dm.tie_word_embeddings:
        shared *= 2
    h = dm.hidden_size
    extra = 0
    if method == "eagle3":
        # llama_eagle3.py (0.33.0): its own lm_head of draft_vocab_size rows (not vocab_size), and fc from
        # 3 target hidden states (num_aux_hidden_states) to H
        draft_vocab = int(dm.text_config.get("draft_vocab_size") or dm.vocab_size)
        shared += (vocab - cdiv(draft_vocab, 64) * 64) * h * dt // dtp
        extra = 3 * h * h * dt
    elif method == "eagle":
        extra = 2 * h * h * dt  # llama_eagle.py: fc from [embedding; hidden state] (2H) to H
    return max(bytes_ - shared, 0) + extra


def spec_capture_sizes(sizes: list[int], num_speculative_tokens: int) -> list[int]:
    """CompilationConfig.adjust_cudagraph_sizes_for_spec_decode (vllm/config/compilation.py 0.33.0, model
    runner V1 with FULL decode graphs): every size rounded up to a multiple of 1 + k, kept when it stays
    within the largest; none left -> [1 + k]."""
    q = 1 + num_speculative_tokens
    if not sizes or q <= 1:
        return sizes
    top = max(sizes)
    out = sorted({cdiv(n, q) * q for n in sizes if cdiv(n, q) * q <= top})
    return out or ([q] if q <= top else [])
