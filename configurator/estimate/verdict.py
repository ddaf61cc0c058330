"""Stage 4, verdict: blocks, tokens and concurrency from the KV bytes, and vLLM's fit checks.

Mirrors vllm/v1/core/kv_cache_utils.py: num_blocks = min over workers (PP stages) of available //
bytes_per_block; `--max-model-len auto` fits the length to memory; the start-up check refuses when
one request of max_model_len does not fit; the Mamba cache must hold max_num_seqs blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

from configurator.estimate.budget import Budget
from configurator.estimate.inputs import Inputs
from configurator.estimate.layout import KVPlan
from configurator.memory.capacity import CapacityRules, KVCapacity, Worker, fit_check, kv_capacity
from configurator.memory.groups import KVCacheLayout
from configurator.memory.kv_specs import RequestLimits
from configurator.units import format_gib
from configurator.vllm import messages


@dataclass(frozen=True)
class Verdict:
    """What vLLM allocates, the length it runs at, and its refusals."""

    max_len: int  # after --max-model-len auto
    mnbt: int
    limits: RequestLimits
    capacity: KVCapacity
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    derivation: tuple[str, ...] = ()


def workers(inp: Inputs, kvp: KVPlan, budget: Budget) -> list[Worker]:
    """One worker per PP stage (TP ranks are identical), each with the layers it holds."""
    if inp.pp <= 1:  # one stage holds every layer
        return [Worker(budget.available_bytes, None) for _ in range(inp.pp)]
    layer_stage = {}
    for s, r in enumerate(budget.stages):
        for i in r:
            layer_stage[i] = s
    out = []
    for s in range(inp.pp):
        ids = frozenset(j for j, g in enumerate(kvp.rank.layers) if layer_stage.get(g.index, 0) == s)
        out.append(Worker(budget.available_bytes, ids if inp.pp > 1 else None))
    return out


def auto_fit(layout: KVCacheLayout, wks: list[Worker], limits: RequestLimits, rules: CapacityRules) -> int:
    """vLLM's auto-fit: the longest max_model_len whose one request fits on every worker."""
    best = limits.max_model_len
    for wk in wks:
        chk = fit_check(layout, wk, limits, rules)
        if chk.no_memory:
            return 0
        if not chk.ok:
            best = min(best, chk.estimated_max_model_len)
    return best


def decide(inp: Inputs, kvp: KVPlan, budget: Budget) -> Verdict:
    """Capacity and vLLM's KV refusals for these inputs, layout and budget."""
    b, layout = inp.b, kvp.layout
    errors: list[str] = []
    warnings: list[str] = []
    derivation: list[str] = []
    wks = workers(inp, kvp, budget)
    rules = CapacityRules(tokens=b.tokens, fit_check=b.fit_check)
    max_len, mnbt, limits = inp.max_len, inp.mnbt, kvp.limits
    if inp.auto_len and layout.groups:
        fitted = auto_fit(layout, wks, limits, rules)
        if fitted == 0:
            errors.append(messages.auto_fit_failed())
        else:
            if fitted < max_len:
                derivation.append(f"--max-model-len auto: reduced from {max_len:,} to {fitted:,} to fit "
                                  f"in {format_gib(budget.available_bytes)} GiB of KV cache")
            max_len = fitted
            limits = limits.with_len(max_len)
            if inp.mnbt_user is None:
                mnbt = min(inp.max_num_seqs * max_len, int(inp.batch.max_num_batched_tokens))
    cap = kv_capacity(layout, wks, limits, rules)
    if layout.groups and not budget.weights_oom:
        limiting = min(wks, key=lambda wk: (wk.available_bytes // max(layout.bytes_per_block(wk.layer_ids), 1)))
        chk = fit_check(layout, limiting, limits, rules)
        if rules.fit_check == "layers":  # 0.10-0.13: every worker checks its own layers, the first failure raises
            chk = next((c for c in (fit_check(layout, wk, limits, rules) for wk in wks) if not c.ok), chk)
        if chk.no_memory:
            errors.append(messages.no_memory(b.messages))
        elif not chk.ok:
            errors.append(messages.too_long(b.messages, max_len, chk.needed_bytes, chk.available_bytes,
                                            chk.estimated_max_model_len))
    if inp.model.has_mamba and b.hybrid_align == "kernel" and not inp.eager and inp.max_num_seqs > cap.num_blocks \
            and not budget.weights_oom:
        errors.append(f"max_num_seqs ({inp.max_num_seqs}) exceeds available Mamba cache blocks ({cap.num_blocks}). "
                      f"Each decode sequence requires one Mamba cache block, so CUDA graph capture cannot "
                      f"proceed. Please lower max_num_seqs to at most {cap.num_blocks} or increase "
                      f"gpu_memory_utilization.")
    if inp.flags.get("num_gpu_blocks_override"):
        warnings.append("--num-gpu-blocks-override forces the block count; capacity shown is from memory")
    return Verdict(max_len=max_len, mnbt=mnbt, limits=limits, capacity=cap, errors=tuple(errors),
                   warnings=tuple(warnings), derivation=tuple(derivation))
