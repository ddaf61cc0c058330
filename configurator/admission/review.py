"""AdmissionReview in, verdict out: the same `evaluate` as `check`, only the edges differ.

Pure: no I/O, no clock. Errors deny (HTTP 200 with `allowed: false`, `status.code` 422 and the rule
and its fix); every other finding (warning or info: unknown-model, not-understood, ...) allows with
`warnings`. Every object goes through `check`'s own discovery and evaluation (`lint.engine.evaluate`):
an object is allowed without a word only when that discovery finds no server in it and nothing to say.
Never mutates (no patch). A review that cannot be completed (an object of the wrong shape, too many
containers, an internal error, a timeout) is never allowed silently: for an object that may name a
vLLM server the failure policy decides (deny, the default, or allow with a warning saying it was not
checked). Models are looked up as `check` looks them up (configurator.model.resolver: the operator's
folders, the catalog, the Hugging Face cache, derivatives): no file a pod spec names is ever opened.
Verdicts are cached by a hash of what decides them (`verdict_key` over `decisive`: the object without its
status, the metadata the API server sets per object, and a name it generated from generateName), and that
is also what is evaluated, so a burst of the same pod template (a rollout, a batch of Jobs) is evaluated
once and a cached verdict is always the one the object would get afresh.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal

from configurator.admission.shape import (
    CONTAINER_KEYS,
    MAX_COMMAND_CHARS,
    MAX_CONTAINERS,
    Shape,
    ShapeError,
    inspect,
    object_problems,
)
from configurator.lint.engine import CheckReport, Finding, Options, evaluate
from configurator.lint.load import Document
from configurator.lint.rules import REGISTRY

API_VERSION = "admission.k8s.io/v1"
# Kubernetes truncates admission warnings longer than 256 characters and caps their total size.
MAX_WARNING_CHARS = 256
MAX_WARNINGS_TOTAL = 4096
MAX_MESSAGE_CHARS = 1024


OnError = Literal["deny", "warn"]
OnFailure = Literal["deny", "allow-with-warning"]
MAX_UID_CHARS = 256
# status.reason for each status.code a denial carries (Kubernetes' StatusReason names)
_REASONS = {400: "BadRequest", 413: "RequestEntityTooLarge", 422: "Invalid", 429: "TooManyRequests",
            500: "InternalError", 504: "Timeout"}


class ReviewError(Exception):
    """The request is not an AdmissionReview this webhook can answer (HTTP 400)."""


@dataclass(frozen=True)
class Request:
    """The parts of an AdmissionReview request the webhook uses, checked."""

    uid: str
    object: dict | None
    dry_run: bool
    namespace: str | None = None
    kind: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    findings: tuple[Finding, ...]
    message: str = ""
    warnings: tuple[str, ...] = ()
    checked: bool = False  # a vLLM server was found and evaluated
    code: int = 422  # status.code of a denial
    failure: str = ""  # why the review could not be completed ("" when it was)


def parse_request(body: Any) -> Request:
    """The checked request of an AdmissionReview; raises ReviewError when it is not one."""
    if not isinstance(body, dict):
        raise ReviewError("body is not a JSON object")
    if body.get("apiVersion") != API_VERSION or body.get("kind") != "AdmissionReview":
        raise ReviewError(f"expected apiVersion {API_VERSION}, kind AdmissionReview")
    req = body.get("request")
    if not isinstance(req, dict) or not isinstance(req.get("uid"), str) or not req["uid"]:
        raise ReviewError("AdmissionReview has no request with a uid")
    if len(req["uid"]) > MAX_UID_CHARS:
        raise ReviewError(f"request.uid is longer than {MAX_UID_CHARS} characters")
    obj = None if req.get("operation") == "DELETE" else req.get("object")
    kind = req.get("kind")
    kind = kind.get("kind") if isinstance(kind, dict) else None
    return Request(uid=req["uid"], object=obj if isinstance(obj, dict) else None, dry_run=req.get("dryRun") is True,
                   namespace=_str(req.get("namespace")), kind=_str(kind), name=_str(req.get("name")))


def _str(v: Any) -> str | None:
    return v[:253] if isinstance(v, str) else None


def parse_review(body: Any) -> tuple[str, dict | None, bool]:
    """(uid, object, dryRun) of an AdmissionReview; raises ReviewError when it is not one."""
    r = parse_request(body)
    return r.uid, r.object, r.dry_run


def failure_verdict(why: str, on_failure: OnFailure, *, code: int = 500, vllm: bool | None = True) -> Verdict:
    """The answer for a review that could not be completed. Objects that name no vLLM are allowed
    (nothing of theirs is ours to judge); the others follow the failure policy, never silently."""
    if vllm is False or on_failure == "allow-with-warning":
        return Verdict(True, (), warnings=(f"vllm-configurator not applied: {why}"[:MAX_WARNING_CHARS],),
                       failure=why)
    return Verdict(False, (), f"vllm-configurator could not check this object: {why}"[:MAX_MESSAGE_CHARS],
                   code=code, failure=why)


def _dedupe_containers(obj: dict) -> None:
    """Identical containers (but for their names) are evaluated once: their findings would be the same."""
    stack: list[Any] = [obj]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, child in v.items():
                if k in CONTAINER_KEYS and isinstance(child, list) and len(child) > 1:
                    seen: set[str] = set()
                    kept = []
                    for c in child:
                        key = json.dumps({a: b for a, b in c.items() if a != "name"} if isinstance(c, dict) else c,
                                         sort_keys=True, default=repr)
                        if key not in seen:
                            seen.add(key)
                            kept.append(c)
                    v[k] = kept
                else:
                    stack.append(child)
        elif isinstance(v, list):
            stack.extend(v)


def may_serve(obj: Any, mentions_vllm: bool | None) -> bool | None:
    """Whether an object may hold a vLLM server, without evaluating it (what a failure answer goes by): it
    mentions vLLM, or a deployment format other than a plain pod template recognises its kind (a KAITO
    Workspace, a KubeAI Model, a RayService run vLLM without spelling it). None: cannot tell."""
    if mentions_vllm is not False:
        return mentions_vllm
    if not isinstance(obj, dict):
        return False
    from configurator.lint.formats import formats
    from configurator.lint.shape import Node

    node = Node.of(Document(file="object", index=0, data=obj, positions={}))
    try:
        return any(f.recognise(node) for f in formats() if f.name not in _POD_FORMATS)
    except Exception:  # a recogniser that cannot read this object: assume it may
        return None


_POD_FORMATS = ("workloads", "kserve", "leaderworkerset")  # their servers are found by a command naming vLLM

# metadata that never changes a verdict: set by the API server or a controller per object
_VOLATILE_METADATA = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "ownerReferences",
                      "generation", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds")
# The name the API server makes from metadata.generateName (every pod of a ReplicaSet or a Job): the prefix and
# five characters of this alphabet (k8s.io/apiserver/pkg/storage/names/generate.go, randomLength = 5;
# k8s.io/apimachinery/pkg/util/rand/rand.go, alphanums). Validating webhooks see it filled in.
_GENERATED_SUFFIX = re.compile(r"[bcdfghjklmnpqrstvwxz2456789]{5}")


def decisive(obj: dict) -> dict:
    """What decides an object's verdict, and what the webhook evaluates: the object without its status, without
    the metadata the API server or a controller sets per object (uid, ownerReferences, managedFields, ...), and
    without a name the API server generated from generateName (the object as its manifest was written). A
    shallow copy: the maps below metadata are the object's own."""
    slim = {k: v for k, v in obj.items() if k != "status"}
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta = {k: v for k, v in meta.items() if k not in _VOLATILE_METADATA}
        name, prefix = meta.get("name"), meta.get("generateName")
        if isinstance(name, str) and isinstance(prefix, str) and prefix and name.startswith(prefix) and \
                _GENERATED_SUFFIX.fullmatch(name, len(prefix)):
            del meta["name"]
        slim["metadata"] = meta
    return slim


