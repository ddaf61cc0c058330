"""Values files of vLLM's own example chart (vllm-project/vllm examples/online_serving/chart-helm):
one server whose command is `image.command`.

Keys from the chart's values.yaml and templates/deployment.yaml: image.{repository, tag, command, env},
resources.{requests, limits}, gpuModels (rendered as a required `nvidia.com/gpu.product In` node
affinity when GPUs are requested), nodeSelector, replicaCount.
"""

from __future__ import annotations

from configurator.lint.extract import Inputs, Server, apply_tokens, container_env, gpu_request, pod_scheduling
from configurator.lint.formats import register
from configurator.lint.formats._common import new_server, tokens
from configurator.lint.shape import Node

PRODUCT_LABEL = "nvidia.com/gpu.product"


def recognise(obj: Node) -> bool:
    if obj.has("kind"):
        return False
    img = obj.at("image")
    return isinstance(img.value, dict) and any("vllm" in (t.text() or "").lower() for t in img.items("command"))


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    img = obj.mapping("image")
    assert img is not None  # recognise
    image = f"{img.text('repository') or 'vllm/vllm-openai'}:{img.text('tag') or 'latest'}"
    s = new_server(obj, img.at("command"), kind="vLLM chart values", container="vllm", image=image, name="release")
    s.env = container_env(img)
    apply_tokens(s, tokens(img.items("command")))
    gpu_request(s, obj)
    pod_scheduling(s, obj)
    if s.gpu_count:
        products = [t.text() for t in obj.items("gpuModels") if t.text()]
        if products:
            s.gpu_labels = {**s.gpu_labels, PRODUCT_LABEL: products}
            s.gpu_labels_loc = obj.loc("gpuModels")
    return [s]


register("vllm-chart-values", recognise, extract, order=14, kinds=())
