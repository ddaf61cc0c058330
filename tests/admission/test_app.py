"""The webhook app in-process (an ASGI client, so coverage measures server.py): hostile objects, the
failure policy, overload, the routes and the log lines."""

import asyncio
import json
import logging
import os
import threading
import time

import httpx
import pytest
import yaml

from configurator.admission import server as srv
from configurator.admission.review import assess
from configurator.admission.server import JsonFormatter, WebhookApp, WebhookSettings
from configurator.lint.engine import Options
from tests.conftest import ROOT

CORPUS = ROOT / "tests" / "manifests"
VLLM = {"name": "vllm", "image": "vllm/vllm-openai:v0.10.1",
        "args": ["--model", "Qwen/Qwen3-8B", "--max-model-len", "131072"],
        "resources": {"limits": {"nvidia.com/gpu": 1}}}


def _review(obj, uid="u1", namespace="team-a"):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "operation": "CREATE", "namespace": namespace,
                        "kind": {"group": "", "version": "v1", "kind": "Pod"}, "object": obj}}


def _pod(*containers, meta=None, **extra):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"} if meta is None else meta,
            "spec": {"containers": list(containers) or [VLLM]}, **extra}


def _first(name):
    return next(d for d in yaml.safe_load_all((CORPUS / name).read_text()) if d and d.get("kind") != "ConfigMap")


def _post(app, body, path="/validate", method="POST"):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)

    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://hook") as c:
            return await c.request(method, path, content=data)

    return asyncio.run(go())


@pytest.fixture(scope="module")
def app():
    # a generous budget: these tests check the verdicts, not the speed (a loaded machine under coverage took
    # more than the default 2 s on the 17,000-container body and answered 504); the budget has its own tests
    a = WebhookApp(WebhookSettings(budget_s=30))
    a.warm_up()
    return a


def _dumps(obj):
    return json.dumps(_review(obj))


