"""KServe: which ServingRuntime / ClusterServingRuntime of the input an InferenceService uses, and the
vLLM server KServe builds from the two (not a format: the leading underscore keeps it out of discovery).

A runtime runs no pod by itself. KServe's controller (kserve/kserve, read at the commits named here):
- selects the runtime (pkg/apis/serving/v1beta1/predictor_model.go @ 00d2aa2c2869686ff0121b261a96af1aba613926):
  `spec.predictor.model.runtime` names it, looked up as a ServingRuntime in the InferenceService's namespace,
  then as a ClusterServingRuntime (pkg/controller/v1beta1/inferenceservice/utils/utils.go GetServingRuntime @
  00bd5d0669bef52785a0d4f945a741d91fd59066); without it, the runtimes that are not `disabled` and list the
  model's `modelFormat` (name, and version when the model gives one) among their `supportedModelFormats`
  with `autoSelect: true` are candidates, namespaced ones before cluster ones, each group by the format's
  `priority` (highest first; then KServe takes the newest, which a manifest does not say: here by name);
- merges the runtime's container with the model's (utils.go MergeRuntimeContainers): a strategic merge in
  which the InferenceService's fields win (image, command, env by name, resources by key), except `args`,
  which are concatenated, the runtime's first; `{{.Name}}` / `{{.Namespace}}` placeholders in the runtime's
  container are filled from the InferenceService's metadata (ReplacePlaceholders); the pod's nodeSelector,
  affinity, tolerations and volumes come from the runtime unless the predictor sets them (MergePodSpec);
- downloads `storageUri` into /mnt/models (the storage initializer), which is the path a vLLM runtime serves.

So the model is the InferenceService's: an `hf://org/name` URI is that Hugging Face id; any other URI
(pvc://, s3://, gs://) is kept as written, to be mapped to a model like a local path (`models:` in
.vllm-configurator.yaml, the vllm-configurator.io/model annotation, --model-config NAME=PATH).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from configurator.lint.extract import (
    Inputs,
    NotUnderstood,
    Server,
    annotations,
    apply_tokens,
    argv_items,
    container_env,
    container_facts,
    container_tokens,
    identity,
    is_vllm,
    pod_scheduling,
)
from configurator.lint.formats._common import model_from_uri, set_model
from configurator.lint.load import Loc
from configurator.lint.shape import Node

RUNTIMES = ("ServingRuntime", "ClusterServingRuntime")
MODEL_DIR = "/mnt/models"  # where KServe's storage initializer puts storageUri (kubernetes-facts.md 1.3)
TEMPLATE_RULE = "runtime-template-unbound"
_PLACEHOLDER = re.compile(r"\{\{\s*\.(Name|Namespace)\s*\}\}")
_MEMO = "kserve-bindings"


@dataclass(frozen=True)
class Binding:
    """An InferenceService's predictor.model and the runtime (and its vLLM container) it uses."""

    runtime: Node
    container: Node


def fill_template_model(s, uri: str | None, loc) -> None:
    """A server whose model is a template's (/mnt/models, a placeholder) takes the model the storage URI names:
    a Hugging Face id from hf://, else the URI as written (pvc://, s3://, gs://: mapped like a path with models:)."""
    if uri and template_model(s.flags.get("model")):
        set_model(s, model_from_uri(uri) or uri.strip(), loc)


def template_model(model: object) -> bool:
    """Whether a runtime's model is filled from the InferenceService: none, /mnt/models (or below it), or a
    placeholder (`${MODEL}`, `{{.Name}}`) left for the pod's shell or KServe."""
    if not isinstance(model, str) or not model:
        return True
    m = model.rstrip("/")
    return "$" in m or "{{" in m or m == MODEL_DIR or m.startswith(MODEL_DIR + "/")


def vllm_container(runtime: Node) -> Node | None:
    """The runtime's container that runs vLLM (KServe merges into `kserve-container`; that one first)."""
    spec = runtime.mapping("spec")
    if spec is None:
        return None
    found = [c for c in spec.mappings("containers")
             if is_vllm(c, argv_items(c, "command") + argv_items(c, "args"))]
    named = [c for c in found if c.str("name") == "kserve-container"]
    return (named or found or [None])[0]


