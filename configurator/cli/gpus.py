"""`vllm-configurator gpus`: the GPU catalog."""

from __future__ import annotations

import click

from configurator.units import GiB


@click.command("gpus")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Text table, or JSON on standard output.")
def gpus_cmd(fmt: str) -> None:
    """List the GPUs the catalog knows, with the memory CUDA reports."""
    import json

    from configurator.hardware.catalog import list_gpus

    gpus = list_gpus()
    if fmt == "json":
        click.echo(json.dumps([{"name": g.name, "display_name": g.display_name, "total_bytes": g.total_bytes,
                                "compute_capability": g.compute_capability, "fp8": g.fp8, "fp4": g.fp4,
                                "fp8_kv": g.fp8_kv, "aliases": list(g.aliases)} for g in gpus], indent=2))
        return
    click.echo(f"{'name':<16} {'CUDA total':>11}  {'CC':<6} {'FP8':<4} {'FP4':<4} aliases")
    for g in gpus:
        click.echo(f"{g.name:<16} {g.total_bytes / GiB:>7.2f} GiB  {g.compute_capability:<6} "
                   f"{'yes' if g.fp8 else 'no':<4} {'yes' if g.fp4 else 'no':<4} {', '.join(g.aliases)}")
