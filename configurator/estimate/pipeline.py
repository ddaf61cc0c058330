"""`estimate()`: the stages in order, each a pure function of the ones before.

inputs -> budget -> KV layout -> verdict -> explanation. The CLI, `plan`, `check` and the webhook
all call `estimate()`; they only change the edges.
"""

from __future__ import annotations

from dataclasses import replace

from configurator.estimate.band import CALIBRATED_BYTES, band_for, release_assumed, stratum_keys
from configurator.estimate.budget import Budget, plan_budget
from configurator.estimate.explain import NEEDS_GPU, explain, explain_limited
from configurator.estimate.inputs import NO_GPU, Inputs, resolve_inputs
from configurator.estimate.layout import KVPlan, plan_kv_layout
from configurator.estimate.result import EstimateRequest, EstimateResult
from configurator.estimate.verdict import Verdict, decide
from configurator.units import format_gib
from configurator.vllm import messages


def estimate(req: EstimateRequest) -> EstimateResult:
    """Predict vLLM's start-up for one deployment. Raises InputError on bad input."""
    inp = resolve_inputs(req)
    budget = plan_budget(inp, req)
    kvp = plan_kv_layout(inp)
    if inp.gpu is NO_GPU:
        return explain_limited(inp, kvp, budget, f"needs a GPU: {NEEDS_GPU}")
    if inp.v0_reason:
        # weights larger than the card stop any engine, V0 too: refused on every release
        oom = (messages.weights_oom(budget.weights_bytes, budget.free_bytes, inp.tp, inp.pp),) \
            if budget.weights_oom else ()
        return explain_limited(inp, kvp, budget, inp.v0_reason, oom)
    verdict = decide(inp, kvp, budget)
    result = explain(inp, kvp, budget, verdict)
    return with_band(result, inp, kvp, budget, verdict, assumed=release_assumed(req.vllm_version))


def with_band(result: EstimateResult, inp: Inputs, kvp: KVPlan, budget: Budget, verdict: Verdict,
              assumed: bool = False) -> EstimateResult:
    """The available-KV band and the verdict across it (configurator/estimate/band.py)."""
    avail = budget.available_bytes
    band = band_for(stratum_keys(inp.model, inp.b.version, inp.flags, inp.gpu, assumed),
                    budget.requested_bytes)
    basis = band.basis
    if budget.kv_bytes_flag:
        below = above = 0
        why = basis = "--kv-cache-memory-bytes: vLLM uses exactly this many bytes"
    elif budget.calibrated and not budget.calibrated_other_layout:
        below = above = CALIBRATED_BYTES
        why = basis = "calibrated from a real log of this model, GPU and release"
    elif budget.calibrated:  # measured at another TP / PP: the new layout's communication memory is predicted
        below, above = max(band.below, CALIBRATED_BYTES), max(band.above, CALIBRATED_BYTES)
        why = (f"calibrated at another tensor / pipeline layout, so the logs' error applies: {basis} "
               "(profiles/error_bands.yaml)")
    else:
        below, above = band.below, band.above
        why = f"{basis} (profiles/error_bands.yaml)"
    if budget.sampler_spread_bytes and not budget.kv_bytes_flag:
        # which profiling sampler runs depends on the install (versions.sampler_uncertain): the low end counts the
        # PyTorch-native sampler's peak, the high end FlashInfer's (the same overhead model, not fitted)
        above += budget.sampler_spread_bytes
        extra = (f"; high end +{format_gib(budget.sampler_spread_bytes)} GiB: FlashInfer's profiling sampler "
                 "where it is installed (the official vllm/vllm-openai image) holds that much less than the native one")
        why += extra
        basis += extra
    if budget.features.unmodelled_layout and not budget.kv_bytes_flag:
        # a KV layout the tool does not model (its own warning names it): what vLLM's check needs per request is
        # unknown, so the pessimistic end is no KV at all and the verdict can be `at-risk`, never a silent `fits`
        below = avail
        why += "; the model's KV layout is not modelled, so the band reaches down to no KV cache"
    low, high = avail - below, avail + above
    fixed = bool(inp.errors or budget.errors)  # refusals the band does not move
    at_high = decide(inp, kvp, replace(budget, available_bytes=high)).errors if above else verdict.errors
    at_low = decide(inp, kvp, replace(budget, available_bytes=low)).errors if below else verdict.errors
    # the room outside vLLM's budget: util x total is a share of the whole GPU, so the CUDA context and other
    # processes (--gpu-memory-used) share what is left with a CUDA-graph pool the release does not count in the
    # budget (before 0.20; model runner V2 until 0.29): captured after the KV cache is allocated, it must fit there
    room = budget.free_bytes - budget.requested_bytes
    ov = budget.overheads
    spill = ov.graph_pool_bytes if not ov.cudagraph_bytes else 0
    tight = not fixed and not budget.kv_bytes_flag and spill > 0 and room < spill
    if fixed or at_high:
        state = "refused"
    elif verdict.errors or at_low or tight:
        state = "at-risk"
    else:
        state = "fits"
    derivation = list(result.derivation)
    warnings = list(result.warnings)
    if tight:
        note = (f"outside the budget only {format_gib(max(room, 0))} GiB is left (total - memory in use before start "
                f"- util x total) for the ~{format_gib(spill)} GiB CUDA-graph pool this release captures after "
                f"sizing the KV cache without counting it: the capture can run out of memory (lower "
                f"--gpu-memory-utilization, or --enforce-eager)")
        derivation.append(note)
        warnings.append(f"at-risk: {note}")
    if below or above:
        derivation.append(f"error band: available KV {format_gib(low)} to {format_gib(high)} GiB ({why}); "
                          f"verdict {state}")
    return replace(result, verdict=state, kv_cache_bytes_low=low, kv_cache_bytes_high=high, derivation=derivation,
                   warnings=warnings, band_basis=basis)
