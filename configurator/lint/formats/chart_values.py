"""Values files of this project's own chart, charts/vllm (configurator/emit/values_model.py): no
`kind`, a `vllm` mapping of camelCase flags and a `model` mapping."""

from __future__ import annotations

import re

from configurator.lint.extract import (
    MAX_GPUS,
    Inputs,
    Server,
    Token,
    apply_tokens,
    flag_value_problem,
    probe_budget,
    set_flag,
)
from configurator.lint.formats import register
from configurator.lint.shape import Node
from configurator.vllm.flags import BY_DEST

MAX_NODES = 1 << 16
_CAMEL = re.compile(r"([A-Z])")


def recognise(obj: Node) -> bool:
    return not obj.has("kind") and isinstance(obj.at("vllm").value, dict) and isinstance(obj.at("model").value, dict)


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    img = obj.mapping("image")
    s = Server(file=obj.doc.file, kind="charts/vllm values", namespace=None,
               name=obj.name("fullnameOverride") or "release", container="vllm", loc=obj.loc("vllm"),
               object_loc=obj.loc(),
               image=f"{(img and img.text('repository')) or 'vllm/vllm-openai'}:"
                     f"{(img and img.text('tag')) or 'latest'}")
    s.annotations = {k: v.text() or "" for k, v in obj.entries("podAnnotations") if v.text() is not None}
    model = obj.str("model", "name")
    if model:
        problem = flag_value_problem(BY_DEST["model"], model)
        if problem:
            s.notes.append(problem)
        else:
            s.flags["model"] = model
            s.flag_locs["model"] = obj.loc("model", "name")
    for key, value in obj.entries("vllm"):
        dest = _CAMEL.sub(r"_\1", key).lower()
        if dest in BY_DEST and dest != "model":
            set_flag(s, value, dest)
    extra = [t for t in obj.items("extraArgs") if t.text() is not None]
    apply_tokens(s, [Token(t.text() or "", t.loc()) for t in extra])
    s.gpu_count = obj.int("gpusPerNode", lo=1, hi=MAX_GPUS) or 1
    s.pods = obj.int("nodes", lo=1, hi=MAX_NODES) or 1
    gpu = obj.mapping("gpu")
    s.gpu_resource = (gpu and gpu.str("resource", max_chars=253)) or "nvidia.com/gpu"
    s.gpu_loc = obj.loc("gpusPerNode")
    selector = obj.entries("nodeSelector")
    products = [t for t in (x.text() for x in gpu.items("products")) if t] if gpu is not None else []
    if selector:
        s.gpu_labels = {k: [t] for k, v in selector if (t := v.text()) is not None}
        s.gpu_labels_loc = obj.loc("nodeSelector")
    elif products:
        s.gpu_labels = {(gpu and gpu.str("productLabel", max_chars=253)) or "nvidia.com/gpu.product": products}
        s.gpu_labels_loc = obj.loc("gpu", "products")
    shm = obj.mapping("shm")
    s.shm_bytes = (shm.quantity("sizeLimit") if shm is not None else None) or 0
    s.shm_loc = obj.loc("shm")
    startup = obj.mapping("probes", "startup")
    if startup is not None and startup.value:
        s.startup_budget_s = probe_budget(startup)
        s.probe_loc = obj.loc("probes", "startup")
    return [s]


register("charts-vllm-values", recognise, extract, order=20, kinds=())