MALFORMED = {
    "metadata true": _dumps(_pod(meta=True)),
    "metadata a string": _dumps(_pod(meta="x")),
    "metadata a list": _dumps(_pod(meta=["a"])),
    "name a list": _dumps(_pod(meta={"name": ["a"]})),
    "annotations a list": _dumps(_pod(meta={"name": "p", "annotations": ["a"]})),
    "labels of numbers": _dumps(_pod(meta={"name": "p", "labels": {"a": 1}})),
    "kind a map": _dumps({**_pod(), "kind": {}}),
    "5,000-digit number": _dumps(_pod(extra="N")).replace('"N"', "7" * 5000),
    "NaN": _dumps(_pod(extra="N")).replace('"N"', "NaN"),
    "1e999": _dumps(_pod(extra="N")).replace('"N"', "1e999"),
    "nested 500 deep": _dumps(_pod(extra="N")).replace('"N"', "[" * 500 + "]" * 500),
    "containers a string": _dumps({**_pod(), "spec": {"containers": "vllm serve x"}}),
    "container args a map": _dumps(_pod({**VLLM, "args": {"a": 1}})),
    "image a number": _dumps(_pod({**VLLM, "image": 11, "command": ["vllm", "serve"]})),
    "volumeMounts strings": _dumps(_pod({**VLLM, "volumeMounts": ["a"]})),
    "probe null": _dumps(_pod({**VLLM, "startupProbe": None, "readinessProbe": {"periodSeconds": "auto"}})),
    "17,000 containers": _dumps(_pod(*[{**VLLM, "name": f"c{i}"} for i in range(17_000)])),
    "a 1 MB sh -c script": _dumps(_pod({**VLLM, "command": ["sh", "-c", "vllm serve m " + "--x y " * 200_000]})),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_objects_never_500_and_a_vllm_server_is_never_allowed_silently(app, case):
    r = _post(app, MALFORMED[case])
    assert r.status_code == 200, r.text
    resp = r.json()["response"]
    assert resp["uid"] == "u1"
    if resp["allowed"]:  # evaluated after all (a shape the extractor reads): warnings or a clean verdict
        assert "not applied" not in json.dumps(resp)
    else:
        assert resp["status"]["code"] in (400, 413, 422, 500)
    if case in ("17,000 containers", "a 1 MB sh -c script"):
        assert resp["allowed"] is False and resp["status"]["code"] == 413
        assert resp["status"]["message"].startswith("vllm-configurator")


@pytest.mark.parametrize("body", ['{"x": ' + "9" * 5000 + "}", "[" * 5000 + "]" * 5000, "{not json", "[]", "\xff",
                                  '{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",'
                                  ' "request": {"uid": 3}}'])
def test_requests_that_are_not_reviews_get_400(app, body):
    r = _post(app, body.encode("latin-1"))
    assert r.status_code == 400 and "error" in r.json()


def test_malformed_object_without_vllm_is_allowed(app):
    r = _post(app, _dumps({"kind": "ConfigMap", "metadata": True}))
    assert r.json()["response"] == {"uid": "u1", "allowed": True}


def test_failure_policy_allow_with_warning_says_so():
    a = WebhookApp(WebhookSettings(on_failure="allow-with-warning"))
    resp = _post(a, MALFORMED["metadata true"]).json()["response"]
    assert resp["allowed"] is True and resp["warnings"][0].startswith("vllm-configurator not applied:")


def test_denial_and_warn_mode(app):
    obj = _first("docs-example-too-long.yaml")
    resp = _post(app, _review(obj)).json()["response"]
    assert resp["allowed"] is False and resp["status"]["code"] == 422
    warn = WebhookApp(WebhookSettings(on_error="warn"))
    resp = _post(warn, _review(obj)).json()["response"]
    assert resp["allowed"] is True and any("kv-cache-too-small" in w for w in resp["warnings"])


def test_routes(app):
    assert _post(app, b"", path="/healthz", method="GET").text == "ok"
    assert _post(app, b"", path="/readyz", method="GET").status_code == 200
    assert WebhookApp(WebhookSettings()).ready is False
    r = _post(app, b"", path="/validate", method="GET")
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    assert _post(app, b"{}", path="/other").status_code == 404
    assert _post(app, b"x" * (4 << 20)).status_code == 413
    metrics = _post(app, b"", path="/metrics", method="GET").text
    assert "vllm_configurator_admission_requests_total" in metrics


def _slow(seconds, release=None):
    def fake(obj, opts, on_error, on_failure, on_shape=None, **_kw):
        verdict = assess(obj, opts, on_error, on_failure, on_shape=on_shape)
        if release is not None:
            release.wait(10)
        else:
            time.sleep(seconds)
        return verdict
    return fake


def test_timeout_denies_a_vllm_server_by_default(monkeypatch):
    monkeypatch.setattr(srv, "assess", _slow(0.5))
    a = WebhookApp(WebhookSettings(budget_s=0.05))
    resp = _post(a, _review(_pod())).json()["response"]
    assert resp["allowed"] is False and resp["status"]["code"] == 504 and "timed out" in resp["status"]["message"]
    a = WebhookApp(WebhookSettings(budget_s=0.05, on_failure="allow-with-warning"))
    resp = _post(a, _review(_pod())).json()["response"]
    assert resp["allowed"] is True and "timed out" in resp["warnings"][0]
    # an object that names no vLLM is not held to the failure policy
    a = WebhookApp(WebhookSettings(budget_s=0.05))
    resp = _post(a, _review({"kind": "ConfigMap", "metadata": {"name": "c"}})).json()["response"]
    assert resp["allowed"] is True


def test_internal_error_is_never_allowed_silently(monkeypatch):
    def boom(*_a):
        raise ZeroDivisionError("x")
    monkeypatch.setattr("configurator.admission.review.verdict_for", boom)
    resp = _post(WebhookApp(WebhookSettings()), _review(_pod())).json()["response"]
    assert resp["allowed"] is False and resp["status"]["code"] == 500
    assert "ZeroDivisionError" in resp["status"]["message"]


def test_a_full_lane_denies_at_once_and_heavy_bodies_do_not_take_the_ordinary_lane(monkeypatch):
    """Overload is answered by the webhook itself (HTTP 200): a denial for an object that may hold a vLLM
    server (the default --on-failure deny), an allowance with a warning for any other; never a 429 or 503
    that would leave the verdict to the API server's failurePolicy."""
    release = threading.Event()
    monkeypatch.setattr(srv, "assess", _slow(0, release))
    a = WebhookApp(WebhookSettings(workers=1, queue=1, large_workers=1, large_queue=1, budget_s=5))
    heavy = _review(_pod(extra="x" * (300 << 10)))
    many = _review(_pod(*({**VLLM, "name": f"c{i}"} for i in range(20))), uid="many")  # heavy by cost, small body

    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=a), base_url="http://hook") as c:
            first = asyncio.create_task(c.post("/validate", content=json.dumps(_review(_pod()))))
            big = asyncio.create_task(c.post("/validate", content=json.dumps(heavy)))
            await asyncio.sleep(0.2)
            t0 = time.perf_counter()
            over = await c.post("/validate", content=json.dumps(_review(_pod(), uid="u2")))
            over_big = await c.post("/validate", content=json.dumps(heavy))
            over_many = await c.post("/validate", content=json.dumps(many))
            other = await c.post("/validate", content=json.dumps(_review(
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "x"}}, uid="s")))
            fast = time.perf_counter() - t0
            release.set()
            return (await first), (await big), over, over_big, over_many, other, fast

    first, big, over, over_big, over_many, other, fast = asyncio.run(go())
    for r, uid in ((over, "u2"), (over_big, "u1"), (over_many, "many")):
        resp = r.json()["response"]
        assert r.status_code == 200 and resp["uid"] == uid and resp["allowed"] is False, r.text
        assert resp["status"]["code"] == 429 and "overloaded" in resp["status"]["message"]
    assert other.status_code == 200 and other.json()["response"]["allowed"] is True
    assert fast < 1.0
    assert first.status_code == 200 and big.status_code == 200


