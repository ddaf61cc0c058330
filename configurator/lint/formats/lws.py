"""LeaderWorkerSet (sigs.k8s.io/lws): one model replica served by a group of `size` pods.

The leader's pod template is read when there is one (it runs `vllm serve`), else the workers'.
Field names from the LWS API: spec.leaderWorkerTemplate.{size, leaderTemplate, workerTemplate}.
"""

from __future__ import annotations

from configurator.lint.extract import Inputs, Server, pod_servers, workload_pod
from configurator.lint.formats import register
from configurator.lint.shape import Node

MAX_GROUP = 1 << 16


def recognise(obj: Node) -> bool:
    return obj.str("kind") == "LeaderWorkerSet"


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    lwt = obj.mapping("spec", "leaderWorkerTemplate")
    if lwt is None:
        return []
    size = lwt.int("size", lo=1, hi=MAX_GROUP) or 1
    template = "leaderTemplate" if lwt.mapping("leaderTemplate", "spec") is not None else "workerTemplate"
    pod = workload_pod(lwt, (template, "spec"))
    if pod is None:
        return []
    return pod_servers(obj, pod, inputs, kind="LeaderWorkerSet", pods=size, pod_meta=lwt.mapping(template, "metadata"))


register("leaderworkerset", recognise, extract, kinds=("LeaderWorkerSet",))
