"""`--format html` on estimate, plan and check: one self-contained page holding the figures of the JSON output.

These read the page's source (no browser); tests/test_html_report.py loads the same pages in headless Chromium
and checks the same figures in the text it renders."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import ROOT
from tests.html_support import assert_figures, page_text

ESTIMATE = ("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "a100-80gb")
REAL = ROOT / "tests" / "corpus" / "real"
PLANS = {  # three workloads, three GPUs
    "chat": ("Qwen/Qwen3-8B", "l4"),
    "rag": ("meta-llama/Llama-3.1-8B-Instruct", "a100-80gb"),
    "long-context": ("meta-llama/Llama-3.1-8B-Instruct", "h100-80gb"),
}
CHECK_PATHS = (str(REAL / "substratusai-kubeai"), str(REAL / "awslabs-ai-on-eks"))


def _self_contained(page: str) -> None:
    assert page.lstrip().lower().startswith("<!doctype html")
    assert "<svg" in page and "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing fetched from the network
    assert "@import" not in page and "url(" not in page


def json_and_html(run_cli, *args: str) -> tuple[dict, str, int]:
    """The command's JSON output, its HTML page (standard output) and the HTML run's exit code. The options go
    right after the command's name, before any `-- vllm serve ...`."""
    cmd, rest = args[0], args[1:]
    data = json.loads(run_cli(cmd, "--format", "json", *rest).stdout)
    res = run_cli(cmd, "--format", "html", *rest)
    return data, res.stdout, res.exit_code


def test_estimate_html_holds_the_json_figures(run_cli):
    data, page, code = json_and_html(run_cli, *ESTIMATE)
    assert code == 0
    _self_contained(page)
    assert_figures("estimate", data, page_text(page))


@pytest.mark.parametrize("workload", sorted(PLANS))
def test_plan_html_for_three_workloads(run_cli, workload):
    model, gpu = PLANS[workload]
    data, page, code = json_and_html(run_cli, "plan", "--model", model, "--gpu", gpu,
                                     "--workload", workload)
    assert code == (0 if data["feasible"] and data["status"] == "carries" else 1)
    _self_contained(page)
    assert_figures("plan", data, page_text(page))
    assert str(data["flags"]["max_num_seqs"]) in page


def test_check_html_lists_every_server_with_its_verdict_and_bar(run_cli):
    data, page, code = json_and_html(run_cli, "check", *CHECK_PATHS)
    assert code == (1 if data["summary"]["errors"] else 0)  # the format does not change the exit code
    _self_contained(page)
    assert_figures("check", data, page_text(page))
    with_kv = [s for s in data["servers"] if s["kv_cache_bytes"]]
    assert len(with_kv) >= 3
    assert page.count('aria-label="KV cache per GPU"') == len(with_kv)  # a bar per server whose KV is known


def test_check_html_beside_another_format(run_cli, tmp_path):
    """html is one more --format of check: written with its own --output beside a SARIF file."""
    html, sarif = tmp_path / "c.html", tmp_path / "c.sarif"
    res = run_cli("check", CHECK_PATHS[0], "--format", "html", "-o", str(html), "--format", "sarif",
                  "-o", str(sarif))
    assert res.exit_code == 0, res.output
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    assert "vLLM deployment check" in html.read_text()


def test_the_figure_check_can_fail(run_cli):
    """assert_figures is not vacuous: a page missing one server's KV figure is caught."""
    data = json.loads(run_cli("check", "--format", "json", CHECK_PATHS[0]).stdout)
    from configurator.report.html import gib, render_html

    text = page_text(render_html("check", data))
    s = next(s for s in data["servers"] if s["kv_cache_bytes"])
    with pytest.raises(AssertionError):
        assert_figures("check", data, text.replace(gib(s["kv_cache_bytes"]), "?"))
