"""The linter's library call (configurator.lint.run): paths and settings in, the report `check` prints out; the
`check` command only parses options, calls it and writes the report (issue 29 item 2)."""

from __future__ import annotations

import ast
import inspect
import json
import textwrap

import pytest

from configurator.errors import InputError
from configurator.lint.config import Settings, settings_for
from configurator.lint.run import run
from tests.conftest import ROOT

CORPUS = ROOT / "tests" / "manifests"


def test_run_gives_the_report_check_prints(run_cli):
    paths = [str(CORPUS / "docs-example-too-long.yaml"), str(CORPUS / "docs-example-ok.yaml")]
    report = run(paths, settings_for(paths, None))
    printed = json.loads(run_cli("check", "--format", "json", *paths).stdout)
    assert report.worst() == "error" and report.files == 2
    assert json.loads(report.to_json()) == printed


def test_a_large_report_is_written_as_a_small_one_is():
    """A report of many parts goes through pydantic-core's serializer, a small one through the standard library's
    (configurator/record.py): the same text either way, on every server and finding the corpus gives."""
    from configurator.record import to_json, to_json_large

    paths = [str(CORPUS), str(ROOT / "tests" / "corpus" / "real")]
    report = run(paths, settings_for(paths, None))
    assert len(report.servers) > 50 and len(report.findings) > 50
    assert to_json(report) == to_json_large(report)
    assert report.to_json() == to_json(report)


def test_run_reads_a_helm_chart_once_with_its_ignore_paths(tmp_path):
    """Chart grouping and ignorePaths are the library's: a folder's ignored file is left out, a named one read."""
    (tmp_path / "ok.yaml").write_text((CORPUS / "docs-example-ok.yaml").read_text())
    (tmp_path / "bad.yaml").write_text((CORPUS / "docs-example-too-long.yaml").read_text())
    (tmp_path / ".vllm-configurator.yaml").write_text("ignorePaths: [bad.yaml]\n")
    settings = settings_for([str(tmp_path)], None)
    assert run([str(tmp_path)], settings).worst() != "error"
    assert run([str(tmp_path / "bad.yaml")], settings).worst() == "error"  # named: read
    assert run([str(tmp_path / "bad.yaml")], settings, force_exclude=True).files == 0


def test_run_refuses_bad_input_with_one_line(tmp_path):
    with pytest.raises(InputError, match="no such file or folder"):
        run([str(tmp_path / "missing.yaml")], Settings())
    with pytest.raises(InputError):  # an unknown GPU: the nearest names, exit 2
        run([str(CORPUS / "docs-example-ok.yaml")], Settings(), gpu="no-such-gpu-xyz")


def test_check_cmd_only_parses_calls_run_and_writes():
    from configurator.cli.check import check_cmd

    source = textwrap.dedent(inspect.getsource(check_cmd.callback))
    fn = ast.parse(source).body[0]
    assert isinstance(fn, ast.FunctionDef)
    lines = fn.end_lineno - fn.lineno + 1
    assert lines < 60, f"check_cmd is {lines} lines"
    called = {n.func.id for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "run" in called and "write_reports" in called
    imported = {(n.module, a.name) for n in ast.walk(fn) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert ("configurator.lint.run", "run") in imported
    # nothing of the loading or the engine is left in the command
    assert not called & {"evaluate", "_load", "load_paths", "_by_chart"}
