"""A file read by a server of another file (a --config ConfigMap) says so (read-by-server), and a pod reads the
ConfigMap of its own file before one of the same name elsewhere (a folder of unrelated examples often holds
several ConfigMaps called vllm-config)."""

from __future__ import annotations

from configurator.lint.engine import Options, evaluate
from configurator.lint.load import load

CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata: {{name: vllm-config}}
data:
  config.yaml: |
    max-model-len: {len}
"""
DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  template:
    spec:
      nodeSelector: {{nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          args: ["vllm", "serve", "Qwen/Qwen3-8B", "--config", "/etc/vllm/config.yaml"]
          resources: {{limits: {{nvidia.com/gpu: 1}}}}
          volumeMounts: [{{name: cfg, mountPath: /etc/vllm}}]
      volumes: [{{name: cfg, configMap: {{name: vllm-config}}}}]
"""


def _report(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    docs, problems = load([str(tmp_path)])
    return evaluate(docs, problems, Options())


def test_a_configmap_read_from_another_file_is_reported_there(tmp_path):
    report = _report(tmp_path, {"a-config.yaml": CONFIGMAP.format(len=4096),
                                "b-deploy.yaml": DEPLOYMENT.format(name="reader")})
    found = [f for f in report.findings if f.rule == "read-by-server"]
    assert len(found) == 1 and found[0].file.endswith("a-config.yaml") and found[0].severity == "info"
    assert "Deployment/reader" in found[0].message and "b-deploy.yaml" in found[0].message
    assert not [f for f in report.findings if f.rule == "not-understood"]
    server = report.servers[0]
    assert server.flags.get("max_model_len") == 4096


def test_a_pod_reads_the_configmap_of_its_own_file_first(tmp_path):
    report = _report(tmp_path, {
        "a.yaml": CONFIGMAP.format(len=4096) + "---\n" + DEPLOYMENT.format(name="first"),
        "b.yaml": CONFIGMAP.format(len=2048) + "---\n" + DEPLOYMENT.format(name="second"),
    })
    lens = {s.object.name: s.flags.get("max_model_len") for s in report.servers}
    assert lens == {"first": 4096, "second": 2048}
    assert not [f for f in report.findings if f.rule == "read-by-server"]


def test_a_pod_reads_the_configmap_of_its_own_namespace(tmp_path):
    def ns(text: str, namespace: str) -> str:
        return text.replace("metadata: {name:", f"metadata: {{namespace: {namespace}, name:")

    report = _report(tmp_path, {"all.yaml": "---\n".join([
        ns(CONFIGMAP.format(len=4096), "team-a"), ns(CONFIGMAP.format(len=2048), "team-b"),
        ns(DEPLOYMENT.format(name="a"), "team-a"), ns(DEPLOYMENT.format(name="b"), "team-b")])})
    lens = {s.object.name: s.flags.get("max_model_len") for s in report.servers}
    assert lens == {"a": 4096, "b": 2048}
