"""Plain Kubernetes workloads: Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob."""

from __future__ import annotations

from configurator.lint.extract import Inputs, Server, pod_servers, workload_pod
from configurator.lint.formats import register
from configurator.lint.shape import Node

POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def recognise(obj: Node) -> bool:
    return obj.str("kind") in POD_SPEC_PATHS


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    kind = obj.str("kind") or ""
    path = POD_SPEC_PATHS[kind]
    pod = workload_pod(obj, path)
    if pod is None:
        return []
    return pod_servers(obj, pod, inputs, kind=kind, pod_meta=obj.mapping(*path[:-1], "metadata"))


register("workloads", recognise, extract, kinds=POD_SPEC_PATHS)