def test_bodies_past_the_memory_budget_are_never_held(monkeypatch):
    """Bodies are counted against one budget before they are kept: past it a body is read through keeping only
    its head, and answered from it (a denial for a vLLM server) without parsing or buffering the rest."""
    a = WebhookApp(WebhookSettings(memory_budget_bytes=200 << 10, budget_s=30))
    a.budget.take(150 << 10)  # other requests hold most of it
    body = json.dumps(_review(_pod(extra="x" * (100 << 10)), uid="big-1"))
    monkeypatch.setattr(srv, "loads", lambda *_: pytest.fail("a body past the budget was parsed"))
    r = _post(a, body)
    resp = r.json()["response"]
    assert r.status_code == 200 and resp["uid"] == "big-1" and resp["allowed"] is False
    assert "memory budget" in resp["status"]["message"]
    assert a.budget.used == 150 << 10  # nothing of this request is still counted
    cm = json.dumps(_review({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                             "data": {"k": "y" * (100 << 10)}}, uid="cm"))
    resp = _post(a, cm).json()["response"]
    assert resp["allowed"] is True and "not applied" in resp["warnings"][0]


def test_a_cached_verdict_is_answered_without_a_worker(monkeypatch):
    a = WebhookApp(WebhookSettings(budget_s=30))
    first = _post(a, _review(_pod(), uid="a")).json()["response"]
    monkeypatch.setattr(srv, "assess", lambda *a, **k: pytest.fail("evaluated again"))
    again = _pod(meta={"name": "p", "uid": "other", "ownerReferences": [{"uid": "rs"}]})
    second = _post(a, _review(again, uid="b")).json()["response"]
    assert second["uid"] == "b" and second["allowed"] == first["allowed"] and second.get("warnings") == \
        first.get("warnings")


def test_a_model_path_in_a_pod_is_never_opened(app, tmp_path, monkeypatch):
    fifo = tmp_path / "model"
    os.mkfifo(fifo)  # opening it would block the review until the budget runs out
    opened = []
    monkeypatch.setattr("configurator.model.resolve.load_local", lambda p: opened.append(p))
    for model in (str(fifo), "/models/x", "../../etc/x", "./x", "~/x", "x/../y", "a/b/c"):
        t0 = time.perf_counter()
        r = _post(app, _review(_pod({**VLLM, "args": ["--model", model]})))
        assert r.status_code == 200 and time.perf_counter() - t0 < 1.5
    assert opened == []


def test_identical_containers_are_evaluated_once(app, monkeypatch):
    from configurator.admission import review as rv

    seen = []
    real = rv.verdict_for
    monkeypatch.setattr(rv, "verdict_for", lambda obj, *a: seen.append(len(obj["spec"]["containers"])) or
                        real(obj, *a))
    _post(app, _review(_pod(*[{**VLLM, "name": f"c{i}"} for i in range(40)])))
    assert seen == [1]


def test_every_log_line_is_one_json_object_with_the_namespace(app, caplog):
    with caplog.at_level(logging.INFO, logger="vllm_configurator.webhook"):
        _post(app, _review(_pod(), namespace="team-a"))
    fmt = JsonFormatter()
    lines = [fmt.format(r) for r in caplog.records]
    review = [json.loads(x) for x in lines if '"review"' in x]
    assert review and review[-1]["namespace"] == "team-a" and review[-1]["kind"] == "Pod"
    try:
        raise ValueError("bad\nsecond line")
    except ValueError:
        rec = logging.LogRecord("uvicorn.error", logging.ERROR, __file__, 1, "Exception in ASGI application", None,
                                __import__("sys").exc_info())
    line = fmt.format(rec)
    assert "\n" not in line
    assert json.loads(line).items() >= {"error": "ValueError", "detail": "bad",
                                        "message": "Exception in ASGI application"}.items()
    plain = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, "Started server process [%d]", (7,), None)
    assert json.loads(fmt.format(plain))["message"] == "Started server process [7]"


def test_review_function_keeps_dry_run_and_delete():
    from configurator.admission.review import parse_request

    body = _review(_pod())
    body["request"].update(operation="DELETE", dryRun=True)
    req = parse_request(body)
    assert req.object is None and req.dry_run and req.namespace == "team-a"
    assert assess(None, Options()).allowed
