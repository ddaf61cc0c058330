"""Issue 30, never skip in silence: an unreadable folder is reported, a symbolic link loop is one line (exit 2),
and a Kustomize folder that cannot be rendered still has its resource files checked."""

from __future__ import annotations

import os
import shutil

import pytest

from configurator.lint.engine import Options, evaluate
from configurator.lint.render import RULE, Tools, load_paths
from tests.conftest import ROOT
from tests.lint.test_formats_render import _fake_tool

TOO_LONG = ROOT / "tests" / "manifests" / "docs-example-too-long.yaml"  # kv-cache-too-small, an error


def test_unreadable_sub_folder_is_reported(run_cli, tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    shutil.copy(TOO_LONG, tmp_path / "sub" / "a.yaml")
    (tmp_path / "ok.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    real = os.scandir

    def scandir(path="."):  # what a folder without read permission does for a non-root user
        if os.fspath(path).endswith("sub"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)
    monkeypatch.setattr(os, "scandir", scandir)
    res = run_cli("check", str(tmp_path))
    assert res.exit_code == 1 and "cannot read folder: Permission denied: its files were not checked" in res.stdout


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a folder whatever its mode")
def test_unreadable_sub_folder_for_real(run_cli, tmp_path):
    (tmp_path / "sub").mkdir()
    shutil.copy(TOO_LONG, tmp_path / "sub" / "a.yaml")
    (tmp_path / "sub").chmod(0)
    try:
        res = run_cli("check", str(tmp_path))
    finally:
        (tmp_path / "sub").chmod(0o755)
    assert res.exit_code == 1 and "cannot read folder" in res.stdout


def test_symlink_loop_is_one_line_exit_2(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.symlink("loop.yaml", "loop.yaml")
    os.symlink("b.yaml", "a.yaml")
    os.symlink("a.yaml", "b.yaml")
    shutil.copy(TOO_LONG, "ok.yaml")
    for args in (["loop.yaml"], ["a.yaml"], ["ok.yaml", "loop.yaml"]):
        res = run_cli("check", *args)
        err = res.stderr.strip()
        assert res.exit_code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert "loop" in err


@pytest.mark.parametrize("kubectl", ["failing", "absent"])
def test_unrendered_kustomization_still_checks_its_resources(tmp_path, kubectl):
    k = tmp_path / "overlay"
    (tmp_path / "base").mkdir(parents=True)
    k.mkdir()
    shutil.copy(TOO_LONG, tmp_path / "base" / "deploy.yaml")
    (tmp_path / "base" / "kustomization.yaml").write_text("resources: [deploy.yaml]\n")
    (k / "kustomization.yaml").write_text("resources: [../base, ../base, https://example.com/x.yaml]\n"
                                          "patches: [{path: missing-patch.yaml}]\n")
    (k / "unlisted-patch.yaml").write_text("kind: Deployment\nspec: {template: {spec: {containers: [{args: [x]}]}}}\n")
    tool = _fake_tool(tmp_path, "kubectl", "", rc=1) if kubectl == "failing" else None
    docs, problems = load_paths([str(k)], tools=Tools(None, tool))
    assert [p.rule for p in problems] == [RULE]
    assert ("failed: Error: boom" if tool else "not on PATH") in problems[0].message
    assert [os.path.basename(d.file) for d in docs] == ["deploy.yaml"]  # the base once, patches not read
    report = evaluate(docs, problems, Options())
    assert any(f.rule == "kv-cache-too-small" and f.severity == "error" for f in report.findings)


def test_kustomization_without_a_resources_list_reads_its_manifest_files(tmp_path):
    shutil.copy(TOO_LONG, tmp_path / "deploy.yaml")
    (tmp_path / "kustomization.yaml").write_text("namePrefix: x-\n")
    docs, problems = load_paths([str(tmp_path)], tools=Tools(None, None))
    assert [os.path.basename(d.file) for d in docs] == ["deploy.yaml"] and [p.rule for p in problems] == [RULE]
