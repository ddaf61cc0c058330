"""Shared test helpers: run the CLI in-process, locate the repository's own data (data/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from configurator.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"


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


def repo_data(*parts: str) -> Path:
    """A path inside the repository's data folder (``data/``: start-up logs, model configs, notes).

    The data lives in the repository (data/README.md gives each file's public source), so a fresh
    clone runs every test. A missing file FAILS the test, never skips it: a green run always includes
    the dev-log and model-config tests.
    """
    p = DATA.joinpath(*parts)
    if not p.exists():
        pytest.fail(f"{p} is missing: it is part of the repository's data folder ({DATA}); restore it from git. "
                    "The test is not skipped so that a green run always includes it.", pytrace=False)
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


def pytest_configure(config):
    config.addinivalue_line("markers", "install: builds the wheel and installs it in a fresh venv (about a minute); "
                                       "runs in CI and `make test`, deselect locally with -m 'not install'")
