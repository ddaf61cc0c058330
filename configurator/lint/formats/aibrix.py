"""AIBrix `StormService` (orchestration.aibrix.ai/v1alpha1): the pod template of each role
(`spec.template.spec.roles[].template`, e.g. prefill and decode) runs one vLLM server.

Keys from AIBrix's StormService API and samples (samples/disaggregation/vllm/*.yaml): spec.{replicas,
template.spec.roles[].{name, replicas, template.{metadata, spec}}}. AIBrix's other samples are plain
Deployments (read by the workloads format).
"""

from __future__ import annotations

from configurator.lint.extract import Inputs, Server, pod_servers
from configurator.lint.formats import register
from configurator.lint.shape import Node


def recognise(obj: Node) -> bool:
    return obj.str("kind") == "StormService" and (obj.str("apiVersion") or "").startswith("orchestration.aibrix.ai/")


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    out = []
    for role in obj.mappings("spec", "template", "spec", "roles"):
        pod = role.mapping("template", "spec")
        if pod is None:
            continue
        for s in pod_servers(obj, pod, inputs, kind="StormService", pod_meta=role.mapping("template", "metadata")):
            s.container = f"{role.name('name') or role.path[-1]}/{s.container}"
            out.append(s)
    return out


register("aibrix-stormservice", recognise, extract, order=50, kinds=("StormService",))
