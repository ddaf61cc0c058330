"""`vllm-configurator rules`: the rules `check` runs (id, severity, one line, docs link)."""

from __future__ import annotations

import json

import click


@click.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Text table, or JSON on standard output.")
def rules_cmd(fmt: str) -> None:
    """List the rules of `check`: id, default severity, what it finds, and where it is documented."""
    from configurator.lint.rules import REGISTRY
    from configurator.report.check_formats import docs_link

    rows = [{"id": r.id, "severity": r.severity, "title": r.title, "description": r.description,
             "remediation": r.remediation, "docs": docs_link(r.id)} for r in REGISTRY.values()]
    if fmt == "json":
        click.echo(json.dumps({"rules": rows}, indent=2))
        return
    width = max(len(r["id"]) for r in rows)
    for r in rows:
        click.echo(f"{r['id']:<{width}}  {r['severity']:<7}  {r['title']}  ({r['docs']})")
