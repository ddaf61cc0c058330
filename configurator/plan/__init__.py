"""`plan`: choose --gpu-memory-utilization, --kv-cache-dtype, --max-num-seqs and --max-model-len (and,
given a GPU count, the layout: replicas, tensor / pipeline / data parallelism) that vLLM accepts and that
carry a workload, meeting its TTFT / TPOT targets where it states them; explain them.

A pure search over candidates, each judged by `estimate` (the same memory core, release and calibration),
its speed by configurator/speed. Preference order, first to last, documented in docs/plan.md:

1. layout: for `--gpus N` (at most MAX_GPUS), engines within a node (`--gpus-per-node`, 8) as replicas,
   each engine its widest tensor parallelism that divides the heads, or data-parallel attention with
   expert parallelism for a MoE model; an engine spans nodes (pipeline stages across them) only when no
   engine within a node carries the workload; among those that carry it, the targets met, then the most
   output throughput per GPU (replicas where they are as fast per GPU);
2. full-precision KV before fp8 when both carry the workload; fp8 only where the GPU supports it;
3. the lowest utilization that carries it, from 0.90 up to 0.95 (never 0.98: the margin holds the
   CUDA context, NCCL and fragmentation);
4. max_model_len = the workload's longest request rounded up to a multiple of 1,024 tokens (within
   the model's limit), or what was asked (`full`: the model's limit);
5. max_num_seqs = what each scheduler's pool holds at the typical length, less the headroom, capped at
   vLLM's default for the GPU class.

When no candidate carries the target, the result is still a plan: the candidate that carries the
most requests ("short", with how far and the checked remedies), or, when vLLM would start with
none, the most preferred candidate and why it fails ("nothing-starts"). A workload whose concurrency
is a queue (`queue: true`) carries what the pool holds and states how many wait.
"""

from __future__ import annotations

from configurator.plan.layouts import divisors as _divisors
from configurator.plan.remedies import GPU_CLASS_LABELS
from configurator.plan.remedies import larger_gpus as _larger_gpus
from configurator.plan.search import (
    DEFAULT_HEADROOM,
    LEN_STEP_TOKENS,
    MAX_GPUS,
    UTILIZATIONS,
    Layout,
    PlanRequest,
    less_headroom,
    with_headroom,
)
from configurator.plan.solve import plan
from configurator.plan_result import Alternative, Capacity, LayoutOption, PlanResult, Reason, Remedy  # (old home)

__all__ = ["DEFAULT_HEADROOM", "GPU_CLASS_LABELS", "LEN_STEP_TOKENS", "MAX_GPUS", "UTILIZATIONS", "Alternative",
           "Capacity", "Layout", "LayoutOption", "PlanRequest", "PlanResult", "Reason", "Remedy", "_divisors",
           "_larger_gpus", "less_headroom", "plan", "with_headroom"]
