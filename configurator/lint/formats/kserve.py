"""KServe LLMInferenceService objects that configurator/lint/formats/llmisvc.py does not take (an
apiVersion outside serving.kserve.io): the vLLM containers of spec.template. InferenceServices,
ServingRuntimes and ClusterServingRuntimes are read by kserve_llm.py (tried first)."""

from __future__ import annotations

from configurator.lint.extract import Inputs, Server, pod_servers
from configurator.lint.formats import register
from configurator.lint.shape import Node

KINDS = ("LLMInferenceService",)


def recognise(obj: Node) -> bool:
    return obj.str("kind") in KINDS


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    pod = obj.mapping("spec", "template")
    return [] if pod is None else pod_servers(obj, pod, inputs, kind=obj.str("kind") or "")


register("kserve", recognise, extract, kinds=KINDS)
