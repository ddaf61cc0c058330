"""Byte sizes: parsing what users type, and formatting the way vLLM logs it."""

from __future__ import annotations

import math
import re

from configurator.errors import InputError

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
    "t": 1000**4, "tb": 1000**4,
    "ki": KiB, "kib": KiB, "mi": MiB, "mib": MiB, "gi": GiB, "gib": GiB, "ti": 1 << 40, "tib": 1 << 40,
}
_SIZE_RE = re.compile(r"^\s*(-?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")
# vLLM's human_readable_int (vllm/engine/arg_utils.py): lower-case suffix = powers of 1000,
# upper-case = powers of 1024 ("1k" = 1000, "1K" = 1024).
_HUMAN_RE = re.compile(r"^\s*(-?[0-9]*\.?[0-9]+)\s*([kKmMgGtT])\s*$")
_HUMAN_MULT = {"k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4,
               "K": KiB, "M": MiB, "G": GiB, "T": 1 << 40}


def parse_size(text: str | int | float, *, what: str = "size") -> int:
    """'79.18GiB', '81559MiB', '80GB', '1.5e9' or an int -> integer bytes (GiB = 2**30, GB = 10**9)."""
    if isinstance(text, bool):
        raise InputError(f"{what}: expected a size, got {text!r}")
    if isinstance(text, int | float):
        value, unit = float(text), ""
    else:
        m = _SIZE_RE.match(str(text))
        if not m:
            raise InputError(f"{what}: cannot read '{text}' as a size (e.g. 79.18GiB, 81559MiB, 80GB)")
        value, unit = float(m.group(1)), m.group(2).lower()
        if unit not in _UNITS:
            raise InputError(f"{what}: unknown unit '{m.group(2)}' in '{text}' (use B, MiB, GiB, MB, GB)")
    if value < 0 or not math.isfinite(value):
        raise InputError(f"{what}: must not be negative, got '{text}'")
    return round(value * _UNITS[unit])


def parse_human_int(text: str | int, *, what: str) -> int:
    """vLLM's human-readable integers ('25G' = 25 GiB, '25g' = 25e9) plus our size units."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        s = str(text).strip()
        m = _HUMAN_RE.match(s)
        if m:
            value = int(float(m.group(1)) * _HUMAN_MULT[m.group(2)])
            if value < 0:
                raise InputError(f"{what}: must not be negative, got '{text}'")
        else:
            value = parse_size(s, what=what)
    if value < 0:
        raise InputError(f"{what}: must not be negative, got '{text}'")
    return value


_QUANTITY_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?\s*$")
_QUANTITY_MULT = {None: 1, "Ki": KiB, "Mi": MiB, "Gi": GiB, "Ti": 1 << 40, "Pi": 1 << 50,
                  "k": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4, "P": 1000**5}


def parse_quantity(text: str | int | float, *, what: str) -> int:
    """A Kubernetes resource quantity in bytes: '2Gi', '512Mi', '20G', '1500000000'."""
    m = _QUANTITY_RE.match(str(text))
    if not m:
        raise InputError(f"{what}: '{text}' is not a Kubernetes quantity (e.g. 2Gi, 512Mi, 20G)")
    return int(float(m.group(1)) * _QUANTITY_MULT[m.group(2)])


def format_gib(num_bytes: float) -> str:
    """vLLM's format_gib: round(bytes / 2**30, 2) printed as a float ('5.6', '12.25')."""
    return str(round(num_bytes / GiB, 2))


def human_bytes(num_bytes: float) -> str:
    """Short display: '524,288 B', '0.5 MiB', '16 GiB' (display edge only)."""
    n = float(num_bytes)
    if abs(n) >= GiB:
        return f"{_trim(n / GiB)} GiB"
    if abs(n) >= MiB // 4:
        return f"{_trim(n / MiB)} MiB"
    if abs(n) >= KiB:
        return f"{_trim(n / KiB)} KiB"
    return f"{int(n):,} B"


def _trim(x: float) -> str:
    s = f"{x:,.2f}"
    return s.rstrip("0").rstrip(".") if "." in s else s


def cdiv(a: int, b: int) -> int:
    """Ceiling division, as vLLM's cdiv."""
    return -(-a // b)
