"""Shared test helpers: run the CLI in-process, locate the shared data beside the checkout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from configurator.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture
def run_cli():
    def _run(*args: str):
        runner = CliRunner()
        return runner.invoke(cli, list(args), catch_exceptions=False)
    return _run


@pytest.fixture
def estimate_json(run_cli):
    def _est(*args: str) -> tuple[int, dict]:
        res = run_cli("estimate", "--format", "json", *args)
        return res.exit_code, json.loads(res.stdout)
    return _est


def shared_or_skip(*parts: str) -> Path:
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"{p} not present (the project's shared/ folder sits beside the checkout)")
    return p


def load_benchmark(name: str):
    """Import benchmarks/<name>.py (the benchmarks double as the accuracy harness)."""
    import importlib.util
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, mod)  # dataclasses with string annotations look their module up there
    spec.loader.exec_module(mod)
    return mod
