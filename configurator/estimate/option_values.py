"""Option values as vLLM's parser takes them: booleans, integers, JSON objects, and release numbers to compare."""


from __future__ import annotations

import json
from typing import Any

from configurator.errors import InputError


def version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".")[:3] if x.isdigit())


def truthy(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    return v is not None and str(v).strip().lower() in ("1", "true", "yes", "on", "")


def int_flag(f: dict[str, Any], key: str, default: int) -> int:
    v = f.get(key)
    if v is None:
        return default
    try:
        return int(v)
    except (TypeError, ValueError):
        raise InputError(f"--{key.replace('_', '-')}: expected an integer, got {v!r}") from None


def json_object(raw: Any, flag: str = "--speculative-config") -> dict:
    """A JSON-object option (--speculative-config, --eplb-config) as vLLM takes it (argparse type json.loads)."""
    if isinstance(raw, dict):
        return raw
    try:
        d = json.loads(str(raw))
    except ValueError:
        raise InputError(f"{flag}: expected a JSON object, got {str(raw)[:60]!r}") from None
    if not isinstance(d, dict):
        raise InputError(f"{flag}: expected a JSON object, got {str(raw)[:60]!r}")
    return d
