"""llm-d modelservice values (the llm-d-modelservice chart, used by llm-d's guides as
`ms-*/values.yaml`): one vLLM server per role, `decode` and `prefill`, unless the role has
`create: false`.

Keys from the chart's values.yaml and templates (llm-d-incubation/llm-d-modelservice,
charts/llm-d-modelservice): modelArtifacts.{uri, name}, accelerator.type, <role>.{create, replicas,
parallelism.{tensor, data, dataLocal}, containers[].{name, image, modelCommand, command, args, env,
resources, volumeMounts}, volumes, acceleratorTypes.{labelKey, labelValues}}. With `modelCommand:
vllmServe` the container runs `vllm serve <model>` followed by its args. GPUs per pod are the
container's `resources.limits` when given, else dataLocal x tensor (`numGpuPerWorker` in the chart's
_helpers.tpl); `accelerator.type: cpu` requests none. The model is the Hugging Face id of an `hf://`
modelArtifacts.uri, else modelArtifacts.name.
"""

from __future__ import annotations

from configurator.lint.extract import Inputs, Server, apply_tokens, container_env, container_facts, pod_scheduling
from configurator.lint.formats import register
from configurator.lint.formats._common import (
    model_from_uri,
    new_server,
    set_gpu_count,
    set_model,
    tokens,
)
from configurator.lint.shape import Node

ROLES = ("decode", "prefill")


def recognise(obj: Node) -> bool:
    return not obj.has("kind") and obj.mapping("modelArtifacts") is not None and any(
        obj.mapping(r) is not None for r in ROLES)


def _server(obj: Node, role: Node, name: str) -> Server | None:
    containers = role.mappings("containers")
    c = next((x for x in containers if x.has("modelCommand")), None) or next(
        (x for x in containers if x.str("name") == "vllm"), None)
    if c is None:
        return None
    s = new_server(obj, c, kind=f"llm-d modelservice {name}", container=c.str("name") or "vllm",
                   image=c.str("image"), name=name)
    s.env = container_env(c)
    argv = tokens(c.items("args"))
    if (c.str("modelCommand") or "") == "custom":
        argv = tokens(c.items("command")) + argv
    apply_tokens(s, argv)
    art = obj.mapping("modelArtifacts")
    if art is not None:
        set_model(s, model_from_uri(art.str("uri")) or art.str("name"), art.loc("uri"))
    pod_scheduling(s, role)
    container_facts(s, role, c)
    if s.gpu_count is None and (obj.str("accelerator", "type") or "nvidia") != "cpu":
        par = role.mapping("parallelism")
        tensor = (par.int("tensor", lo=1) if par is not None else None) or 1
        local = (par.int("dataLocal", lo=1) if par is not None else None) or 1
        set_gpu_count(s, tensor * local, role.loc("parallelism") if par is not None else role.loc())
    at = role.mapping("acceleratorTypes")
    if at is not None and at.str("labelKey"):
        values = [v.text() for v in at.items("labelValues") if v.text()]
        if values:
            s.gpu_labels = {**s.gpu_labels, at.str("labelKey") or "": values}
            s.gpu_labels_loc = at.loc()
    return s


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    out = []
    for name in ROLES:
        role = obj.mapping(name)
        if role is None or role.bool("create") is False:
            continue
        s = _server(obj, role, name)
        if s is not None:
            out.append(s)
    return out


register("llm-d-modelservice-values", recognise, extract, order=12)
