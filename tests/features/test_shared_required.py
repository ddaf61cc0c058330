"""The repository stands alone: its tests read the data folder inside it, never a folder beside the checkout, and a
data file fails the test with where it was expected (it never skips)."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests import conftest
from tests.conftest import ROOT


def test_missing_data_fails_the_test_with_where_it_was_expected(tmp_path, monkeypatch):
    monkeypatch.setattr(conftest, "DATA", tmp_path / "no-data")
    with pytest.raises(pytest.fail.Exception) as failed:
        conftest.repo_data("logs", "vllm-startup-logs.dev.jsonl")
    msg = str(failed.value)
    assert "missing" in msg and str(tmp_path / "no-data") in msg


def test_present_data_is_inside_the_repository():
    p = conftest.repo_data("logs", "vllm-startup-logs.dev.jsonl")
    assert p.is_file() and p.stat().st_size > 0
    assert ROOT in p.resolve().parents


def test_nothing_tracked_reads_a_folder_beside_the_checkout_or_cites_a_local_path():
    """No code, test, benchmark or CI file reads a shared folder beside the checkout; no source is a local path."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    code = [f for f in files if f.endswith((".py", ".sh")) or f.startswith(".ci/") or f == "Makefile"]
    readers = [f for f in code if re.search(r"\.\./shared|parent\s*/\s*['\"]shared['\"]",
                                            (ROOT / f).read_text(errors="replace"))]
    assert readers == []
    cited = [f for f in files if f.split("/")[0] in ("profiles", "docs", "configurator", "data") or f == "README.md"]
    local = [f for f in cited if re.search(r"(?<![\w.])/(work|farm)/", (ROOT / f).read_text(errors="replace"))]
    assert local == []


def test_every_data_file_is_listed_with_its_source():
    readme = (ROOT / "data" / "README.md").read_text()
    for p in sorted((ROOT / "data").rglob("*")):
        if p.is_file() and p.name != "README.md" and p.parent.name != "model-configs":
            assert p.name in readme, f"data/README.md does not list {p.relative_to(ROOT)}"
    # the model configs are listed by their own README with the Hub repository each copies
    configs_readme = (ROOT / "data" / "model-configs" / "README.md").read_text()
    for p in sorted((ROOT / "data" / "model-configs").glob("*.json")):
        hub_id = p.name.split(".hf_quant_config")[0].removesuffix(".json").replace("__", "/", 1)
        assert hub_id in configs_readme, f"data/model-configs/README.md does not name {hub_id}"
