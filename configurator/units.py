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
_SIZE_RE = re.compile(r"^\s*([+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")
# Sizes and counts beyond these are typos or attacks, never hardware: 1 PiB of GPU memory,
# 2**40 tokens.
MAX_BYTES = 1 << 50
MAX_TOKENS = 1 << 40


def parse_size(text: str | int | float, *, what: str = "size", bare: str = "B") -> int:
    """'79.18GiB', '81559MiB', '80GB', '1.5e9' or a number -> integer bytes (GiB = 2**30, GB = 10**9).

    `bare` is the unit of a number written without one ('GiB' for --gpu-memory: `80` is 80 GiB).
    Refuses (InputError, one line) anything negative, not finite or above MAX_BYTES.
    """
    if isinstance(text, bool) or text is None:
        raise InputError(f"{what}: expected a size such as 79.18GiB, 81559MiB or 80GB, got {text!r}")
    if isinstance(text, int | float):
        value, unit = float(text) if not isinstance(text, int) or abs(text) < MAX_BYTES * 2 else math.inf, ""
        shown = str(text)[:40]
    else:
        shown = str(text)[:40] + ("..." if len(str(text)) > 40 else "")
        m = _SIZE_RE.match(str(text)) if len(str(text)) <= 64 else None
        if not m:
            raise InputError(f"{what}: cannot read '{shown}' as a size (e.g. 79.18GiB, 81559MiB, 80GB)")
        try:
            value = float(m.group(1))
        except OverflowError:  # pragma: no cover - float() returns inf rather than raising
            value = math.inf
        unit = m.group(2).lower()
        if unit not in _UNITS:
            raise InputError(f"{what}: unknown unit '{m.group(2)}' in '{shown}' (use B, MiB, GiB, MB, GB)")
    if not unit:
        unit = bare.lower()
    if not math.isfinite(value):
        raise InputError(f"{what}: '{shown}' is not a finite size")
    if value < 0:
        raise InputError(f"{what}: must not be negative, got '{shown}'")
    num_bytes = value * _UNITS[unit]
    if num_bytes > MAX_BYTES:
        raise InputError(f"{what}: '{shown}' is out of range (at most {MAX_BYTES >> 50} PiB)")
    return round(num_bytes)


class HumanIntError(ValueError):
    """vLLM's own refusal of a human-readable integer (its argparse.ArgumentTypeError text)."""


# vLLM's human_readable_int (vllm/utils/argparse_utils.py; vllm/engine/arg_utils.py before 0.13):
# `(\d+(?:\.\d+)?)([kKmMgGtT])` - a lower-case suffix is decimal (1k = 1,000), an upper-case one
# binary (1K = 1,024) and takes no decimals; anything else goes to Python's int(). t / T arrived
# in 0.13 (0.8.4-0.12 know k m g / K M G).
_HUMAN_RE = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_HUMAN_MULT = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
               "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def human_readable_int(text: str, *, suffixes: str = "kKmMgGtT") -> int:
    """'128K' -> 131,072; '128k' -> 128,000; '25.6k' -> 25,600; '8192' -> 8,192, as vLLM reads them.

    Raises HumanIntError with vLLM's text for decimals with a binary suffix ('1.5K'), ValueError
    for anything int() refuses (as vLLM's parser would).
    """
    value = str(text).strip()
    m = _HUMAN_RE.fullmatch(value)
    if m and m.group(2) in suffixes:
        number, suffix = m.groups()
        if suffix.islower():
            return int(float(number) * _HUMAN_MULT[suffix])
        try:
            return int(number) * _HUMAN_MULT[suffix]
        except ValueError:
            raise HumanIntError(f"Decimals are not allowed with binary suffixes like {suffix}. "
                                f"Did you mean to use {number}{suffix.lower()} instead?") from None
    return int(value)


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
