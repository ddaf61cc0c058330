"""The pre-commit hooks (.pre-commit-hooks.yaml) on a temporary Git repository: `pre-commit try-repo` against
this checkout when pre-commit is installed (it is in the dev extras, so in CI), else the hook's entry as
pre-commit would call it (the staged YAML / JSON files as arguments)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

HOOKS = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
MANIFESTS = ROOT / "tests" / "manifests"
BIN = Path(sys.executable).parent


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "app"
    (r / "k8s").mkdir(parents=True)
    shutil.copy(MANIFESTS / "over-limit.yaml", r / "k8s" / "bad.yaml")  # an error finding: the hook fails
    shutil.copy(MANIFESTS / "docs-example-ok.yaml", r / "k8s" / "ok.yaml")
    (r / "notes.txt").write_text("vllm serve Qwen/Qwen3-8B --max-model-len 999999999\n")  # not YAML: not passed
    _git(r, "init", "-q")
    _git(r, "add", ".")
    return r


def test_the_hooks_describe_the_console_script_and_the_image():
    python, docker = HOOKS["vllm-configurator-check"], HOOKS["vllm-configurator-check-docker"]
    assert python["language"] == "python" and docker["language"] == "docker"
    assert shlex.split(python["entry"])[0] in SCRIPTS and python["entry"] == docker["entry"]
    assert python["types_or"] == docker["types_or"] == ["yaml", "json"]
    assert "ENTRYPOINT" in (ROOT / "Dockerfile").read_text()


def test_the_hook_entry_on_the_staged_files(repo):
    """What pre-commit runs for language: python: the entry with the matching staged files appended."""
    hook = HOOKS["vllm-configurator-check"]
    suffixes = {"yaml": (".yaml", ".yml"), "json": (".json",)}
    wanted = tuple(s for t in hook["types_or"] for s in suffixes[t])
    files = [f for f in _git(repo, "ls-files").split() if f.endswith(wanted)]
    assert sorted(files) == ["k8s/bad.yaml", "k8s/ok.yaml"]
    argv = shlex.split(hook["entry"])
    cmd = [str(BIN / argv[0]), *argv[1:]]
    res = subprocess.run([*cmd, *files], cwd=repo, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1 and "k8s/bad.yaml:" in res.stdout and " error " in res.stdout
    _git(repo, "rm", "-q", "-f", "k8s/bad.yaml")
    res = subprocess.run([*cmd, "k8s/ok.yaml"], cwd=repo, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "0 error(s)" in res.stdout


@pytest.mark.install
def test_pre_commit_try_repo(repo, tmp_path):
    pre_commit = shutil.which("pre-commit", path=str(BIN)) or shutil.which("pre-commit")
    if pre_commit is None or not (ROOT / ".git").exists():
        pytest.fail("pre-commit (dev extras) and a Git checkout are needed to run the hook as pre-commit does")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)
    run = [pre_commit, "try-repo", str(ROOT), "vllm-configurator-check", "--all-files", "--color", "never"]
    res = subprocess.run(run, cwd=repo, capture_output=True, text=True, env=env, timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "vLLM memory budget (vllm-configurator check)" in out and "Failed" in out
    assert "k8s/bad.yaml:" in out and "max-model-len-over-limit" in out and "notes.txt" not in out
    assert "2 file(s)" in out  # the two YAML files, not notes.txt
    # (the clean case is the entry test above: a second try-repo of an uncommitted checkout would install a
    # second environment)