def _unkeyed(value: Any) -> Any:
    raise TypeError("not keyed")  # an out-of-range number: such an object is never cached


def verdict_key(obj: dict, on_error: str) -> bytes | None:
    """A hash of what decides an object's verdict (`decisive`) and of the error policy; None for an object that
    is not cached (one holding an out-of-range number, or nested too deeply to serialise). Keys are not sorted:
    the API server writes an object's fields in one order, and the same fields in another order only miss."""
    try:
        text = json.dumps(decisive(obj), separators=(",", ":"), default=_unkeyed)
    except (TypeError, ValueError, RecursionError):
        return None
    return hashlib.blake2b(f"{on_error}\0{text}".encode(), digest_size=16).digest()


class VerdictCache:
    """A bounded LRU of completed verdicts (failures are never cached), safe across worker threads."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._d: OrderedDict[str, Verdict] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    def get(self, key: str) -> Verdict | None:
        with self._lock:
            v = self._d.get(key)
            if v is not None:
                self._d.move_to_end(key)
                self.hits += 1
            return v

    def put(self, key: str, v: Verdict) -> None:
        if v.failure or self.size <= 0:
            return
        with self._lock:
            self._d[key] = v
            self._d.move_to_end(key)
            while len(self._d) > self.size:
                self._d.popitem(last=False)


def assess(obj: Any, opts: Options, on_error: OnError = "deny", on_failure: OnFailure = "deny",
           on_shape: Any = None, cache: VerdictCache | None = None, key: bytes | None = None,
           shape: Shape | None = None) -> Verdict:
    """One object, checked at the boundary, then evaluated as `check` evaluates it (same discovery, same
    model lookup, same findings), on what decides its verdict (`decisive`). `on_shape(shape)` is told what the
    boundary walk found before the evaluation starts (`shape`: the walk, when the caller has made it); `cache`
    holds verdicts by `verdict_key` (`key`, when the caller has computed it). A cached verdict is answered
    before the walk: it was given to an object whose deciding part was the same, which passed the walk; what
    the walk would see besides (status, the metadata the API server sets) decides nothing and is never
    evaluated."""
    if obj is None:
        return Verdict(True, ())
    if not isinstance(obj, dict):
        return failure_verdict("the object is not a map", on_failure, code=400, vllm=None)
    if cache is not None:
        key = key or verdict_key(obj, on_error)
        if key is not None and (hit := cache.get(key)) is not None:
            return hit
    shape = shape or inspect(obj)
    if on_shape is not None:
        on_shape(shape)
    problems = shape.problems or object_problems(obj)
    serves = may_serve(obj, shape.mentions_vllm)
    if problems:
        if serves is False:  # no server can be in it: nothing of it is ours to judge
            return Verdict(True, ())
        return failure_verdict("; ".join(problems[:3]), on_failure, code=400, vllm=serves)
    if shape.containers > MAX_CONTAINERS:
        return failure_verdict(f"{shape.containers} containers, more than the {MAX_CONTAINERS} evaluated per object",
                               on_failure, code=413, vllm=serves)
    if shape.command_chars > MAX_COMMAND_CHARS:
        return failure_verdict(f"a container's command line is {shape.command_chars:,} characters, more than the "
                               f"{MAX_COMMAND_CHARS:,} evaluated", on_failure, code=413, vllm=serves)
    try:
        slim = decisive(obj)
        v = Verdict(True, ()) if shape.mentions_vllm is False and _silent(slim, opts) else \
            _evaluate(slim, opts, on_error)
    except ShapeError as e:
        return failure_verdict(str(e), on_failure, code=400, vllm=serves)
    except RecursionError:
        return failure_verdict("the object is nested too deeply to evaluate", on_failure, code=400, vllm=serves)
    except Exception as e:  # a fault behind the boundary: reported with its type, never allowed silently
        return failure_verdict(f"internal error: {type(e).__name__}", on_failure, code=500, vllm=serves)
    if cache is not None and key is not None:
        cache.put(key, v)
    return v


def _document(obj: dict) -> Document:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return Document(file=f"{obj.get('kind', 'object')}/{meta.get('name', '')}", index=0, data=obj, positions={})


def _silent(obj: dict, opts: Options) -> bool:
    """The fast path for an object that names no vLLM (no key or string mentions it): whether `check`'s discovery
    alone finds neither a server in it nor anything it cannot read. Then `evaluate` says nothing of it either:
    its findings are those of the servers and of the objects discovery could not read (and of files that
    mention vLLM, which this one does not), so the rules, the model lookup and the report are skipped.
    tests/admission/test_cache.py holds the two to the same verdict on every such object of the corpus."""
    from configurator.lint.find import extract_all

    try:
        servers, unread = extract_all([_document(obj)], opts.vllm_version)
    except Exception:  # evaluate fails closed on it, and says why
        return False
    return not servers and not unread


def _evaluate(obj: dict, opts: Options, on_error: OnError) -> Verdict:
    _dedupe_containers(obj)
    return verdict_for(obj, opts, on_error)


def verdict_for(obj: dict | None, opts: Options, on_error: OnError = "deny") -> Verdict:
    """Evaluate one object as `check` does: `lint.engine.evaluate`, its discovery included (no boundary
    checks: see `assess`)."""
    if obj is None:
        return Verdict(True, ())
    report: CheckReport = evaluate([_document(obj)], [], opts)
    return verdict_from_findings(report.findings, on_error, checked=bool(report.servers))


def verdict_from_findings(findings: list[Finding], on_error: OnError = "deny", checked: bool = True) -> Verdict:
    errors = [f for f in findings if f.severity == "error"]
    warns = [f for f in findings if f.severity != "error"]  # warnings, then info (unknown-model, not-understood)
    warns.sort(key=lambda f: f.severity != "warning")
    if errors and on_error == "deny":
        parts = [f"{f.rule}: {f.message} Fix: {REGISTRY[f.rule].remediation}" for f in errors]
        message = ("vllm-configurator: " + " | ".join(parts))[:MAX_MESSAGE_CHARS]
        return Verdict(False, tuple(findings), message, _warnings(warns), checked)
    return Verdict(True, tuple(findings), "", _warnings(errors + warns), checked)


def _warnings(findings: list[Finding]) -> tuple[str, ...]:
    out: list[str] = []
    total = 0
    for f in findings:
        w = f"vllm-configurator {f.rule}: {f.message}"
        if len(w) > MAX_WARNING_CHARS:
            w = w[:MAX_WARNING_CHARS - 3] + "..."
        if total + len(w) > MAX_WARNINGS_TOTAL:
            break
        out.append(w)
        total += len(w)
    return tuple(out)


def response(uid: str, v: Verdict) -> dict:
    """The AdmissionReview response body."""
    resp: dict[str, Any] = {"uid": uid, "allowed": v.allowed}
    if not v.allowed:
        resp["status"] = {"code": v.code, "reason": _REASONS.get(v.code, "InternalError"), "message": v.message}
    if v.warnings:
        resp["warnings"] = list(v.warnings)
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": resp}


def review(body: Any, opts: Options, on_error: OnError = "deny", on_failure: OnFailure = "deny") -> dict:
    """AdmissionReview request -> AdmissionReview response (raises ReviewError on a malformed one)."""
    req = parse_request(body)  # dry runs get the same answer: this webhook has no side effects
    return response(req.uid, assess(req.object, opts, on_error, on_failure))
