"""Issue 30, outputs: `-o` never replaces an input (a named file, a file check reads inside a named folder, the
log of `calibrate`), --force or not; `--format github` escapes per GitHub's workflow-command rules; SARIF URIs are
percent-encoded and relative to the repository root; text output shows control characters in names as escapes."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import ROOT

CORPUS = ROOT / "tests" / "manifests"
TOO_LONG = CORPUS / "docs-example-too-long.yaml"  # one kv-cache-too-small error


def _refused(res, needle: str = "input") -> None:
    assert res.exit_code == 2, (res.exit_code, res.stdout, res.stderr)
    err = res.stderr.strip()
    assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err, err


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "force"])
def test_check_output_never_replaces_a_manifest_inside_an_input_folder(run_cli, tmp_path, force):
    k8s = tmp_path / "k8s"
    (k8s / "sub").mkdir(parents=True)
    shutil.copy(TOO_LONG, k8s / "a.yaml")
    before = (k8s / "a.yaml").read_bytes()
    for target in (k8s / "a.yaml", k8s / "sub" / "new.json", k8s / "sub" / ".." / "a.yaml"):
        _refused(run_cli("check", str(k8s), "--format", "json", "-o", str(target), *force), "input folder")
    _refused(run_cli("check", str(k8s / "a.yaml"), "--format", "json", "-o", str(k8s / "a.yaml"), *force))
    assert (k8s / "a.yaml").read_bytes() == before and not (k8s / "sub" / "new.json").exists()
    # a report that check never reads back (the Action's vllm-configurator.sarif), or a hidden folder: written
    res = run_cli("check", str(k8s), "--format", "sarif", "-o", str(k8s / "r.sarif"), *force)
    assert res.exit_code == 1 and (k8s / "r.sarif").is_file()
    (k8s / ".reports").mkdir()
    assert run_cli("check", str(k8s), "--format", "json", "-o", str(k8s / ".reports" / "r.json")).exit_code == 1


def test_check_output_never_replaces_its_config_or_values(run_cli, tmp_path):
    cfg = tmp_path / "conf.yaml"
    cfg.write_text("strict: false\n")
    _refused(run_cli("check", str(TOO_LONG), "--config", str(cfg), "--format", "json", "-o", str(cfg), "--force"))
    assert cfg.read_text() == "strict: false\n"


def test_calibrate_never_replaces_its_log(run_cli, tmp_path):
    from tests.test_calibrate import _qwen3_14b_log

    log = _qwen3_14b_log(tmp_path)
    assert run_cli("calibrate", str(log), "--gpu", "l40s", "-o", str(tmp_path / "c.yaml")).exit_code == 0
    before = log.read_bytes()
    for force in ([], ["--force"]):
        _refused(run_cli("calibrate", str(log), "--gpu", "l40s", "-o", str(log), *force), "inputs")
        assert log.read_bytes() == before


def _renamed(tmp_path, name: str):
    f = tmp_path / name
    shutil.copy(TOO_LONG, f)
    return f


def test_github_format_escapes_properties(run_cli, tmp_path):
    f = _renamed(tmp_path, "x\n::warning title=INJECTED::owned,100%:\r.yaml")
    res = run_cli("check", str(f), "--format", "github")
    lines = [x for x in res.stdout.splitlines() if x]
    assert len(lines) == 1 and lines[0].startswith("::error file="), res.stdout  # no workflow command of its own
    prop = lines[0].split("file=", 1)[1].split(",line=", 1)[0]
    assert "x%0A%3A%3Awarning title=INJECTED%3A%3Aowned%2C100%25%3A%0D.yaml" in prop
    assert "::" not in prop and "," not in prop


def test_sarif_uri_is_encoded_and_relative_to_the_repository(run_cli, tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "k 8s").mkdir()
    f = repo / "k 8s" / "a#b%.yaml"
    shutil.copy(TOO_LONG, f)
    (repo / "deep").mkdir()
    monkeypatch.chdir(repo / "deep")  # run from a sub-folder, the input named by its absolute path
    out = tmp_path / "r.sarif"
    run_cli("check", str(f), "--format", "sarif", "-o", str(out))
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads(out.read_text())["runs"][0]["results"]}
    assert uris == {"k%208s/a%23b%25.yaml"}
    monkeypatch.chdir(tmp_path)  # no repository above: a file outside it is a file:// URI
    outside = _renamed(tmp_path, "o u.yaml")
    run_cli("check", str(outside), "--format", "sarif", "-o", str(tmp_path / "r2.sarif"))
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads((tmp_path / "r2.sarif").read_text())["runs"][0]["results"]}
    assert uris <= {"o%20u.yaml", outside.as_uri()} and uris


def test_text_output_escapes_control_characters_in_names(run_cli, tmp_path):
    f = _renamed(tmp_path, "evil\x1b[2J\x1b[31mname\nfake.yaml")
    res = run_cli("check", str(f))
    assert "\x1b" not in res.stdout and "evil\\x1b[2J\\x1b[31mname\\nfake.yaml:" in res.stdout
    # every finding line starts with the (escaped) file name: no line forged by the name
    finding_lines = [x for x in res.stdout.splitlines() if x and not x.startswith(("  fix:", "1 file"))]
    assert all(x.startswith(str(tmp_path)) for x in finding_lines), res.stdout
