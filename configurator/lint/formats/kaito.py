"""KAITO `Workspace` (kaito.sh/v1alpha1, v1beta1): the inference preset, served by vLLM unless the
`kaito.sh/runtime: transformers` annotation asks for Hugging Face transformers.

Keys from KAITO's Workspace API and examples (examples/inference/kaito_workspace_*.yaml):
resource.{instanceType, count, labelSelector}, inference.{preset.name, template, config}. The preset
name is the model (a Hugging Face id in current presets, e.g. meta-llama/Llama-3.1-8B-Instruct). The
GPU type comes from the instance type (read as the node's `node.kubernetes.io/instance-type` label,
which KAITO provisions), the GPUs per node from the VM size (Microsoft's published sizes: NC A100 v4,
NCads H100 v5, ND A100 v4, NDm A100 v4, ND H100 v5, ND H200 v5, NCasT4_v3). `inference.config` names a
ConfigMap whose `inference_config.yaml` has a `vllm:` section of engine options; it is read when it is
in the same input. A custom `inference.template` pod is read as a pod.

Parallelism follows KAITO's own rule (pkg/model/interface.go, configureParallelism, commit 056b8280):
on a node of N > 1 GPUs, a model whose weights are under half of one GPU runs data-parallel
(`--data-parallel-size N --tensor-parallel-size 1`), any other with `--tensor-parallel-size N`; the
weights come from the model's known checkpoint size (offline), and an unknown model is taken as the
larger case. KAITO mounts a memory-backed /dev/shm without a size limit (pkg/utils/common_preset.go,
ConfigSHMVolume).
"""

from __future__ import annotations

from configurator.errors import ConfiguratorError
from configurator.hardware.labels import gpu_from_labels
from configurator.lint.extract import Inputs, Server, Token, apply_tokens, pod_servers
from configurator.lint.formats import register
from configurator.lint.formats._common import apply_kwargs, new_server, set_gpu_count, set_model
from configurator.lint.shape import Node

RUNTIME_ANNOTATION = "kaito.sh/runtime"
INSTANCE_LABEL = "node.kubernetes.io/instance-type"
CONFIG_KEY = "inference_config.yaml"
# GPUs per VM (Azure VM size pages on learn.microsoft.com), lower-case
GPUS_PER_VM = {
    "standard_nc24ads_a100_v4": 1, "standard_nc48ads_a100_v4": 2, "standard_nc96ads_a100_v4": 4,
    "standard_nc40ads_h100_v5": 1, "standard_nc80adis_h100_v5": 2,
    "standard_nd96asr_v4": 8, "standard_nd96amsr_a100_v4": 8, "standard_nd96isr_h100_v5": 8,
    "standard_nd96isr_h200_v5": 8,
    "standard_nc4as_t4_v3": 1, "standard_nc8as_t4_v3": 1, "standard_nc16as_t4_v3": 1, "standard_nc64as_t4_v3": 4,
}


def recognise(obj: Node) -> bool:
    return obj.str("kind") == "Workspace" and (obj.str("apiVersion") or "").startswith("kaito.sh/")


def _runtime(obj: Node) -> str:
    for k, v in obj.entries("metadata", "annotations"):
        if k == RUNTIME_ANNOTATION:
            return (v.text() or "").lower()
    return "vllm"


def _config(s: Server, inf: Node, inputs: Inputs) -> None:
    name = inf.name("config")
    found = inputs.config_document(name, CONFIG_KEY, inf.doc.file) if name else None
    if found is None:
        return
    vllm = found[0].mapping("vllm")
    if vllm is not None:
        apply_kwargs(s, vllm, name=lambda k: k.replace("-", "_"))


def _weights_bytes(model: str) -> int | None:
    """The model's checkpoint size when it is known offline (KAITO compares the model file size)."""
    from configurator.memory.weights import weight_bytes
    from configurator.model.resolve import resolve_model

    try:
        return weight_bytes(resolve_model(model, allow_hub=False), tp=1, pp=1).total_bytes
    except (ConfiguratorError, ValueError, AttributeError):
        return None


def _parallelism(s: Server, gpus: int | None, at: Node) -> None:
    """KAITO's choice between data and tensor parallelism over the node's GPUs (see the module doc)."""
    if not gpus or gpus <= 1 or "tensor_parallel_size" in s.flags:
        return
    gpu, _ = gpu_from_labels(s.gpu_labels)
    size = _weights_bytes(str(s.flags.get("model", "")))
    loc = at.loc()
    argv = ["--tensor-parallel-size", str(gpus)]
    if size is not None and gpu is not None and size * 2 < gpu.total_bytes:
        argv = ["--data-parallel-size", str(gpus), "--tensor-parallel-size", "1"]
    apply_tokens(s, [Token(t, loc) for t in argv])


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    if _runtime(obj) == "transformers":
        return []  # Hugging Face transformers, not vLLM
    inf = obj.mapping("inference")
    if inf is None:
        return []
    template = inf.mapping("template", "spec")
    if template is not None:
        return pod_servers(obj, template, inputs, kind="Workspace", pod_meta=inf.mapping("template", "metadata"))
    preset = inf.mapping("preset")
    if preset is None:
        return []
    s = new_server(obj, preset, kind="Workspace", container="inference")
    _config(s, inf, inputs)
    set_model(s, preset.str("name"), preset.loc("name"))
    res = obj.mapping("resource")
    sku = res.text("instanceType") if res is not None else None
    if sku:
        s.gpu_labels = {INSTANCE_LABEL: [sku]}
        s.gpu_labels_loc = res.loc("instanceType")
        set_gpu_count(s, GPUS_PER_VM.get(sku.lower()), res.loc("instanceType"))
        s.gpu_count_source = f"derived by KAITO from instanceType {sku}"
        _parallelism(s, s.gpu_count, res.at("instanceType"))
    s.shm_bytes, s.shm_loc = 0, obj.loc()
    return [s]


register("kaito", recognise, extract, order=50, kinds=("Workspace",))
