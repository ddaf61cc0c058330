"""The figures an HTML report (configurator/report/html.py) must show, read from the command's JSON output.

`assert_figures(kind, data, text)` is used on the page's source with its tags stripped (tests/test_html_cli.py,
no browser) and on the text Chromium rendered (tests/test_html_report.py): both must hold the same figures.
"""

from __future__ import annotations

import re
from html import unescape

from configurator.report.html import gib


def page_text(html: str) -> str:
    """The text of a page: tags dropped, entities decoded, white space collapsed."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def number(v: float) -> str:
    """A figure as the page prints it (thousands separators, at most two decimals, no trailing zeros)."""
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:,.2f}".rstrip("0").rstrip(".")


def _estimate(d: dict, text: str) -> None:
    mem, kv = d["memory"], d["kv_cache"]
    assert gib(mem["kv_cache_bytes"]) in text
    assert gib(mem["weights_bytes"]) in text
    assert number(kv["max_concurrency"]) in text
    assert number(kv["tokens"]) in text
    if d.get("kv_cache_bytes_low") is not None:
        assert f"KV band {gib(d['kv_cache_bytes_low'])} to {gib(d['kv_cache_bytes_high'])}" in text


def _plan(d: dict, text: str) -> None:
    est = d["estimate"]
    assert gib(est["memory"]["kv_cache_bytes"]) in text
    assert number(d["carried_concurrency"]) in text
    assert d["serve_command"] in text
    for row in d.get("reasons") or []:
        assert str(row["flag"]) in text
    dtypes = {alt["kv_cache_dtype"] for alt in d["alternatives"]} | {est["kv_cache"]["dtype"]}
    curves = set(re.findall(r"KV (\S+) \([\d,]+ B/token\)", text))
    # every KV dtype the plan weighed has its curve (`auto` is the model dtype's: one curve for both)
    assert curves and curves <= dtypes and dtypes - curves <= {"auto"}
    if isinstance(d.get("speed"), dict):
        assert "Latency against throughput" in text
        assert number(d["speed"]["tpot_ms"]) in text


def _check(d: dict, text: str) -> None:
    assert d["servers"], "a check page with no server proves nothing"
    for s in d["servers"]:
        assert s["verdict"] in text and (s["model"] or "-") in text
        if s["kv_cache_bytes"]:
            assert gib(s["kv_cache_bytes"]) in text
        if s["kv_cache_bytes_low"] is not None:
            assert f"band {gib(s['kv_cache_bytes_low'])} to {gib(s['kv_cache_bytes_high'])}" in text
        if s["max_concurrency"] is not None:
            assert number(s["max_concurrency"]) in text
    for f in d["findings"]:
        assert f"{f['file']}:{f['line']:,}" in text and f["rule"] in text


def assert_figures(kind: str, data: dict, text: str) -> None:
    """The page text holds the figures of the JSON output `data` of `kind` (estimate, plan, check)."""
    {"estimate": _estimate, "plan": _plan, "check": _check}[kind](data, text)
