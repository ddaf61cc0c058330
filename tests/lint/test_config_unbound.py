"""A ConfigMap of vLLM engine arguments that no server in the input reads is reported (config-unbound), never
passed in silence; a ConfigMap that only names vLLM stays quiet (issue 26's noise), and one a server reads is
checked as part of that server."""

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
    report = _check(tmp_path, a="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vllm-config}\ndata: []\n",
                    b="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vllm-router}\n"
                      "data: {routes.yaml: 'backend: http://vllm:8000'}\n",
                    c="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vllm-config}\n"
                      "data: {config.yaml: 'max-model-len: [unclosed'}\n")
    assert report.findings == []


def test_a_configmap_its_server_reads_is_checked_as_part_of_it(tmp_path):
    text = (ROOT / "tests" / "manifests" / "env-and-configmap.yaml").read_text()
    report = _check(tmp_path, both=text)
    assert "config-unbound" not in {f.rule for f in report.findings}
    assert "kv-cache-too-small" in {f.rule for f in report.findings}  # the mounted file's max-model-len, checked
