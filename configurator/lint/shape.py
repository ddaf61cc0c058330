"""Typed reads of untrusted YAML data: the one boundary between a parsed manifest and the extractors.

A `Node` is a place in one document (its path and the raw value there). Every read names what it
expects (a mapping, a list, a string, an integer in a range, a boolean, a quantity) and returns that
type or None. A value that is present but of the wrong shape (`image: 11`, `kind: {}`, `size: [2]`,
`gpuMemoryUtilization: {a: 1}`, a 400-digit or infinite number) is not used: a `ShapeNote` with its
location is recorded instead, and the extractors turn the notes into findings on the object. Code
behind this module never touches a raw value, so a hostile manifest cannot raise deep inside.
"""

from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass
from typing import Any

from configurator.lint.load import Document, Loc

MAX_TEXT_CHARS = 4096  # a name, image or label longer than this is not a real one
MAX_NAME_CHARS = 253  # Kubernetes object names (DNS subdomain)
MAX_INT = 1 << 53  # integers past this are not counts, lengths or seconds any manifest means
MAX_BYTES = 1 << 60  # 1 EiB: larger quantities are typos or attacks

_QUANTITY = re.compile(r"^\s*([0-9]{1,30}(?:\.[0-9]{1,30})?|\.[0-9]{1,30})\s*(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?\s*$")
_QUANTITY_MULT = {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50,
                  "Ei": 1 << 60, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_INT = re.compile(r"^\s*[+-]?[0-9][0-9_]{0,30}\s*$")


@dataclass(frozen=True)
class ShapeNote:
    """A value of the wrong shape or out of range, where it is, and what was done with it."""

    loc: Loc
    message: str


def describe(value: Any) -> str:
    """A value's YAML type and a short, printable rendering ('integer 11', 'list [2]')."""
    kind = _kind(value)
    if value is None:
        return kind
    if isinstance(value, datetime.date):
        text = value.isoformat()
    else:
        text = repr(value) if not isinstance(value, str) else value
    text = text.replace("\n", " ")
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{kind} {text}" if not isinstance(value, str) else f"{kind} '{text}'"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    if isinstance(value, datetime.datetime | datetime.date):
        return "date"
    if isinstance(value, bytes):
        return "binary"
    return "set" if isinstance(value, set | frozenset) else type(value).__name__


def dotted(path: tuple) -> str:
    """('spec', 'containers', 0, 'image') -> 'spec.containers[0].image'."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(document)"


class Notes:
    """The shape notes of one document, in order, each path noted once."""

    def __init__(self) -> None:
        self._by_path: dict[tuple, ShapeNote] = {}

    def add(self, doc: Document, path: tuple, message: str) -> None:
        if path not in self._by_path:
            self._by_path[path] = ShapeNote(doc.loc(path), f"{dotted(doc.prefix + path)}: {message}")

    def __iter__(self):
        return iter(self._by_path.values())

    def __len__(self) -> int:
        return len(self._by_path)


class Node:
    """A place in an untrusted document: typed reads below it, wrong shapes noted, never raised."""

    __slots__ = ("doc", "notes", "path", "value")

    def __init__(self, doc: Document, path: tuple, value: Any, notes: Notes) -> None:
        self.doc = doc
        self.path = path
        self.value = value
        self.notes = notes

    @classmethod
    def of(cls, doc: Document) -> Node:
        """The document's root."""
        return cls(doc, (), doc.data, Notes())

    # -- navigation -------------------------------------------------------------------------------
    def _raw(self, keys: tuple) -> tuple[Any, tuple, bool]:
        """(value, path, ok): the value under `keys`; ok is False when an ancestor had the wrong shape
        (noted there)."""
        value = self.value
        if len(keys) == 1 and type(value) is dict:  # the common case, without the loop
            return value.get(keys[0]), self.path + keys, True
        for i, k in enumerate(keys):
            t = type(value)
            if t is dict:
                value = value.get(k)
            elif t is list and type(k) is int:
                value = value[k] if 0 <= k < len(value) else None
            elif value is None:
                return None, self.path + keys, True
            else:
                self.note(self.path + keys[:i], f"expected a {'list' if type(k) is int else 'mapping'}, got "
                          f"{describe(value)}: ignored")
                return None, self.path + keys, False
        return value, self.path + keys, True

    def note(self, path: tuple, message: str) -> None:
        self.notes.add(self.doc, path, message)

    def at(self, *keys: Any) -> Node:
        """The node under `keys` (its value None when missing or unreachable)."""
        value, path, _ = self._raw(keys)
        return Node(self.doc, path, value, self.notes)

    def has(self, *keys: Any) -> bool:
        """Whether a mapping holds the key path (with any value, null included)."""
        value = self.value
        for k in keys:
            if not isinstance(value, dict) or k not in value:
                return False
            value = value[k]
        return True

    def loc(self, *keys: Any) -> Loc:
        return self.doc.loc((*self.path, *keys))

    def _expect(self, keys: tuple, want: str, types: type | tuple) -> tuple[Any, tuple]:
        value, path, ok = self._raw(keys)
        if value is None or not ok:
            return None, path
        if not isinstance(value, types):
            self.note(path, f"expected {want}, got {describe(value)}: ignored")
            return None, path
        return value, path

    # -- containers -------------------------------------------------------------------------------
    def mapping(self, *keys: Any) -> Node | None:
        """The mapping under `keys`, or None (noted when present but not a mapping)."""
        got = self.value
        for k in keys:  # the common cases (mappings all the way, or a missing key), without the general path
            if type(got) is not dict:
                break
            got = got.get(k)
        else:
            if got is None:
                return None
            if type(got) is dict:
                return Node(self.doc, self.path + keys, got, self.notes)
        value, path = self._expect(keys, "a mapping", dict)
        return None if value is None else Node(self.doc, path, value, self.notes)

    def items(self, *keys: Any) -> list[Node]:
        """The items of the list under `keys` ([] when missing; noted when not a list)."""
        v = self.value
        if len(keys) == 1 and type(v) is dict:  # the common cases, without the general path
            got = v.get(keys[0])
            if got is None:
                return []
            if type(got) is list:
                doc, notes, path = self.doc, self.notes, self.path + keys
                return [Node(doc, (*path, i), x, notes) for i, x in enumerate(got)]
        value, path = self._expect(keys, "a list", list)
        if value is None:
            return []
        doc, notes = self.doc, self.notes
        return [Node(doc, (*path, i), v, notes) for i, v in enumerate(value)]

    def mappings(self, *keys: Any) -> list[Node]:
        """The mapping items of the list under `keys`; other items are noted and skipped."""
        v = self.value
        if len(keys) == 1 and type(v) is dict:  # the common cases: missing, or a list of mappings
            got = v.get(keys[0])
            if got is None:
                return []
            if type(got) is list and all(type(x) is dict for x in got):
                doc, notes, path = self.doc, self.notes, self.path + keys
                return [Node(doc, (*path, i), x, notes) for i, x in enumerate(got)]
        out = []
        for item in self.items(*keys):
            if isinstance(item.value, dict):
                out.append(item)
            elif item.value is not None:
                item.note(item.path, f"expected a mapping, got {describe(item.value)}: ignored")
        return out

    def entries(self, *keys: Any) -> list[tuple[str, Node]]:
        """(key, node) of the mapping under `keys`, keys as text."""
        m = self.mapping(*keys)
        if m is None:
            return []
        return [(str(k) if not isinstance(k, str) else k, Node(self.doc, (*m.path, k), v, self.notes))
                for k, v in m.value.items()]

    # -- scalars ----------------------------------------------------------------------------------
    def str(self, *keys: Any, max_chars: int = MAX_TEXT_CHARS) -> str | None:
        """A string (not a number, date or list), at most `max_chars` long."""
        v = self.value
        if len(keys) == 1 and type(v) is dict:  # the common cases, without building a path for nothing
            got = v.get(keys[0])
            if got is None or (type(got) is str and len(got) <= max_chars):
                return got
        value, path = self._expect(keys, "a string", str)
        if value is not None and len(value) > max_chars:
            self.note(path, f"a string of {len(value):,} characters (over {max_chars:,}): ignored")
            return None
        return value

    def text(self, *keys: Any, max_chars: int = MAX_TEXT_CHARS) -> str | None:
        """A scalar as text, as Kubernetes would quote it (strings, numbers, booleans; not dates, lists
        or mappings): env values, label values, annotation values, flag values."""
        if not keys and type(self.value) is str and len(self.value) <= max_chars:  # the common case
            return self.value
        value, path, ok = self._raw(keys)
        if value is None or not ok:
            return None
        if not _is_scalar(value):
            self.note(path, f"expected a string, got {describe(value)}: ignored")
            return None
        out = scalar_text(value)
        if len(out) > max_chars:
            self.note(path, f"a value of {len(out):,} characters (over {max_chars:,}): ignored")
            return None
        return out

    def name(self, *keys: Any) -> str | None:
        """An object name: a string of at most 253 characters."""
        return self.str(*keys, max_chars=MAX_NAME_CHARS)

    def int(self, *keys: Any, lo: int = 0, hi: int = MAX_INT) -> int | None:
        """An integer in [lo, hi]: a YAML integer or a string of digits (not a boolean, float or date)."""
        value, path, ok = self._raw(keys)
        if value is None or not ok:
            return None
        out: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            out = value
        elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
            out = int(value)
        elif isinstance(value, str) and _INT.match(value):
            out = int(value.replace("_", ""))
        if out is None:
            self.note(path, f"expected an integer, got {describe(value)}: ignored")
            return None
        if not lo <= out <= hi:
            self.note(path, f"{_short_int(out)} is out of range ({lo} to {hi:,}): ignored")
            return None
        return out

    def number(self, *keys: Any, lo: float = 0.0, hi: float = float(MAX_INT)) -> float | None:
        """A finite number in [lo, hi] (a YAML number or a numeric string; not a boolean)."""
        value, path, ok = self._raw(keys)
        if value is None or not ok:
            return None
        out = to_number(value)
        if out is None:
            self.note(path, f"expected a number, got {describe(value)}: ignored")
            return None
        if not lo <= out <= hi:
            self.note(path, f"{out:g} is out of range ({lo:g} to {hi:g}): ignored")
            return None
        return out

    def bool(self, *keys: Any) -> bool | None:
        return self._expect(keys, "a boolean", bool)[0]

    def quantity(self, *keys: Any) -> int | None:
        """A Kubernetes quantity in bytes ('8Gi', '512Mi', 20000000000), at most 1 EiB."""
        value, path, ok = self._raw(keys)
        if value is None or not ok:
            return None
        out = quantity_bytes(value)
        if out is None:
            self.note(path, f"expected a quantity (e.g. 8Gi, 512Mi), got {describe(value)}: ignored")
        return out

    def is_str(self) -> bool:
        return isinstance(self.value, str)


def _is_scalar(v: Any) -> bool:
    if isinstance(v, float):
        return math.isfinite(v)
    return isinstance(v, str | int | bool)


def scalar_text(v: Any) -> str:
    """Text of a YAML scalar as a manifest's author meant it (true -> 'true', 1.0 -> '1.0')."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int) and abs(v) > 10**30:
        return _short_int(v)
    return v if isinstance(v, str) else str(v)


def _short_int(v: int) -> str:
    if abs(v) <= 10**30:
        return f"{v:,}"
    return f"a {len(str(abs(v))) if abs(v) < 10**4000 else 'huge'}-digit number"


def to_number(value: Any) -> float | None:
    """A finite float from a YAML number or numeric string; None for anything else (booleans, NaN,
    infinities, 400-digit overflows, dates)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if abs(value) > 10**300:
            return None
        out = float(value)
    elif isinstance(value, float):
        out = value
    elif isinstance(value, str) and len(value) <= 64:
        try:
            out = float(value.replace("_", ""))
        except ValueError:
            return None
    else:
        return None
    return out if math.isfinite(out) else None


def quantity_bytes(value: Any) -> int | None:
    """Bytes of a Kubernetes quantity, or None when it is not one or is over 1 EiB (exact arithmetic:
    no float overflow on a 400-digit value)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= MAX_BYTES else None
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and 0 <= value <= MAX_BYTES else None
    if not isinstance(value, str):
        return None
    m = _QUANTITY.match(value)
    if not m:
        return None
    whole, _, frac = m.group(1).partition(".")
    mult = _QUANTITY_MULT.get(m.group(2), 1)
    if m.group(2) == "m":  # milli: a thousandth of a byte
        out = int(whole or "0") // 1000
    else:
        out = int(whole or "0") * mult + (int(frac) * mult // 10 ** len(frac) if frac else 0)
    return out if out <= MAX_BYTES else None
