"""Formatters: small modules behind one signature, render(result, stream); they lay out, never compute."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any


def _text(result: Any, stream: IO[str]) -> None:
    from configurator.report.estimate_text import render

    render(result, stream)


def _json(result: Any, stream: IO[str]) -> None:
    stream.write(result.model_dump_json(indent=2))
    stream.write("\n")


ESTIMATE_FORMATS: dict[str, Callable[[Any, IO[str]], None]] = {"text": _text, "json": _json}
