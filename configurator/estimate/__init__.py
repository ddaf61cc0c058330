"""`estimate`: what vLLM will allocate and log for a model, a GPU and a set of flags.

A pipeline of named stages (configurator/estimate/pipeline.py), each testable alone:
inputs (inputs.py) -> budget (budget.py) -> KV layout (layout.py) -> verdict (verdict.py) ->
explanation (explain.py). The public names are re-exported here.
"""

from configurator.estimate.budget import CUDA_CONTEXT_BYTES, NCCL_INIT_BYTES
from configurator.estimate.explain import explain_kv, request_bytes
from configurator.estimate.pipeline import estimate
from configurator.estimate.result import (
    EstimateRequest,
    EstimateResult,
    GPUInfo,
    GroupInfo,
    KVCacheInfo,
    MemoryBreakdown,
    ModelInfo,
)

__all__ = ["CUDA_CONTEXT_BYTES", "NCCL_INIT_BYTES", "EstimateRequest", "EstimateResult", "GPUInfo", "GroupInfo",
           "KVCacheInfo", "MemoryBreakdown", "ModelInfo", "estimate", "explain_kv", "request_bytes"]
