"""KServe InferenceServices, ServingRuntimes and ClusterServingRuntimes. An InferenceService runs on a
vLLM runtime of the input when it uses one (_kserve_binding.py: KServe's selection and container merge);
else on the Hugging Face runtime (`modelFormat: huggingface`, or a `kserve/huggingfaceserver` container)
or KServe's built-in vLLM runtime (`modelFormat: vLLM`); else its own vLLM containers. A runtime that no
InferenceService of the input uses and whose command serves the InferenceService's model (/mnt/models,
`vllm serve ${MODEL}`) is reported as `runtime-template-unbound` instead of read as a server.

The Hugging Face runtime (python/huggingfaceserver/huggingfaceserver/__main__.py) serves with vLLM
when `--backend` is `auto` (the default) or `vllm` and vLLM supports the model; `--backend
huggingface` (or the older `--disable_vllm`) does not run vLLM. Its own options (`--model_id`,
`--model_dir`, `--backend`, `--task`, ...) are not vLLM's and are taken out before the rest is read as
vLLM's command line; the model is `--model_id`, else the Hugging Face id of an `hf://` storageUri, else
`--model_dir`. The vLLM runtime (config/runtimes/kserve-vllmserver.yaml) runs `vllm serve ${MODEL}
... $@`, the model being the storageUri's.
"""

from __future__ import annotations

import re

from configurator.lint.extract import (
    Inputs,
    Server,
    Token,
    apply_tokens,
    container_env,
    container_facts,
    container_server,
    pod_scheduling,
    pod_servers,
)
from configurator.lint.formats import register
from configurator.lint.formats._common import model_from_uri, new_server, set_model, tokens
from configurator.lint.formats._kserve_binding import (
    RUNTIMES,
    bindings,
    bound_server,
    fill_template_model,
    template_model,
    unbound_notice,
)
from configurator.lint.shape import Node
from configurator.vllm.flags import HF_SERVER

_MODEL = re.compile(r"^[\w./:@+-]+$")  # a Hugging Face id or a path; not `${MODEL}` or shell syntax
HF_IMAGE = "huggingfaceserver"
# A custom predictor's model location (kserve/kserve pkg/apis/serving/v1beta1/predictor_custom.go @
# cce137ba6e50552481a14b11c9df71df82b98bc2, GetStorageUri: the env var of the container kserve-container)
STORAGE_URI_ENV = "STORAGE_URI"
# Options of the Hugging Face runtime and of KServe's model server, not vLLM's (huggingfaceserver
# __main__.py and kserve/model_server.py): (takes a value?). One table, configurator.vllm.flags.HF_SERVER (which
# reads `python -m huggingfaceserver` command lines too), less the options the runtime hands on to vLLM's engine
# as well, which are read as vLLM's here: --trust_remote_code goes into build_vllm_engine_args(args), and --dtype is
# vLLM's own option when vLLM is installed (the runtime adds its own --dtype only without vLLM) (kserve/kserve
# python/huggingfaceserver/huggingfaceserver/__main__.py @ 00397f1e8077bc9d5b386d6dee90b3ccb2828752).
_PASSED_TO_VLLM = ("--dtype", "--trust_remote_code")
HF_OPTIONS = {name: n != 0 for name, n in HF_SERVER.options.items() if name not in _PASSED_TO_VLLM}


def _format(m: Node | None) -> str:
    return ((m.str("modelFormat", "name") or "") if m is not None else "").lower()


def _is_hf_container(c: Node) -> bool:
    return HF_IMAGE in (c.str("image") or "")


def recognise(obj: Node) -> bool:
    kind = obj.str("kind")
    if kind in RUNTIMES:
        return True
    if kind != "InferenceService":
        return False
    # every InferenceService with a predictor: its model may run on a vLLM ServingRuntime of the input
    return obj.mapping("spec", "predictor") is not None


