"""The kubectl plugin: `kubectl vllm-check FILE` finds kubectl-vllm_check on PATH and answers as `check`."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.emit_support import tools

MANIFEST = ROOT / "tests" / "manifests" / "docs-example-too-long.yaml"


def _plugin() -> str:
    exe = Path(sys.executable).parent / "kubectl-vllm_check"
    found = str(exe) if exe.exists() else shutil.which("kubectl-vllm_check")
    assert found, "kubectl-vllm_check is not installed (pip install -e .)"
    return found


def test_plugin_answers_as_check(run_cli):
    plugin = _plugin()
    direct = run_cli("check", "--format", "json", str(MANIFEST))
    res = subprocess.run([plugin, "--format", "json", str(MANIFEST)], capture_output=True, text=True, timeout=60)
    assert res.returncode == direct.exit_code == 1
    assert json.loads(res.stdout)["findings"] == json.loads(direct.stdout)["findings"]
    bad = subprocess.run([plugin, "--format", "nope", str(MANIFEST)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--format" in bad.stderr and "Traceback" not in bad.stderr


def test_kubectl_finds_the_plugin():
    kubectl = tools().kubectl
    env = {**os.environ, "PATH": f"{Path(_plugin()).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    listed = subprocess.run([kubectl, "plugin", "list"], capture_output=True, text=True, env=env, timeout=60)
    assert "kubectl-vllm_check" in listed.stdout
    res = subprocess.run([kubectl, "vllm-check", "--format", "json", str(MANIFEST)], capture_output=True, text=True,
                         env=env, timeout=60)
    assert res.returncode == 1 and any(f["rule"] == "kv-cache-too-small" for f in json.loads(res.stdout)["findings"])
