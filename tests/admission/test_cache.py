"""The verdict cache: keyed by exactly what decides a verdict (review.decisive), so that a rollout's pods (a new
name generated from generateName, a new uid, creation time and owner) are evaluated once, every pod that
differs in anything that decides gets its own verdict, and a cached verdict is always the one the object would
get evaluated afresh."""

import asyncio
import copy
import dataclasses
import json

import httpx
import pytest

from configurator.admission import server as srv
from configurator.admission.review import VerdictCache, assess, decisive, verdict_key
from configurator.admission.server import WebhookApp, WebhookSettings
from configurator.admission.shape import loads
from configurator.lint.engine import Options
from configurator.lint.render import load_paths
from tests.conftest import ROOT

OPTS = Options()


def _pod(**meta) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "qwen-7d9f8b6c5-", "name": "qwen-7d9f8b6c5-x2k4q", "namespace": "team-a",
                         "labels": {"app": "qwen"}, "annotations": {"team": "a"}, **meta},
            "spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"},
                     "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.10.1",
                                     "command": ["vllm", "serve"],
                                     "args": ["Qwen/Qwen3-8B", "--max-model-len", "131072"],
                                     "env": [{"name": "HF_HOME", "value": "/cache"}],
                                     "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}


def _c(obj: dict) -> dict:
    return obj["spec"]["containers"][0]