def _split(argv: list[Token]) -> tuple[dict[str, Token], list[Token]]:
    """The runtime's own options (name -> value token) and the rest (vLLM's command line)."""
    own: dict[str, Token] = {}
    rest: list[Token] = []
    i = 0
    while i < len(argv):
        t = argv[i]
        name, eq, value = t.text.partition("=")
        if name in HF_OPTIONS:
            if eq:
                own[name] = Token(value, t.loc)
            elif HF_OPTIONS[name] and i + 1 < len(argv):
                own[name] = argv[i + 1]
                i += 1
            else:
                own[name] = Token("true", t.loc)
        else:
            rest.append(t)
        i += 1
    return own, rest


def _runtime_server(obj: Node, pod: Node, c: Node, *, hf: bool) -> Server | None:
    argv = tokens(c.items("args"))
    own, rest = _split(argv) if hf else ({}, argv)
    backend = own.get("--backend")
    if "--disable_vllm" in own or (backend is not None and backend.text.lower() not in ("auto", "vllm")):
        return None  # the Hugging Face backend serves it, not vLLM
    s = new_server(obj, c, kind="InferenceService", container=c.str("name") or "kserve-container",
                   image=c.str("image"))
    s.env = container_env(c)
    apply_tokens(s, rest)
    model_id = own.get("--model_id")
    uri = c.str("storageUri") or pod.str("model", "storageUri")
    uri_loc = c.loc("storageUri") if c.has("storageUri") else c.loc()
    if model_id is not None:
        set_model(s, model_id.text, model_id.loc)
    elif model_from_uri(uri):
        set_model(s, model_from_uri(uri), uri_loc)
    elif "--model_dir" in own:
        set_model(s, own["--model_dir"].text, own["--model_dir"].loc)
    elif uri and template_model(s.flags.get("model")):  # pvc://, s3://: mapped like a path (models:)
        set_model(s, uri.strip(), uri_loc)
    pod_scheduling(s, pod)
    container_facts(s, pod, c)
    return s


def _runtime_servers(obj: Node, inputs: Inputs) -> list[Server]:
    """A runtime's own servers: none when an InferenceService of the input uses it (checked there); a
    template (its model is /mnt/models or a placeholder) that none uses is reported as unbound; a runtime
    whose command names a real model is checked as written."""
    spec = obj.mapping("spec")
    if spec is None:
        return []
    bindings(inputs)
    if id(obj.doc) in inputs.consumed:
        return []
    out = []
    for s in pod_servers(obj, spec, inputs, kind=obj.str("kind") or "", pod_meta=obj.mapping("metadata")):
        model = s.flags.get("model")
        if isinstance(model, str) and _MODEL.match(model) and not template_model(model):
            out.append(s)
        else:
            unbound_notice(obj, inputs, model, s.flag_locs.get("model"))
    return out


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    if obj.str("kind") in RUNTIMES:
        return _runtime_servers(obj, inputs)
    pred = obj.mapping("spec", "predictor")
    assert pred is not None  # recognise
    out: list[Server] = []
    model = pred.mapping("model")
    fmt = _format(model)
    bound = bindings(inputs).get(id(obj.doc))
    if model is not None and bound is not None:
        s = bound_server(obj, pred, model, bound)
        if s is not None:
            out.append(s)
    elif model is not None and fmt not in ("huggingface", "vllm"):
        s = container_server(obj, pred, model, inputs, kind="InferenceService", default_name="model")
        if s is not None:
            fill_template_model(s, model.str("storageUri"), model.loc("storageUri"))
            out.append(s)
    elif model is not None:
        s = _runtime_server(obj, pred, model, hf=fmt == "huggingface")
        if s is not None:
            out.append(s)
    for c in pred.mappings("containers"):
        if _is_hf_container(c):
            s = _runtime_server(obj, pred, c, hf=True)
        else:
            s = container_server(obj, pred, c, inputs, kind="InferenceService", default_name=str(c.path[-1]))
            if s is not None:
                # a custom predictor: the storage initializer downloads STORAGE_URI to /mnt/models
                fill_template_model(s, s.env.get(STORAGE_URI_ENV), s.flag_loc("model"))
        if s is not None:
            out.append(s)
    return out


register("kserve-llm-runtimes", recognise, extract, order=50, kinds=(*RUNTIMES, "InferenceService"))
