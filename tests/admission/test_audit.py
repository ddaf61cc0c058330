"""`audit` against a local HTTP server serving recorded Kubernetes API responses."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from configurator.admission.audit import CORE
from configurator.lint.engine import Options, evaluate
from configurator.lint.load import Document
from tests.conftest import ROOT

CORPUS = ROOT / "tests" / "manifests"
FILES = ["docs-example-ok.yaml", "docs-example-too-long.yaml", "over-limit.yaml", "util-high.yaml",
         "no-kv-memory.yaml", "tp-heads.yaml", "fp8-on-v100.yaml", "probe-too-short.yaml", "gpu-unknown.yaml",
         "hybrid-mamba-seqs.yaml"]
PATHS = {"Deployment": "/apis/apps/v1/deployments", "StatefulSet": "/apis/apps/v1/statefulsets",
         "Pod": "/api/v1/pods"}


def _recorded():
    """Workloads from the corpus, each with one running pod on a node labelled as its nodeSelector says."""
    objects, pods, nodes = {}, [], []
    for i, name in enumerate(FILES):
        obj = next(d for d in yaml.safe_load_all((CORPUS / name).read_text()) if d)
        obj["metadata"]["namespace"] = "ml"
        obj["metadata"]["name"] = f"{obj['metadata']['name']}-{i}"
        labels = {"app": obj["metadata"]["name"]}
        pod_spec = obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"]
        node = {"metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}",
                                                               **pod_spec.get("nodeSelector", {})}}}
        nodes.append(node)
        if obj["kind"] == "Pod":
            obj["spec"]["nodeName"] = f"node-{i}"
        else:
            obj["spec"]["selector"] = {"matchLabels": labels}
            pods.append({"metadata": {"name": f"{obj['metadata']['name']}-abc", "namespace": "ml", "labels": labels,
                                      "ownerReferences": [{"kind": "ReplicaSet", "name": "x"}]},
                         "spec": {"nodeName": f"node-{i}", "containers": []}})
        objects.setdefault(PATHS[obj["kind"]], []).append(obj)
    for p in objects.get("/api/v1/pods", []):
        pods.append(p)
    objects["/api/v1/pods"] = pods
    objects["/api/v1/nodes"] = nodes
    return objects


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    recorded = _recorded()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            path = self.path.split("?", 1)[0]
            namespace = None
            if "/namespaces/" in path:  # /api/v1/namespaces/ml/pods -> /api/v1/pods, items in ml only
                head, rest = path.split("/namespaces/", 1)
                namespace, plural = rest.split("/", 1)
                path = f"{head}/{plural}"
            if path in recorded or path.rsplit("/", 1)[-1] in CORE:
                items = [o for o in recorded.get(path, [])
                         if namespace is None or o["metadata"].get("namespace") == namespace]
                body, code = {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": items}, 200
            else:
                body, code = {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404}, 404
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cfg = tmp_path_factory.mktemp("kube") / "config"
    cfg.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "recorded",
        "clusters": [{"name": "recorded", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "recorded", "context": {"cluster": "recorded", "user": "u"}}]}))
    yield cfg, recorded
    server.shutdown()


def test_audit_reports_what_check_reports(api, run_cli, monkeypatch):
    cfg, recorded = api
    monkeypatch.setenv("KUBECONFIG", str(cfg))
    res = run_cli("audit", "--format", "json")
    report = json.loads(res.stdout)
    got = {(f["object"]["name"], f["rule"]) for f in report["findings"]}
    expected = set()
    for path, items in recorded.items():
        if path in ("/api/v1/nodes",):
            continue
        for obj in items:
            if obj.get("kind", "Pod") == "Pod" and obj["metadata"].get("ownerReferences"):
                continue
            doc = Document(file="x", index=0, data=obj, positions={})
            expected |= {(obj["metadata"]["name"], f.rule) for f in evaluate([doc], [], Options()).findings}
    assert got == expected
    assert res.exit_code == 1
    assert {s["gpu"] for s in report["servers"]} >= {"l4", "h100-80gb", "v100-32gb"}
    assert any(s["gpu"] is None for s in report["servers"])  # the workload with no GPU label anywhere


def test_audit_namespace_and_unreachable_cluster(api, run_cli, monkeypatch, tmp_path):
    cfg, _ = api
    monkeypatch.setenv("KUBECONFIG", str(cfg))
    res = run_cli("audit", "-n", "other", "--format", "json")
    assert res.exit_code == 0 and json.loads(res.stdout)["servers"] == []
    dead = tmp_path / "dead"
    conf = yaml.safe_load(cfg.read_text())
    conf["clusters"][0]["cluster"]["server"] = "http://127.0.0.1:1"  # nothing listens there
    dead.write_text(yaml.safe_dump(conf))
    monkeypatch.setenv("KUBECONFIG", str(dead))
    res = run_cli("audit")
    assert res.exit_code == 2 and "Traceback" not in res.stderr
