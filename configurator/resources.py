"""Where the shipped data lives: inside the wheel (configurator/_data) or the source checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PKG = Path(__file__).resolve().parent


@cache
def _root(top: str) -> Path:
    installed = _PKG / "_data" / top
    if installed.is_dir():
        return installed
    return _PKG.parent / top  # editable install or source checkout


def data_path(top: str, *parts: str) -> Path:
    """data_path('profiles', 'gpus') -> the folder of GPU profiles, installed or not."""
    return _root(top).joinpath(*parts)
