"""Text rendering of an EstimateResult: the lines vLLM would log, a budget bar, the derivation."""

from __future__ import annotations

import re
from typing import IO

from configurator.units import GiB, human_bytes

# the start of vLLM's error when the weights alone exceed the free memory (configurator/vllm/messages.py weights_oom)
WEIGHTS_OOM = "CUDA out of memory while loading the model"


def dies_loading(r) -> bool:
    """vLLM would die loading the weights: it logs no memory line, and only more memory per GPU or fewer weight
    bytes help."""
    return any(e.startswith(WEIGHTS_OOM) for e in r.errors)


def _gib(b: int) -> str:
    return f"{b / GiB:.2f} GiB"


def render(r, stream: IO[str], next_steps: list[str] | None = None) -> None:
    """The verdict first; a refusal then gives vLLM's reason and what to change (`next_steps`, each checked
    by estimating again) before the figures."""
    con = _console(stream)
    Text = _text_for(con)  # rich's Text, or the plain stand-in off a terminal
    m, kv, f = r.memory, r.kv_cache, r.flags
    if r.not_modelled:
        _render_limited(con, r)
        return
    verdict = {"fits": Text("FITS: vLLM should start", style="bold green"),
               "at-risk": Text("AT RISK: vLLM starts or refuses within the prediction's error band",
                               style="bold yellow"),
               "refused": Text("REFUSED: vLLM would not start", style="bold red")}[r.verdict]
    con.print(Text(f"{r.model.name} on {r.gpu.display_name}"
                   f"{' x ' + str(r.gpu.count) if r.gpu.count > 1 else ''}, vLLM {r.vllm_version}",
                   style="bold"))
    con.print(verdict)
    for e in r.errors:  # the reason leads: vLLM's own words
        con.print(Text(f"vLLM: {e}", style="red"))
    if next_steps:
        con.print()
        con.print(Text("What to change (each checked by estimating again unless it says not):", style="bold"))
        for step in next_steps:
            con.print(f"  {step}")
    con.print()
    con.print(Text("What vLLM would log (per GPU):", style="bold"))
    if not r.vllm_log:
        con.print("  no memory line: " + ("vLLM fails while loading the weights, before it measures memory"
                                          if dies_loading(r) else "this release logs none for these flags"))
    for line in r.vllm_log:
        con.print(f"  {line}")
    if r.vllm_log and r.kv_cache_bytes_low is not None and r.kv_cache_bytes_high != r.kv_cache_bytes_low:
        con.print(f"  (available KV cache memory between {_gib(r.kv_cache_bytes_low)} and "
                  f"{_gib(r.kv_cache_bytes_high)})")
        if r.band_basis:
            con.print(f"  (band: {r.band_basis})")
    con.print()
    _bar(con, m)
    con.print()
    con.print(Text("Budget (per GPU):", style="bold"))
    rows = [("total (CUDA)", m.total_bytes), (f"x gpu_memory_utilization {f['gpu_memory_utilization']}",
                                              m.requested_bytes),
            ("- weights", m.weights_bytes), ("- activation peak", m.activation_bytes),
            ("- non-torch", m.non_torch_bytes), ("- CUDA graphs", m.cudagraph_bytes),
            ("- runner buffers", m.other_bytes), ("= KV cache", m.kv_cache_bytes)]
    for label, b in rows:
        if b or label.startswith(("total", "x", "=")):
            con.print(f"  {label:<36} {_gib(b):>12}")
    con.print()
    con.print(Text("KV cache:", style="bold"))
    con.print(f"  dtype {kv.dtype}, block size {kv.block_size}, {kv.bytes_per_block:,} B per block, "
              f"{kv.num_blocks:,} blocks, {kv.blocks_per_request:,} blocks per request")
    con.print(f"  bytes per token (layers that keep every token): {kv.bytes_per_token:,} B")
    if kv.state_bytes_per_sequence:
        con.print(f"  fixed state per sequence: {kv.state_bytes_per_sequence:,} B "
                  f"({human_bytes(kv.state_bytes_per_sequence)})")
    for g in kv.groups:
        con.print(f"  group: {g.kind} x {g.num_layers} layers"
                  f"{f' (+{g.num_padding} padding)' if g.num_padding else ''}, block {g.block_size}, "
                  f"page {g.page_bytes:,} B, {g.blocks_per_request:,} blocks per request")
    con.print()
    con.print(Text("How it adds up:", style="bold"))
    for line in r.derivation:
        con.print(f"  {line}")
    for note in r.model.notes:
        con.print(f"  note: {note}")
    if r.warnings:
        con.print()
        for w in r.warnings:
            con.print(Text(f"warning: {w}", style="yellow"))


