"""Stage 5, explanation: the result object, with the per-token / per-sequence arithmetic in words.

It lays out what the earlier stages decided (inputs, budget, KV layout, verdict); it computes no
new memory figure except the per-sequence costs that explain them.
"""

from __future__ import annotations

from typing import Any

from configurator.estimate.budget import Budget
from configurator.estimate.inputs import Inputs
from configurator.estimate.layout import KVPlan
from configurator.estimate.result import EstimateResult, GPUInfo, GroupInfo, KVCacheInfo, MemoryBreakdown, ModelInfo
from configurator.estimate.verdict import Verdict
from configurator.memory.build import kv_heads_per_rank
from configurator.memory.groups import KVCacheLayout
from configurator.memory.kv_dtype import KVDtype
from configurator.memory.kv_specs import MambaSpec, RequestLimits
from configurator.memory.per_model import per_model
from configurator.model.spec import ModelSpec
from configurator.units import cdiv, human_bytes
from configurator.vllm import messages


def explain(inp: Inputs, kvp: KVPlan, budget: Budget, v: Verdict) -> EstimateResult:
    """Assemble the EstimateResult: figures, resolved flags, warnings, errors and the derivation."""
    model, f, kv, cap, limits, max_len = inp.model, inp.flags, inp.kv, v.capacity, v.limits, v.max_len
    layout, ov, kv_flag = kvp.layout, budget.overheads, budget.kv_bytes_flag
    available = budget.available_bytes
    grows, window_bytes, state = _sequence_costs(kvp.rank.specs, layout, max_len, limits)
    info = KVCacheInfo(
        dtype=kv.name, bytes_per_token=grows, window_bytes_per_sequence=window_bytes,
        state_bytes_per_sequence=state, block_size=kvp.block_size, bytes_per_block=cap.bytes_per_block,
        num_blocks=cap.num_blocks, blocks_per_request=cap.blocks_per_request,
        bytes_per_request=cap.blocks_per_request * cap.bytes_per_block, in_flight_tokens=limits.max_in_flight_tokens,
        tokens=cap.num_tokens,
        max_concurrency=round(cap.max_concurrency, 2),
        groups=[GroupInfo(kind=g.spec.type_name, num_layers=len(g.layer_ids), num_padding=g.num_padding,
                          block_size=g.spec.block_size, page_bytes=g.spec.page_size_bytes,
                          blocks_per_request=g.blocks_per_request(limits),
                          window_tokens=getattr(g.spec, "sliding_window", 0)
                          or getattr(g.spec, "attention_chunk_size", 0)) for g in layout.groups])
    kinds: dict[str, int] = {}
    for g in model.layers:
        kinds[g.kind] = kinds.get(g.kind, 0) + 1
    resolved = {
        "model": model.name, "gpu_memory_utilization": inp.util, "kv_cache_dtype": inp.kv_name,
        "max_num_seqs": inp.max_num_seqs, "max_model_len": max_len, "max_num_batched_tokens": v.mnbt,
        "tensor_parallel_size": inp.tp, "pipeline_parallel_size": inp.pp, "data_parallel_size": inp.dp,
        "block_size": kvp.block_size, "enforce_eager": inp.eager,
        "quantization": f.get("quantization") or model.quant.method,
        "dtype": inp.dtype, "kv_cache_memory_bytes": kv_flag, "enable_prefix_caching": inp.prefix,
        "enable_chunked_prefill": inp.chunked,
    }
    for k, val in f.items():
        resolved.setdefault(k, val)
    derivation = [*budget.derivation, *v.derivation]
    if kvp.block_size_reason:
        derivation.append(f"block size {kvp.block_size}: {kvp.block_size_reason}")
    derivation += _kv_text(model, kvp.rank.specs, kv, inp.tp, max_len, inp.max_num_seqs, grows, window_bytes, state)
    derivation += explain_pool(info, max_len, inp.max_num_seqs, available, inp.mcb, v.mnbt)
    given = [name for name, val in (("max_num_seqs", inp.seqs_user), ("max_num_batched_tokens", inp.mnbt_user))
             if val is None]
    why_len = "user" if inp.user_len not in (None, -1) else (inp.derived.default_why or inp.derived.why)
    derivation.insert(0, f"max_model_len {max_len:,} ({why_len}); "
                         f"max_num_seqs {inp.max_num_seqs}, max_num_batched_tokens {v.mnbt:,}"
                         + (f" ({' and '.join(given)}: vLLM's default for {inp.batch.tier})" if given else ""))
    warnings = [*inp.warnings, *kvp.warnings, *budget.warnings, *v.warnings]
    gpu = inp.gpu
    if model.quant.kv_cache_dtype is None and kv.is_fp8 and gpu.fp8_kv == "unsupported":
        warnings.append(f"{gpu.display_name} does not support an fp8 KV cache in current vLLM")
    errors = [*inp.errors, *budget.errors, *v.errors]
    fits = not errors
    w = budget.weights
    return EstimateResult(
        fits=fits, verdict="fits" if fits else "refused", kv_cache_bytes_low=available,
        kv_cache_bytes_high=available, vllm_version=inp.b.version,
        model=ModelInfo(name=model.name, model_type=model.model_type, dtype=inp.dtype,
                        num_hidden_layers=model.num_hidden_layers, layers_with_kv=kinds,
                        quantization=model.quant.method,
                        weights_source=(model.weights_source or "checkpoint size") if w.source == "checkpoint"
                        else f"{w.params / 1e9:.2f}B parameters from config.json",
                        notes=list(model.notes)),
        gpu=GPUInfo(name=gpu.name, display_name=gpu.display_name, total_bytes=budget.total_bytes,
                    total_source=gpu.total_source, count=inp.tp * inp.pp * inp.dp),
        flags=resolved,
        memory=MemoryBreakdown(total_bytes=budget.total_bytes, requested_bytes=budget.requested_bytes,
                               weights_bytes=budget.weights_bytes,
                               activation_bytes=0 if kv_flag else ov.activation_bytes,
                               non_torch_bytes=0 if kv_flag else ov.non_torch_bytes,
                               cudagraph_bytes=0 if kv_flag else ov.cudagraph_bytes,
                               other_bytes=0 if kv_flag else budget.other_bytes, kv_cache_bytes=available,
                               **feature_fields(budget)),
        kv_cache=info, errors=errors,
        # weights larger than the free memory: vLLM dies loading them and logs none of these lines
        vllm_log=[] if budget.weights_oom else messages.startup_log(
            inp.b.log_style, weights_bytes=None if kv_flag else budget.weights_bytes, available_bytes=available,
            tokens=cap.num_tokens if cap.num_blocks else None, max_model_len=max_len,
            max_concurrency=cap.max_concurrency),
        warnings=warnings, derivation=derivation)


