"""AdmissionReview in, verdict out: the same `evaluate` as `check`, only the edges differ.

Pure: no I/O, no clock. Errors deny (HTTP 200 with `allowed: false`, `status.code` 422 and the rule
and its fix); warnings allow with `warnings`; objects with no vLLM container are allowed at once.
Never mutates (no patch).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from configurator.lint.engine import CheckReport, Finding, Options, evaluate
from configurator.lint.extract import extract
from configurator.lint.load import Document
from configurator.lint.rules import REGISTRY

API_VERSION = "admission.k8s.io/v1"
# Kubernetes truncates admission warnings longer than 256 characters and caps their total size.
MAX_WARNING_CHARS = 256
MAX_WARNINGS_TOTAL = 4096
MAX_MESSAGE_CHARS = 1024


class ReviewError(Exception):
    """The request is not an AdmissionReview this webhook can answer (HTTP 400)."""


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    findings: tuple[Finding, ...]
    message: str = ""
    warnings: tuple[str, ...] = ()
    checked: bool = False  # a vLLM server was found and evaluated


def parse_review(body: Any) -> tuple[str, dict | None, bool]:
    """(uid, object, dryRun) of an AdmissionReview; raises ReviewError when it is not one."""
    if not isinstance(body, dict):
        raise ReviewError("body is not a JSON object")
    if body.get("apiVersion") != API_VERSION or body.get("kind") != "AdmissionReview":
        raise ReviewError(f"expected apiVersion {API_VERSION}, kind AdmissionReview")
    req = body.get("request")
    if not isinstance(req, dict) or not isinstance(req.get("uid"), str):
        raise ReviewError("AdmissionReview has no request with a uid")
    obj = req.get("object")
    if req.get("operation") == "DELETE":
        obj = None
    return req["uid"], obj if isinstance(obj, dict) else None, bool(req.get("dryRun"))


def verdict_for(obj: dict | None, opts: Options, on_error: Literal["deny", "warn"] = "deny") -> Verdict:
    """Evaluate one object as `check` would."""
    if obj is None:
        return Verdict(True, ())
    doc = Document(file=f"{obj.get('kind', 'object')}/{(obj.get('metadata') or {}).get('name', '')}", index=0,
                   data=obj, positions={})
    if not extract([doc]):
        return Verdict(True, ())
    report: CheckReport = evaluate([doc], [], opts)
    return verdict_from_findings(report.findings, on_error, checked=True)


def verdict_from_findings(findings: list[Finding], on_error: Literal["deny", "warn"] = "deny",
                          checked: bool = True) -> Verdict:
    errors = [f for f in findings if f.severity == "error"]
    warns = [f for f in findings if f.severity == "warning"]
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
        resp["status"] = {"code": 422, "reason": "Invalid", "message": v.message}
    if v.warnings:
        resp["warnings"] = list(v.warnings)
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": resp}


def review(body: Any, opts: Options, on_error: Literal["deny", "warn"] = "deny") -> dict:
    """AdmissionReview request -> AdmissionReview response (raises ReviewError on a malformed one)."""
    uid, obj, _dry_run = parse_review(body)  # dry runs get the same answer: this webhook has no side effects
    return response(uid, verdict_for(obj, opts, on_error))
