"""The admission boundary: untrusted JSON (AdmissionReviews, API answers) into checked data, once.

Everything the webhook, `review` and `audit` receive passes here before any rule sees it. JSON is
parsed with bounded numbers (a 5,000-digit integer, `NaN` or `1e999` become a marker, not an
exception), and one iterative walk (no recursion a small input can exhaust) bounds the depth and
the size of the object, finds oversized numbers, counts the containers the evaluation would cost,
and notes whether any string names vLLM (the same test the extractor applies to a container, made
on the whole object so a malformed object cannot hide a vLLM server from the failure policy).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 100  # Kubernetes objects nest ~15 deep (a pod template's affinity terms); CRDs a little more
MAX_NODES = 1_000_000  # values in one object; a 3 MiB body holds at most ~1.5 million
MAX_INT_DIGITS = 40  # beyond any quantity Kubernetes or vLLM accepts (int64 has 19 digits)
MAX_CONTAINERS = 64  # containers evaluated per object; real pods carry a handful
# characters of command, args and env values in one container: a vLLM command line is a few hundred;
# parsing one (sh -c scripts included) costs time in proportion, so the cap bounds a review's CPU
MAX_COMMAND_CHARS = 64 << 10
CONTAINER_KEYS = ("containers", "initContainers", "ephemeralContainers")


class ShapeError(ValueError):
    """The data cannot be read as the JSON this boundary accepts (the reason is one line)."""


class Oversized:
    """A number that was too large, or not finite, where it was read (kept so the walk can name it)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text[:24] + ("..." if len(text) > 24 else "")

    def __repr__(self) -> str:
        return f"<number {self.text}>"


def _int(text: str) -> int | Oversized:
    return int(text) if len(text.lstrip("-")) <= MAX_INT_DIGITS else Oversized(text)


def _float(text: str) -> float | Oversized:
    if len(text) > 400:
        return Oversized(text)
    v = float(text)
    return v if math.isfinite(v) else Oversized(text)


def loads(data: bytes | str) -> Any:
    """JSON -> Python, every number bounded; raises ShapeError (never RecursionError or ValueError)."""
    try:
        return json.loads(data, parse_int=_int, parse_float=_float, parse_constant=Oversized)
    except RecursionError:
        raise ShapeError("JSON nested too deeply") from None
    except UnicodeDecodeError:
        raise ShapeError("not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise ShapeError(f"not JSON ({e.msg} at line {e.lineno})") from None
    except ValueError as e:  # defensive: any other conversion the decoder refuses
        raise ShapeError(f"not JSON ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None


@dataclass
class Shape:
    """What one walk over an object found."""

    problems: list[str] = field(default_factory=list)
    mentions_vllm: bool | None = False  # None: the walk stopped before it could tell
    containers: int = 0
    command_chars: int = 0  # the most characters of command, args and env values in one container

    @property
    def ok(self) -> bool:
        return not self.problems


def _where(path: tuple) -> str:
    if len(path) > 8:
        return f"{_where(path[:3])}...{_where(path[-2:])}"
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top)"


def inspect(obj: Any, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> Shape:
    """Walk `obj` once, iteratively; report depth, size and number problems and what it mentions."""
    shape = Shape()
    stack: list[tuple[Any, tuple, int]] = [(obj, (), 0)]
    nodes = 0
    while stack:
        value, path, depth = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            shape.problems.append(f"more than {max_nodes:,} values in the object")
            shape.mentions_vllm = shape.mentions_vllm or None
            return shape
        if isinstance(value, str):
            if not shape.mentions_vllm and "vllm" in value.lower():
                shape.mentions_vllm = True
            continue
        if isinstance(value, Oversized):
            if len(shape.problems) < 5:
                shape.problems.append(f"{_where(path)}: number {value.text} is out of range")
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth >= max_depth:
            shape.problems.append(f"{_where(path)}: nested deeper than {max_depth} levels")
            shape.mentions_vllm = shape.mentions_vllm or None
            return shape
        if isinstance(value, dict):
            for k, v in value.items():
                if k in CONTAINER_KEYS and isinstance(v, list):
                    shape.containers += len(v)
                    shape.command_chars = max(shape.command_chars, *(_command_chars(c) for c in v), 0)
                if not shape.mentions_vllm and isinstance(k, str) and "vllm" in k.lower():
                    shape.mentions_vllm = True
                stack.append((v, (*path, k), depth + 1))
        else:
            stack.extend((v, (*path, i), depth + 1) for i, v in enumerate(value))
    return shape


def _command_chars(container: Any) -> int:
    if not isinstance(container, dict):
        return 0
    total = 0
    for key in ("command", "args", "env"):
        v = container.get(key)
        for item in v if isinstance(v, list) else [v]:
            if isinstance(item, dict):
                item = item.get("value")
            if isinstance(item, str):
                total += len(item)
    return total


def _str_map(value: Any, where: str, problems: list[str]) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        problems.append(f"{where} is {_kind(value)}, not a map of strings")
        return
    bad = [k for k, v in value.items() if not isinstance(v, str)]
    if bad:
        problems.append(f"{where}.{bad[0]} is {_kind(value[bad[0]])}, not a string")


def _kind(value: Any) -> str:
    return {dict: "a map", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def object_problems(obj: dict) -> list[str]:
    """The typed fields every Kubernetes object shares: kind, apiVersion, metadata and its maps."""
    problems: list[str] = []
    for key in ("kind", "apiVersion"):
        if key in obj and not isinstance(obj[key], str):
            problems.append(f"{key} is {_kind(obj[key])}, not a string")
    meta = obj.get("metadata")
    if meta is None:
        return problems
    if not isinstance(meta, dict):
        return [*problems, f"metadata is {_kind(meta)}, not a map"]
    for key in ("name", "namespace", "generateName"):
        if key in meta and meta[key] is not None and not isinstance(meta[key], str):
            problems.append(f"metadata.{key} is {_kind(meta[key])}, not a string")
    _str_map(meta.get("labels"), "metadata.labels", problems)
    _str_map(meta.get("annotations"), "metadata.annotations", problems)
    return problems