# explain_kv and per_sequence_costs once per model object, per-rank specs (one frozen tuple per model and arguments:
# memory/build.py), layout and figures: `check` explains the same few models at many releases and GPUs
@per_model(pinned=2, max_entries=1024)
def _kv_text(model: ModelSpec, specs: tuple, *figures: Any) -> tuple[str, ...]:
    return tuple(explain_kv(model, specs, *figures))


def feature_fields(budget: Budget) -> dict[str, int]:
    """The optional features' bytes for MemoryBreakdown (configurator/estimate/features.py)."""
    feats = budget.features
    lora, spec = feats.lora, feats.spec
    return {"lora_bytes": lora.weights_bytes if lora else 0,
            "lora_activation_bytes": lora.activation_bytes if lora else 0,
            "draft_weights_bytes": spec.weights_bytes if spec else 0, "cpu_offload_bytes": feats.cpu_offload_bytes,
            "moe_parallel_delta_bytes": feats.parallel.weights_delta if feats.parallel else 0,
            "encoder_cache_bytes": feats.mm.activation_bytes if feats.mm else 0}


NEEDS_GPU = ("the budget (gpu_memory_utilization x the GPU's memory) and so the available KV cache memory, "
             "blocks, tokens, concurrency and whether vLLM starts: pass --gpu (see `vllm-configurator gpus`) "
             "or --gpu-memory")


