"""Formatters: small modules behind one signature, render(result, stream); they lay out, never compute."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any


def _text(result: Any, stream: IO[str]) -> None:
    from configurator.report.estimate_text import render

    render(result, stream)


def _json(result: Any, stream: IO[str]) -> None:
    stream.write(result.to_json(indent=2))
    stream.write("\n")


def _html(result: Any, stream: IO[str]) -> None:
    import json

    from configurator.report.html import render_html

    stream.write(render_html("estimate", json.loads(result.to_json())))


ESTIMATE_FORMATS: dict[str, Callable[[Any, IO[str]], None]] = {"text": _text, "json": _json, "html": _html}
