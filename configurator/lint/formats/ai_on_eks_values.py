"""Values files of ai-on-eks inference-charts (awslabs/ai-on-eks blueprints/inference/inference-charts):
one vLLM server when `inference.framework` is a vLLM one.

Keys from the chart's values.yaml and templates (lws-deployment.yaml, ...): model (Hugging Face id),
modelParameters (camelCase vLLM options: gpuMemoryUtilization, maxModelLen, maxNumSeqs,
tensorParallelSize, pipelineParallelSize, ...), inference.{framework, accelerator,
modelServer.{image.{repository, tag}, deployment.{resources.gpu.{requests, limits}, instanceType}}}.
`instanceType` is rendered as a `node.kubernetes.io/instance-type` node selector; with `lws-vllm` one
model replica is a LeaderWorkerSet group of `pipelineParallelSize` pods, each with a memory-backed
/dev/shm of 15Gi (templates/lws-deployment.yaml).
"""

from __future__ import annotations

import re

from configurator.lint.extract import Inputs, Server, gpu_request
from configurator.lint.formats import register
from configurator.lint.formats._common import apply_kwargs, new_server, set_model
from configurator.lint.shape import Node

VLLM_FRAMEWORKS = ("vllm", "ray-vllm", "triton-vllm", "aibrix", "lws-vllm")
INSTANCE_LABEL = "node.kubernetes.io/instance-type"
LWS_SHM_BYTES = 15 << 30  # the dshm emptyDir of templates/lws-deployment.yaml
_CAMEL = re.compile(r"([A-Z])")


def recognise(obj: Node) -> bool:
    return not obj.has("kind") and obj.mapping("inference", "modelServer") is not None and obj.has("modelParameters")


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    inf = obj.mapping("inference")
    assert inf is not None  # recognise
    framework = inf.str("framework")
    if not framework:
        inf.note((*inf.path, "framework"), "not set: the chart renders no model server "
                 f"(one of {', '.join(VLLM_FRAMEWORKS)} runs vLLM)")
        return []
    if framework not in VLLM_FRAMEWORKS:
        return []
    ms = inf.mapping("modelServer")
    img = ms.mapping("image") if ms is not None else None
    image = f"{img.text('repository')}:{img.text('tag')}" if img is not None and img.text("repository") else None
    s = new_server(obj, obj.at("modelParameters"), kind=f"ai-on-eks {framework}", container="vllm", image=image,
                   name=inf.name("serviceName") or "inference")
    apply_kwargs(s, obj.mapping("modelParameters"), name=lambda k: _CAMEL.sub(r"_\1", k).lower())
    set_model(s, obj.str("model"), obj.loc("model"))
    dep = ms.mapping("deployment") if ms is not None else None
    if dep is not None:
        if (inf.str("accelerator") or "gpu") == "gpu":
            gpu = dep.mapping("resources", "gpu")
            if gpu is not None:
                gpu_request(s, _as_container(gpu))
        it = dep.text("instanceType")
        if it:
            s.gpu_labels = {INSTANCE_LABEL: [it]}
            s.gpu_labels_loc = dep.loc("instanceType")
    if framework == "lws-vllm":
        s.pods = int(s.flags.get("pipeline_parallel_size") or 1)
        s.shm_bytes, s.shm_loc = LWS_SHM_BYTES, inf.loc("framework")
    return [s]


def _as_container(gpu: Node) -> Node:
    """resources.gpu.{requests, limits} read as a container's resources."""
    return Node(gpu.doc, gpu.path[:-1], {"resources": gpu.value}, gpu.notes)


register("ai-on-eks-values", recognise, extract, order=16, kinds=())
