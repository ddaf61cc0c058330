"""A model path inside the container says nothing about the model; a --served-model-name that names a known
model does, and the server is checked as that model with an info finding that says so (never silently)."""

from __future__ import annotations

import json

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: srv}}
spec:
  template:
    spec:
      nodeSelector: {{nvidia.com/gpu.product: NVIDIA-L4}}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: [{args}]
        resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""


def _check(run_cli, tmp_path, args: str) -> dict:
    f = tmp_path / "d.yaml"
    f.write_text(DEPLOYMENT.format(args=args))
    res = run_cli("check", str(f), "--format", "json")
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)


def _rules(report: dict, rule: str) -> list[dict]:
    return [f for f in report["findings"] if f["rule"] == rule]


def test_a_container_path_with_a_known_served_name_is_checked_as_that_model(run_cli, tmp_path):
    report = _check(run_cli, tmp_path, '"--model", "/data/", "--served-model-name", "Qwen3-8B", "--max-model-len", '
                                       '"8192"')
    [note] = _rules(report, "model-from-served-name")
    assert note["severity"] == "info" and "'/data/'" in note["message"] and "Qwen/Qwen3-8B" in note["message"]
    assert note["line"] == 11  # the args line, where --served-model-name is written
    assert not _rules(report, "unknown-model")
    assert report["servers"][0]["verdict"] != "not-checked"


def test_the_equals_form_and_a_model_id_are_unaffected(run_cli, tmp_path):
    report = _check(run_cli, tmp_path, '"--model", "/mnt/models", "--served-model-name=Qwen3-8B"')
    assert _rules(report, "model-from-served-name")
    # a model that resolves by itself keeps its own name; the served name is not consulted
    report = _check(run_cli, tmp_path, '"--model", "Qwen/Qwen3-8B", "--served-model-name", "facebook/opt-125m"')
    assert not _rules(report, "model-from-served-name")
    assert report["servers"][0]["model"] == "Qwen/Qwen3-8B"


def test_a_container_path_with_an_unknown_served_name_stays_unknown(run_cli, tmp_path):
    report = _check(run_cli, tmp_path, '"--model", "/data/", "--served-model-name", "my-chatbot"')
    assert not _rules(report, "model-from-served-name")
    [f] = _rules(report, "unknown-model")
    assert "/data/" in f["message"] and report["servers"][0]["verdict"] == "not-checked"
