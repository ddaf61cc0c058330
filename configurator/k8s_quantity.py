"""Kubernetes resource quantities, parsed exactly as Kubernetes parses them.

Mirrors k8s.io/apimachinery pkg/api/resource (quantity.go: parseQuantityString, ParseQuantity,
UnmarshalJSON, Value; suffix.go: the suffix table), read at kubernetes/apimachinery commit
357557a670d84c30ef3b5355f02c11d8aba5a941. The grammar:

    <quantity> ::= <sign>? <number> <suffix>
    <number>   ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei            (binary SI, powers of 2**10)
                 | n | u | m | "" | k | M | G | T | P | E  (decimal SI, powers of 10**3)
                 | (e | E) <sign>? <digits>               (decimal exponent)

What Kubernetes does with the number, and so what this module does:
- the value is exact (no float): `0.1Gi` is 107374182.4, not 107374182.39999999;
- a non-zero value is rounded away from zero to a multiple of 1e-9 ("0.9n" -> 1n, "3.001n" -> 4n);
- a binary-SI value is silently capped at 2**63 - 1 ("8Ei", "9Ei" -> 9223372036854775807);
- `Value()` (the integer a byte count is read as) rounds up, away from zero ("500m" -> 1, "1.5" -> 2);
- in a manifest (UnmarshalJSON) surrounding spaces are trimmed; `ParseQuantity` itself refuses them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from configurator.errors import InputError

Format = Literal["BinarySI", "DecimalSI", "DecimalExponent"]

# suffix.go: newSuffixer()
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}  # power of 2
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}  # power of 10
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")  # parseQuantityString's suffix scanner
_DIGITS = frozenset("0123456789")
_NANO = -9  # the finest scale a Quantity keeps
MAX_INT64 = (1 << 63) - 1  # maxAllowed: the cap of binary-SI values
_MAX_DIGITS_SHOWN = 40  # errors quote at most this much of the input


class QuantityError(InputError):
    """A value that Kubernetes would refuse as a resource quantity (the API server rejects the object)."""


@dataclass(frozen=True)
class Quantity:
    """A parsed quantity: value = sign x coefficient x 10**exponent, exactly; `format` as Kubernetes keeps it."""

    negative: bool
    coefficient: int  # >= 0
    exponent: int  # >= -9 after Kubernetes' rounding to nano
    format: Format
    text: str

    @property
    def is_zero(self) -> bool:
        return self.coefficient == 0

    def value(self) -> int:
        """Kubernetes' Quantity.Value(): the value rounded up, away from zero, to an integer. Raises
        QuantityError past int64, where Kubernetes' own result is undefined."""
        if self.coefficient == 0:
            return 0
        if self.exponent >= 0:
            if len(str(self.coefficient)) + self.exponent > 19:  # certainly > 2**63 - 1
                raise QuantityError(f"'{_short(self.text)}' is larger than Kubernetes can hold as an integer")
            magnitude = self.coefficient * 10**self.exponent
        else:
            magnitude = -(-self.coefficient // 10**-self.exponent)  # ceil: away from zero for the magnitude
        if magnitude > MAX_INT64:
            raise QuantityError(f"'{_short(self.text)}' is larger than Kubernetes can hold as an integer")
        return -magnitude if self.negative else magnitude

    def as_fraction(self) -> Fraction:
        """The exact value (for comparisons and tests); not for absurd exponents such as 1e999999999."""
        v = Fraction(self.coefficient) * Fraction(10) ** self.exponent
        return -v if self.negative else v


def _short(text: str) -> str:
    return text if len(text) <= _MAX_DIGITS_SHOWN else text[:_MAX_DIGITS_SHOWN] + "..."


def _bad(text: str, why: str = "") -> QuantityError:
    return QuantityError(f"'{_short(text)}' is not a Kubernetes quantity{(': ' + why) if why else ''} "
                         f"(e.g. 2Gi, 512Mi, 20G, 1e9)")


def _scan(text: str) -> tuple[bool, str, str, str]:
    """parseQuantityString: (positive, integer digits, fraction digits, suffix), or QuantityError."""
    pos, end = 0, len(text)
    positive = True
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    while pos < end and text[pos] == "0":  # leading zeros
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:  # anything else left over
        raise _bad(text)
    return positive, num, denom, text[suffix_start:]


def _interpret(suffix: str, text: str) -> tuple[int, int, Format]:
    """suffix.go interpret(): (base, exponent, format)."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], "DecimalSI"
    if suffix in _BINARY:
        return 2, _BINARY[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[:1] in ("+", "-") else digits
        if not body or not set(body) <= _DIGITS:
            raise _bad(text, f"unknown suffix '{suffix}'")
        exponent = int(digits)
        if not -(1 << 63) <= exponent < (1 << 63):  # strconv.ParseInt(s, 10, 64)
            raise _bad(text, f"exponent out of range in '{suffix}'")
        exponent = (exponent + (1 << 31)) % (1 << 32) - (1 << 31)  # Go's int32(parsed) conversion wraps
        return 10, exponent, "DecimalExponent"
    raise _bad(text, f"unknown suffix '{suffix}'" if suffix else "")


def parse_quantity(text: str) -> Quantity:
    """ParseQuantity: a quantity string as Kubernetes reads it (no surrounding spaces), or QuantityError."""
    if not isinstance(text, str):
        raise _bad(str(text))
    if text == "":
        raise _bad(text, "empty")
    positive, num, denom, suffix = _scan(text)
    base, exponent, fmt = _interpret(suffix, text)
    coefficient = int(num + denom)
    if base == 10:
        exp10 = exponent - len(denom)
    else:  # binary: num.denom x 2**exponent, exact in base 10 since 2**k is an integer
        coefficient <<= exponent
        exp10 = -len(denom)
    if coefficient == 0:
        return Quantity(False, 0, 0, fmt, text)
    # round a non-zero value away from zero to nano ("if you want some resources, you should get some")
    if exp10 < _NANO:
        shift = _NANO - exp10
        # 0 < |value| < 1n becomes 1n; otherwise divide, rounding the magnitude up
        coefficient = 1 if shift > len(str(coefficient)) else -(-coefficient // 10**shift)
        exp10 = _NANO
    if fmt == "BinarySI":
        exact = Fraction(coefficient) * Fraction(10) ** exp10
        if exact > MAX_INT64:
            coefficient, exp10 = MAX_INT64, 0
        elif exact < 1:  # 0 < value < 1: "avoids rounding and hopefully confusion, too"
            fmt = "DecimalSI"
    return Quantity(not positive, coefficient, exp10, fmt, text)


def parse_manifest_quantity(value: Any) -> Quantity:
    """A quantity as written in a manifest (Quantity.UnmarshalJSON): a string with surrounding spaces
    trimmed, or a YAML / JSON number. Booleans, lists, maps and non-finite numbers are refused."""
    if isinstance(value, bool) or value is None:
        raise _bad(str(value).lower() if value is not None else "null")
    if isinstance(value, int):
        return parse_quantity(str(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _bad(str(value))
        return parse_quantity(repr(value).replace("e+", "e"))
    if isinstance(value, str):
        return parse_quantity(value.strip())
    raise _bad(str(value)[:_MAX_DIGITS_SHOWN], f"a {type(value).__name__}, not a string or number")


def quantity_bytes(value: Any, *, what: str, allow_negative: bool = False) -> int:
    """Bytes of a manifest quantity (Quantity.Value(): rounded up), or one QuantityError naming `what`."""
    try:
        q = parse_manifest_quantity(value)
        n = q.value()
    except QuantityError as e:
        raise QuantityError(f"{what}: {e}") from None
    if n < 0 and not allow_negative:
        raise QuantityError(f"{what}: '{_short(str(value))}' is negative; Kubernetes refuses a negative size")
    return n
