"""One verdict: every object of the project's corpus (tests/corpus/real, tests/manifests) gets from the
webhook's review exactly what `check`'s library evaluation says of it: denied iff `check` has an error
finding on it, evaluated iff `check` found a server in it, and every finding that does not deny
reaches the AdmissionReview's warnings (info findings included)."""

import copy
import json
from pathlib import Path

import pytest

from configurator.admission.review import VerdictCache, assess, review
from configurator.lint.engine import Options, evaluate
from configurator.lint.render import load_paths

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(p for p in (ROOT / "tests" / "corpus" / "real").rglob("*.y*ml") if p.name != "expected.yaml") + \
    sorted((ROOT / "tests" / "manifests").glob("*.y*ml"))


_APP = None


def _webhook(obj: dict, uid: str) -> dict:
    """The AdmissionReview response of the webhook's ASGI app (server.WebhookApp) for one object."""
    import asyncio

    import httpx

    from configurator.admission.server import WebhookApp, WebhookSettings

    global _APP
    if _APP is None:
        _APP = WebhookApp(WebhookSettings(budget_s=60))
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": uid, "operation": "CREATE", "object": obj}})

    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=_APP), base_url="http://hook") as c:
            return await c.post("/validate", content=body)

    r = asyncio.run(go())
    assert r.status_code == 200, r.text
    return r.json()["response"]


def _ref(obj: dict) -> tuple:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return obj.get("kind"), meta.get("name")


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_check_and_webhook_agree_on_every_object(path):
    docs, problems = load_paths([str(path)])
    report = evaluate(docs, problems, Options())
    objects = [d.data for d in docs if isinstance(d.data, dict) and isinstance(d.data.get("kind"), str)]
    if not objects:
        pytest.skip("a values file: not an object the API server admits")
    by_object: dict[tuple, list] = {}
    for f in report.findings:
        if f.object is not None:
            by_object.setdefault((f.object.kind, f.object.name), []).append(f)
    served = {(s.object.kind, s.object.name) for s in report.servers if s.object is not None}
    for obj in objects:
        v = assess(copy.deepcopy(obj), Options())
        mine = by_object.get(_ref(obj), [])
        errors = [f for f in mine if f.severity == "error"]
        assert v.allowed is not bool(errors), (_ref(obj), [f.rule for f in errors], v.message)
        if _ref(obj) in served:  # evaluated, or refused at the boundary (a malformed object: never allowed)
            assert v.checked or (v.failure and not v.allowed), _ref(obj)
        if v.failure:
            continue
        rules = {f.rule for f in v.findings}
        assert {f.rule for f in mine} <= rules, _ref(obj)
        for f in mine:
            if f.severity != "error" or v.allowed:
                assert any(w.startswith(f"vllm-configurator {f.rule}:") for w in v.warnings), (f.rule, v.warnings)
    # the file as a whole, through the live webhook's own path (parse, cache, lanes): it denies one of the
    # file's objects iff `check` fails the file
    answers = [_webhook(o, f"u{i}") for i, o in enumerate(objects)]
    assert all(a["uid"] == f"u{i}" for i, a in enumerate(answers))
    denied = any(a["allowed"] is False for a in answers)
    assert denied is any(f.severity == "error" for f in report.findings)


def _pod(args: list[str], annotations: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": {"vllm-configurator.io/gpu": "L4", **(annotations or {})}},
            "spec": {"containers": [{"name": "server", "image": "vllm/vllm-openai:v0.11.0", "args": args,
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def test_a_derivative_resolves_in_the_webhook_as_in_check():
    """Not in the catalog, a derivative of a catalog model: `check` reads it (70B of weights on one L4 is
    refused); the webhook used to look in the catalog only and allowed it."""
    obj = _pod(["vllm", "serve", "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"])
    report = evaluate(load_paths_obj(obj), [], Options())
    assert any(f.severity == "error" for f in report.findings)
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u", "object": obj}}
    assert review(body, Options())["response"]["allowed"] is False


def load_paths_obj(obj: dict):
    from configurator.lint.load import Document

    return [Document(file="pod.yaml", index=0, data=obj, positions={})]


def test_info_findings_reach_the_warnings():
    obj = _pod(["vllm", "serve", "acme/not-a-model-anyone-has"])
    v = assess(obj, Options())
    assert v.allowed and any(w.startswith("vllm-configurator unknown-model:") for w in v.warnings)


def test_a_server_that_never_spells_vllm_is_evaluated():
    """A KAITO Workspace names a preset, not vLLM: the shared discovery reads it, so the webhook does too."""
    path = ROOT / "tests" / "corpus" / "real" / "kaito-project-kaito" / "kaito_workspace_llama-3.1_8b_instruct.yaml"
    docs, _ = load_paths([str(path)])
    obj = docs[0].data
    assert "vllm" not in json.dumps(obj).lower()
    v = assess(copy.deepcopy(obj), Options())
    report = evaluate(docs, [], Options())
    assert v.checked and report.servers  # evaluated by both, not skipped for never naming vLLM
    assert v.allowed is not any(f.severity == "error" for f in report.findings)


def test_cached_verdicts_ignore_per_object_metadata_only():
    cache = VerdictCache()
    a = _pod(["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "1000000"])
    b = copy.deepcopy(a)
    b["metadata"].update(uid="x-1", ownerReferences=[{"uid": "rs-2"}], resourceVersion="9")
    first = assess(copy.deepcopy(a), Options(), cache=cache)
    assert assess(b, Options(), cache=cache) is first and cache.hits == 1
    c = copy.deepcopy(a)
    c["spec"]["containers"][0]["args"][-1] = "4096"  # what decides the verdict: evaluated again
    assert assess(c, Options(), cache=cache) is not first and cache.hits == 1
    assert not first.allowed and assess(c, Options(), cache=cache).allowed
