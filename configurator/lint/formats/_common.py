"""Helpers the operator / values formats share (not a format: the leading underscore keeps it out of
discovery): a Server for a non-container object, a model from a storage URI, vLLM flags from a mapping
of engine keyword arguments, and a GPU type named by the format rather than by node labels."""

from __future__ import annotations

import json
from collections.abc import Callable

from configurator.errors import ConfiguratorError
from configurator.hardware.catalog import find_gpu
from configurator.lint.extract import Server, Token, annotations, apply_tokens, flag_value_problem, identity
from configurator.lint.load import Loc
from configurator.lint.shape import Node, scalar_text
from configurator.vllm.flags import BY_DEST

# The node-label key labels.py reads as "the GPU, named by the tool": a format that names its GPU type
# itself (KubeAI resource profiles, Ray Serve accelerator_type) records it under this key.
GPU_NAME_LABEL = "vllm-configurator.io/gpu"
MAX_GPUS = 1 << 16


def new_server(obj: Node, at: Node, *, kind: str, container: str, image: str | None = None,
               name: str | None = None, pod_meta: Node | None = None) -> Server:
    """A Server for a part of `obj` that is not a pod's container (a values entry, a CR's spec)."""
    _, namespace, obj_name = identity(obj)
    return Server(file=obj.doc.file, kind=kind, namespace=namespace, name=name or obj_name, container=container,
                  loc=at.loc(), object_loc=obj.loc(), image=image,
                  annotations=annotations(obj.mapping("metadata"), pod_meta))


def model_from_uri(uri: str | None) -> str | None:
    """The Hugging Face id of an `hf://org/name` URI (KServe storageUri / LLMInferenceService
    spec.model.uri, KubeAI url, llm-d modelArtifacts.uri); None for other schemes (pvc://, s3://, ...)."""
    if not uri or not uri.startswith("hf://"):
        return None
    rest = uri[len("hf://"):].strip("/")
    return rest or None


def set_model(s: Server, model: str | None, loc: Loc) -> None:
    """The model vLLM serves, when the format names it outside the command line (wins over a positional
    token the command line may hold: the format's key is what the operator passes)."""
    if not model:
        return
    problem = flag_value_problem(BY_DEST["model"], model)
    if problem:
        s.notes.append(problem)
        return
    s.flags["model"] = model
    s.flag_locs["model"] = loc


def tokens(nodes: list[Node]) -> list[Token]:
    """argv items (scalars) as tokens at their lines."""
    return [Token(n.text() or "", n.loc()) for n in nodes if n.text() is not None]


def kwargs_tokens(m: Node | None, name: Callable[[str], str] = lambda k: k) -> list[Token]:
    """A mapping of vLLM engine keyword arguments (`max_model_len: 8192`, `enable_lora: true`,
    `speculative_config: {...}`) as the command line vLLM would be given, each token at its key's line,
    so modelled, unmodelled and unknown options are told apart exactly as on a command line."""
    out: list[Token] = []
    if m is None:
        return out
    for key, v in m.entries():
        flag = "--" + name(key).replace("_", "-")
        loc = v.loc()
        if isinstance(v.value, bool):
            if v.value:
                out.append(Token(flag, loc))
            continue
        if v.value is None:
            continue
        text = json.dumps(v.value, default=str) if isinstance(v.value, dict | list) else scalar_text(v.value)
        out += [Token(flag, loc), Token(text, loc)]
    return out


def apply_kwargs(s: Server, m: Node | None, name: Callable[[str], str] = lambda k: k) -> None:
    apply_tokens(s, kwargs_tokens(m, name))


def set_gpu_name(s: Server, name: str | None, loc: Loc) -> bool:
    """Record a GPU type the format names (a catalog name or alias); False when it is not one."""
    if not name:
        return False
    try:
        gpu = find_gpu(name)
    except ConfiguratorError:
        return False
    s.gpu_labels = {**s.gpu_labels, GPU_NAME_LABEL: [gpu.name]}
    s.gpu_labels_loc = s.gpu_labels_loc or loc
    return True


def set_gpu_count(s: Server, count: int | None, loc: Loc, resource: str = "nvidia.com/gpu") -> None:
    if count is None or not 0 <= count <= MAX_GPUS:
        return
    s.gpu_count = count
    s.gpu_resource = resource
    s.gpu_loc = loc
