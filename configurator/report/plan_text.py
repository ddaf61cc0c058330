"""Text rendering of a PlanResult: chosen flags and why, capacity, the budget, alternatives, the command."""

from __future__ import annotations

from typing import IO

from configurator.units import GiB


def render(p, stream: IO[str]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from configurator.report.estimate_text import _bar

    con = Console(file=stream, highlight=False, soft_wrap=True,
                  force_terminal=None if stream.isatty() else False, width=110)
    w = p.workload
    con.print(Text(f"{p.model} on {p.gpu}{' x ' + str(p.gpus) if p.gpus > 1 else ''}, vLLM {p.vllm_version}",
                   style="bold"))
    con.print(f"workload {w['name']}: up to {w['max_context_tokens']:,} tokens, typically "
              f"{w['prompt_tokens']:,} + {w['output_tokens']:,}, {w['concurrency']} at once (favour {w['favour']})")
    con.print()
    if p.status == "nothing-starts":
        con.print(Text("NO PLAN: vLLM would start with none of the candidates", style="bold red"))
        con.print(p.summary)
        _remedies(con, p)
        return
    if p.status == "short":
        con.print(Text(f"SHORT OF THE TARGET: the best plan carries {p.carried_concurrency:,} of "
                       f"{w['concurrency']:,} concurrent requests", style="bold yellow"))
    else:
        con.print(Text("PLAN", style="bold green"))
    t = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    t.add_column("flag")
    t.add_column("value", justify="right")
    t.add_column("why")
    for r in p.reasons:
        t.add_row("--" + r.flag.replace("_", "-"), str(r.value), r.why)
    con.print(t)
    con.print()
    con.print(p.summary)
    con.print()
    m = p.estimate.memory
    _bar(con, m)
    con.print(f"   weights {m.weights_bytes / GiB:.2f} GiB, overheads "
              f"{(m.activation_bytes + m.non_torch_bytes + m.cudagraph_bytes + m.other_bytes) / GiB:.2f} GiB, "
              f"KV pool {m.kv_cache_bytes / GiB:.2f} GiB, outside the budget "
              f"{(m.total_bytes - m.requested_bytes) / GiB:.2f} GiB")
    if p.alternatives:
        con.print()
        a = Table(title="Alternatives at this utilization", show_header=True, header_style="bold", box=None)
        for col in ("KV dtype", "max_model_len", "starts", f"requests of {w['prompt_tokens'] + w['output_tokens']:,}",
                    "requests at max_model_len"):
            a.add_column(col, justify="right")
        for alt in p.alternatives:
            a.add_row(alt.kv_cache_dtype, f"{alt.max_model_len:,}", "yes" if alt.fits else "no",
                      f"{alt.requests_at_typical_length:,}", f"{alt.requests_at_max_model_len:.2f}")
        con.print(a)
    if p.status == "short":
        _remedies(con, p)
    con.print()
    con.print(Text("Run (best effort, short of the target):" if p.status == "short" else "Run:", style="bold"))
    con.print(f"  {p.serve_command}")


def _remedies(con, p) -> None:
    from rich.text import Text

    con.print()
    if not p.remedies:
        con.print("No single change among fp8 KV, a shorter context, a lower concurrency, fp8 weights, more GPUs or "
                  "a larger GPU of the same class carries the target.")
        return
    con.print(Text("Remedies (each checked by planning again with it), cheapest first:", style="bold"))
    for i, r in enumerate(p.remedies, 1):
        con.print(f"  {i}. {r.action}: then {r.requests_at_typical_length:,} requests fit")
