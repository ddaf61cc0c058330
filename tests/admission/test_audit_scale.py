"""Issue 30, audit: pods found through an index (owner uid, then the selector as Kubernetes evaluates it,
matchExpressions included), linear in objects, and an overall --deadline. The API is replaced in-process."""

from __future__ import annotations

import json
import os
import time

import pytest

from configurator.admission import audit
from configurator.lint.engine import Options

REFUSED_ARGS = ["--model", "Qwen/Qwen3-8B", "--gpu-memory-utilization", "0.5"]  # refused on an L4


def _deployment(name: str, selector: dict, ns: str = "ml", uid: str | None = None, kind: str = "Deployment") -> dict:
    return {"kind": kind, "metadata": {"name": name, "namespace": ns, **({"uid": uid} if uid else {})},
            "spec": {"selector": selector, "template": {"spec": {"containers": [
                {"name": "vllm", "image": "vllm/vllm-openai:v0.10.1", "args": REFUSED_ARGS}]}}}}


def _pod(name: str, labels: dict, node: str, ns: str = "ml", owner_uid: str = "rs") -> dict:
    return {"metadata": {"name": name, "namespace": ns, "labels": labels,
                         "ownerReferences": [{"kind": "ReplicaSet", "name": "x", "uid": owner_uid}]},
            "spec": {"nodeName": node, "containers": []}}


NODES = [{"metadata": {"name": "l4-node", "labels": {"nvidia.com/gpu.product": "NVIDIA-L4"}}},
         {"metadata": {"name": "h100-node", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}}]


@pytest.fixture
def cluster(monkeypatch):
    lists: dict[str, list] = {"nodes": NODES, "pods": [], "deployments": [], "statefulsets": []}
    monkeypatch.setattr(audit, "_client", lambda *a: None)
    monkeypatch.setattr(audit, "_list", lambda api, path, plural, namespace, deadline=None:
                        [json.loads(json.dumps(o)) for o in lists.get(plural, [])])
    return lists


@pytest.mark.parametrize("selector,labels,selected", [
    ({"matchLabels": {"app": "a"}}, {"app": "a", "x": "1"}, True),
    ({"matchLabels": {"app": "a"}}, {"app": "b"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]}, {"app": "b"}, True),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a"]}]}, {}, False),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]}, {}, True),  # unset: not in
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]}, {"app": "a"}, False),
    ({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, {"gpu": ""}, True),
    ({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, {"gpu": "x"}, False),
    ({"matchLabels": {"app": "a"}, "matchExpressions": [{"key": "t", "operator": "In", "values": ["s"]}]},
     {"app": "a", "t": "u"}, False),  # every requirement must hold
    ({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}, {"app": "2"}, False),  # invalid
    (None, {"app": "a"}, False),  # null selects nothing
    ({}, {"app": "a"}, True),  # empty selects everything
])
def test_selectors_as_kubernetes_evaluates_them(selector, labels, selected):
    assert audit._matches(selector, labels) is selected


@pytest.mark.parametrize("selector", [
    {"matchLabels": {"app": "vllm"}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["vllm", "other"]}]},
    {"matchExpressions": [{"key": "app", "operator": "Exists"},
                          {"key": "tier", "operator": "NotIn", "values": ["batch"]}]},
])
def test_match_expressions_find_the_gpu_and_the_refusal(cluster, selector):
    """The issue: with matchExpressions on L4 nodes audit said gpu-type-unknown (info, exit 0)."""
    cluster["deployments"] = [_deployment("d", selector)]
    cluster["pods"] = [_pod("d-1", {"app": "vllm", "tier": "serve"}, "l4-node"),
                       _pod("other", {"app": "web", "tier": "batch"}, "h100-node")]
    report = audit.audit(Options(), deadline_s=60)
    [server] = report.servers
    assert server.gpu == "l4" and report.worst() == "error"


def test_owner_uid_wins_over_the_selector(cluster):
    cluster["statefulsets"] = [_deployment("s", {"matchLabels": {"app": "nomatch"}}, uid="u-s", kind="StatefulSet")]
    cluster["pods"] = [_pod("s-0", {"app": "whatever"}, "l4-node", owner_uid="u-s")]
    [server] = audit.audit(Options(), deadline_s=60).servers
    assert server.gpu == "l4"


def test_finding_pods_is_linear_in_objects(cluster, monkeypatch):
    """5,000 Deployments of 10 pods each in 50 namespaces: each pod is tested against the selectors that could
    select it, not against every workload (the issue: 50,000 pods took 302 s, quadratic)."""
    calls = 0
    real = audit._holds

    def counting(req, labels):
        nonlocal calls
        calls += 1
        return real(req, labels)
    monkeypatch.setattr(audit, "_holds", counting)
    deps, pods = [], []
    for d in range(5000):
        labels = {"app": f"a{d}", "tier": "serve"}
        deps.append(_deployment(f"d{d}", {"matchLabels": labels}, ns=f"ns{d % 50}"))
        pods += [_pod(f"d{d}-{p}", {**labels, "pod": str(p)}, "l4-node", ns=f"ns{d % 50}") for p in range(10)]
    index = audit.PodIndex(pods)
    t = time.perf_counter()
    found = [index.owned_or_selected(o) for o in deps]
    elapsed = time.perf_counter() - t
    assert all(len(f) == 10 for f in found)
    assert calls <= 2 * 2 * len(pods), calls  # two requirements per pod of its own workload; quadratic: 10M
    assert elapsed < 20, elapsed  # measured 1.5 s for collect on a shared 2-core machine (was 61 s)


def test_deadline_stops_the_run_with_one_line(cluster, monkeypatch, run_cli):
    def slow(api, path, plural, namespace, deadline=None):
        if deadline is not None:
            deadline.check(f"listing {plural}")
        time.sleep(0.4)
        return []
    monkeypatch.setattr(audit, "_list", slow)
    t = time.monotonic()
    res = run_cli("audit", "--deadline", "1")
    err = res.stderr.strip()
    assert res.exit_code == 2 and "--deadline of 1 s passed" in err and len(err.splitlines()) == 1, err
    assert time.monotonic() - t < 5


def test_a_fifo_kubeconfig_is_refused_at_once(tmp_path, monkeypatch, run_cli):
    fifo = tmp_path / "config"
    os.mkfifo(fifo)
    monkeypatch.setenv("KUBECONFIG", str(fifo))
    res = run_cli("audit")
    assert res.exit_code == 2 and "FIFO" in res.stderr and "Traceback" not in res.stderr