def explain_limited(inp: Inputs, kvp: KVPlan, budget: Budget, reason: str,
                    refusals: tuple[str, ...] = ()) -> EstimateResult:
    """What holds without a GPU or on V0: weights per GPU, KV per token and per sequence, and why no more.

    Verdict 'not-predicted' (fits None), unless vLLM refuses before any memory figure matters (inputs'
    errors, or `refusals`: weights larger than the named card): then 'refused'."""
    model, kv, max_len = inp.model, inp.kv, inp.max_len
    grows, window_bytes, state = per_sequence_costs(kvp.rank.specs, kvp.layout, max_len, kvp.limits)
    per_seq = grows * max_len + window_bytes + state
    info = KVCacheInfo(dtype=kv.name, bytes_per_token=grows, window_bytes_per_sequence=window_bytes,
                       state_bytes_per_sequence=state, block_size=kvp.block_size, bytes_per_block=0, num_blocks=0,
                       blocks_per_request=0, tokens=0, max_concurrency=0.0, groups=[])
    why_len = "user" if inp.user_len not in (None, -1) else (inp.derived.default_why or inp.derived.why)
    derivation = [f"max_model_len {max_len:,} ({why_len})",
                  f"weights per GPU (TP {inp.tp}, PP {inp.pp}): {_sz(budget.weights_bytes)}",
                  *budget.features.lines()]
    derivation += explain_kv(model, kvp.rank.specs, kv, inp.tp, max_len, inp.max_num_seqs, grows, window_bytes, state)
    derivation.append(f"one sequence of {max_len:,} tokens: {_sz(per_seq)} of KV per GPU")
    derivation.append(f"not predicted: {reason}")
    kinds: dict[str, int] = {}
    for g in model.layers:
        kinds[g.kind] = kinds.get(g.kind, 0) + 1
    w = budget.weights
    errors = [*inp.errors, *refusals]
    return EstimateResult(
        fits=False if errors else None, verdict="refused" if errors else "not-predicted", vllm_version=inp.b.version,
        model=ModelInfo(name=model.name, model_type=model.model_type, dtype=inp.dtype,
                        num_hidden_layers=model.num_hidden_layers, layers_with_kv=kinds,
                        quantization=model.quant.method,
                        weights_source=(model.weights_source or "checkpoint size") if w.source == "checkpoint"
                        else f"{w.params / 1e9:.2f}B parameters from config.json", notes=list(model.notes)),
        gpu=GPUInfo(name=inp.gpu.name, display_name=inp.gpu.display_name,
                    total_bytes=inp.gpu.total_bytes if inp.gpu.name else 0, total_source=inp.gpu.total_source,
                    count=inp.tp * inp.pp * inp.dp),
        flags={"model": model.name, "max_model_len": max_len, "kv_cache_dtype": inp.kv_name, "dtype": inp.dtype,
               "tensor_parallel_size": inp.tp, "pipeline_parallel_size": inp.pp, **inp.flags},
        memory=MemoryBreakdown(total_bytes=0, requested_bytes=0, weights_bytes=budget.weights_bytes,
                               activation_bytes=0, non_torch_bytes=0, cudagraph_bytes=0, kv_cache_bytes=0,
                               **{k: v for k, v in feature_fields(budget).items()
                                  if k not in ("lora_activation_bytes", "encoder_cache_bytes")}),
        kv_cache=info, errors=errors, warnings=list(inp.warnings), derivation=derivation,
        not_modelled=reason)


