"""The CLI's edges in-process (so coverage measures them): a reader that closed the pipe, the last line of
defence against an OSError / ValueError, the kubectl plugin's entry point, and `gpus`."""

from __future__ import annotations

import json
import os
import sys

import pytest

from configurator.cli import common
from configurator.cli import main as cli_main
from configurator.hardware import catalog
from tests.conftest import ROOT


@pytest.fixture
def no_dup2(monkeypatch):
    """The tool's os.dup2 calls recorded, not done (it points stdout at /dev/null after a broken pipe);
    pytest's own capture calls go through."""
    calls = []
    real = os.dup2

    def dup2(a, b, *rest):
        if sys._getframe(1).f_globals.get("__name__", "").startswith("configurator"):
            calls.append((a, b))
            return None
        return real(a, b, *rest)

    monkeypatch.setattr(os, "dup2", dup2)
    return calls


def test_a_broken_pipe_inside_a_command_exits_0_quietly(monkeypatch, no_dup2):
    def closed(*_a, **_k):
        raise BrokenPipeError
    monkeypatch.setattr(catalog, "list_gpus", closed)
    monkeypatch.setattr(sys, "argv", ["vllm-configurator", "gpus"])
    with pytest.raises(SystemExit) as e:
        cli_main.main()
    assert e.value.code == 0 and no_dup2 == [(no_dup2[0][0], sys.stdout.fileno())]


@pytest.mark.parametrize("error", [OSError("No space left on device"), ValueError("bad value deep inside")])
def test_an_unexpected_oserror_or_valueerror_is_one_line_exit_2(run_cli, monkeypatch, error):
    def boom(*_a, **_k):
        raise error
    monkeypatch.setattr(catalog, "list_gpus", boom)
    res = run_cli("gpus")
    assert res.exit_code == 2 and res.stderr == f"error: {error}\n" and "Traceback" not in res.output


def test_main_exits_0_on_a_broken_pipe_outside_the_commands(monkeypatch, no_dup2):
    def closed(**_k):
        raise BrokenPipeError
    monkeypatch.setattr(cli_main, "cli", closed)
    with pytest.raises(SystemExit) as e:
        cli_main.main()
    assert e.value.code == 0 and len(no_dup2) == 1


def test_the_kubectl_plugin_entry_point_is_check(monkeypatch, capsys):
    # (capsys: sys.stdout has no file descriptor here, and nothing here breaks a pipe)
    manifest = str(ROOT / "tests" / "manifests" / "over-limit.yaml")
    monkeypatch.setattr(sys, "argv", ["kubectl-vllm_check", "--format", "json", manifest])
    with pytest.raises(SystemExit) as e:
        cli_main.kubectl_plugin()
    assert e.value.code == 1
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["errors"] >= 1 and report["findings"][0]["file"] == manifest
    monkeypatch.setattr(sys, "argv", ["kubectl-vllm_check", "--help"])
    with pytest.raises(SystemExit) as e:
        cli_main.kubectl_plugin()
    assert e.value.code == 0 and "Usage: kubectl vllm-check [OPTIONS] PATHS..." in capsys.readouterr().out


@pytest.mark.parametrize("raised, code", [(BrokenPipeError(), 1), (SystemExit(1), 0)])
def test_finish_keeps_the_verdicts_code_when_the_reader_goes_away(no_dup2, raised, code):
    def render():
        raise raised
    with pytest.raises(SystemExit) as e:
        common.finish(render, code)
    assert e.value.code == code  # not rich's 1, not a flush error
    assert len(no_dup2) == (1 if isinstance(raised, BrokenPipeError) else 0)


def test_finish_lets_other_exits_through():
    def render():
        raise SystemExit(3)
    with pytest.raises(SystemExit) as e:
        common.finish(render, 0)
    assert e.value.code == 3


def test_gpus_lists_the_catalog_as_text_and_json(run_cli):
    gpus = catalog.list_gpus()
    text = run_cli("gpus").stdout.splitlines()
    assert text[0].split() == ["name", "CUDA", "total", "CC", "FP8", "FP4", "aliases"]
    assert len(text) == len(gpus) + 1
    out = json.loads(run_cli("gpus", "--format", "json").stdout)
    assert [g["name"] for g in out] == [g.name for g in gpus]
    h100 = next(g for g in out if g["name"] == "h100-80gb")
    assert h100["fp8"] is True and h100["total_bytes"] > 79 * 2**30 and "h100" in h100["aliases"]
    row = next(line for line in text if line.startswith("h100-80gb "))
    assert f"{h100['total_bytes'] / 2**30:.2f} GiB" in row


def test_version_and_help(run_cli):
    from configurator import __version__

    assert run_cli("--version").stdout.strip().endswith(__version__)
    helped = run_cli("--help").stdout
    for command in ("estimate", "calibrate", "plan", "check", "review", "webhook", "audit", "gpus", "rules"):
        assert f"  {command} " in helped or f"  {command}\n" in helped
