"""One self-contained HTML page (inline SVG and CSS, no script, no network) from the JSON the commands print.

    render_html("estimate", estimate_json)  # `estimate --format json`
    render_html("plan", plan_json)          # `plan --format json`
    render_html("check", check_json)        # `check --format json`

The page shows the memory budget per GPU as a stacked bar with the KV band, concurrency against context for
each KV dtype with the chosen point marked (estimate, plan), the plan's alternatives on latency against
throughput where they carry speed figures (a `speed` dict as configurator.speed.SpeedEstimate.to_dict()
gives), and for `check` a table of the servers found with their verdicts. Every figure is printed as text
too, so the page reads without the pictures.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from configurator.errors import InputError

GIB = 1024 ** 3
KINDS = ("estimate", "plan", "check")
# memory parts in the order vLLM takes them (estimate JSON `memory` keys), with their colours
PARTS = (("weights_bytes", "weights", "#4c72b0"), ("draft_weights_bytes", "draft weights", "#64b5cd"),
         ("lora_bytes", "LoRA", "#8172b3"), ("activation_bytes", "activation peak", "#dd8452"),
         ("lora_activation_bytes", "LoRA activations", "#da8bc3"), ("encoder_cache_bytes", "encoder cache", "#ccb974"),
         ("moe_parallel_delta_bytes", "MoE parallel buffers", "#937860"), ("non_torch_bytes", "non-torch", "#c44e52"),
         ("cudagraph_bytes", "CUDA graphs", "#8c8c8c"), ("other_bytes", "other", "#b0b0b0"),
         ("cpu_offload_bytes", "CPU offload (saved)", "#e0e0e0"), ("kv_cache_bytes", "KV cache", "#55a868"))
LABEL_KEYS = ("kv_cache_dtype", "max_model_len", "tensor_parallel_size", "gpus", "replicas")
DTYPE_COLOURS = ("#55a868", "#4c72b0", "#dd8452", "#8172b3", "#c44e52")
VERDICT_COLOURS = {"fits": "#2e7d32", "ok": "#2e7d32", "carries": "#2e7d32", "at-risk": "#ef6c00", "short": "#ef6c00",
                   "refused": "#c62828", "error": "#c62828"}

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#222;
padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555;margin:0 0 16px}.pill{display:inline-block;padding:2px 10px;border-radius:12px;color:#fff;
font-weight:600;white-space:nowrap}table{border-collapse:collapse;font-size:13px;margin:8px 0}td,th{
border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f4f4f4}td.num{text-align:right;
font-variant-numeric:tabular-nums}svg text{font-family:inherit;font-size:12px;fill:#333}.legend span{
display:inline-block;margin-right:14px;font-size:13px}.legend i{display:inline-block;width:11px;height:11px;
margin-right:4px;vertical-align:-1px}code{background:#f4f4f4;padding:1px 4px;border-radius:3px}
.note{color:#555;font-size:13px}ul{margin:4px 0;padding-left:20px}
"""


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def gib(b: Any) -> str:
    """Bytes as GiB with two decimals ('4.14 GiB'), the form the text reports use."""
    v = _num(b)
    return "-" if v is None else f"{v / GIB:.2f} GiB"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.2f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return "-" if v is None else str(v)


def _e(v: Any) -> str:
    return escape(_fmt(v) if not isinstance(v, str) else v)


def _pill(verdict: str) -> str:
    colour = VERDICT_COLOURS.get(verdict, "#607d8b")
    return f'<span class="pill" style="background:{colour}">{escape(verdict or "-")}</span>'


def _nice_max(v: float) -> float:
    if v <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * exp:
            return m * exp
    return 10 * exp


def _ticks(top: float, n: int = 5) -> list[float]:
    return [top * i / n for i in range(n + 1)]


def _tick(t: float) -> str:
    return f"{t:,.0f}" if t >= 100 else f"{t:,.4g}"


# --- memory budget --------------------------------------------------------------------------------------------