def request_bytes(kv: KVCacheInfo, tokens: int) -> int:
    """What vLLM reserves for one request of `tokens` tokens in this pool (blocks x bytes per block).

    Per group, as vllm/v1/kv_cache_interface.py counts a request's blocks: full attention and MLA
    cdiv(T, bs); a sliding window W cdiv(min(W - 1 + in_flight, T), bs) + 1 (the window plus the tokens
    the request may have in flight); a chunk C cdiv(min(C + in_flight, T), bs); a recurrent state its
    fixed blocks. gpt-oss-120b on an H100 at 0.33 (in flight 2 x 8,192): 2,048 tokens take 128 full +
    129 sliding blocks x 589,824 B = 144.6 MiB, not the 72 MiB that counting full-attention tokens gives.
    """
    blocks = 0
    for g in kv.groups:
        if g.kind in ("FullAttentionSpec", "MLAAttentionSpec"):
            blocks += cdiv(tokens, g.block_size)
        elif g.kind == "SlidingWindowSpec":
            blocks += cdiv(min(g.window_tokens - 1 + kv.in_flight_tokens, tokens), g.block_size) + 1
        elif g.kind == "ChunkedLocalAttentionSpec":
            blocks += cdiv(min(g.window_tokens + kv.in_flight_tokens, tokens), g.block_size)
        else:
            blocks += g.blocks_per_request
    return blocks * kv.bytes_per_block


def explain_pool(kv: KVCacheInfo, max_len: int, num_seqs: int, pool_bytes: int, mcb: int, mnbt: int) -> list[str]:
    """What one request reserves, what the pool holds, and what max_num_seqs would need at full length."""
    if not kv.groups or kv.bytes_per_block <= 0:
        return []
    lines = []
    windowed = [g for g in kv.groups if g.window_tokens]
    if windowed:
        w = windowed[0]
        batches = f"{mcb} batches x {mnbt:,}" if mcb > 1 else f"max_num_batched_tokens {mnbt:,}"
        reserved = sum(g.blocks_per_request for g in windowed) * kv.bytes_per_block
        lines.append(f"vLLM reserves a windowed layer's window ({w.window_tokens:,} tokens) plus the tokens a request "
                     f"may have in flight ({batches} = {kv.in_flight_tokens:,}), up to the request's length: "
                     f"{_sz(reserved)} per request of {max_len:,} tokens in those layers")
    per_req = kv.bytes_per_request
    lines.append(f"one request of {max_len:,} tokens reserves {kv.blocks_per_request:,} blocks x "
                 f"{kv.bytes_per_block:,} B = {_sz(per_req)}; the {_sz(max(pool_bytes, 0))} pool holds "
                 f"{kv.max_concurrency:.2f} such requests at once (shorter requests take fewer blocks, so more fit)")
    if num_seqs > 1:
        lines.append(f"max_num_seqs {num_seqs:,} is a cap, not a reservation: all {num_seqs:,} at full length "
                     f"would need {_sz(per_req * num_seqs)}; vLLM admits requests while blocks are free")
    return lines


def _sz(n: float) -> str:
    return human_bytes(n)


