"""Formatters of a CheckReport: text, json, sarif (2.1.0), github (workflow annotations), junit (XML).

Each is `render(report, stream)`; they lay out, never compute. Chosen from FORMATS by name.
Rule documentation links are `docs/rules.md#<rule>` inside this repository, or under the base URL in
the environment variable VLLM_CONFIGURATOR_DOCS_URL (e.g. the repository's address on a forge).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import IO
from urllib.parse import quote

from configurator import __version__
from configurator.lint.engine import CheckReport, Finding
from configurator.lint.rules import REGISTRY

_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
DOCS_URL_ENV = "VLLM_CONFIGURATOR_DOCS_URL"
REPO_URL_ENV = "VLLM_CONFIGURATOR_REPO_URL"  # the GitHub Action sets it to the copy it runs from


def _base() -> str:
    return (os.environ.get(DOCS_URL_ENV) or os.environ.get(REPO_URL_ENV) or "").rstrip("/")


def repo_link(page: str) -> str:
    """A path inside this repository, under $VLLM_CONFIGURATOR_DOCS_URL (or _REPO_URL) when set."""
    base = _base()
    return f"{base}/{page}" if base else page


def docs_link(rule: str) -> str:
    """Where a rule is documented: docs/rules.md#<rule>, under the configured base URL when set."""
    return repo_link(REGISTRY[rule].docs if rule in REGISTRY else f"docs/rules.md#{rule}")


def summary_line(report: CheckReport) -> str:
    s = report.summary
    if s is None:  # a report built by hand
        return f"{len(report.servers)} vLLM server(s) in {report.files} file(s)"
    return (f"{s.files} file(s): {s.servers_found} vLLM server(s) found, {s.servers_checked} checked against the "
            f"memory budget, {s.not_understood} not understood; {s.errors} error(s), {s.warnings} warning(s), "
            f"{s.info} info, {s.suppressed} suppressed")


def render_json(report: CheckReport, stream: IO[str]) -> None:
    stream.write(report.to_json(indent=2) + "\n")


def _where(f: Finding) -> tuple[str, str]:
    obj = f" {f.object.kind}/{f.object.name}" + (f" [{f.container}]" if f.container else "") if f.object else ""
    return f"{f.file}:{f.line}:{f.column}", obj


# C0 and C1 control characters and DEL: a file or object name holding ESC [ ... m or a newline would repaint the
# terminal or forge a line of its own
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Control characters shown as escapes (`\\x1b`, `\\n`), so that a name prints as one inert line."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def render_text(report: CheckReport, stream: IO[str]) -> None:
    from rich.console import Console
    from rich.text import Text

    con = Console(file=stream, highlight=False, soft_wrap=True,
                  force_terminal=None if stream.isatty() else False, width=120)
    style = {"error": "bold red", "warning": "yellow", "info": "cyan"}
    for f in report.findings:
        where, obj = _where(f)
        line = Text(f"{printable(where)}: ")
        line.append(f"{f.severity} ", style=style[f.severity])
        line.append(f"{f.rule}", style="bold")
        line.append(printable(f"{obj}: {f.message}"))
        con.print(line)
        if f.rule in REGISTRY:
            con.print(Text(f"  fix: {REGISTRY[f.rule].remediation} ({docs_link(f.rule)})", style="dim"))
        if basis_phrase(f.basis):
            con.print(Text(f"  rests on: {printable(basis_phrase(f.basis))}", style="dim"))
    con.print(summary_line(report))


def basis_phrase(basis: dict[str, str]) -> str:
    """What a finding rests on, in one phrase: the release, and each value not written literally."""
    parts = [f"release {basis['release']}"] if basis.get("release") else []
    parts += [f"{k} {v}" for k, v in basis.items() if k != "release" and v != "literal"]
    return "; ".join(parts)


def render_github(report: CheckReport, stream: IO[str]) -> None:
    """GitHub Actions workflow commands: ::error file=...,line=...,col=...,title=...::message"""
    kind = {"error": "error", "warning": "warning", "info": "notice"}
    for f in report.findings:
        msg = f.message
        if f.rule in REGISTRY:
            msg += f"\nFix: {REGISTRY[f.rule].remediation} ({docs_link(f.rule)})"
        stream.write(f"::{kind[f.severity]} file={_gh_property(f.file)},line={f.line},col={f.column},"
                     f"title={_gh_property(f.rule)}::{_gh_data(msg)}\n")


def _gh_data(text: str) -> str:
    """A workflow command's message, escaped as GitHub's runner reads it (actions/toolkit, command.ts escapeData)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    """A workflow command's property value (file=, title=): escapeProperty also escapes ':' and ','."""
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def _sarif_result(f: Finding, index: dict[str, int], root: Path | None = None) -> dict:
    r = {"ruleId": f.rule, "ruleIndex": index[f.rule], "level": _SARIF_LEVEL[f.severity],
         "message": {"text": f.message},
         "locations": [{"physicalLocation": {
             "artifactLocation": {"uri": _uri(f.file, root)},
             "region": {"startLine": f.line, "startColumn": f.column}}}]}
    if f.object is not None:
        r["locations"][0]["logicalLocations"] = [{
            "name": f.container or f.object.name,
            "fullyQualifiedName": "/".join(x for x in (f.object.namespace, f.object.kind, f.object.name,
                                                        f.container) if x),
            "kind": "object"}]
    if f.basis:
        r["properties"] = {"basis": f.basis}
    if f.suppression is not None:
        r["suppressions"] = [{"kind": f.suppression.kind, "status": "accepted",
                              "justification": f.suppression.justification,
                              "properties": {"source": f.suppression.source}}]
    return r


