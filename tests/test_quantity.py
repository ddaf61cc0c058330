"""Kubernetes quantities: the table of Kubernetes' own parser tests, then what `check` makes of them.

The cases are TestQuantityParse, TestParseQuantityString and TestQuantityRoundUp's inputs from
kubernetes/apimachinery pkg/api/resource/quantity_test.go (commit 357557a670d84c30ef3b5355f02c11d8aba5a941):
each input with the value Kubernetes expects, written there as decQuantity(mantissa, exponent, format),
i.e. mantissa x 10**exponent.
"""

from fractions import Fraction

import pytest

from configurator.k8s_quantity import MAX_INT64, QuantityError, parse_manifest_quantity, parse_quantity, quantity_bytes

B, D, X = "BinarySI", "DecimalSI", "DecimalExponent"
KI, MI, GI, TI, PI, EI = (1 << 10), (1 << 20), (1 << 30), (1 << 40), (1 << 50), (1 << 60)

# (input, mantissa, exponent, format): TestQuantityParse's table, in its order
PARSE_TABLE = [
    ("0", 0, 0, D), ("0n", 0, 0, D), ("0u", 0, 0, D), ("0m", 0, 0, D), ("0Ki", 0, 0, B), ("0k", 0, 0, D),
    ("0Mi", 0, 0, B), ("0M", 0, 0, D), ("0Gi", 0, 0, B), ("0G", 0, 0, D), ("0Ti", 0, 0, B), ("0T", 0, 0, D),
    # Quantity less numbers are allowed
    ("1", 1, 0, D),
    # Binary suffixes
    ("1Ki", 1024, 0, B), ("8Ki", 8 * KI, 0, B), ("7Mi", 7 * MI, 0, B), ("6Gi", 6 * GI, 0, B), ("5Ti", 5 * TI, 0, B),
    ("4Pi", 4 * PI, 0, B), ("3Ei", 3 * EI, 0, B), ("10Ti", 10 * TI, 0, B), ("100Ti", 100 * TI, 0, B),
    # Decimal suffixes
    ("5n", 5, -9, D), ("4u", 4, -6, D), ("3m", 3, -3, D), ("9", 9, 0, D), ("8k", 8, 3, D), ("50k", 5, 4, D),
    ("7M", 7, 6, D), ("6G", 6, 9, D), ("5T", 5, 12, D), ("40T", 4, 13, D), ("300T", 3, 14, D), ("2P", 2, 15, D),
    ("1E", 1, 18, D),
    # Decimal exponents
    ("1E-3", 1, -3, X), ("1e3", 1, 3, X), ("1E6", 1, 6, X), ("1e9", 1, 9, X), ("1E12", 1, 12, X),
    ("1e15", 1, 15, X), ("1E18", 1, 18, X),
    # Nonstandard but still parsable
    ("1e14", 1, 14, X), ("1e13", 1, 13, X), ("1e3", 1, 3, X), ("100.035k", 100035, 0, D),
    # Things that look like floating point
    ("0.001", 1, -3, D), ("0.0005k", 5, -1, D), ("0.005", 5, -3, D), ("0.05", 5, -2, D), ("0.5", 5, -1, D),
    ("0.00050k", 5, -1, D), ("0.00500", 5, -3, D), ("0.05000", 5, -2, D), ("0.50000", 5, -1, D),
    ("0.5e0", 5, -1, X), ("0.5e-1", 5, -2, X), ("0.5e-2", 5, -3, X), ("0.5e0", 5, -1, X), ("10.035M", 10035, 3, D),
    ("1.2e3", 12, 2, X), ("1.3E+6", 13, 5, X), ("1.40e9", 14, 8, X), ("1.53E12", 153, 10, X), ("1.6e15", 16, 14, X),
    ("1.7E18", 17, 17, X),
    ("9.01", 901, -2, D), ("8.1k", 81, 2, D), ("7.123456M", 7123456, 0, D), ("6.987654321G", 6987654321, 0, D),
    ("5.444T", 5444, 9, D), ("40.1T", 401, 11, D), ("300.2T", 3002, 11, D), ("2.5P", 25, 14, D),
    ("1.01E", 101, 16, D),
    # Things that saturate/round
    ("3.001n", 4, -9, D), ("1.1E-9", 2, -9, X), ("0.0000000001", 1, -9, D), ("0.0000000005", 1, -9, D),
    ("0.00000000050", 1, -9, D), ("0.5e-9", 1, -9, X), ("0.9n", 1, -9, D), ("0.00000012345", 124, -9, D),
    ("0.00000012354", 124, -9, D), ("9Ei", MAX_INT64, 0, B), ("9223372036854775807Ki", MAX_INT64, 0, B),
    ("12E", 12, 18, D),
    # We'll accept fractional binary stuff, too.
    ("100.035Ki", 10243584, -2, B), ("0.5Mi", MI // 2, 0, B), ("0.05Gi", 536870912, -1, B),
    ("0.025Ti", 274877906944, -1, B),
    # Things written by trolls
    ("0.000000000001Ki", 2, -9, D), (".001", 1, -3, D), (".0001k", 100, -3, D), ("1.", 1, 0, D), ("1.G", 1, 9, D),
]

# TestQuantityParse's `invalid` list, plus the empty string it checks first
INVALID = ["", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 "]


@pytest.mark.parametrize("text,mantissa,exponent,fmt", PARSE_TABLE, ids=[r[0] for r in PARSE_TABLE])
def test_kubernetes_parse_table(text, mantissa, exponent, fmt):
    expected = Fraction(mantissa) * Fraction(10) ** exponent
    q = parse_quantity(text)
    assert q.as_fraction() == expected and q.format == fmt
    # the test runs every input again with "-" and with "+" in front: same magnitude, same format
    neg, pos = parse_quantity("-" + text), parse_quantity("+" + text)
    assert neg.as_fraction() == -expected and neg.format == fmt
    assert pos.as_fraction() == expected and pos.format == fmt


@pytest.mark.parametrize("text", INVALID)
def test_kubernetes_invalid_inputs(text):
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize("text,zero", [(".", True), ("-.", True), ("1.025Ti", False), ("1E-3", False)])
def test_parse_quantity_string_cases(text, zero):
    # TestParseQuantityString: "." and "-." are the number 0; "1E-3" is 1 with the exponent suffix "E-3"
    assert parse_quantity(text).is_zero == zero


@pytest.mark.parametrize("text,value", [
    # Value() rounds up, away from zero (TestQuantityRoundUp's 9.01 at scale 0 -> 10, -9.01 -> -10)
    ("9.01", 10), ("-9.01", -10), ("500m", 1), ("1.5", 2), ("-1.5", -2), ("0.000000000001Ki", 1),
    # bytes of the values the issue names
    ("1e9", 10**9), ("1E3", 1000), ("+2Gi", 2 * GI), ("20E", None),
    ("1Ei", EI), ("8Ei", MAX_INT64), ("100.035Ki", 102436), ("0.1Gi", 107374183),
])
def test_value_rounds_up_to_an_integer(text, value):
    q = parse_quantity(text)
    if value is None:  # 20E = 2e19 > 2**63 - 1: Kubernetes' Value() is undefined there; we refuse
        with pytest.raises(QuantityError, match="larger than"):
            q.value()
    else:
        assert q.value() == value


def test_manifest_values_trim_spaces_and_take_numbers():
    # UnmarshalJSON trims surrounding spaces (TestJSONWhitespace: `" 1"` and `"1 "` are 1)
    assert parse_manifest_quantity(" 1").value() == 1 and parse_manifest_quantity("1 ").value() == 1
    assert parse_manifest_quantity(1500000000).value() == 1_500_000_000
    assert parse_manifest_quantity(1e9).value() == 10**9
    assert parse_manifest_quantity(0.5).value() == 1
    for bad in (True, None, [1], {"a": 1}, float("inf"), float("nan"), "1 Gi", "2GB", "2gi"):
        with pytest.raises(QuantityError):
            parse_manifest_quantity(bad)


def test_quantity_bytes_names_the_field_and_refuses_negatives():
    assert quantity_bytes("1e9", what="sizeLimit") == 10**9
    with pytest.raises(QuantityError, match="sizeLimit: '2GB' is not a Kubernetes quantity"):
        quantity_bytes("2GB", what="sizeLimit")
    with pytest.raises(QuantityError, match="negative"):
        quantity_bytes("-1Gi", what="sizeLimit")


def test_absurd_exponents_do_not_blow_up():
    q = parse_quantity("1e999999999")
    with pytest.raises(QuantityError):
        q.value()
    assert parse_quantity("1e-999999999").value() == 1  # rounds up to 1n, then to 1
    assert parse_quantity("1e-999999999").exponent == -9
