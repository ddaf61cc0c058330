"""Formatters of a CheckReport: text, json, sarif (2.1.0), github (workflow annotations).

Each is `render(report, stream)`; they lay out, never compute. Chosen from FORMATS by name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import IO

from configurator import __version__
from configurator.lint.engine import CheckReport
from configurator.lint.rules import REGISTRY

_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
# Base of this repository's files in SARIF links: empty = references relative to the repository
# (docs/rules.md#<rule>, README.md; SARIF 2.1.0 3.10.2 allows relative references); the Action sets
# the absolute URL of the copy it runs from (action.yml).
REPO_URL = os.environ.get("VLLM_CONFIGURATOR_REPO_URL", "")


def render_json(report: CheckReport, stream: IO[str]) -> None:
    stream.write(report.model_dump_json(indent=2) + "\n")


def render_text(report: CheckReport, stream: IO[str]) -> None:
    from rich.console import Console
    from rich.text import Text

    con = Console(file=stream, highlight=False, soft_wrap=True,
                  force_terminal=None if stream.isatty() else False, width=120)
    style = {"error": "bold red", "warning": "yellow", "info": "cyan"}
    for f in report.findings:
        where = f"{f.file}:{f.line}:{f.column}"
        obj = f" {f.object.kind}/{f.object.name}" + (f" [{f.container}]" if f.container else "") if f.object else ""
        line = Text(f"{where}: ")
        line.append(f"{f.severity} ", style=style[f.severity])
        line.append(f"{f.rule}", style="bold")
        line.append(f"{obj}: {f.message}")
        con.print(line)
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in ("error", "warning", "info")}
    checked = sum(1 for s in report.servers if s.verdict != "not-checked")
    con.print(f"{len(report.servers)} vLLM server(s) in {report.files} file(s), {checked} checked against the "
              f"memory budget: {counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info")


def render_github(report: CheckReport, stream: IO[str]) -> None:
    """GitHub Actions workflow commands: ::error file=...,line=...,col=...,title=...::message"""
    kind = {"error": "error", "warning": "warning", "info": "notice"}
    for f in report.findings:
        msg = f.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        stream.write(f"::{kind[f.severity]} file={f.file},line={f.line},col={f.column},title={f.rule}::{msg}\n")


def sarif(report: CheckReport) -> dict:
    used = sorted({f.rule for f in report.findings} | set(REGISTRY))
    index = {rid: i for i, rid in enumerate(used)}
    rules = [{
        "id": rid,
        "name": "".join(w.capitalize() for w in rid.split("-")),
        "shortDescription": {"text": REGISTRY[rid].title},
        "fullDescription": {"text": REGISTRY[rid].description},
        "help": {"text": REGISTRY[rid].remediation},
        "helpUri": f"{REPO_URL}docs/rules.md#{rid}",
        "defaultConfiguration": {"level": _SARIF_LEVEL[REGISTRY[rid].severity]},
    } for rid in used]
    results = []
    for f in report.findings:
        r = {"ruleId": f.rule, "ruleIndex": index[f.rule], "level": _SARIF_LEVEL[f.severity],
             "message": {"text": f.message},
             "locations": [{"physicalLocation": {
                 "artifactLocation": {"uri": _uri(f.file)},
                 "region": {"startLine": f.line, "startColumn": f.column}}}]}
        if f.object is not None:
            r["locations"][0]["logicalLocations"] = [{
                "name": f.container or f.object.name,
                "fullyQualifiedName": "/".join(x for x in (f.object.namespace, f.object.kind, f.object.name,
                                                            f.container) if x),
                "kind": "object"}]
        results.append(r)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "vllm-configurator", "version": __version__,
                                      "informationUri": f"{REPO_URL}README.md",
                                      "rules": rules}},
                  "results": results}],
    }


def _uri(file: str) -> str:
    return "stdin" if file == "<stdin>" else file.replace("\\", "/").removeprefix("./")


def render_sarif(report: CheckReport, stream: IO[str]) -> None:
    json.dump(sarif(report), stream, indent=2)
    stream.write("\n")


FORMATS: dict[str, Callable[[CheckReport, IO[str]], None]] = {
    "text": render_text, "json": render_json, "sarif": render_sarif, "github": render_github,
}