def explain_kv(model: ModelSpec, specs: tuple, kv: KVDtype, tp: int, max_len: int, num_seqs: int,
               grows: int, window_bytes: int, state: int) -> list[str]:
    """The per-token / per-sequence / per-batch arithmetic with the model's own numbers."""
    lines: list[str] = []
    elem = kv.element_bits / 8
    elem_s = f"{elem:g} B" if kv.mla_token_bytes is None else f"{kv.mla_token_bytes} B/token"
    by_shape: dict[tuple, list] = {}
    for g, s in zip(model.layers, specs, strict=False):
        if isinstance(s, MambaSpec):
            by_shape.setdefault(("state", g.mamba.variant if g.mamba else ""), []).append((g, s))
        else:
            by_shape.setdefault((g.kind, s.num_kv_heads, g.head_size, g.head_size_v, g.window), []).append((g, s))
    n_total = model.num_hidden_layers
    for key, members in by_shape.items():
        g, s = members[0]
        n = len(members)
        if key[0] == "state":
            label = g.why.split(":")[0].removesuffix(" layer")
            lines.append(f"{n} of {n_total} layers are {label} layers: a fixed state of "
                         f"{s.real_page_size_bytes:,} B per sequence each, whatever the length "
                         f"(x {n} = {_sz(n * s.real_page_size_bytes)} per sequence)")
            continue
        per = n * s.bytes_per_token
        if g.kind == "mla" and g.kv_bytes_override is not None:
            # DeepseekV32IndexerCache: uint8 keys + an fp32 scale per 128 elements, whatever the KV dtype
            lines.append(f"{n} indexer key caches (sparse attention, one per MLA layer) x {g.head_size} B "
                         f"(uint8 keys + fp32 scales) = {per:,} B per token, not split by TP")
            continue
        if g.kind == "mla":
            lines.append(f"{n} MLA layers x {g.head_size} latent (kv_lora_rank + qk_rope_head_dim) x {elem_s}"
                         f" = {per:,} B per token: one latent per token, not K and V, and not split by TP")
            continue
        heads = s.num_kv_heads
        hv = f"({g.head_size} + {g.head_size_v})" if g.head_size_v != g.head_size else f"2 x {g.head_size}"
        tp_note = f" ({g.num_kv_heads} KV heads / TP {tp})" if tp > 1 else ""
        what = {"full": "full attention", "sliding": f"sliding window {g.window}",
                "chunked": f"chunked attention, chunk {g.window}"}[g.kind]
        if hv.startswith("2 x"):
            formula = f"2 x {n} layers x ({heads} KV heads{tp_note} x {g.head_size} head_dim) x {elem_s}"
        else:
            formula = f"{n} layers x {heads} KV heads{tp_note} x {hv} head dims x {elem_s}"
        lines.append(f"{what}: {formula} = {per:,} B = {_sz(per)} per token")
    growing = any(g.kind in ("full", "mla") for g in model.layers)
    if grows and growing:
        lines.append(f"KV per token {grows:,} B x {max_len:,} tokens = {_sz(grows * max_len)} per sequence at "
                     f"full length, in the layers that keep every token")
    elif window_bytes:
        lines.append(f"every attention layer is windowed: at most {_sz(window_bytes)} of KV per sequence")
    if window_bytes and growing:
        lines.append(f"sliding-window / chunked layers keep at most their window: {_sz(window_bytes)} per "
                     f"sequence, however long it runs (vLLM reserves more per request: see below)")
    if state:
        lines.append(f"recurrent state: {_sz(state)} per sequence (fixed, not per token)")
    attn_layers = [g for g in model.layers if g.kind != "mamba"]
    if len(attn_layers) < n_total and attn_layers and model.layers_of("full"):
        g0 = model.layers_of("full")[0]
        heads0 = kv_heads_per_rank(g0.num_kv_heads, tp)
        naive = 2 * n_total * heads0 * g0.head_size * elem
        if naive > grows > 0:
            lines.append(f"why not 2 x {n_total} layers x ({heads0} x {g0.head_size}) x "
                         f"{elem:g} B = {int(naive):,} B per token: only {len(model.layers_of('full'))} of "
                         f"{n_total} layers keep per-token KV; the naive formula overstates it "
                         f"{naive / grows:.1f}x")
    return lines


def per_sequence_costs(specs: tuple, layout: KVCacheLayout, max_len: int,
                        limits: RequestLimits) -> tuple[int, int, int]:
    """(bytes per token of layers that keep every token, window KV per sequence, fixed state)."""
    grows = window = state = 0
    full_types = ("FullAttentionSpec", "MLAAttentionSpec")
    for s in specs:
        if isinstance(s, MambaSpec):
            state += s.real_page_size_bytes
        elif layout.hybrid_manager_disabled or s.type_name in full_types:
            grows += s.bytes_per_token
        else:
            w = getattr(s, "sliding_window", 0) or getattr(s, "attention_chunk_size", 0)
            window += s.bytes_per_token * min(w, max_len)
    if grows == 0 and window:
        # every attention layer is windowed (Mistral-7B-v0.1): a token costs them until it leaves the window
        grows = sum(s.bytes_per_token for s in specs if not isinstance(s, MambaSpec))
    return grows, window, state


_sequence_costs = per_model(pinned=2, max_entries=1024)(per_sequence_costs)  # see _kv_text
