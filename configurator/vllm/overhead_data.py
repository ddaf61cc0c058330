"""The overhead-coefficient era of a vLLM release, read from profiles/overheads.yaml.

Plain data: the memory math that uses a row (configurator.memory.overheads) is not imported here.
"""

from __future__ import annotations

from functools import lru_cache

from configurator.resources import load_yaml
from configurator.vllm.versions import _key


@lru_cache(maxsize=1)
def _eras() -> tuple[dict, ...]:
    return tuple(load_yaml("profiles", "overheads.yaml")["eras"])


def era_row(version: str) -> tuple[dict, str]:
    """The era row in force for `version` (rows apply from their `since` release on), and its source."""
    row = None
    for era in _eras():
        if _key(era["since"]) <= _key(version):
            row = era
    if row is None:
        row = _eras()[0]
    return dict(row), f"profiles/overheads.yaml (era since {row['since']})"
