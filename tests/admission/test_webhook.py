"""The webhook over real HTTPS: verdicts equal `check`'s, bad requests answered, certificates rotated."""

import hashlib
import json
import socket
import ssl
import time

import yaml

from configurator.admission.review import verdict_for
from configurator.lint.engine import Options, evaluate
from configurator.lint.load import load
from tests.admission.conftest import make_cert
from tests.conftest import ROOT

CORPUS = ROOT / "tests" / "manifests"


def _review(obj, uid="uid-1", dry_run=False):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "operation": "CREATE", "dryRun": dry_run, "object": obj}}


def _first(name):
    return next(d for d in yaml.safe_load_all((CORPUS / name).read_text()) if d and d.get("kind") != "ConfigMap")


def test_refusal_bound_deployment_is_denied_with_rule_and_fix(webhook):
    status, body = webhook.post(_review(_first("docs-example-too-long.yaml"), uid="deny-me"))
    resp = body["response"]
    assert status == 200 and resp["uid"] == "deny-me" and resp["allowed"] is False
    assert resp["status"]["code"] == 422
    assert "kv-cache-too-small" in resp["status"]["message"] and "Fix:" in resp["status"]["message"]


def test_tight_deployment_is_allowed_with_warnings(webhook):
    _status, body = webhook.post(_review(_first("util-high.yaml"), uid="warn-me", dry_run=True))
    resp = body["response"]
    assert resp["uid"] == "warn-me" and resp["allowed"] is True
    assert resp["warnings"] and all(len(w) <= 256 for w in resp["warnings"])
    assert "patch" not in resp  # never mutates


def test_unrelated_objects_are_allowed(webhook):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}}
    _, body = webhook.post(_review(cm, uid="cm"))
    assert body["response"] == {"uid": "cm", "allowed": True}


def test_verdicts_equal_check_on_the_corpus(webhook):
    for path in sorted(CORPUS.glob("*.yaml")):
        if path.name == "hostile-values.yaml":  # values Kubernetes rejects: the webhook fails closed on them
            continue
        docs, _ = load([str(path)])
        for d in docs:
            if not isinstance(d.data, dict) or "servingEngineSpec" in d.data or d.data.get("kind") == "ConfigMap":
                continue
            expected = {f.rule for f in evaluate([d], [], Options()).findings if f.severity in ("error", "warning")}
            _, body = webhook.post(_review(d.data, uid=path.stem))
            resp = body["response"]
            assert resp["uid"] == path.stem
            errors = {f.rule for f in evaluate([d], [], Options()).findings if f.severity == "error"}
            assert resp["allowed"] is (not errors), path.name
            text = resp.get("status", {}).get("message", "") + " ".join(resp.get("warnings", []))
            if "--config" not in json.dumps(d.data):  # the ConfigMap is not part of an admission request
                assert all(rule in text for rule in expected), (path.name, expected, text)


def test_bad_requests_get_4xx_and_the_server_keeps_serving(webhook):
    assert webhook.post(b"{not json")[0] == 400
    assert webhook.post({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
                         "request": {"uid": "x"}})[0] == 400
    assert webhook.post({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"})[0] == 400
    assert webhook.post(b"x" * (10 << 20))[0] == 413
    assert webhook.post({"a": 1}, path="/nope")[0] == 404
    # a slow client: headers, then a body that never completes
    raw = socket.create_connection(("127.0.0.1", webhook.port))
    tls = webhook.context().wrap_socket(raw, server_hostname="localhost")
    tls.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1000\r\n\r\n{")
    tls.settimeout(10)
    answer = tls.recv(4096).decode()
    tls.close()
    assert " 408 " in answer.splitlines()[0]
    assert webhook.get("/healthz") == (200, "ok")
    assert "Traceback" not in webhook.log.read_text()


def test_metrics(webhook):
    webhook.post(_review({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}}))
    status, text = webhook.get("/metrics")
    assert status == 200 and "vllm_configurator_admission_requests_total" in text
    assert "vllm_configurator_admission_latency_seconds_bucket" in text


def test_rotated_certificate_is_served_without_restart(webhook):
    def fingerprint():
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with socket.create_connection(("127.0.0.1", webhook.port)) as raw, \
                ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            return hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()

    before = fingerprint()
    make_cert(webhook.cert.parent, cn="rotated.localhost")
    deadline = time.time() + 10
    while fingerprint() == before and time.time() < deadline:
        time.sleep(0.2)
    assert fingerprint() != before
    assert webhook.get("/healthz") == (200, "ok")
    assert webhook.proc.poll() is None


def test_review_function_matches_the_webhook_contract():
    v = verdict_for(_first("over-limit.yaml"), Options())
    assert not v.allowed and v.message.startswith("vllm-configurator: max-model-len-over-limit")
