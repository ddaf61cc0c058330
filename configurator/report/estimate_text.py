"""Text rendering of an EstimateResult: the lines vLLM would log, a budget bar, the derivation."""

from __future__ import annotations

from typing import IO

from configurator.units import GiB, human_bytes


def _gib(b: int) -> str:
    return f"{b / GiB:.2f} GiB"


def render(r, stream: IO[str]) -> None:
    from rich.console import Console
    from rich.text import Text

    con = Console(file=stream, highlight=False, soft_wrap=True,
                  force_terminal=None if stream.isatty() else False, width=100)
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
    con.print()
    con.print(Text("What vLLM would log (per GPU):", style="bold"))
    for line in r.vllm_log:
        con.print(f"  {line}")
    if r.kv_cache_bytes_low is not None and r.kv_cache_bytes_high != r.kv_cache_bytes_low:
        con.print(f"  (available KV cache memory between {_gib(r.kv_cache_bytes_low)} and "
                  f"{_gib(r.kv_cache_bytes_high)}{': ' + r.band_basis if r.band_basis else ''})")
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
    if r.errors:
        con.print()
        for e in r.errors:
            con.print(Text(f"vLLM: {e}", style="red"))


def _bar(con, m, width: int = 60) -> None:
    from rich.text import Text

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
    from rich.text import Text

    kv = r.kv_cache
    con.print(Text(f"{r.model.name} on {r.gpu.display_name}, vLLM {r.vllm_version}", style="bold"))
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
