"""Tests that need ../shared fail with a clear message when it is missing: they never skip."""

from __future__ import annotations

import pytest

from tests import conftest


def test_missing_shared_data_fails_the_test_with_where_it_was_expected(tmp_path, monkeypatch):
    monkeypatch.setattr(conftest, "SHARED", tmp_path / "no-shared")
    with pytest.raises(pytest.fail.Exception) as failed:
        conftest.require_shared("data", "vllm-startup-logs.dev.jsonl")
    msg = str(failed.value)
    assert "missing" in msg and str(tmp_path / "no-shared") in msg and "shared/" in msg
    # the name the older test modules import behaves the same: a failure, not a skip
    with pytest.raises(pytest.fail.Exception):
        conftest.shared_or_skip("data")


def test_present_shared_data_is_returned():
    p = conftest.require_shared("data", "vllm-startup-logs.dev.jsonl")
    assert p.is_file() and p.stat().st_size > 0