def memory_section(est: dict) -> str:
    mem, gpu = est.get("memory") or {}, est.get("gpu") or {}
    total = _num(mem.get("total_bytes")) or _num(gpu.get("total_bytes"))
    if not total:
        return ""
    requested = _num(mem.get("requested_bytes")) or total
    parts = [(label, _num(mem.get(k)) or 0.0, colour) for k, label, colour in PARTS if k != "cpu_offload_bytes"]
    parts = [(label, v, colour) for label, v, colour in parts if v > 0]
    w, x0, bar_w, y0, h = 900, 10, 860, 30, 44
    scale = bar_w / total
    svg = [f'<svg role="img" aria-label="memory budget per GPU" width="{w}" height="150" viewBox="0 0 {w} 150">']
    x = x0
    for label, v, colour in parts:
        bw = max(v * scale, 0.5)
        svg.append(f'<rect x="{x:.1f}" y="{y0}" width="{bw:.1f}" height="{h}" fill="{colour}">'
                   f'<title>{escape(label)}: {gib(v)}</title></rect>')
        x += bw
    # vLLM's budget line and the GPU's total
    rx = x0 + requested * scale
    svg.append(f'<line x1="{rx:.1f}" y1="{y0 - 8}" x2="{rx:.1f}" y2="{y0 + h + 8}" stroke="#000" '
               'stroke-dasharray="4 3"/>')
    svg.append(f'<text x="{rx:.1f}" y="{y0 - 12}" text-anchor="end">budget {gib(requested)}</text>')
    svg.append(f'<rect x="{x0}" y="{y0}" width="{bar_w}" height="{h}" fill="none" stroke="#333"/>')
    # the KV band: where the KV cache's end may fall
    lo, hi = _num(est.get("kv_cache_bytes_low")), _num(est.get("kv_cache_bytes_high"))
    kv = _num(mem.get("kv_cache_bytes"))
    if lo is not None and hi is not None and kv is not None:
        end = x
        bx0, bx1 = end - (kv - lo) * scale, end + (hi - kv) * scale
        yb = y0 + h + 14
        svg.append(f'<line x1="{bx0:.1f}" y1="{yb}" x2="{bx1:.1f}" y2="{yb}" stroke="#2e7d32" stroke-width="2"/>'
                   f'<line x1="{bx0:.1f}" y1="{yb - 5}" x2="{bx0:.1f}" y2="{yb + 5}" stroke="#2e7d32"/>'
                   f'<line x1="{bx1:.1f}" y1="{yb - 5}" x2="{bx1:.1f}" y2="{yb + 5}" stroke="#2e7d32"/>')
        svg.append(f'<text x="{min(bx1, x0 + bar_w):.1f}" y="{yb + 18}" text-anchor="end">KV band {gib(lo)} to '
                   f'{gib(hi)}</text>')
    svg.append(f'<text x="{x0}" y="{y0 - 12}">0</text>'
               f'<text x="{x0 + bar_w}" y="{y0 + h + 56}" text-anchor="end">GPU total {gib(total)}</text></svg>')
    legend = "".join(f'<span><i style="background:{c}"></i>{escape(label)}</span>' for label, _, c in parts)
    rows = "".join(f"<tr><td>{escape(label)}</td><td class=num>{gib(v)}</td></tr>" for label, v, _ in parts)
    rows += f"<tr><th>vLLM's budget (utilization x total)</th><th class=num>{gib(requested)}</th></tr>"
    rows += f"<tr><td>GPU total</td><td class=num>{gib(total)}</td></tr>"
    if lo is not None and hi is not None:
        rows += f"<tr><td>KV cache band</td><td class=num>{gib(lo)} to {gib(hi)}</td></tr>"
    return (f'<h2>Memory per GPU</h2><div class="legend">{legend}</div>{"".join(svg)}'
            f"<table><tr><th>part</th><th>per GPU</th></tr>{rows}</table>")


# --- concurrency against context -------------------------------------------------------------------------------

def _curves_from_estimate(est: dict) -> list[dict]:
    kv = est.get("kv_cache") or {}
    kv_bytes = _num((est.get("memory") or {}).get("kv_cache_bytes"))
    bpt = _num(kv.get("bytes_per_token"))
    if not kv_bytes or not bpt:
        return []
    return [{"dtype": str(kv.get("dtype") or "auto"), "kv_bytes": kv_bytes, "bytes_per_token": bpt,
             "per_seq": (_num(kv.get("state_bytes_per_sequence")) or 0.0)}]