def _same_namespace(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b  # unset: the namespace `kubectl apply` uses for both


@dataclass(frozen=True)
class _Runtime:
    """What selection reads of one runtime of the input (read once per run)."""

    node: Node
    container: Node  # its vLLM container
    kind: str
    namespace: str | None
    name: str
    disabled: bool
    formats: tuple[tuple[str, str | None, bool, int | None], ...]  # (name, version, autoSelect, priority)

    @classmethod
    def of(cls, r: Node) -> _Runtime | None:
        c = vllm_container(r)
        if c is None:
            return None  # runs no vLLM: not ours to bind (a Hugging Face runtime reads its own way)
        kind, namespace, name = identity(r)
        formats = tuple((f.str("name") or "", f.text("version"), f.bool("autoSelect") is True, f.int("priority"))
                        for f in r.mappings("spec", "supportedModelFormats"))
        return cls(r, c, kind, namespace, name, r.bool("spec", "disabled") is True, formats)

    def priority(self, fmt: str, version: str | None) -> tuple[bool, int | None]:
        """(auto-selects the model format, its priority), as KServe's RuntimeSupportsModel reads
        supportedModelFormats when the InferenceService names no runtime."""
        for name, v, auto, priority in self.formats:
            if name == fmt and auto and (version is None or v == version):
                return True, priority
        return False, None


def select_runtime(isvc: Node, model: Node, by_name: dict[str, list[_Runtime]],
                   by_format: dict[str, list[_Runtime]]) -> _Runtime | None:
    """The vLLM runtime of the input KServe would use for this predictor.model, or None."""
    _, namespace, _ = identity(isvc)
    named = model.str("runtime")
    fmt = model.str("modelFormat", "name")
    version = model.text("modelFormat", "version")
    candidates = by_name.get(named, []) if named else by_format.get(fmt or "", [])
    for kind in RUNTIMES:
        group = [r for r in candidates if r.kind == kind
                 and (kind == "ClusterServingRuntime" or _same_namespace(r.namespace, namespace))]
        if named:
            if group:
                return group[-1]  # the same name twice: the later one is what `kubectl apply` leaves
            continue
        ranked = []
        for i, r in enumerate(group):
            ok, priority = r.priority(fmt or "", version)
            if ok and not r.disabled:
                ranked.append((priority is None, -(priority or 0), r.name, i, r))
        if ranked:  # KServe: by priority, then newest first, then by name (the input has no creation times)
            return min(ranked, key=lambda x: x[:4])[4]
    return None


def bindings(inputs: Inputs) -> dict[int, Binding]:
    """id(InferenceService document) -> the vLLM runtime of the input it uses, computed once per run; every
    bound runtime is marked consumed (it is checked through its InferenceServices)."""
    if _MEMO in inputs.memo:
        return inputs.memo[_MEMO]
    runtimes, services = [], []
    for d in inputs.docs:
        kind = d.data.get("kind") if isinstance(d.data, dict) else None
        if kind in RUNTIMES:
            runtimes.append(Node.of(d))
        elif kind == "InferenceService":
            services.append(Node.of(d))
    out: dict[int, Binding] = {}
    if runtimes and services:
        by_name: dict[str, list[_Runtime]] = {}
        by_format: dict[str, list[_Runtime]] = {}
        for r in filter(None, map(_Runtime.of, runtimes)):
            by_name.setdefault(r.name, []).append(r)
            for fmt in {f[0] for f in r.formats}:
                by_format.setdefault(fmt, []).append(r)
        for isvc in services:
            model = isvc.mapping("spec", "predictor", "model")
            rt = select_runtime(isvc, model, by_name, by_format) if model is not None else None
            if rt is not None:
                out[id(isvc.doc)] = Binding(rt.node, rt.container)
                inputs.consumed.add(id(rt.node.doc))
    inputs.memo[_MEMO] = out
    return out


def _fill(text: str, meta: dict[str, str | None]) -> str:
    return _PLACEHOLDER.sub(lambda m: meta.get(m.group(1)) or m.group(0), text) if "{{" in text else text


def bound_server(isvc: Node, pred: Node, model: Node, b: Binding) -> Server | None:
    """The server KServe runs for an InferenceService on its runtime: the merged container, the model from
    storageUri when the runtime's command serves /mnt/models or a placeholder."""
    _, namespace, name = identity(isvc)
    rc, rt_spec = b.container, b.runtime.mapping("spec")
    meta = {"Name": name, "Namespace": namespace}
    command = argv_items(model, "command") or argv_items(rc, "command")
    argv = [(n, _fill(t, meta)) for n, t in command + argv_items(rc, "args") + argv_items(model, "args")]
    s = Server(file=isvc.doc.file, kind="InferenceService", namespace=namespace, name=name,
               container=rc.str("name", max_chars=253) or "kserve-container", loc=model.loc(),
               object_loc=isvc.loc(), image=model.str("image") or rc.str("image"),
               annotations=annotations(b.runtime.mapping("metadata"), isvc.mapping("metadata")))
    s.env = {k: _fill(v, meta) for k, v in {**container_env(rc), **container_env(model)}.items()}
    s.sources.append(b.runtime.doc.file)
    tokens = container_tokens(argv, s.env)
    if tokens is None:
        return None
    apply_tokens(s, tokens)
    fill_template_model(s, model.str("storageUri"), model.loc("storageUri"))
    if rt_spec is not None:
        container_facts(s, rt_spec, rc)  # /dev/shm, probes and GPUs of the runtime's container ...
    container_facts(s, pred, model)  # ... the InferenceService's where it sets them
    pod_scheduling(s, pred)
    if not s.gpu_labels and rt_spec is not None:
        pod_scheduling(s, rt_spec)
    return s


def unbound_notice(runtime: Node, inputs: Inputs, model: object, loc: Loc | None = None) -> None:
    """Report a runtime template no InferenceService of the input uses (rule runtime-template-unbound), at its
    model flag when it has one."""
    kind, _, name = identity(runtime)
    what = f"serves {model!r}" if isinstance(model, str) and model else "names no model"
    inputs.notice(runtime.doc, NotUnderstood(
        loc or runtime.loc(), kind, name,
        f"a {kind} is a template: its vLLM command {what}, filled from the storageUri of each InferenceService "
        f"that uses it, and no InferenceService in this input does (runtime: {name}, or a modelFormat it "
        f"auto-selects): not checked here; check it together with its InferenceServices",
        rule=TEMPLATE_RULE))
