"""The package as users get it: the built wheel installed in a fresh virtual environment, run from another
folder; and the GitHub Action (action.yml), whose shell steps are run here as a runner would run them.

Marked `install` (they build and install: about a minute with pip's cache). They run in CI and in
`make test`; deselect them locally with `-m "not install"`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

pytestmark = pytest.mark.install

MANIFESTS = ROOT / "tests" / "manifests"


def _env(bin_dir: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", HF_HUB_OFFLINE="1", **extra)
    return env


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory):
    """(bin folder, wheel): the wheel built from this checkout, installed in a new venv (no editable link)."""
    root = tmp_path_factory.mktemp("installed")
    dist = root / "dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(ROOT)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = dist.glob("vllm_configurator-*.whl")
    venv.EnvBuilder(with_pip=True).create(root / "venv")
    bin_dir = root / "venv" / "bin"
    inst = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=300, env=_env(bin_dir))
    assert inst.returncode == 0, inst.stderr[-2000:]
    return bin_dir, wheel


def test_the_wheel_installs_and_runs_estimate_from_another_folder(wheel_venv, tmp_path, estimate_json):
    bin_dir, wheel = wheel_venv
    env = _env(bin_dir)
    # the installed package, not this checkout: run from an empty folder, and ask where it came from
    where = subprocess.run([str(bin_dir / "python"), "-c", "import configurator, sys; print(configurator.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert "site-packages" in where.stdout and str(ROOT) not in where.stdout, where
    args = ["estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", "--max-model-len", "8192", "--format", "json"]
    res = subprocess.run([str(bin_dir / "vllm-configurator"), *args], capture_output=True, text=True, cwd=tmp_path,
                         env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    installed = json.loads(res.stdout)
    _, here = estimate_json(*args[1:-2])
    assert installed["memory"] == here["memory"] and installed["kv_cache"] == here["kv_cache"]
    # the data the wheel must carry: profiles (models, GPUs, vLLM args) and the JSON Schemas
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("configurator/_data/profiles/models/") for n in names)
    assert any(n.startswith("configurator/_data/schemas/") and n.endswith(".schema.json") for n in names)
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)
    refused = subprocess.run([str(bin_dir / "vllm-configurator"), "check", "-", "--format", "json"],
                             input=(MANIFESTS / "over-limit.yaml").read_text(), capture_output=True, text=True,
                             cwd=tmp_path, env=env, timeout=120)
    assert refused.returncode == 1 and json.loads(refused.stdout)["summary"]["errors"] >= 1
    plugin = subprocess.run([str(bin_dir / "kubectl-vllm_check"), "--format", "json",
                             str(MANIFESTS / "over-limit.yaml")], capture_output=True, text=True, cwd=tmp_path,
                            env=env, timeout=120)
    strip = lambda fs: [{k: v for k, v in f.items() if k != "file"} for f in fs]  # noqa: E731  (<stdin> vs path)
    assert plugin.returncode == 1
    assert strip(json.loads(plugin.stdout)["findings"]) == strip(json.loads(refused.stdout)["findings"])


# ---- the GitHub Action ----------------------------------------------------------------------------------

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
EXPR = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


def _expand(text: str, ctx: dict) -> str:
    def one(m):
        key = m.group(1)
        assert key in ctx, f"action.yml uses ${{{{ {key} }}}}, which this test does not provide"
        return str(ctx[key])
    return EXPR.sub(one, text)


def _run_action(bin_dir: Path, workdir: Path, inputs: dict) -> tuple[int, dict, list[dict]]:
    """Run action.yml's steps: `run` steps in bash as a runner does, `uses` steps recorded (not run)."""
    declared = ACTION["inputs"]
    assert set(inputs) <= set(declared)
    ctx = {f"inputs.{k}": inputs.get(k, v.get("default", "")) for k, v in declared.items()}
    ctx |= {"github.action_path": str(ROOT), "github.action_repository": "", "github.action_ref": "",
            "github.repository": "example/app", "github.sha": "0123abc", "github.server_url": "https://github.com"}
    outputs: dict[str, dict] = {}
    skipped, code = [], 0
    for step in ACTION["runs"]["steps"]:
        cond = step.get("if")
        if cond:
            m = re.fullmatch(r"inputs\.([\w-]+) == '(\w+)'", cond)
            assert m, f"unexpected condition {cond}"
            if str(ctx[f"inputs.{m.group(1)}"]) != m.group(2):
                continue
        if "uses" in step:
            skipped.append({"uses": step["uses"], "with": {k: _expand(str(v), ctx) for k, v in
                                                           (step.get("with") or {}).items()}})
            continue
        assert step.get("shell") == "bash"
        out_file = workdir / f".github_output_{len(outputs)}"
        out_file.write_text("")
        env = _env(bin_dir, GITHUB_OUTPUT=str(out_file),
                   **{k: _expand(str(v), ctx) for k, v in (step.get("env") or {}).items()})
        script = workdir / ".step.sh"
        script.write_text(_expand(step["run"], ctx))
        res = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workdir, env=env,
                             capture_output=True, text=True, timeout=300)
        step_outputs = dict(line.split("=", 1) for line in out_file.read_text().splitlines() if "=" in line)
        if step.get("id"):
            outputs[step["id"]] = {"stdout": res.stdout, "stderr": res.stderr, **step_outputs}
            ctx |= {f"steps.{step['id']}.outputs.{k}": v for k, v in step_outputs.items()}
        code = res.returncode
        if code:
            break
    return code, outputs, skipped


