"""Real start-up logs: --kv-cache-memory-bytes = the logged GiB reproduces tokens and concurrency on
every dev and dev2 record that logs a version, its KV memory and its tokens (benchmarks/kv_reproduction.py)."""

import importlib
import sys

import pytest

from tests.conftest import ROOT, repo_data


def _bench():
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module("kv_reproduction")


@pytest.fixture(scope="module")
def reproduced():
    repo_data("logs", "vllm-startup-logs.dev2.jsonl")
    return _bench().run()


def test_every_reproducible_record_within_one_percent(reproduced):
    done, _skipped = reproduced
    assert len(done) >= 13
    assert _bench().misses(done) == [], [(d["id"], d["tok_err"], d["conc_err"]) for d in done]


def test_records_not_run_say_why(reproduced):
    _done, skipped = reproduced
    assert all(s["reason"] for s in skipped)


def test_the_script_exits_one_on_a_miss(tmp_path, monkeypatch):
    bench = _bench()
    fake = [{"id": "x", "tok_err": 0.02, "conc_err": 0.0}]
    monkeypatch.setattr(bench, "run", lambda paths: (
        [dict(fake[0], version="0.25.0", model="m", kv_gib=1.0, logged_tokens=100, tokens=102, logged_conc=1.0,
              conc=1.0, block=16)], []))
    assert bench.main(["--out", str(tmp_path / "k.md")]) == 1
