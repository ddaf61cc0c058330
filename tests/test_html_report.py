"""The HTML report (configurator/report/html.py) in a real headless Chromium: it loads with no console message,
a screenshot is taken, and the page's text holds the JSON output's figures.

Chromium is Debian's `chromium` package; the browser tests skip, saying so, where it is absent. Set
VLLM_CONFIGURATOR_SCREENSHOTS=DIR to keep the screenshots (CI keeps them as artifacts).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from configurator.errors import InputError
from configurator.report.html import render_html
from configurator.speed import Workload, speed_for_estimate
from tests.conftest import ROOT
from tests.html_support import assert_figures, number, page_text
from tests.test_html_cli import CHECK_PATHS, PLANS, json_and_html

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium)")


def _chromium(page: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", *args, page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)


def _console(stderr: str) -> list[str]:
    """The page's console messages as Chromium logs them (`INFO:CONSOLE:<line>] "message", source: ...`)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def open_in_chromium(html: str, tmp_path: Path, name: str) -> str:
    """Load the page, assert a clean console and a screenshot, and return the rendered page's text."""
    page = tmp_path / f"{name}.html"
    page.write_text(html, encoding="utf-8")
    dom = _chromium(page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _console(dom.stderr) == [], _console(dom.stderr)
    shot = tmp_path / f"{name}.png"
    res = _chromium(page, "--window-size=1200,2400", f"--screenshot={shot}")
    assert res.returncode == 0 and shot.stat().st_size > 10_000, res.stderr[-2000:]
    keep = os.environ.get("VLLM_CONFIGURATOR_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    return page_text(dom.stdout)


@needs_chromium
def test_the_console_check_catches_a_console_message(tmp_path):
    """The check above can fail: a page that logs to the console is caught."""
    page = tmp_path / "noisy.html"
    page.write_text('<!DOCTYPE html><p>x</p><script>console.error("boom")</script>', encoding="utf-8")
    assert any("boom" in line for line in _console(_chromium(page, "--dump-dom").stderr))


@needs_chromium
def test_estimate_page_holds_its_figures(tmp_path, run_cli):
    args = ("estimate", "--gpu", "h100-80gb", "--", "vllm", "serve", "Qwen/Qwen3-32B", "--max-model-len", "16384")
    d, page, code = json_and_html(run_cli, *args)
    assert code == 0
    assert_figures("estimate", d, open_in_chromium(page, tmp_path, "estimate-qwen3-32b-h100"))


@needs_chromium
@pytest.mark.parametrize("workload", sorted(PLANS))
def test_plan_pages_for_three_workloads(tmp_path, run_cli, workload):
    """`plan --format html` for three workloads: each page loads clean, is screenshot, and its rendered text
    holds the figures of `plan --format json`."""
    model, gpu = PLANS[workload]
    d, page, code = json_and_html(run_cli, "plan", "--model", model, "--gpu", gpu, "--workload", workload)
    assert code in (0, 1)
    assert_figures("plan", d, open_in_chromium(page, tmp_path, f"plan-{workload}"))


@needs_chromium
def test_plan_page_draws_speed_alternatives(tmp_path, run_cli):
    res = run_cli("plan", "--model", "Qwen/Qwen3-8B", "--gpu", "h100-80gb", "--format", "json")
    d = json.loads(res.stdout)
    wl = Workload(input_len=d["workload"]["prompt_tokens"], output_len=d["workload"]["output_tokens"],
                  concurrency=d["carried_concurrency"])
    d["speed"] = speed_for_estimate(d["estimate"], wl)
    fewer = Workload(input_len=wl.input_len, output_len=wl.output_len, concurrency=max(1, wl.concurrency // 4))
    d["alternatives"][0]["speed"] = speed_for_estimate(d["estimate"], fewer)
    text = open_in_chromium(render_html("plan", d), tmp_path, "plan-speed")
    assert_figures("plan", d, text)
    assert number(d["alternatives"][0]["speed"]["tpot_ms"]) in text


@needs_chromium
def test_check_page_lists_every_server_with_its_verdict(tmp_path, run_cli):
    d, page, code = json_and_html(run_cli, "check", *CHECK_PATHS)
    assert code == (1 if d["summary"]["errors"] else 0) and len(d["servers"]) >= 5
    assert_figures("check", d, open_in_chromium(page, tmp_path, "check-real"))


def test_pages_are_self_contained():
    d = json.loads((ROOT / "schemas" / "plan.schema.json").read_text())  # any dict renders; no figures here
    for kind in ("estimate", "plan", "check"):
        page = render_html(kind, d if kind != "check" else {"servers": [], "findings": []})
        assert "<script" not in page and not re.search(r'(src|href)="(https?:)?//', page)
        assert page.startswith("<!DOCTYPE html>")


def test_unknown_kind_or_non_object_is_a_clear_input_error():
    with pytest.raises(InputError, match="one of estimate, plan, check"):
        render_html("audit", {})
    with pytest.raises(InputError, match="JSON object"):
        render_html("plan", [])  # type: ignore[arg-type]
