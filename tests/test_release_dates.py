"""configurator/vllm/release_dates.py: the release a deployment on a given day ran at the newest."""

import ast
import datetime as dt
import itertools
from pathlib import Path

import pytest

from configurator.vllm import release_dates
from configurator.vllm.release_dates import FIRST_UPLOAD, latest_at
from configurator.vllm.versions import SUPPORTED


def test_the_day_of_a_release_is_that_release_and_the_day_before_is_the_previous_one():
    ordered = sorted(FIRST_UPLOAD, key=lambda v: FIRST_UPLOAD[v])
    for prev, cur in itertools.pairwise(ordered):
        day = FIRST_UPLOAD[cur]
        assert latest_at(day) == cur
        assert latest_at(day - dt.timedelta(days=1)) == prev


def test_dates_rise_with_the_version_number():
    by_version = sorted(FIRST_UPLOAD, key=lambda v: tuple(int(x) for x in v.split(".")))
    days = [FIRST_UPLOAD[v] for v in by_version]
    assert days == sorted(days) and len(set(days)) == len(days)


def test_accepts_iso_strings_and_datetimes_and_refuses_a_day_before_the_first_release():
    assert latest_at("2026-01-31") == latest_at(dt.date(2026, 1, 31)) == latest_at(dt.datetime(2026, 1, 31, 23))
    first = min(FIRST_UPLOAD.values())
    with pytest.raises(ValueError):
        latest_at(first - dt.timedelta(days=1))


def test_far_future_is_the_newest_release_listed_and_every_release_is_modelled():
    newest = max(FIRST_UPLOAD, key=lambda v: tuple(int(x) for x in v.split(".")))
    assert latest_at("2100-01-01") == newest
    assert set(FIRST_UPLOAD) <= set(SUPPORTED)


def test_the_module_is_data_only():
    tree = ast.parse(Path(release_dates.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not any(m.startswith("configurator") for m in imported), imported