def _bar(con, m, width: int = 60) -> None:
    Text = _text_for(con)

    total = max(m.total_bytes, 1)
    parts = [("W", m.weights_bytes, "blue"), ("A", m.activation_bytes + m.non_torch_bytes + m.other_bytes, "magenta"),
             ("G", m.cudagraph_bytes, "cyan"), ("K", max(m.kv_cache_bytes, 0), "green")]
    bar = Text("  [")
    used = 0
    for ch, b, style in parts:
        n = round(width * b / total)
        n = min(n, width - used)
        bar.append(ch * n, style=style)
        used += n
    reserve = round(width * (m.total_bytes - m.requested_bytes) / total)
    bar.append("." * max(width - used - reserve, 0))
    bar.append("-" * min(reserve, width - used))
    bar.append("]")
    con.print(bar)
    con.print("   W weights  A activations/overheads  G CUDA graphs  K KV cache  - outside gpu_memory_utilization")


def _render_limited(con, r) -> None:
    Text = _text_for(con)

    kv = r.kv_cache
    con.print(Text(f"{r.model.name} on {r.gpu.display_name}, vLLM {r.vllm_version}", style="bold"))
    if r.verdict == "refused":  # vLLM refuses before any memory figure matters
        con.print(Text("REFUSED: vLLM would not start", style="bold red"))
    con.print(Text(f"NOT PREDICTED: {r.not_modelled}", style="bold yellow"))
    con.print()
    con.print(Text("What is known:", style="bold"))
    con.print(f"  weights per GPU: {_gib(r.memory.weights_bytes)}")
    con.print(f"  KV per token: {kv.bytes_per_token:,} B ({kv.dtype})")
    per_seq = kv.bytes_per_token * r.flags["max_model_len"] + kv.window_bytes_per_sequence + \
        kv.state_bytes_per_sequence
    con.print(f"  KV per sequence of {r.flags['max_model_len']:,} tokens: {human_bytes(per_seq)}")
    con.print()
    con.print(Text("How it adds up:", style="bold"))
    for line in r.derivation:
        con.print(f"  {line}")
    for w in r.warnings:
        con.print(Text(f"warning: {w}", style="yellow"))
    for e in r.errors:
        con.print(Text(f"vLLM: {e}", style="red"))


# -- off a terminal, without rich ----------------------------------------------------------------------------
# Importing rich costs a cold `estimate` about 25 ms of CPU, a tenth of it. Off a terminal rich prints no style,
# so the text is the same without it, except where rich rewrites a string: markup ([bold]), emoji codes
# (:name:), tabs, control characters. A line that holds any of those is printed by rich itself, as before.
_RICH_REWRITES = re.compile(r"\[|:\S*?:|[\t\x00-\x08\x0b-\x1f\x7f]")


class _PlainText:
    """The part of rich.text.Text this module uses: text with a style (styles print nothing off a terminal)."""

    def __init__(self, text: str = "", style: str = "") -> None:
        self.plain = text

    def append(self, text: str, style: str | None = None) -> _PlainText:
        self.plain += text
        return self


class _PlainConsole:
    """rich's Console(soft_wrap=True, highlight=False) off a terminal, for the prints this module makes."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self._rich = None

    def print(self, *objects: object) -> None:
        texts = [o.plain if isinstance(o, _PlainText) else str(o) for o in objects]
        if any(_RICH_REWRITES.search(t) for t, o in zip(texts, objects, strict=True) if not isinstance(o, _PlainText)) \
                or any("\t" in t or "\x1b" in t for t in texts):
            self._rich_console().print(*(self._rich_text(o) for o in objects))
            return
        self.stream.write(" ".join(texts) + "\n")

    def _rich_text(self, o: object) -> object:
        if not isinstance(o, _PlainText):
            return o
        from rich.text import Text

        return Text(o.plain)

    def _rich_console(self):
        if self._rich is None:
            from rich.console import Console

            self._rich = Console(file=self.stream, highlight=False, soft_wrap=True, force_terminal=False, width=100)
        return self._rich


def _console(stream: IO[str]):
    """rich's console on a terminal (styles), the plain one otherwise."""
    if not stream.isatty():
        return _PlainConsole(stream)
    from rich.console import Console

    return Console(file=stream, highlight=False, soft_wrap=True, force_terminal=None, width=100)


def _text_for(con) -> type:
    if isinstance(con, _PlainConsole):
        return _PlainText
    from rich.text import Text

    return Text
