"""The `webhook` command's documented flags (`--on-error`, `--on-failure`, `--budget`) and its 405, from the
command line to the answer: in-process (the CLI builds the settings, the ASGI app answers through httpx, so
coverage measures both) and over real HTTPS (a `vllm-configurator webhook` process on loopback)."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
import yaml

from configurator.admission import server as srv
from configurator.admission.review import assess
from tests.admission.conftest import start_webhook, stop_webhook
from tests.conftest import ROOT

CORPUS = ROOT / "tests" / "manifests"
# a Deployment vLLM refuses (kv-cache-too-small): an error finding
TOO_LONG = next(d for d in yaml.safe_load_all((CORPUS / "docs-example-too-long.yaml").read_text())
                if d and d.get("kind") != "ConfigMap")
# a pod that names vLLM but cannot be checked (metadata is not a map): a failed review
MALFORMED = {"apiVersion": "v1", "kind": "Pod", "metadata": True,
             "spec": {"containers": [{"name": "v", "image": "vllm/vllm-openai:v0.10.1",
                                      "args": ["--model", "Qwen/Qwen3-8B"]}]}}


def _review(obj, uid="u1"):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "operation": "CREATE", "object": obj}}


def _settings(run_cli, monkeypatch, *flags):
    """The WebhookSettings `vllm-configurator webhook FLAGS` serves with (serve itself is replaced)."""
    seen = {}

    def fake_serve(settings, **kw):
        seen.update(settings=settings, **kw)

    monkeypatch.setattr(srv, "serve", fake_serve)
    res = run_cli("webhook", "--host", "127.0.0.1", "--port", "9443", "--insecure-http", *flags)
    assert res.exit_code == 0, res.output
    assert seen["host"] == "127.0.0.1" and seen["port"] == 9443
    return seen["settings"]


def _ask(settings, body, method="POST", path="/validate"):
    app = srv.WebhookApp(settings)

    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://hook") as c:
            return await c.request(method, path, content=json.dumps(body) if body is not None else b"")

    return asyncio.run(go())


def test_defaults_deny_an_error_and_a_review_that_failed(run_cli, monkeypatch):
    s = _settings(run_cli, monkeypatch)
    assert (s.on_error, s.on_failure, s.budget_s) == ("deny", "deny", 2.0)
    resp = _ask(s, _review(TOO_LONG)).json()["response"]
    assert resp["allowed"] is False and resp["status"]["code"] == 422
    assert "kv-cache-too-small" in resp["status"]["message"]
    resp = _ask(s, _review(MALFORMED)).json()["response"]
    assert resp["allowed"] is False and resp["status"]["code"] == 400


def test_on_error_warn_admits_an_error_with_its_finding_as_a_warning(run_cli, monkeypatch):
    s = _settings(run_cli, monkeypatch, "--on-error", "warn")
    resp = _ask(s, _review(TOO_LONG)).json()["response"]
    assert resp["allowed"] is True and any("kv-cache-too-small" in w for w in resp["warnings"])
    # --on-error says nothing about a review that failed: still denied
    assert _ask(s, _review(MALFORMED)).json()["response"]["allowed"] is False


@pytest.mark.parametrize("policy", ["allow-with-warning", "allow"])
def test_on_failure_allow_admits_an_unchecked_object_and_says_so(run_cli, monkeypatch, policy):
    s = _settings(run_cli, monkeypatch, "--on-failure", policy)
    assert s.on_failure == "allow-with-warning"  # `allow` is read as allow-with-warning: never silent
    resp = _ask(s, _review(MALFORMED)).json()["response"]
    assert resp["allowed"] is True and resp["warnings"][0].startswith("vllm-configurator not applied:")
    # an object it could check is still judged: the error still denies
    assert _ask(s, _review(TOO_LONG)).json()["response"]["allowed"] is False


def test_budget_bounds_each_review(run_cli, monkeypatch):
    def slow(obj, opts, on_error, on_failure, on_shape=None, **_kw):
        verdict = assess(obj, opts, on_error, on_failure, on_shape=on_shape)
        time.sleep(0.6)
        return verdict

    s = _settings(run_cli, monkeypatch, "--budget", "0.1")
    assert s.budget_s == 0.1
    monkeypatch.setattr(srv, "assess", slow)
    resp = _ask(s, _review(TOO_LONG)).json()["response"]
    assert resp["allowed"] is False and resp["status"]["code"] == 504 and "timed out" in resp["status"]["message"]
    s = _settings(run_cli, monkeypatch, "--budget", "0.1", "--on-failure", "allow-with-warning")
    monkeypatch.setattr(srv, "assess", slow)
    resp = _ask(s, _review(TOO_LONG)).json()["response"]
    assert resp["allowed"] is True and "timed out" in resp["warnings"][0]


@pytest.mark.parametrize("flags, says", [
    (["--budget", "0"], "--budget"), (["--budget", "61"], "--budget"), (["--on-error", "allow"], "--on-error"),
    (["--on-failure", "maybe"], "--on-failure"), (["--tls-cert-file", "x.crt"], "go together"),
])
def test_bad_flags_exit_2_before_serving(run_cli, monkeypatch, flags, says):
    monkeypatch.setattr(srv, "serve", lambda *a, **k: pytest.fail("served with bad flags"))
    res = run_cli("webhook", *flags)
    assert res.exit_code == 2 and says in res.output and "Traceback" not in res.output


def test_get_on_validate_is_405(run_cli, monkeypatch):
    r = _ask(_settings(run_cli, monkeypatch), None, method="GET")
    assert r.status_code == 405 and r.headers["allow"] == "POST"


def test_the_flags_over_real_https(tmp_path):
    hook = start_webhook(tmp_path, "--on-error", "warn", "--on-failure", "allow", "--budget", "5")
    try:
        status, body = hook.post(_review(TOO_LONG, uid="warned"))
        resp = body["response"]
        assert status == 200 and resp["uid"] == "warned" and resp["allowed"] is True
        assert any("kv-cache-too-small" in w for w in resp["warnings"])
        status, body = hook.post(_review(MALFORMED, uid="unchecked"))
        assert body["response"]["allowed"] is True and "not applied" in body["response"]["warnings"][0]
        c = hook.conn()
        c.request("GET", "/validate")
        r = c.getresponse()
        assert r.status == 405 and r.getheader("allow") == "POST"
        c.close()
    finally:
        stop_webhook(hook)