# each changes one thing that may decide the verdict
DECIDING = {
    "command": lambda p: _c(p).update(command=["python3", "-m", "vllm.entrypoints.openai.api_server"]),
    "args": lambda p: _c(p)["args"].__setitem__(2, "4096"),
    "an arg added": lambda p: _c(p)["args"].append("--enforce-eager"),
    "env value": lambda p: _c(p)["env"].append({"name": "VLLM_USE_V1", "value": "0"}),
    "image": lambda p: _c(p).update(image="vllm/vllm-openai:v0.8.5"),
    "resources": lambda p: _c(p)["resources"]["limits"].update({"nvidia.com/gpu": 2}),
    "node selector": lambda p: p["spec"]["nodeSelector"].update({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
    "affinity": lambda p: p["spec"].update(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100-SXM4-80GB"]}]}]}}}),
    "a gpu annotation": lambda p: p["metadata"]["annotations"].update({"vllm-configurator.io/gpu": "H100"}),
    "an ignore annotation": lambda p: p["metadata"]["annotations"].update({"vllm-configurator.io/ignore": "all"}),
    "a label": lambda p: p["metadata"]["labels"].update({"app": "other"}),
    "namespace": lambda p: p["metadata"].update(namespace="team-b"),
    "a name the API server did not generate": lambda p: p["metadata"].update(name="qwen-by-hand"),
    "a generated-looking name of another prefix": lambda p: p["metadata"].update(name="other-7d9f8b6c5-x2k4q"),
    "a suffix the generator never writes (a vowel)": lambda p: p["metadata"].update(name="qwen-7d9f8b6c5-xak4q"),
    "a suffix of another length": lambda p: p["metadata"].update(name="qwen-7d9f8b6c5-x2k4qq"),
    "generateName": lambda p: p["metadata"].update(generateName="qwen-7d9f8b6c-"),
    "kind": lambda p: p.update(kind="PodTemplate"),
    "apiVersion": lambda p: p.update(apiVersion="v2"),
    "a second container": lambda p: p["spec"]["containers"].append({**_c(p), "name": "two"}),
    "container order": lambda p: p["spec"]["containers"].insert(0, {"name": "side", "image": "busybox"}),
    "a number's type": lambda p: _c(p)["resources"]["limits"].update({"nvidia.com/gpu": 1.0}),
}

# each changes only what the API server or a controller sets per object
PER_OBJECT = {
    "uid": lambda p: p["metadata"].update(uid="5f0c-1"),
    "resourceVersion": lambda p: p["metadata"].update(resourceVersion="912"),
    "creationTimestamp": lambda p: p["metadata"].update(creationTimestamp="2026-01-01T00:00:00Z"),
    "ownerReferences": lambda p: p["metadata"].update(ownerReferences=[{"kind": "ReplicaSet", "uid": "rs-2"}]),
    "managedFields": lambda p: p["metadata"].update(managedFields=[{"manager": "kube-controller-manager"}]),
    "generation": lambda p: p["metadata"].update(generation=3),
    "status": lambda p: p.update(status={"phase": "Pending"}),
    "a new generated name": lambda p: p["metadata"].update(name="qwen-7d9f8b6c5-b9z2w"),
}


@pytest.mark.parametrize("what", DECIDING)
def test_a_pod_that_differs_in_what_decides_gets_its_own_verdict(what):
    base = _pod()
    other = copy.deepcopy(base)
    DECIDING[what](other)
    assert verdict_key(other, "deny") != verdict_key(base, "deny")
    cache = VerdictCache()
    assess(copy.deepcopy(base), OPTS, cache=cache)
    got = assess(copy.deepcopy(other), OPTS, cache=cache)
    assert cache.hits == 0
    assert got == assess(copy.deepcopy(other), OPTS)  # what it gets evaluated afresh


@pytest.mark.parametrize("what", PER_OBJECT)
def test_what_the_api_server_sets_per_object_is_not_what_decides(what):
    base = _pod()
    other = copy.deepcopy(base)
    PER_OBJECT[what](other)
    assert verdict_key(other, "deny") == verdict_key(base, "deny")
    cache = VerdictCache()
    first = assess(copy.deepcopy(base), OPTS, cache=cache)
    assert assess(other, OPTS, cache=cache) is first and cache.hits == 1


def test_the_error_policy_is_part_of_the_key():
    assert verdict_key(_pod(), "deny") != verdict_key(_pod(), "warn")


def test_verdicts_that_differ_are_never_crossed():
    """Pods whose verdicts differ (a denial, an allowance with warnings, another GPU), through one cache in
    every order, each get exactly what they get without it."""
    pods = [_pod()]
    for change in ("args", "node selector", "a gpu annotation", "resources", "image", "an ignore annotation"):
        p = _pod()
        DECIDING[change](p)
        pods.append(p)
    fresh = [assess(copy.deepcopy(p), OPTS) for p in pods]
    assert len({(v.allowed, v.message, v.warnings) for v in fresh}) >= 3  # the pods really are judged apart
    cache = VerdictCache()
    for order in (pods, pods[::-1], pods + pods):
        for p in order:
            assert assess(copy.deepcopy(p), OPTS, cache=cache) == fresh[pods.index(p)]
    assert cache.hits == 3 * len(pods)  # evaluated once each, answered from the cache after


def test_a_generated_name_decides_nothing_because_it_is_never_evaluated():
    """A name made from generateName is dropped before the evaluation (the object as its manifest was written):
    every pod of a ReplicaSet gets one verdict, and that verdict is the same computed for any of them."""
    a, b = _pod(), _pod(name="qwen-7d9f8b6c5-b9z2w")
    assert "name" not in decisive(a)["metadata"] and decisive(a) == decisive(b)
    assert assess(copy.deepcopy(a), OPTS) == assess(copy.deepcopy(b), OPTS)
    by_hand = _pod(name="qwen-by-hand")
    assert decisive(by_hand)["metadata"]["name"] == "qwen-by-hand"


def test_an_object_with_an_out_of_range_number_is_never_cached():
    obj = loads(json.dumps(_pod()).replace('"nvidia.com/gpu": 1', '"nvidia.com/gpu": ' + "9" * 60))
    assert verdict_key(obj, "deny") is None
    cache = VerdictCache()
    v = assess(obj, OPTS, cache=cache)
    assert not v.allowed and v.failure and "out of range" in v.message
    assert len(cache._d) == 0


def test_the_cache_is_bounded_and_keeps_the_most_recent():
    cache = VerdictCache(size=2)
    pods = []
    for n in range(3):
        p = _pod()
        _c(p)["args"][2] = str(4096 * (n + 1))
        pods.append(p)
        assess(copy.deepcopy(p), OPTS, cache=cache)
    assert len(cache._d) == 2
    assert cache.get(verdict_key(pods[0], "deny")) is None  # the oldest went first
    assert cache.get(verdict_key(pods[2], "deny")) is not None


def _corpus_files() -> list:
    """tests/manifests and tests/corpus/real, their expected-findings files left out."""
    return sorted((ROOT / "tests" / "manifests").glob("*.y*ml")) + \
        sorted(p for p in (ROOT / "tests" / "corpus" / "real").rglob("*.y*ml") if p.name != "expected.yaml")


def test_every_corpus_object_gets_through_the_cache_what_it_gets_without():
    """Every object of tests/manifests and tests/corpus/real, each also as a rollout's pod would come (a name
    generated from generateName, a uid, an owner, a status), through one cache: the verdict it would get alone."""
    files = _corpus_files()
    cases = []
    for path in files:
        docs, _ = load_paths([str(path)])
        for d in docs:
            obj = d.data
            if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
                continue
            cases.append((path, obj))
            meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            if isinstance(meta.get("name"), str):
                cases.append((path, {**obj, "status": {"phase": "Pending"},
                                     "metadata": {**meta, "generateName": meta["name"] + "-",
                                                  "name": meta["name"] + "-b9z2w", "uid": "u-1",
                                                  "ownerReferences": [{"kind": "ReplicaSet", "uid": "rs"}]}}))
    fresh = [assess(copy.deepcopy(obj), OPTS) for _, obj in cases]
    cache = VerdictCache()
    for _ in range(2):  # the first pass fills the cache, the second is answered from it
        for (path, obj), alone in zip(cases, fresh, strict=True):
            assert assess(copy.deepcopy(obj), OPTS, cache=cache) == alone, path
    cached = sum(1 for v in fresh if not v.failure)
    assert len(cases) > 150 and cache.hits >= cached


def test_models_and_estimates_kept_across_reviews_change_no_verdict(monkeypatch):
    """The webhook keeps models and estimates for its life (Options.memo): every corpus object, reviewed twice
    through one memo in an order that mixes files, gets the verdict it gets with nothing kept; the second pass
    computes no estimate."""
    from configurator.lint import engine

    files = _corpus_files()
    objs = [d.data for path in files for d in load_paths([str(path)])[0]
            if isinstance(d.data, dict) and isinstance(d.data.get("kind"), str)]
    alone = [assess(copy.deepcopy(o), OPTS) for o in objs]
    memo_opts = dataclasses.replace(OPTS, memo={})
    order = sorted(range(len(objs)), key=lambda i: (i * 7919) % len(objs))
    for i in order:
        assert assess(copy.deepcopy(objs[i]), memo_opts) == alone[i], i
    assert memo_opts.memo["estimates"] and memo_opts.memo["models"]
    calls = []
    real = engine.estimate
    monkeypatch.setattr(engine, "estimate", lambda req: calls.append(req) or real(req))
    for i in order:
        assert assess(copy.deepcopy(objs[i]), memo_opts) == alone[i], i
    assert not calls  # every estimate (and every catalog fit of a server with no GPU type) was kept


def test_a_kept_estimate_is_used_only_for_its_own_model_object_and_the_memo_is_bounded():
    from configurator.lint import engine

    pod = _pod()
    memo_opts = Options(memo={})
    first = assess(copy.deepcopy(pod), memo_opts)
    estimates = memo_opts.memo["estimates"]
    ((key, (result, error, model)),) = estimates.items()
    # an entry whose key matches but whose spec is another object (an id reused after the first was freed) is
    # not used: it is computed again for the spec at hand
    other = copy.deepcopy(model)
    estimates[key] = (dataclasses.replace(result, verdict="refused", fits=False, errors=["not this model's"]), error,
                      other)
    assert assess(copy.deepcopy(pod), memo_opts) == first
    assert estimates[key][2] is model
    # past its bound the memo starts again
    for n in range(engine._Run.MEMO_BOUND + 1):
        estimates[("filler", n)] = (None, None, None)
    assess(copy.deepcopy(pod), memo_opts)
    assert len(memo_opts.memo["estimates"]) == 1


def _post_all(app: WebhookApp, bodies: list[dict]) -> list[dict]:
    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://hook") as c:
            return [(await c.post("/validate", content=json.dumps(b))).json()["response"] for b in bodies]

    return asyncio.run(go())


def _review(obj: dict, uid: str) -> dict:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "operation": "CREATE", "object": obj}}


def test_a_rollout_is_evaluated_once_and_each_pod_gets_its_own_uid(monkeypatch):
    app = WebhookApp(WebhookSettings(budget_s=30))
    calls = []
    real = srv.assess
    monkeypatch.setattr(srv, "assess", lambda *a, **k: calls.append(1) or real(*a, **k))
    names = ["x2k4q", "b9z2w", "ttq42", "c7hvz", "m2n4p"]
    bodies = [_review(_pod(name=f"qwen-7d9f8b6c5-{s}", uid=f"pod-{s}"), uid=f"req-{s}") for s in names]
    answers = _post_all(app, bodies)
    assert len(calls) == 1  # the first pod only: the others are answered on the event loop from the cache
    assert [a["uid"] for a in answers] == [f"req-{s}" for s in names]
    assert all(a["allowed"] == answers[0]["allowed"] and a.get("warnings") == answers[0].get("warnings")
               for a in answers)
    other = _pod(name="qwen-7d9f8b6c5-zzzzz")
    _c(other)["args"][2] = "4096"
    assert _post_all(app, [_review(other, "req-other")])[0]["uid"] == "req-other" and len(calls) == 2


def _plain_pod(*args: str, image: str = "nginx:1.27") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "c", "image": image, "args": list(args)}]}}