def _curves_from_plan(plan: dict) -> list[dict]:
    est = plan.get("estimate") or {}
    curves = {c["dtype"]: c for c in _curves_from_estimate(est)}
    for alt in plan.get("alternatives") or []:
        d = str(alt.get("kv_cache_dtype") or "auto")
        n, ctx, kvb = (_num(alt.get("requests_at_max_model_len")), _num(alt.get("max_model_len")),
                       _num(alt.get("kv_cache_bytes")))
        if d in curves or not n or not ctx or not kvb:
            continue
        bpt = kvb / (n * ctx)
        # `auto` is the model's own dtype: the same curve as the estimate's when their bytes per token agree
        if any(abs(c["bytes_per_token"] / bpt - 1) < 0.02 for c in curves.values()):
            continue
        curves[d] = {"dtype": d, "kv_bytes": kvb, "bytes_per_token": bpt, "per_seq": 0.0}
    return list(curves.values())


def concurrency_section(curves: list[dict], point: tuple[float, float] | None, target: float | None,
                        max_ctx: float | None) -> str:
    if not curves:
        return ""
    x_top = _nice_max(max(max_ctx or 0, point[0] if point else 0, 4096) * 1.25)
    ctxs = [x_top * i / 60 for i in range(1, 61)]

    def req(c: dict, ctx: float) -> float:
        return c["kv_bytes"] / (c["bytes_per_token"] * ctx + c["per_seq"])

    at_min = [req(c, ctxs[0]) for c in curves]
    y_cap = max((point[1] if point else 0) * 3, (target or 0) * 2, req(curves[0], x_top) * 6, 8)
    y_top = _nice_max(min(max(at_min), y_cap))
    W, H, L, B, T, R = 900, 360, 60, 40, 16, 20
    pw, ph = W - L - R, H - T - B

    def sx(v: float) -> float:
        return L + v / x_top * pw

    def sy(v: float) -> float:
        return T + ph - min(v, y_top) / y_top * ph

    svg = [f'<svg role="img" aria-label="concurrency against context" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}">', f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="#fafafa" '
           'stroke="#ccc"/>']
    for t in _ticks(x_top):
        svg.append(f'<line x1="{sx(t):.1f}" y1="{T + ph}" x2="{sx(t):.1f}" y2="{T + ph + 4}" stroke="#333"/>'
                   f'<text x="{sx(t):.1f}" y="{T + ph + 18}" text-anchor="middle">{t:,.0f}</text>')
    for t in _ticks(y_top):
        svg.append(f'<line x1="{L - 4}" y1="{sy(t):.1f}" x2="{L + pw}" y2="{sy(t):.1f}" stroke="#e6e6e6"/>'
                   f'<text x="{L - 8}" y="{sy(t) + 4:.1f}" text-anchor="end">{_tick(t)}</text>')
    svg.append(f'<text x="{L + pw / 2}" y="{H - 4}" text-anchor="middle">context per request (tokens)</text>'
               f'<text x="14" y="{T + ph / 2}" transform="rotate(-90 14 {T + ph / 2})" text-anchor="middle">'
               'requests the KV cache holds</text>')
    legend = []
    for i, c in enumerate(curves):
        colour = DTYPE_COLOURS[i % len(DTYPE_COLOURS)]
        pts = " ".join(f"{sx(x):.1f},{sy(req(c, x)):.1f}" for x in ctxs)
        svg.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"/>')
        legend.append(f'<span><i style="background:{colour}"></i>KV {escape(c["dtype"])} '
                      f'({c["bytes_per_token"]:,.0f} B/token)</span>')
    if target:
        svg.append(f'<line x1="{L}" y1="{sy(target):.1f}" x2="{L + pw}" y2="{sy(target):.1f}" stroke="#c62828" '
                   f'stroke-dasharray="6 4"/><text x="{L + pw - 4}" y="{sy(target) - 6:.1f}" text-anchor="end" '
                   f'fill="#c62828">target {target:,.0f} requests</text>')
    if point:
        svg.append(f'<circle cx="{sx(point[0]):.1f}" cy="{sy(point[1]):.1f}" r="6" fill="#000"/>'
                   f'<text x="{sx(point[0]) + 10:.1f}" y="{sy(point[1]) - 8:.1f}">chosen: {point[1]:,.4g} requests '
                   f'at {point[0]:,.0f} tokens</text>')
    svg.append("</svg>")
    rows = "".join(
        f"<tr><td>{escape(c['dtype'])}</td><td class=num>{gib(c['kv_bytes'])}</td>"
        f"<td class=num>{c['bytes_per_token']:,.0f}</td>"
        + "".join(f"<td class=num>{req(c, x):,.2f}</td>" for x in (2048, 8192, 32768, 131072)) + "</tr>"
        for c in curves)
    return (f'<h2>Concurrency against context</h2><div class="legend">{"".join(legend)}</div>{"".join(svg)}'
            "<table><tr><th>KV dtype</th><th>KV cache per GPU</th><th>bytes per token</th><th>at 2,048</th>"
            f"<th>at 8,192</th><th>at 32,768</th><th>at 131,072</th></tr>{rows}</table>")


