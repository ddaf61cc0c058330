"""KServe: InferenceService (predictor containers and its `model`), ServingRuntime,
ClusterServingRuntime and LLMInferenceService (spec.template)."""

from __future__ import annotations

from configurator.lint.extract import Inputs, Server, container_server, pod_servers
from configurator.lint.formats import register
from configurator.lint.shape import Node

KINDS = ("InferenceService", "ServingRuntime", "ClusterServingRuntime", "LLMInferenceService")


def recognise(obj: Node) -> bool:
    return obj.str("kind") in KINDS


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    kind = obj.str("kind") or ""
    if kind in ("ServingRuntime", "ClusterServingRuntime"):
        pod = obj.mapping("spec")
        return [] if pod is None else pod_servers(obj, pod, inputs, kind=kind, pod_meta=obj.mapping("metadata"))
    if kind == "LLMInferenceService":
        pod = obj.mapping("spec", "template")
        return [] if pod is None else pod_servers(obj, pod, inputs, kind=kind)
    pod = obj.mapping("spec", "predictor")
    if pod is None:
        return []
    out = []
    model = pod.mapping("model")
    if model is not None:
        s = container_server(obj, pod, model, inputs, kind=kind, default_name="model")
        if s is not None:
            uri = model.str("storageUri")
            if "model" not in s.flags and uri is not None and uri.startswith("hf://"):
                s.flags["model"] = uri[5:]
                s.flag_locs["model"] = model.loc("storageUri")
            out.append(s)
    return out + pod_servers(obj, pod, inputs, kind=kind)


register("kserve", recognise, extract)
