"""PlanResult -> values for charts/vllm: the flags, the deployment shape, GPU selection, /dev/shm,
resources, the start-up budget (startup probe and the Deployment's progress deadline) and the model
revision that a plan implies.

Pure functions of the plan and a few deployment options. `chart_values()` is the one derivation:
the Helm values (`helm_values()`), the plain manifests (configurator.emit.manifest) and the
production-stack values (configurator.emit.production_stack) all start from it, so the three
outputs agree on every number. docs/helm.md explains each rule.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from configurator.emit.values_model import (
    ChartValues,
    GpuSelection,
    HfToken,
    Image,
    ModelCache,
    ModelSource,
    Persistence,
    Probe,
    Probes,
    ResourceList,
    Shm,
    VllmSettings,
    camel,
)
from configurator.errors import InputError
from configurator.startup import WEIGHT_LOAD_BYTES_PER_S, StartupTime, progress_deadline_s, startup_time
from configurator.units import GiB

if TYPE_CHECKING:
    from configurator.plan_result import PlanResult

DEFAULT_GPUS_PER_NODE = 8  # the usual HGX / DGX node; a plan with more GPUs spans nodes

# ---- the start-up budget (docs/helm.md, "The start-up budget"; the time model: configurator.startup)
PROBE_PERIOD_S = 10
MIN_STARTUP_FAILURES = 30  # never less than 5 minutes

# ---- host resources per pod (docs/helm.md, "Resources") ---------------------------------------
# /dev/shm: NCCL's shared-memory transport and vLLM's broadcast queues between the GPU workers;
# 2 GiB per GPU in the pod (8 GPUs: 16 GiB, as the LWS example's 15Gi and production-stack's 20Gi).
SHM_BYTES_PER_GPU = 2 * GiB
# CPU memory: the API server and engine core (16 GiB) plus ~4 GiB per GPU worker process (CUDA and
# torch runtime, pinned buffers), plus /dev/shm, which a memory-backed emptyDir charges to the pod.
HOST_MEMORY_BASE_BYTES = 16 * GiB
HOST_MEMORY_PER_GPU_BYTES = 4 * GiB
CPU_PER_GPU = 2
MIN_CPU = 4
PVC_HEADROOM = 1.25  # the cache holds the checkpoint plus tokenizer files, partial downloads


@dataclass(frozen=True)
class DeployOptions:
    """What a plan does not say about a deployment; every default is the chart's."""

    gpus_per_node: int = DEFAULT_GPUS_PER_NODE
    replicas: int = 1
    image_repository: str = "vllm/vllm-openai"
    image_tag: str | None = None  # None: the planned vLLM release, v<version>
    hf_token_secret: str | None = None  # None: the chart's default Secret (hf-token, optional)
    cache_pvc: bool = False
    storage_class: str | None = None
    name: str | None = None  # the objects' name in plain manifests; None: vllm-<model>
    revision: str | None = None  # the model's Hub branch, tag or commit (--revision); None: the default branch
    weight_load_bytes_per_s: int = WEIGHT_LOAD_BYTES_PER_S


@dataclass(frozen=True)
class Shape:
    """How a plan's GPUs are laid out: `nodes` pods (one per node) of `gpus_per_pod` GPUs."""

    nodes: int
    gpus_per_pod: int


@dataclass(frozen=True)
class StartupBudget(StartupTime):
    """How long a first start may take before the startup probe gives up, and why."""

    period_s: int
    failure_threshold: int


@dataclass(frozen=True)
class GpuNodes:
    """The extended resource a pod requests and the node-label values of the planned GPU."""

    resource: str
    label: str
    products: tuple[str, ...]