# --- latency against throughput --------------------------------------------------------------------------------

def speed_section(plan: dict) -> str:
    """The plan's own speed and its alternatives' (any entry with a `speed` dict) as TPOT against tok/s/GPU."""
    options = []
    if isinstance(plan.get("speed"), dict):
        options.append(("chosen plan", plan["speed"], True))
    for key in ("alternatives", "remedies", "layouts"):
        for i, alt in enumerate(plan.get(key) or []):
            if isinstance(alt, dict) and isinstance(alt.get("speed"), dict):
                label = alt.get("label") or alt.get("layout") or alt.get("action") or ", ".join(
                    f"{k}={v}" for k, v in alt.items() if k in LABEL_KEYS) or f"{key} {i + 1}"
                options.append((str(label), alt["speed"], False))
    options = [(lbl, s, me) for lbl, s, me in options if _num(s.get("tpot_ms")) and _num(s.get("output_tok_s"))]
    if not options:
        return ""

    def per_gpu(s: dict) -> float:
        return _num(s.get("output_tok_s_per_gpu")) or _num(s.get("output_tok_s")) or 0.0

    x_top = _nice_max(max(max(per_gpu(s), (s.get("output_tok_s_band") or [0, 0])[1] / max(
        (s.get("output_tok_s") or 1) / max(per_gpu(s), 1e-9), 1e-9)) for _, s, _ in options) * 1.1)
    y_top = _nice_max(max(max(s["tpot_ms"], (s.get("tpot_ms_band") or [0, 0])[1]) for _, s, _ in options) * 1.1)
    W, H, L, B, T, R = 900, 340, 60, 40, 16, 20
    pw, ph = W - L - R, H - T - B

    def sx(v: float) -> float:
        return L + min(v, x_top) / x_top * pw

    def sy(v: float) -> float:
        return T + ph - min(v, y_top) / y_top * ph

    svg = [f'<svg role="img" aria-label="latency against throughput" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}"><rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="#fafafa" stroke="#ccc"/>']
    for t in _ticks(x_top):
        svg.append(f'<text x="{sx(t):.1f}" y="{T + ph + 18}" text-anchor="middle">{_tick(t)}</text>')
    for t in _ticks(y_top):
        svg.append(f'<line x1="{L}" y1="{sy(t):.1f}" x2="{L + pw}" y2="{sy(t):.1f}" stroke="#e6e6e6"/>'
                   f'<text x="{L - 8}" y="{sy(t) + 4:.1f}" text-anchor="end">{_tick(t)}</text>')
    svg.append(f'<text x="{L + pw / 2}" y="{H - 4}" text-anchor="middle">output tokens/s per GPU</text>'
               f'<text x="14" y="{T + ph / 2}" transform="rotate(-90 14 {T + ph / 2})" text-anchor="middle">'
               'time per output token (ms)</text>')
    rows = []
    for label, s, chosen in options:
        x, y = per_gpu(s), s["tpot_ms"]
        ratio = x / s["output_tok_s"] if s["output_tok_s"] else 1.0
        band = s.get("tpot_ms_band")
        if band:
            svg.append(f'<line x1="{sx(x):.1f}" y1="{sy(band[0]):.1f}" x2="{sx(x):.1f}" y2="{sy(band[1]):.1f}" '
                       'stroke="#999"/>')
        tband = s.get("output_tok_s_band")
        if tband:
            svg.append(f'<line x1="{sx(tband[0] * ratio):.1f}" y1="{sy(y):.1f}" x2="{sx(tband[1] * ratio):.1f}" '
                       f'y2="{sy(y):.1f}" stroke="#999"/>')
        colour = "#000" if chosen else "#4c72b0"
        svg.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="{7 if chosen else 5}" fill="{colour}"/>'
                   f'<text x="{sx(x) + 9:.1f}" y="{sy(y) - 7:.1f}">{escape(label[:40])}</text>')
        rows.append(f"<tr><td>{escape(label)}</td><td class=num>{_e(s.get('ttft_ms'))}</td>"
                    f"<td class=num>{_e(s['tpot_ms'])}</td><td class=num>{_e(s['output_tok_s'])}</td>"
                    f"<td class=num>{_e(round(x, 2))}</td><td>{escape(str(s.get('bound') or ''))}</td></tr>")
    svg.append("</svg>")
    return ("<h2>Latency against throughput</h2>" + "".join(svg)
            + "<table><tr><th>option</th><th>TTFT ms</th><th>TPOT ms</th><th>output tok/s</th>"
              f"<th>tok/s per GPU</th><th>bound by</th></tr>{''.join(rows)}</table>"
            + '<p class="note">Bars: the speed model\'s bands (cross-validated error, benchmarks/speed_accuracy.md).'
              "</p>")


