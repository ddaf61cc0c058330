"""Distribution: the container image's definition, the krew plugin (manifest, archive, launcher), the
pre-commit hooks, and no link to a repository that does not exist. The image itself is built and
smoke-tested by .ci/build-image (buildah, in CI), not here."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.emit_support import ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest itself depends on tomli there
    import tomli as tomllib

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SCRIPTS = PYPROJECT["project"]["scripts"]
LAUNCHER = ROOT / "plugins" / "kubectl-vllm_check"
MANIFEST = ROOT / "tests" / "manifests" / "over-limit.yaml"  # does not fit: check exits 1


def _dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def test_the_image_runs_the_console_script_and_ships_the_package_data():
    text = _dockerfile()
    (entry,) = re.findall(r"^ENTRYPOINT (\[.*\])$", text, re.M)
    assert json.loads(entry)[0] in SCRIPTS
    for data in PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]:
        assert re.search(rf"^COPY {data} ", text, re.M), f"the image lacks {data}/"
    assert re.search(r"^USER \d+:\d+$", text, re.M)  # never root
    assert '".[webhook,cluster]"' in text  # the webhook's server and audit's client


def test_ci_builds_and_smoke_tests_the_image_with_check_from_stdin():
    run = (ROOT / ".ci" / "run").read_text()
    build = (ROOT / ".ci" / "build-image").read_text()
    assert "bash .ci/build-image" in run
    assert "buildah bud" in build and "--isolation chroot" in build and "mmdebstrap" in build
    assert "check - --format json <" in build


def test_the_krew_manifest_matches_the_reproducible_archive(tmp_path):
    run = subprocess.run(["bash", str(ROOT / "plugins" / "package.sh")], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "CHECK": "1", "DIST": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    plugin = yaml.safe_load((ROOT / "plugins" / "vllm-check.yaml").read_text())
    assert plugin["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2" and plugin["kind"] == "Plugin"
    assert plugin["metadata"]["name"] == "vllm-check"
    assert plugin["spec"]["version"] == f"v{PYPROJECT['project']['version']}"
    (platform,) = plugin["spec"]["platforms"]
    assert (ROOT / platform["uri"]).parent.name == "dist"  # a path in this repository
    # kubectl finds `kubectl vllm-check` as kubectl-vllm_check: the console script of the same name
    assert platform["bin"] == LAUNCHER.name and LAUNCHER.name in SCRIPTS
    assert os.access(LAUNCHER, os.X_OK)


def _path_with(tmp_path: Path, **scripts: str) -> str:
    """A PATH holding only the given scripts (name -> shell body) and sh."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in scripts.items():
        f = bin_dir / name
        f.write_text(f"#!/bin/sh\n{body}\n")
        f.chmod(0o755)
    return str(bin_dir)


def test_the_plugin_runs_the_installed_check_on_stdin(tmp_path):
    venv_bin = Path(sys.executable).parent
    assert (venv_bin / "vllm-configurator").exists()
    run = subprocess.run(["/bin/sh", str(LAUNCHER), "-", "--format", "json"], input=MANIFEST.read_text(),
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PATH": f"{venv_bin}:{_path_with(tmp_path)}"})
    assert run.returncode == 1, run.stderr
    assert json.loads(run.stdout)["servers"]


def test_without_the_cli_the_plugin_runs_the_image(tmp_path):
    fake = _path_with(tmp_path, docker='printf "%s\\n" "$@"')
    run = subprocess.run(["/bin/sh", str(LAUNCHER), "-", "--strict"], input="", capture_output=True, text=True,
                         timeout=30, env={"PATH": fake, "VLLM_CONFIGURATOR_IMAGE": "registry.local/vc:1"})
    assert run.returncode == 0, run.stderr
    args = run.stdout.split("\n")
    assert args[:3] == ["run", "--rm", "-i"] and args[-5:] == ["registry.local/vc:1", "check", "-", "--strict", ""]


def test_without_the_cli_or_a_container_runtime_the_plugin_says_so(tmp_path):
    run = subprocess.run(["/bin/sh", str(LAUNCHER), "x.yaml"], capture_output=True, text=True, timeout=30,
                         env={"PATH": _path_with(tmp_path)})
    assert run.returncode == 2 and run.stderr.startswith("error: kubectl vllm-check needs vllm-configurator")


def test_the_pre_commit_hooks_run_the_package_or_the_image():
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert hooks["vllm-configurator-check"]["language"] == "python"
    assert hooks["vllm-configurator-check-docker"]["language"] == "docker"  # builds ./Dockerfile
    for hook in hooks.values():
        assert hook["entry"].split()[0] in SCRIPTS and hook["entry"].split()[1] == "check"


# the project has no public repository yet: a link must be a path in this one, or configurable
NOT_A_REPOSITORY = "github.com/vllm-configurator"
OWNED = ["charts/vllm", "plugins", ".pre-commit-hooks.yaml", "action.yml", "Dockerfile", "docs/helm.md",
         "configurator/report/check_formats.py"]


@pytest.mark.parametrize("rel", OWNED)
def test_no_link_points_at_a_repository_that_does_not_exist(rel):
    target = ROOT / rel
    files = [target] if target.is_file() else [p for p in target.rglob("*") if p.is_file()]
    for f in files:
        assert NOT_A_REPOSITORY not in f.read_text(errors="replace"), f


def test_sarif_help_links_are_repository_paths_unless_configured():
    env = {k: v for k, v in os.environ.items() if k != "VLLM_CONFIGURATOR_REPO_URL"}
    code = ("import json, configurator.report.check_formats as f; from configurator.lint.engine import CheckReport; "
            "d = f.sarif(CheckReport(findings=[], servers=[], files=0))['runs'][0]['tool']['driver']; "
            "print(json.dumps([d['informationUri'], d['rules'][0]['helpUri']]))")
    plain = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                      check=True).stdout)
    assert plain[0] == "README.md" and plain[1].startswith("docs/rules.md#")
    assert (ROOT / plain[1].split("#")[0]).is_file()
    base = "https://git.example/acme/vllm-configurator/blob/v1/"
    configured = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                           env={**env, "VLLM_CONFIGURATOR_REPO_URL": base}).stdout)
    assert configured == [base + "README.md", base + plain[1]]
