"""How long vLLM takes to answer /health on a first start: the one model behind the chart's startup
probe and its Deployment's progressDeadlineSeconds (configurator.emit.helm) and `check`'s
startup-probe-too-short rule. docs/helm.md explains it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from configurator.units import MiB

# Download and load rate of the weights on a first start: a conservative 200 MiB/s (about 1.7 Gbit/s
# from the Hugging Face Hub). A warm cache on local NVMe or a PVC loads 5-10x faster; a slower link
# only costs a restart, which keeps the pod's emptyDir and resumes the download.
WEIGHT_LOAD_BYTES_PER_S = 200 * MiB
# Container start, imports, engine and KV-cache initialisation, the memory-profiling run.
STARTUP_FIXED_S = 120
# torch.compile and CUDA-graph capture with cold caches (none with --enforce-eager).
COMPILE_AND_GRAPHS_S = 240
# The leader's Ray head waiting for every worker pod to join (LeaderWorkerSet only).
RAY_CLUSTER_S = 120
# A rollout waits for more than the start-up: the pod is scheduled (on a GPU node that an autoscaler
# may first have to create: minutes) and pulls the vLLM image (vllm/vllm-openai is about 10 GiB
# compressed: ~2 minutes at 100 MiB/s) before the startup probe's clock starts. Kubernetes' default
# progressDeadlineSeconds is this margin alone (600 s), which a 70B start-up (1,034 s) already exceeds.
ROLLOUT_MARGIN_S = 600


@dataclass(frozen=True)
class StartupTime:
    download_bytes: int  # the checkpoint a pod downloads and loads
    load_s: int
    fixed_s: int
    compile_s: int
    multi_node_s: int

    @property
    def total_s(self) -> int:
        return self.fixed_s + self.load_s + self.compile_s + self.multi_node_s


def startup_time(download_bytes: int, *, enforce_eager: bool = False, multi_node: bool = False,
                 rate_bytes_per_s: int = WEIGHT_LOAD_BYTES_PER_S) -> StartupTime:
    """Llama-3.1-8B (15 GiB): 120 s + 15 GiB / 200 MiB/s = 77 s + 240 s = 437 s."""
    return StartupTime(download_bytes, math.ceil(download_bytes / rate_bytes_per_s), STARTUP_FIXED_S,
                       0 if enforce_eager else COMPILE_AND_GRAPHS_S, RAY_CLUSTER_S if multi_node else 0)


def progress_deadline_s(startup_budget_s: int) -> int:
    """A Deployment's progressDeadlineSeconds for a start-up budget (the startup probe's
    failureThreshold x periodSeconds): Llama-3.3-70B on 4 GPUs, 104 x 10 s -> 1,040 + 600 = 1,640 s."""
    return startup_budget_s + ROLLOUT_MARGIN_S