def test_an_object_without_vllm_takes_the_fast_path(monkeypatch):
    from configurator.admission import review as rv

    monkeypatch.setattr(rv, "verdict_for", lambda *a, **k: pytest.fail("evaluated in full"))
    for obj in (_plain_pod("--port", "80"), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}):
        assert assess(obj, OPTS) == rv.Verdict(True, ())


@pytest.mark.parametrize("obj", [
    # KServe's Hugging Face server runs vLLM, and no string of the pod names it
    _plain_pod("-m", "huggingfaceserver", "--model_id=Qwen/Qwen3-8B", image="python:3.12"),
    # a wrong shape where the workloads format reads a pod template: check says it could not read it
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": "a string"}},
], ids=["huggingfaceserver", "unreadable-template"])
def test_an_object_without_vllm_that_check_speaks_of_is_evaluated(obj):
    from configurator.admission import review as rv

    assert not rv._silent(copy.deepcopy(obj), OPTS)
    report_says = rv.verdict_for(copy.deepcopy(obj), OPTS)
    assert report_says.findings or report_says.checked  # what the fast path must not skip
    assert assess(copy.deepcopy(obj), OPTS) == report_says


def test_the_fast_path_says_what_check_says_on_every_object_without_vllm():
    """Every object of the corpus that names no vLLM: the fast path's verdict is the full evaluation's."""
    from configurator.admission import review as rv
    from configurator.admission.shape import inspect

    files = _corpus_files()
    seen = silent = 0
    for path in files:
        docs, _ = load_paths([str(path)])
        for d in docs:
            if not isinstance(d.data, dict) or inspect(d.data).mentions_vllm is not False:
                continue
            seen += 1
            full = rv._evaluate(decisive(copy.deepcopy(d.data)), OPTS, "deny")
            if rv._silent(decisive(copy.deepcopy(d.data)), OPTS):
                silent += 1
                assert full == rv.Verdict(True, ()), path
    assert seen >= 10 and 0 < silent < seen