def sarif(report: CheckReport) -> dict:
    every = report.findings + report.suppressed
    used = sorted({f.rule for f in every} | set(REGISTRY))
    index = {rid: i for i, rid in enumerate(used)}
    rules = [{
        "id": rid,
        "name": "".join(w.capitalize() for w in rid.split("-")),
        "shortDescription": {"text": REGISTRY[rid].title},
        "fullDescription": {"text": REGISTRY[rid].description},
        "help": {"text": REGISTRY[rid].remediation},
        "helpUri": docs_link(rid),
        "defaultConfiguration": {"level": _SARIF_LEVEL[REGISTRY[rid].severity]},
    } for rid in used if rid in REGISTRY]
    root = _repo_root()
    results = [_sarif_result(f, index, root) for f in every]
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "vllm-configurator", "version": __version__,
                                         "informationUri": repo_link("README.md"), "rules": rules}},
                  "results": results}],
    }


def _repo_root() -> Path | None:
    """The repository the run is inside (the nearest folder above the current one holding .git), or None."""
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _uri(file: str, root: Path | None = None) -> str:
    """A SARIF artifactLocation.uri: percent-encoded (RFC 3986), relative to the repository root when the file
    is inside it (code scanning resolves it from the checkout), else relative as given, or a file:// URI."""
    if file == "<stdin>":
        return "stdin"
    p = Path(file.replace("\\", "/"))
    if root is not None:
        absolute = Path(os.path.normpath(Path.cwd() / p))
        try:
            return quote(absolute.relative_to(root).as_posix(), safe="/")
        except ValueError:
            pass
    if p.is_absolute():
        return p.as_uri()
    return quote(os.path.normpath(p).replace(os.sep, "/"), safe="/")


def render_sarif(report: CheckReport, stream: IO[str]) -> None:
    json.dump(sarif(report), stream, indent=2)
    stream.write("\n")


def render_junit(report: CheckReport, stream: IO[str]) -> None:
    """JUnit XML (the Jenkins xUnit junit-10.xsd shape): one testsuite per file, one testcase per vLLM
    server (and per finding outside a server: parse errors, objects not understood). Error findings are
    <failure>s; warnings and info go to the testcase's <system-out>; suppressed findings are left out."""
    import xml.etree.ElementTree as ET

    by_file: dict[str, dict[tuple, list[Finding]]] = {}
    for s in report.servers:
        key = (s.object.kind, s.object.namespace, s.object.name, s.container)
        by_file.setdefault(s.file, {}).setdefault(key, [])
    for f in report.findings:
        key = ((f.object.kind, f.object.namespace, f.object.name, f.container) if f.object is not None
               else ("file", None, f"{f.rule} at line {f.line}", None))
        by_file.setdefault(f.file, {}).setdefault(key, []).append(f)
    root = ET.Element("testsuites", name="vllm-configurator check")
    total = failed = 0
    for file in sorted(by_file):
        cases = by_file[file]
        suite = ET.SubElement(root, "testsuite", name=_xml(file), tests=str(len(cases)), errors="0",
                              failures="0", skipped="0")
        n_failed = 0
        for (kind, ns, name, container), findings in cases.items():
            label = "/".join(x for x in (ns, kind, name) if x) + (f" [{container}]" if container else "")
            case = ET.SubElement(suite, "testcase", name=_xml(label), classname=_xml(file))
            errors = [f for f in findings if f.severity == "error"]
            if errors:
                n_failed += 1
                failure = ET.SubElement(case, "failure", type=errors[0].rule,
                                        message=_xml("; ".join(f"{f.rule}: {f.message}" for f in errors)[:1000]))
                failure.text = "\n".join(_junit_line(f) for f in errors)
            others = [f for f in findings if f.severity != "error"]
            if others:
                ET.SubElement(case, "system-out").text = "\n".join(_junit_line(f) for f in others)
        suite.set("failures", str(n_failed))
        total += len(cases)
        failed += n_failed
    root.set("tests", str(total))
    root.set("failures", str(failed))
    root.set("errors", "0")
    ET.indent(root)
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ET.tostring(root, encoding="unicode"))
    stream.write("\n")


# characters XML 1.0 cannot hold, even escaped
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml(text: str) -> str:
    return _NOT_XML.sub("?", text)


def _junit_line(f: Finding) -> str:
    fix = f" Fix: {REGISTRY[f.rule].remediation} ({docs_link(f.rule)})" if f.rule in REGISTRY else ""
    return _xml(f"{f.file}:{f.line}:{f.column}: {f.severity} {f.rule}: {f.message}{fix}")


def render_html(report: CheckReport, stream: IO[str]) -> None:
    """One self-contained page (configurator/report/html.py) from the report's JSON."""
    from configurator.report.html import render_html as page

    stream.write(page("check", json.loads(report.to_json())))


FORMATS: dict[str, Callable[[CheckReport, IO[str]], None]] = {
    "text": render_text, "json": render_json, "sarif": render_sarif, "github": render_github,
    "junit": render_junit, "html": render_html,
}
