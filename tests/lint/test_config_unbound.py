"""A ConfigMap of vLLM engine arguments that no server in the input reads is reported (config-unbound), never
passed in silence; a ConfigMap that only names vLLM stays quiet (issue 26's noise), one that cannot be what it names is
reported, and one a server reads is checked as part of that server."""

from configurator.lint.config import settings_for
from configurator.lint.run import run
from tests.conftest import ROOT

CONFIG_FILE = """apiVersion: v1
kind: ConfigMap
metadata: {name: vllm-config}
data:
  config.yaml: |
    max-model-len: 131072
    gpu-memory-utilization: 0.9
"""


def _check(tmp_path, **files):
    for name, text in files.items():
        (tmp_path / f"{name}.yaml").write_text(text)
    return run([str(tmp_path)], settings_for([str(tmp_path)], None), gpu="l4")


def test_an_unread_config_file_configmap_is_reported_with_its_engine_arguments(tmp_path):
    report = _check(tmp_path, cm=CONFIG_FILE)
    got = [(f.rule, f.severity) for f in report.findings]
    assert got == [("config-unbound", "info")]
    assert "gpu-memory-utilization, max-model-len" in report.findings[0].message


def test_engine_arguments_as_data_keys_are_reported_too(tmp_path):
    report = _check(tmp_path, cm="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vllm-args}\n"
                                 "data: {max_model_len: '8192', gpu_memory_utilization: '0.95'}\n")
    assert [f.rule for f in report.findings] == ["config-unbound"]


def test_a_configmap_that_only_names_vllm_stays_quiet(tmp_path):
    report = _check(tmp_path, a="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vllm-config}\ndata: null\n",
                    b="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vllm-router}\n"
                      "data: {routes.yaml: 'backend: http://vllm:8000'}\n")
    assert report.findings == []


def test_a_configmap_that_cannot_be_what_it_names_is_reported(tmp_path):
    """The hostile-input fuzz's line: a vLLM ConfigMap the API server would reject (data not a map of strings, a
    --config file written as a nested mapping, no kind) or a file vLLM's --config cannot read (empty, a bare
    value, broken YAML) is a finding, never silence."""
    head = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vllm-config}\n"
    cases = {"list": head + "data: [x]\n",
             "nested": head + "data:\n  config.yaml:\n    max-model-len: 8192\n",
             "empty": head + "data: {config.yaml: null}\n",
             "bare": head + "data: {config.yaml: Qwen/Qwen3-8B}\n",
             "broken": head + "data: {config.yaml: 'max-model-len: [unclosed'}\n",
             "nokind": "apiVersion: apps/v1\nmetadata:\n  name: x\n  annotations: {vllm-configurator.io/gpu: l4}\n"}
    report = _check(tmp_path, **cases)
    by_file = {f.file.rsplit("/", 1)[-1]: f for f in report.findings}
    assert sorted(by_file) == sorted(f"{k}.yaml" for k in cases)
    assert all(f.rule == "not-understood" for f in by_file.values())
    assert "a map of names to strings: the API server would reject it" in by_file["list.yaml"].message
    assert "literal block" in by_file["nested.yaml"].message
    assert "that is empty" in by_file["empty.yaml"].message
    assert "not a mapping of settings" in by_file["bare.yaml"].message
    assert "not a mapping of settings" in by_file["broken.yaml"].message
    assert "no kind" in by_file["nokind.yaml"].message


def test_a_configmap_its_server_reads_is_checked_as_part_of_it(tmp_path):
    text = (ROOT / "tests" / "manifests" / "env-and-configmap.yaml").read_text()
    report = _check(tmp_path, both=text)
    assert "config-unbound" not in {f.rule for f in report.findings}
    assert "kv-cache-too-small" in {f.rule for f in report.findings}  # the mounted file's max-model-len, checked
