"""`vllm-configurator models`: list and search the offline model catalog."""

from __future__ import annotations

import json
import sys

import click

from configurator.errors import ExitCode, NotFoundError
from configurator.model.catalog import Entry, attention_kind, kv_bytes_per_token


def _matches(row: dict, words: list[str]) -> bool:
    hay = " ".join([row["id"], *row["aliases"], row["family"], row["attention"], row["model_type"]]).lower()
    return all(w in hay for w in words)


def _human(n: int | None, unit: str = "") -> str:
    if n is None:
        return "-"
    for size, suffix in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")):
        if n >= size:
            return f"{n / size:.1f}{suffix}{unit}"
    return f"{n}{unit}"


def _context(n: int | None) -> str:
    return "-" if n is None else (f"{n // 1024}K" if n % 1024 == 0 and n >= 1024 else f"{n:,}")


def describe(entry: Entry) -> dict:
    """One catalog row: id, family, parameters, context, attention kind, KV bytes per token at bf16, provenance."""
    from configurator.memory.weights import count_params

    spec = entry.spec()
    try:
        params = count_params(spec).total
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        params = None
    context = min((v for _, v in spec.max_len_keys), default=None)
    return {"id": entry.hf_id, "aliases": list(entry.aliases), "family": entry.family, "parameters": params,
            "context_tokens": context, "attention": attention_kind(spec),
            "kv_bytes_per_token_bf16": kv_bytes_per_token(spec), "model_type": spec.model_type,
            "quantization": spec.quant.method, "weights_bytes": entry.weights_bytes,
            "config_source": entry.config_source, "derived": entry.derived, "catalog_file": entry.origin}


@click.command("models")
@click.argument("query", nargs=-1)
@click.option("--family", default=None, help="Only this family (llama-3.1, qwen3, deepseek-v3, ...).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Text table, or JSON on standard output.")
def models_cmd(query, family, fmt) -> None:
    """List the models known offline (built-in profiles and catalog parts), or those whose id, alias,
    family or attention kind contains every QUERY word:

      vllm-configurator models qwen3 moe

    Columns: parameters (from the config's shapes), context (the max_model_len vLLM derives), attention
    kind, KV-cache bytes per token at bf16 (all layers that store K/V, before tensor parallelism). The JSON
    output adds where each config came from (config_source). A model not listed here may still resolve: a
    Hugging Face id through the Hub, a quantized or fine-tuned derivative through its base (docs/models.md).
    """
    from configurator.model import catalog

    words = [w.lower() for w in query]
    exact = catalog.find(" ".join(query)) if query else None
    rows, seen = [], set()
    # an exact name first, then every model containing all the query words (deepseek-v3 lists V3.1, V3.2 too)
    for e in [*((exact,) if exact is not None else ()), *catalog.entries()]:
        if e.hf_id in seen or (family and e.family.lower() != family.lower()):
            continue
        row = describe(e)
        if e is exact or _matches(row, words):
            rows.append(row)
            seen.add(e.hf_id)
    if not rows and len(query) == 1 and not family:
        from configurator.model.derivatives import resolve_derivative

        derived = resolve_derivative(query[0])
        if derived is not None:  # not in the catalog, but resolves through its base
            click.echo(f"note: {query[0]} is not in the catalog; {derived[2]}", err=True)
            rows = [describe(derived[0])]
    if not rows:
        text = " ".join(query) or family or ""
        raise NotFoundError("model", text, catalog.nearest(text), hint="no catalog model matches")
    if fmt == "json":
        click.echo(json.dumps({"count": len(rows), "models": rows}, indent=2))
        sys.exit(int(ExitCode.OK))
    head = ("id", "family", "params", "context", "attention", "KV B/token bf16")
    table = [(r["id"] + (" *" if r["derived"] else ""), r["family"], _human(r["parameters"]),
              _context(r["context_tokens"]), r["attention"], f"{r['kv_bytes_per_token_bf16']:,}") for r in rows]
    widths = [max(len(str(x[i])) for x in [head, *table]) for i in range(len(head))]
    for line in [head, *table]:
        cells = [str(c).rjust(w) if i in (2, 3, 5) else str(c).ljust(w) for i, (c, w) in enumerate(zip(line, widths,
                                                                                                      strict=True))]
        click.echo("  ".join(cells).rstrip())
    click.echo(f"{len(rows)} model(s); `--format json` adds aliases and where each config came from")
    if any(r["derived"] for r in rows):
        click.echo("* derived: no copy of the published config.json was found; the config is put together from "
                   "several sources (config_source says which); pass --model-config to be exact")
    sys.exit(int(ExitCode.OK))
