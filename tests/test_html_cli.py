"""`--format html` on estimate and plan: one self-contained page holding the figures of the JSON output
(the page itself is rendered and checked in headless Chromium by tests/test_html_report.py)."""

from __future__ import annotations

import json
import re

import pytest

ESTIMATE = ("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "a100-80gb")


def _self_contained(page: str) -> None:
    assert page.lstrip().lower().startswith("<!doctype html")
    assert "<svg" in page and "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing fetched from the network


def test_estimate_html_holds_the_json_figures(run_cli):
    data = json.loads(run_cli(*ESTIMATE, "--format", "json").stdout)
    res = run_cli(*ESTIMATE, "--format", "html")
    assert res.exit_code == 0
    _self_contained(res.stdout)
    kv_gib = data["memory"]["kv_cache_bytes"] / 2**30
    assert f"{kv_gib:.2f}" in res.stdout


@pytest.mark.parametrize("workload", ["chat", "rag", "long-context"])
def test_plan_html_for_three_workloads(run_cli, tmp_path, workload):
    args = ("plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100-80gb", "--workload", workload)
    data = json.loads(run_cli(*args, "--format", "json").stdout)
    out = tmp_path / f"{workload}.html"
    res = run_cli(*args, "--format", "html", "-o", str(out))
    assert res.exit_code == (0 if data["feasible"] and data["status"] == "carries" else 1)
    page = out.read_text()
    _self_contained(page)
    assert data["serve_command"].split()[0] in page
    assert str(data["flags"]["max_num_seqs"]) in page
