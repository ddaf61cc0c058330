"""Deployment formats as plugins: each module here recognises one kind of input and extracts its servers.

How to add a format: create `configurator/lint/formats/<name>.py` with

    from configurator.lint.extract import Inputs, Server, pod_servers   # shared helpers
    from configurator.lint.formats import register
    from configurator.lint.shape import Node, describe, dotted

    def recognise(obj: Node) -> bool:          # cheap: look at kind / apiVersion / top-level keys
        return obj.str("kind") == "MyServer"

    def extract(obj: Node, inputs: Inputs) -> list[Server]:
        pod = obj.mapping("spec", "template", "spec")   # typed reads only (shape.py)
        return [] if pod is None else pod_servers(obj, pod, inputs, kind="MyServer")

    register("my-server", recognise, extract, kinds=("MyServer",))   # the kinds it may recognise (optional)

and its tests (tests/lint/test_formats_<name>.py). Modules are discovered, not listed: the new file
is all it takes. Read every value through the `Node` you are given (configurator/lint/shape.py): a
value of the wrong shape is then noted where it is and reported on the object, never raised. The
first format (by `order`, then name) whose `recognise` is true extracts a document; give a format
keyed on top-level values keys (no `kind`) a low `order` so it is tried before the kind-based ones, and
`kinds=()`; a document is offered only to the formats whose `kinds` may hold its kind (none given: all).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from configurator.lint.load import Document

Recognise = Callable[["Node"], bool]  # noqa: F821  (configurator.lint.shape.Node)
Extract = Callable[["Node", "Inputs"], list["Server"]]  # noqa: F821


@dataclass(frozen=True)
class Format:
    name: str
    recognise: Recognise
    extract: Extract
    order: int = 100
    # the `kind` values `recognise` can be true for: a document whose kind is another string is not offered to
    # it (None: every document; empty: only documents without a string kind). A hint, never a second rule: it
    # must only leave out documents `recognise` would refuse anyway.
    kinds: frozenset[str] | None = None


_REGISTRY: dict[str, Format] = {}
_ORDERED: list[Format] = []
_DISCOVERED = False

# Kinds that never run a server: mentioning vLLM in their names or labels is expected, not a miss.
NO_SERVER_KINDS = frozenset({
    "Service", "Ingress", "IngressClass", "HorizontalPodAutoscaler", "PodDisruptionBudget", "NetworkPolicy",
    "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "Secret", "PersistentVolume",
    "PersistentVolumeClaim", "StorageClass", "Namespace", "Gateway", "GatewayClass", "HTTPRoute", "GRPCRoute",
    "ServiceMonitor", "PodMonitor", "PrometheusRule", "PriorityClass", "ResourceQuota", "LimitRange", "Endpoints",
    "EndpointSlice", "CustomResourceDefinition", "APIService", "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration", "InferencePool", "InferenceModel", "InferenceObjective", "Certificate",
    "Issuer", "ScaledObject", "VerticalPodAutoscaler", "Kustomization", "Component",
})
MENTION_BUDGET = 200_000  # nodes looked at when asking whether an object mentions vLLM


def register(name: str, recognise: Recognise, extract: Extract, *, order: int = 100,
             kinds: Iterable[str] | None = None) -> None:
    """Add a format; a second format of the same name is refused. `kinds`: see Format.kinds."""
    if name in _REGISTRY:
        raise ValueError(f"duplicate format {name}")
    _REGISTRY[name] = Format(name, recognise, extract, order, frozenset(kinds) if kinds is not None else None)
    _ORDERED[:] = sorted(_REGISTRY.values(), key=lambda f: (f.order, f.name))
    _BY_KIND.clear()


def formats() -> list[Format]:
    """Every registered format, in the order they are tried (the modules of this package imported once)."""
    global _DISCOVERED
    if not _DISCOVERED:
        _DISCOVERED = True
        for mod in pkgutil.iter_modules(__path__):
            if not mod.name.startswith("_"):
                importlib.import_module(f"{__name__}.{mod.name}")
    return _ORDERED


_BY_KIND: dict[str, list[Format]] = {}  # kind -> the formats that may recognise it, in order
_BY_KIND_MAX = 1024


def candidates(data: object) -> list[Format]:
    """The formats, in order, that may recognise a document (Format.kinds): all of them for a document without a
    string kind (or one too long to be read as one, which the recognisers note)."""
    from configurator.lint.shape import MAX_TEXT_CHARS

    kind = data.get("kind") if isinstance(data, dict) else None
    if not isinstance(kind, str) or len(kind) > MAX_TEXT_CHARS:
        return formats()
    got = _BY_KIND.get(kind)
    if got is None:
        got = [f for f in formats() if f.kinds is None or kind in f.kinds]
        if len(_BY_KIND) < _BY_KIND_MAX:
            _BY_KIND[kind] = got
    return got


def mentions_vllm(data: object, budget: int = MENTION_BUDGET) -> bool:
    """Whether any string in the data (keys included) mentions vLLM; an iterative, bounded walk."""
    stack = [data]
    seen: set[int] = set()
    while stack and budget > 0:
        budget -= 1
        v = stack.pop()
        if isinstance(v, str):
            if "vllm" in v.lower():
                return True
        elif isinstance(v, dict | list):
            if id(v) in seen:
                continue
            seen.add(id(v))
            if isinstance(v, dict):
                stack.extend(v.keys())
                stack.extend(v.values())
            else:
                stack.extend(v)
    return False


def discoverable(data: dict) -> bool:
    """Whether the generic discovery pass (configurator/lint/discover.py) reads a document no plugin recognised:
    anything that mentions vLLM, except objects that never run a server (a Service, a ConfigMap that a pod may
    read as --config)."""
    kind = data.get("kind")
    if kind == "Service" and str(data.get("apiVersion", "")).startswith("serving.knative.dev/"):
        return mentions_vllm(data)  # a Knative Service runs a pod template (spec.template.spec.containers)
    if isinstance(kind, str) and (kind in NO_SERVER_KINDS or kind in ("ConfigMap", "List")):
        return False
    if kind is None:  # a `vllm serve --config` file names no vLLM: its keys are vLLM's engine arguments
        from configurator.lint.discover import engine_args

        if engine_args(data):
            return True
    return mentions_vllm(data)


def read_object(node, inputs) -> list:
    """A Kubernetes object held inside another document: read by the plugin of its kind, else by discovery."""
    from configurator.lint.discover import discover

    fmt = next((f for f in candidates(node.value) if f.recognise(node)), None)
    if fmt is not None:
        return fmt.extract(node, inputs)
    return discover(node, inputs, node.str("kind") or "") if discoverable(node.value) else []


def dispatch(docs: list[Document]):
    """Every document to the first format that recognises it: (servers, not-understood objects)."""
    from configurator.lint import discover as discovery

    discovery.read_object = read_object  # embedded objects go to their plugin (discover never imports this module)
    from configurator.lint.discover import deploys_vllm
    from configurator.lint.inputs import Inputs, NotUnderstood, identity
    from configurator.lint.shape import Node, describe, dotted

    generic_said: set[str] = set()

    inputs = Inputs.of(docs)
    servers = []
    done = []
    for doc in docs:
        obj = Node.of(doc)
        if not isinstance(doc.data, dict):
            done.append((obj, None, [], None))
            continue
        fmt, found, failure = None, [], None
        try:
            fmt = next((f for f in candidates(doc.data) if f.recognise(obj)), None)
            if fmt is not None:
                found = fmt.extract(obj, inputs)
            elif discoverable(doc.data):  # no plugin knows it: the generic pass reads what it can
                from configurator.lint.discover import discover

                found = discover(obj, inputs, doc.data.get("kind") if isinstance(doc.data.get("kind"), str) else "")
        except Exception as e:  # a bug in one format must not cost the other objects
            failure, found = f"internal error reading this object ({type(e).__name__}): not checked", []
        servers += found
        done.append((obj, fmt, found, failure))
    out = []
    for obj, fmt, found, failure in done:
        if not isinstance(obj.value, dict):
            if obj.doc.prefix[:1] == ("items",):  # an item of a `kind: List` that is not an object
                out.append(NotUnderstood(obj.loc(), "List", "", f"{dotted(obj.doc.prefix)}: expected an object, got "
                                         f"{describe(obj.value)}: ignored"))
            elif deploys_vllm(obj.value):
                out.append(NotUnderstood(obj.loc(), "", "", "mentions vLLM, but the document is a "
                                         f"{'list' if isinstance(obj.value, list) else 'scalar'}, not an object"))
            continue
        kind, _, name = identity(obj)
        if not kind and (obj.has("kind") or obj.doc.prefix[:1] == ("items",)):
            # a `kind` that is not a string, or a List item without one: not a Kubernetes object at all
            if not obj.has("kind"):
                obj.note((), "a List item without a kind: not a Kubernetes object, ignored")
            elif obj.at("kind").value in (None, ""):
                obj.note(("kind",), "empty: not a Kubernetes object, ignored")
            out += [NotUnderstood(n.loc, kind, name, n.message) for n in obj.notes]
            continue
        if failure:
            out.append(NotUnderstood(obj.loc(), kind, name, failure))
            continue
        notices = inputs.notices.get(id(obj.doc), [])
        if notices:  # the format said what the object is (a runtime template no InferenceService here uses)
            out += notices + [NotUnderstood(n.loc, kind, name, n.message) for n in obj.notes]
            continue
        if not found and (kind in NO_SERVER_KINDS or id(obj.doc) in inputs.consumed or (
                not mentions_vllm(obj.value) and (fmt is None or not len(obj.notes)))):
            continue  # not about vLLM (nor a format we read with a value we could not): not our business
        out += [NotUnderstood(n.loc, kind, name, n.message) for n in obj.notes]
        if found or len(obj.notes):
            continue
        if (fmt is None or kind == "ConfigMap") and not deploys_vllm(obj.value):
            continue  # names vLLM (a router's settings, a hook, a URL) but deploys none: not our business
        if fmt is None and obj.doc.file in generic_said:
            continue  # once per file
        if fmt is None:
            generic_said.add(obj.doc.file)
        if kind == "ConfigMap":
            reason = "a ConfigMap that mentions vLLM, but no server in this input reads it (--config)"
        elif fmt is None:
            reason = (f"a {kind} that mentions vLLM, but not a format check reads" if kind else
                      "an object without a kind that mentions vLLM, but not a format check reads")
        else:
            reason = f"a {kind or fmt.name + ' file'} that mentions vLLM, but no vLLM server was found in it"
        out.append(NotUnderstood(obj.loc(), kind, name, reason))
    return servers, out