# --- pages -----------------------------------------------------------------------------------------------------

def _page(title: str, subtitle: str, body: str) -> str:
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
            f"<h1>{escape(title)}</h1><p class=\"sub\">{subtitle}</p>{body}"
            "<p class=\"note\">Written by vllm-configurator; every figure above is also in its JSON output.</p>"
            "</body></html>\n")


def _kv_summary(est: dict) -> str:
    kv, mem, flags = est.get("kv_cache") or {}, est.get("memory") or {}, est.get("flags") or {}
    rows = [("KV cache per GPU", gib(mem.get("kv_cache_bytes"))), ("KV dtype", kv.get("dtype")),
            ("KV tokens", kv.get("tokens")), ("max concurrency at max_model_len", kv.get("max_concurrency")),
            ("max_model_len", flags.get("max_model_len")), ("max_num_seqs", flags.get("max_num_seqs")),
            ("weights per GPU", gib(mem.get("weights_bytes")))]
    return "<table>" + "".join(f"<tr><th>{escape(k)}</th><td class=num>{_e(v)}</td></tr>" for k, v in rows) \
        + "</table>"


def _messages(est: dict) -> str:
    out = ""
    for key, title in (("errors", "vLLM would refuse"), ("warnings", "Warnings")):
        items = est.get(key) or []
        if items:
            out += f"<h2>{title}</h2><ul>" + "".join(f"<li>{escape(str(m))}</li>" for m in items) + "</ul>"
    return out


def _estimate_page(d: dict) -> str:
    model, gpu = (d.get("model") or {}).get("name", "?"), d.get("gpu") or {}
    gpu_name = escape(str(gpu.get("display_name") or gpu.get("name") or "?"))
    sub = (f"{_pill(str(d.get('verdict') or ''))} {escape(str(model))} on {_e(gpu.get('count', 1))} x "
           f"{gpu_name}, vLLM {escape(str(d.get('vllm_version')))}")
    kv, flags = d.get("kv_cache") or {}, d.get("flags") or {}
    point = None
    if _num(flags.get("max_model_len")) and _num(kv.get("max_concurrency")) is not None:
        point = (float(flags["max_model_len"]), float(kv["max_concurrency"]))
    body = (_kv_summary(d) + memory_section(d)
            + concurrency_section(_curves_from_estimate(d), point, None, _num(flags.get("max_model_len")))
            + _messages(d))
    return _page("vLLM memory estimate", sub, body)