def shape(gpus: int, gpus_per_node: int) -> Shape:
    """8 GPUs on 8-GPU nodes: one pod of 8; 16: two pods of 8 (a LeaderWorkerSet)."""
    if gpus_per_node < 1:
        raise InputError(f"GPUs per node must be positive, got {gpus_per_node}")
    if gpus <= gpus_per_node:
        return Shape(1, gpus)
    if gpus % gpus_per_node:
        raise InputError(f"the plan uses {gpus} GPUs, which {gpus_per_node}-GPU nodes cannot split evenly; "
                         f"plan a multiple of {gpus_per_node}")
    return Shape(gpus // gpus_per_node, gpus_per_node)


def engine_gpus(plan: PlanResult) -> int:
    """The GPUs of one engine (one `vllm serve`): the plan's GPUs over its replicas (Deployment replicas,
    LeaderWorkerSet groups), each a pod or a group of pods of its own."""
    return plan.gpus // max(1, plan.replicas)


def checkpoint_bytes(plan: PlanResult) -> int:
    """What each pod downloads and loads: the weights on one GPU x the GPUs (tensor and pipeline shards
    add up to the checkpoint; replicated embeddings make this a slight over-estimate). Online
    quantization (--quantization on a 16-bit checkpoint) downloads the 16-bit weights: twice the fp8."""
    total = plan.estimate.memory.weights_bytes * engine_gpus(plan)
    online = plan.flags.get("quantization") and not plan.estimate.model.quantization
    return total * 2 if online else total


def startup_budget(plan: PlanResult, opts: DeployOptions | None = None) -> StartupBudget:
    """failureThreshold x periodSeconds of the startup probe, from the weight bytes.

    Llama-3.1-8B (15 GiB, 1 GPU): 120 s + 15 GiB / 200 MiB/s = 77 s + 240 s = 437 s -> 44 x 10 s.
    """
    opts = opts or DeployOptions()
    if opts.weight_load_bytes_per_s <= 0:
        raise InputError("the weight load rate must be positive")
    t = startup_time(checkpoint_bytes(plan), enforce_eager=bool(plan.flags.get("enforce_eager")),
                     multi_node=shape(engine_gpus(plan), opts.gpus_per_node).nodes > 1,
                     rate_bytes_per_s=opts.weight_load_bytes_per_s)
    return StartupBudget(download_bytes=t.download_bytes, load_s=t.load_s, fixed_s=t.fixed_s, compile_s=t.compile_s,
                         multi_node_s=t.multi_node_s, period_s=PROBE_PERIOD_S,
                         failure_threshold=max(MIN_STARTUP_FAILURES, math.ceil(t.total_s / PROBE_PERIOD_S)))


def gpu_nodes(gpu_name: str) -> GpuNodes:
    """h100-80gb -> nvidia.com/gpu on nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3; a MIG slice
    (a100-80gb:3g.40gb) -> nvidia.com/mig-3g.40gb (the device plugin's mixed strategy) on the parent's
    nodes; AMD -> amd.com/gpu on amd.com/gpu.product-name; a GPU given by its memory -> no selection."""
    if gpu_name == "custom":
        return GpuNodes("nvidia.com/gpu", "nvidia.com/gpu.product", ())
    from configurator.hardware.catalog import find_gpu

    gpu = find_gpu(gpu_name)
    products = gpu.gfd_products
    if gpu.vendor == "amd":
        return GpuNodes("amd.com/gpu", "amd.com/gpu.product-name", products)
    if gpu.mig_profile:
        return GpuNodes(f"nvidia.com/mig-{gpu.mig_profile}", "nvidia.com/gpu.product", products)
    return GpuNodes("nvidia.com/gpu", "nvidia.com/gpu.product", products)


def default_name(model: str) -> str:
    """meta-llama/Llama-3.3-70B-Instruct -> vllm-llama-3-3-70b-instruct (a DNS label that starts with a
    letter, short enough for the suffixes a LeaderWorkerSet adds)."""
    slug = re.sub(r"[^a-z0-9]+", "-", model.rstrip("/").rsplit("/", 1)[-1].lower()).strip("-")
    return ("vllm-" + slug)[:40].rstrip("-")


def _gi(n_bytes: int) -> str:
    return f"{math.ceil(n_bytes / GiB)}Gi"


def chart_values(plan: PlanResult, opts: DeployOptions | None = None) -> ChartValues:
    """Everything a plan decides about a deployment, as typed chart values (defaults elsewhere)."""
    opts = opts or DeployOptions()
    if not plan.feasible:
        raise InputError(f"no plan carries the workload, so there is nothing to deploy: {plan.summary}")
    if opts.replicas < 0:
        raise InputError(f"replicas must not be negative, got {opts.replicas}")
    lay = shape(engine_gpus(plan), opts.gpus_per_node)
    gpu = gpu_nodes(plan.gpu)
    budget = startup_budget(plan, opts)
    shm_bytes = SHM_BYTES_PER_GPU * lay.gpus_per_pod
    offload_bytes = int(float(plan.flags.get("cpu_offload_gb") or 0) * GiB) * lay.gpus_per_pod
    memory = HOST_MEMORY_BASE_BYTES + HOST_MEMORY_PER_GPU_BYTES * lay.gpus_per_pod + shm_bytes + offload_bytes
    fields: dict[str, Any] = dict(
        image=Image(repository=opts.image_repository, tag=opts.image_tag or f"v{plan.vllm_version}"),
        model=ModelSource(name=plan.model, **({"revision": opts.revision} if opts.revision else {})),
        vllm=VllmSettings(**{camel(k): v for k, v in plan.flags.items() if v is not None}),
        replicaCount=opts.replicas * max(1, plan.replicas),  # the plan's replicas, each engine a pod (group)
        nodes=lay.nodes,
        gpusPerNode=lay.gpus_per_pod,
        gpu=GpuSelection(resource=gpu.resource, productLabel=gpu.label, products=list(gpu.products)),
        resources=ResourceList(requests={"cpu": str(max(MIN_CPU, CPU_PER_GPU * lay.gpus_per_pod)),
                                         "memory": _gi(memory)}),
        shm=Shm(sizeLimit=_gi(shm_bytes)),
        probes=Probes(startup=Probe(periodSeconds=budget.period_s, failureThreshold=budget.failure_threshold,
                                    timeoutSeconds=5)),
    )
    if lay.nodes == 1:  # a Deployment's rollout outlasts the start-up (a LeaderWorkerSet has no deadline)
        fields["progressDeadlineSeconds"] = progress_deadline_s(budget.period_s * budget.failure_threshold)
    if opts.hf_token_secret is not None:
        fields["hfToken"] = HfToken(secretName=opts.hf_token_secret)
    size = _gi(math.ceil(budget.download_bytes * PVC_HEADROOM / (10 * GiB)) * 10 * GiB)
    if opts.cache_pvc:
        fields["modelCache"] = ModelCache(persistence=Persistence(enabled=True, size=size,
                                                                  storageClass=opts.storage_class))
    else:  # the emptyDir holds the checkpoint: limited to its size, so a runaway download cannot fill the node
        fields["modelCache"] = ModelCache(sizeLimit=size)
    if plan.gpu != "custom":  # the linter reads the GPU from this annotation when no node label says it
        fields["podAnnotations"] = {"vllm-configurator.io/gpu": plan.gpu}
    return ChartValues(**fields)


def deployment_warnings(plan: PlanResult, opts: DeployOptions | None = None) -> list[str]:
    """Sentences about a deployment that works but is not what vLLM recommends."""
    opts = opts or DeployOptions()
    lay = shape(engine_gpus(plan), opts.gpus_per_node)
    tp = int(plan.flags.get("tensor_parallel_size") or 1)
    out = []
    if lay.nodes > 1 and tp > lay.gpus_per_pod:
        out.append(f"tensor parallelism ({tp}) spans nodes of {lay.gpus_per_pod} GPUs, over the network: vLLM "
                   f"recommends tensor parallelism within a node and pipeline stages across nodes "
                   f"(plan with --tensor-parallel-size {lay.gpus_per_pod} --pipeline-parallel-size {lay.nodes})")
    return out


def helm_values(plan: PlanResult, opts: DeployOptions | None = None) -> dict[str, Any]:
    """The values file for charts/vllm: only what the plan and the options set, in the chart's key order."""
    return chart_values(plan, opts).model_dump(exclude_unset=True)