def test_the_github_action_installs_checks_writes_sarif_and_fails_on_findings(wheel_venv, tmp_path):
    bin_dir, _ = wheel_venv
    # the Action's own install step must install the package: start without it (its dependencies stay)
    subprocess.run([str(bin_dir / "python"), "-m", "pip", "uninstall", "-q", "-y", "vllm-configurator"],
                   check=True, capture_output=True, env=_env(bin_dir), timeout=120)
    assert not (bin_dir / "vllm-configurator").exists()
    repo = tmp_path / "repo"
    (repo / "k8s").mkdir(parents=True)
    shutil.copy(MANIFESTS / "over-limit.yaml", repo / "k8s" / "bad.yaml")
    shutil.copy(MANIFESTS / "docs-example-ok.yaml", repo / "k8s" / "ok.yaml")
    code, outputs, skipped = _run_action(bin_dir, repo, {"paths": "k8s", "junit": "report.xml"})
    assert (bin_dir / "vllm-configurator").exists()  # installed by the Action's install step
    check = outputs["check"]
    assert check["exit-code"] == "1" and code == 1  # the last step fails the job on the error finding
    # annotations on stdout, in GitHub's workflow-command syntax, at the offending line
    assert re.search(r"^::error file=k8s/bad\.yaml,line=\d+", check["stdout"], re.M), check["stdout"]
    sarif = json.loads((repo / "vllm-configurator.sarif").read_text())
    (run,) = sarif["runs"]
    assert sarif["version"] == "2.1.0" and run["results"]
    assert {r["ruleId"] for r in run["results"]} >= {"max-model-len-over-limit"}
    uris = [r.get("helpUri", "") for r in run["tool"]["driver"]["rules"]]
    assert uris and all(u.startswith("https://github.com/example/app/blob/0123abc/docs/rules.md#") for u in uris)
    assert "<testsuite" in (repo / "report.xml").read_text()
    # the SARIF upload is GitHub's own action, given the file the check step wrote
    assert skipped[0]["uses"].startswith("actions/setup-python@")
    assert skipped[1]["uses"].startswith("github/codeql-action/upload-sarif@")
    assert skipped[1]["with"]["sarif_file"] == "vllm-configurator.sarif"
    # a clean tree passes, and upload-sarif: false skips the upload step
    (repo / "k8s" / "bad.yaml").unlink()
    code, outputs, skipped = _run_action(bin_dir, repo, {"paths": "k8s", "upload-sarif": "false", "gpu": "h100"})
    assert code == 0 and outputs["check"]["exit-code"] == "0"
    assert [s["uses"].split("@")[0] for s in skipped] == ["actions/setup-python"]