def _plan_page(d: dict) -> str:
    est, wl, cap = d.get("estimate") or {}, d.get("workload") or {}, d.get("capacity") or {}
    sub = (f"{_pill(str(d.get('status') or ''))} {escape(str(d.get('model')))} on {_e(d.get('gpus'))} x "
           f"{escape(str(d.get('gpu')))}, workload {escape(str(wl.get('name') or '-'))}, "
           f"vLLM {escape(str(d.get('vllm_version')))}")
    flags = d.get("flags") or {}
    typical = _num(cap.get("typical_tokens"))
    carried = _num(d.get("carried_concurrency"))
    point = (typical, carried) if typical and carried is not None else None
    target = _num(cap.get("target_concurrency")) or _num(wl.get("concurrency"))
    summary = (f"<p>{escape(str(d.get('summary') or ''))}</p>"
               f"<p><code>{escape(str(d.get('serve_command') or ''))}</code></p>"
               "<table><tr><th>flag</th><th>value</th><th>why</th></tr>"
               + "".join(f"<tr><td>{escape(str(r.get('flag')))}</td><td class=num>{_e(r.get('value'))}</td>"
                         f"<td>{escape(str(r.get('why') or ''))}</td></tr>" for r in d.get("reasons") or [])
               + "</table>"
               + "<table>" + "".join(f"<tr><th>{escape(k)}</th><td class=num>{_e(v)}</td></tr>" for k, v in (
                   ("carried concurrency", d.get("carried_concurrency")), ("target concurrency", target),
                   ("requests at typical length", cap.get("requests_at_typical_length")),
                   ("requests at max_model_len", cap.get("requests_at_max_model_len")),
                   ("max_model_len", flags.get("max_model_len")))) + "</table>")
    remedies = d.get("remedies") or []
    if remedies:
        summary += "<h2>Remedies</h2><ul>" + "".join(
            f"<li>{escape(str(r.get('action')))} (carries {_e(r.get('requests_at_typical_length'))} requests)</li>"
            for r in remedies) + "</ul>"
    body = (summary + _kv_summary(est) + memory_section(est)
            + concurrency_section(_curves_from_plan(d), point, target, _num(flags.get("max_model_len")))
            + speed_section(d) + _messages(est))
    return _page("vLLM deployment plan", sub, body)


def _gpu_total(name: Any) -> float | None:
    """The CUDA-visible memory of a catalog GPU (a data look-up, for the bar's scale); None when not in it."""
    from configurator.errors import ConfiguratorError
    from configurator.hardware.catalog import find_gpu

    if not isinstance(name, str) or not name:
        return None
    try:
        return float(find_gpu(name).total_bytes)
    except (ConfiguratorError, ValueError):
        return None


def _band(s: dict) -> str:
    lo, hi = _num(s.get("kv_cache_bytes_low")), _num(s.get("kv_cache_bytes_high"))
    return f"<br><small>band {gib(lo)} to {gib(hi)}</small>" if lo is not None and hi is not None else ""


