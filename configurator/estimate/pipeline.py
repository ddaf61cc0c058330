"""`estimate()`: the stages in order, each a pure function of the ones before.

inputs -> budget -> KV layout -> verdict -> explanation. The CLI, `plan`, `check` and the webhook
all call `estimate()`; they only change the edges.
"""

from __future__ import annotations

from configurator.estimate.budget import plan_budget
from configurator.estimate.explain import explain, explain_without_gpu
from configurator.estimate.inputs import NO_GPU, resolve_inputs
from configurator.estimate.layout import plan_kv_layout
from configurator.estimate.result import EstimateRequest, EstimateResult
from configurator.estimate.verdict import decide


def estimate(req: EstimateRequest) -> EstimateResult:
    """Predict vLLM's start-up for one deployment. Raises InputError on bad input."""
    inp = resolve_inputs(req)
    budget = plan_budget(inp, req)
    kvp = plan_kv_layout(inp)
    if inp.gpu is NO_GPU:
        return explain_without_gpu(inp, kvp, budget)
    verdict = decide(inp, kvp, budget)
    return explain(inp, kvp, budget, verdict)
