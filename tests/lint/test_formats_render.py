"""Helm charts and Kustomize folders: rendered when the binaries are there, one info finding when not;
raw templates and files with unfilled placeholders are never a parse error."""

import os
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from configurator.cli.main import cli
from configurator.lint.engine import Options, evaluate
from configurator.lint.render import RULE, Tools, has_placeholders, load_paths
from tests.conftest import ROOT
from tests.emit_support import tools

CHART = ROOT / "charts" / "vllm"

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.10.0
          args: ["--model", "{{ .Values.model }}"]
"""
RENDERED = """\
---
# Source: demo/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: release
---
# Source: demo/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: release
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.10.0
          args: ["--model", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "4096"]
          resources: {limits: {nvidia.com/gpu: 1}}
"""


def _fake_tool(tmp_path: Path, name: str, out: str, rc: int = 0) -> str:
    """An executable that records its argv and prints `out` (stands in for helm / kubectl)."""
    (tmp_path / f"{name}.out").write_text(out)
    script = tmp_path / name
    script.write_text(f"#!{sys.executable}\nimport sys, pathlib\n"
                      f"pathlib.Path({str(tmp_path / (name + '.argv'))!r}).write_text('\\n'.join(sys.argv[1:]))\n"
                      f"sys.stdout.write(pathlib.Path({str(tmp_path / (name + '.out'))!r}).read_text())\n"
                      f"sys.stderr.write('Error: boom\\n')\nsys.exit({rc})\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def _chart(tmp_path: Path) -> Path:
    chart = tmp_path / "demo"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: 0.1.0\ndescription: serves vLLM\n")
    (chart / "values.yaml").write_text("model: Qwen/Qwen2.5-7B-Instruct\n")
    (chart / "templates" / "deployment.yaml").write_text(DEPLOYMENT)
    return chart


@pytest.mark.parametrize(("text", "found"), [
    ("a: {{ .Values.x }}\n", "{{ .Values.x }}"), ("token: {{HF_TOKEN}}\n", "{{HF_TOKEN}}"),
    ("x: {{{X}}}\n", "{{{X}}}"), ("image: vllm:${TAG}\n", "${TAG}"), ("a: $HOME\n", None), ("a: 1\n", None),
])
def test_placeholders(text, found):
    got = has_placeholders(text)
    assert (got is None) == (found is None) and (found is None or found.startswith(got[:2]))


def test_chart_rendered_with_helm(tmp_path):
    chart = _chart(tmp_path)
    helm = _fake_tool(tmp_path, "helm", RENDERED)
    values = tmp_path / "prod.yaml"
    values.write_text("model: x\n")
    docs, problems = load_paths([str(chart)], values=(str(values),), tools=Tools(helm, None))
    assert problems == []
    assert [d.data["kind"] for d in docs] == ["Service", "Deployment"]
    assert docs[1].file == f"{chart / 'templates' / 'deployment.yaml'} (helm template)"
    argv = (tmp_path / "helm.argv").read_text().splitlines()
    assert argv == ["template", "release", str(chart), "--values", str(values)]
    report = evaluate(docs, problems, Options(gpu="l4"))
    assert [s.flags["max_model_len"] for s in report.servers] == [4096]


@pytest.mark.parametrize("helm_fails", [False, True])
def test_chart_without_helm_is_one_info_finding(tmp_path, helm_fails):
    chart = _chart(tmp_path)
    tools = Tools(_fake_tool(tmp_path, "helm", "", rc=1) if helm_fails else None, None)
    # a file inside the chart stands for the chart too (pre-commit passes single files)
    docs, problems = load_paths([str(chart / "templates" / "deployment.yaml"), str(chart)], tools=tools)
    assert [p.rule for p in problems] == [RULE]
    assert ("helm template failed: Error: boom" if helm_fails else "helm is not on PATH") in problems[0].message
    assert f"helm template {chart}" in problems[0].message
    assert [Path(d.file).name for d in docs] == ["values.yaml"]  # values read as they are; templates never
    report = evaluate(docs, problems, Options())
    assert [(f.rule, f.severity) for f in report.findings if f.rule in (RULE, "parse-error")] == [(RULE, "info")]


def test_folder_walk_finds_charts_and_kustomizations(tmp_path):
    _chart(tmp_path)
    kust = tmp_path / "overlay"
    kust.mkdir()
    (kust / "kustomization.yaml").write_text("resources: [patch.yaml]\n")
    (kust / "patch.yaml").write_text("kind: Deployment\nspec: {template: {spec: {containers: [{args: [--x]}]}}}\n")
    (tmp_path / "plain.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    plain = "".join(line for line in RENDERED.splitlines(keepends=True) if not line.startswith("# Source"))
    kubectl = _fake_tool(tmp_path, "kubectl", plain)
    docs, problems = load_paths([str(tmp_path)], tools=Tools(None, kubectl))
    assert [p.rule for p in problems] == [RULE]  # the chart: no helm
    files = [Path(d.file.split(" (")[0]).name for d in docs]
    assert files.count("plain.yaml") == 1 and "patch.yaml" not in files and "deployment.yaml" not in files
    assert sum(d.file == f"{kust} (kubectl kustomize)" for d in docs) == 2
    assert (tmp_path / "kubectl.argv").read_text().splitlines() == ["kustomize", str(kust)]
    assert sum(d.data.get("kind") == "Deployment" for d in docs) == 1


def test_kustomization_without_kubectl(tmp_path):
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    docs, problems = load_paths([str(tmp_path)], tools=Tools(None, None))
    assert docs == [] and [p.rule for p in problems] == [RULE]
    assert "kubectl kustomize" in problems[0].message


@pytest.mark.parametrize("text", [
    "{{- if .Values.enabled }}\nkind: Deployment\n{{- end }}\n",
    "apiVersion: v1\nkind: Secret\nstringData:\n  token: {{HF_TOKEN}}\n  other: [\n",
    "metadata:\n  name: {{{NAME}}}\n  bad: [\n",
])
def test_unrendered_placeholders_are_info_not_parse_errors(tmp_path, text):
    f = tmp_path / "t.yaml"
    f.write_text(text)
    report = evaluate(*load_paths([str(f)], tools=Tools(None, None)), Options())
    assert [(x.rule, x.severity) for x in report.findings] == [(RULE, "info")]


def test_plain_yaml_error_is_still_a_parse_error(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text("a: [1, 2\n")
    report = evaluate(*load_paths([str(f)], tools=Tools(None, None)), Options())
    assert [x.rule for x in report.findings] == ["parse-error"]


def _path_without_helm(tmp_path) -> str:
    bare = tmp_path / "bin"
    bare.mkdir()
    return os.pathsep.join([str(bare), *(p for p in os.environ.get("PATH", "").split(os.pathsep)
                                        if not (Path(p) / "helm").exists())])


def test_check_this_repositorys_chart_exits_0(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _path_without_helm(tmp_path))
    result = CliRunner().invoke(cli, ["check", str(CHART)])
    assert result.exit_code == 0, result.output
    assert f"info {RULE}" in result.output and "parse-error" not in result.output


def test_real_helm_renders_this_repositorys_chart(tmp_path):
    real = tools()  # the pinned helm and kubectl (scripts/install-tools.sh), as the chart tests use
    values = tmp_path / "v.yaml"
    values.write_text("model:\n  name: Qwen/Qwen2.5-7B-Instruct\n")
    docs, problems = load_paths([str(CHART)], values=(str(values),), tools=Tools(real.helm, None))
    assert problems == []
    assert "Deployment" in {d.data.get("kind") for d in docs}
    report = evaluate(docs, problems, Options(gpu="l4"))
    assert [s.model for s in report.servers] == ["Qwen/Qwen2.5-7B-Instruct"]


def test_real_kubectl_builds_a_kustomization(tmp_path):
    real = tools()
    (tmp_path / "kustomization.yaml").write_text("resources: [deploy.yaml]\nnamePrefix: team-\n")
    (tmp_path / "deploy.yaml").write_text(RENDERED.split("---\n")[2].split("\n", 1)[1])
    docs, problems = load_paths([str(tmp_path)], tools=Tools(None, real.kubectl))
    assert problems == [] and [d.data["metadata"]["name"] for d in docs] == ["team-release"]


def test_skip_applies_to_named_files_and_walked_folders(tmp_path):
    (tmp_path / "keep.yaml").write_text("a: 1\n")
    (tmp_path / "drop").mkdir()
    (tmp_path / "drop" / "x.yaml").write_text("a: [\n")
    (tmp_path / "named.yaml").write_text("a: [\n")
    skip = lambda p: p.name in ("drop", "named.yaml")  # noqa: E731
    docs, problems = load_paths([str(tmp_path), str(tmp_path / "named.yaml")], tools=Tools(None, None), skip=skip)
    assert [Path(d.file).name for d in docs] == ["keep.yaml"] and problems == []