def server_bar(s: dict) -> str:
    """One server's KV cache per GPU as a bar over its GPU's memory, with the KV band as a whisker; '' where
    the server's KV cache or GPU is not known."""
    kv, total = _num(s.get("kv_cache_bytes")), _gpu_total(s.get("gpu"))
    if kv is None or not total:
        return ""
    w, h, x0 = 220, 18, 2
    scale = (w - 2 * x0) / total
    colour = VERDICT_COLOURS.get(str(s.get("verdict")), "#55a868")
    out = [f'<svg role="img" aria-label="KV cache per GPU" width="{w}" height="{h + 8}" viewBox="0 0 {w} {h + 8}">',
           f'<rect x="{x0}" y="2" width="{w - 2 * x0}" height="{h}" fill="#eee" stroke="#999"/>',
           f'<rect x="{x0}" y="2" width="{max(kv * scale, 0.5):.1f}" height="{h}" fill="{colour}">'
           f"<title>KV cache {gib(kv)} of {gib(total)}</title></rect>"]
    lo, hi = _num(s.get("kv_cache_bytes_low")), _num(s.get("kv_cache_bytes_high"))
    if lo is not None and hi is not None:
        a, b, y = x0 + max(lo, 0.0) * scale, x0 + min(hi, total) * scale, 2 + h / 2
        out.append(f'<line x1="{a:.1f}" y1="{y}" x2="{b:.1f}" y2="{y}" stroke="#000"/>'
                   f'<line x1="{a:.1f}" y1="{y - 5}" x2="{a:.1f}" y2="{y + 5}" stroke="#000"/>'
                   f'<line x1="{b:.1f}" y1="{y - 5}" x2="{b:.1f}" y2="{y + 5}" stroke="#000"/>')
    return "".join(out) + "</svg>"


def _check_page(d: dict) -> str:
    summary = d.get("summary") or {}
    findings = d.get("findings") or []
    per_server: dict[tuple, list[dict]] = {}
    for f in findings:
        o = f.get("object") or {}
        per_server.setdefault((f.get("file"), o.get("kind"), o.get("name")), []).append(f)
    rows = []
    for s in d.get("servers") or []:
        o = s.get("object") or {}
        fs = per_server.get((s.get("file"), o.get("kind"), o.get("name")), [])
        worst = ", ".join(f"{escape(str(f.get('rule')))} ({escape(str(f.get('severity')))})" for f in fs[:4])
        gpu = f"{_e(s.get('gpu_count') or 1)} x {escape(str(s.get('gpu') or 'unknown GPU'))}"
        rows.append(f"<tr><td>{escape(str(s.get('file')))}:{_e(s.get('line'))}</td>"
                    f"<td>{escape(str(o.get('kind')))}/{escape(str(o.get('name')))}</td>"
                    f"<td>{escape(str(s.get('model') or '-'))}</td><td>{gpu}</td>"
                    f"<td>{escape(str(s.get('vllm_version') or '-'))}</td><td>{_pill(str(s.get('verdict') or ''))}</td>"
                    f"<td class=num>{gib(s.get('kv_cache_bytes'))}{_band(s)}{server_bar(s)}</td>"
                    f"<td class=num>{_e(s.get('max_concurrency'))}</td>"
                    f"<td>{worst or '-'}</td></tr>")
    counts = ", ".join(f"{escape(k.replace('_', ' '))}: {_e(v)}" for k, v in summary.items())
    body = (f"<p>{counts}</p><h2>Servers</h2><table><tr><th>file</th><th>object</th><th>model</th><th>GPU</th>"
            "<th>vLLM</th><th>verdict</th><th>KV cache per GPU (bar: of the GPU's memory, whisker: band)</th>"
            "<th>max concurrency</th><th>findings</th></tr>"
            + "".join(rows) + "</table>")
    if findings:
        body += ("<h2>Findings</h2><table><tr><th>severity</th><th>rule</th><th>where</th><th>message</th></tr>"
                 + "".join(f"<tr><td>{escape(str(f.get('severity')))}</td><td>{escape(str(f.get('rule')))}</td>"
                           f"<td>{escape(str(f.get('file')))}:{_e(f.get('line'))}</td>"
                           f"<td>{escape(str(f.get('message')))}</td></tr>" for f in findings) + "</table>")
    sub = f"{_e(summary.get('servers_found', len(d.get('servers') or [])))} servers in {_e(summary.get('files'))} files"
    return _page("vLLM deployment check", sub, body)


def render_html(kind: str, data: dict) -> str:
    """The page for one command's JSON output: kind is 'estimate', 'plan' or 'check'."""
    if kind not in KINDS:
        raise InputError(f"no HTML report for {kind!r}: one of {', '.join(KINDS)}")
    if not isinstance(data, dict):
        raise InputError(f"the {kind} report needs the command's JSON object, got {type(data).__name__}")
    return {"estimate": _estimate_page, "plan": _plan_page, "check": _check_page}[kind](data)
