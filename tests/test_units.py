"""Number parsing: vLLM's human_readable_int, sizes, and the range checks at the boundary."""

import contextlib
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from configurator.errors import InputError
from configurator.units import MAX_BYTES, GiB, HumanIntError, human_readable_int, parse_size
from configurator.vllm.flags import BY_DEST, convert

DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


@given(st.integers(0, 10**6), st.sampled_from(sorted(DECIMAL)))
def test_lower_case_suffix_is_decimal(n, s):
    assert human_readable_int(f"{n}{s}") == n * DECIMAL[s]


@given(st.integers(0, 10**6), st.sampled_from(sorted(BINARY)))
def test_upper_case_suffix_is_binary(n, s):
    assert human_readable_int(f"{n}{s}") == n * BINARY[s]


@given(st.integers(0, 10**4), st.integers(1, 9), st.sampled_from(sorted(BINARY)))
def test_decimals_with_a_binary_suffix_are_refused_as_vllm_does(n, frac, s):
    with pytest.raises(HumanIntError, match=f"like {s}. Did you mean to use {n}.{frac}{s.lower()}"):
        human_readable_int(f"{n}.{frac}{s}")


def test_examples_from_vllms_docstring():
    assert human_readable_int("1k") == 1000 and human_readable_int("1K") == 1024
    assert human_readable_int("25.6k") == 25600 and human_readable_int(" 128K ") == 131072
    assert human_readable_int("128K", suffixes="kKmMgG") == 131072
    with pytest.raises(ValueError):
        human_readable_int("1t", suffixes="kKmMgG")  # 0.8.4-0.12 know no t / T


@given(st.text(max_size=30))
def test_conversions_never_raise_anything_but_input_error(text):
    for dest in ("max_model_len", "kv_cache_memory_bytes", "max_num_batched_tokens", "cpu_offload_gb",
                 "gpu_memory_utilization", "max_num_seqs"):
        try:
            v = convert(BY_DEST[dest], text)
        except InputError:
            continue
        assert isinstance(v, int | float) and math.isfinite(v) and -1 <= v <= MAX_BYTES
    for bare in ("B", "GiB"):
        try:
            v = parse_size(text, what="--gpu-memory", bare=bare)
        except InputError:
            continue
        assert 0 <= v <= MAX_BYTES


@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**400), 10**400))
def test_numbers_from_yaml_are_finite_and_in_range_or_refused(x):
    for dest in ("max_model_len", "kv_cache_memory_bytes", "cpu_offload_gb", "max_num_batched_tokens"):
        try:
            v = convert(BY_DEST[dest], x)
        except InputError as e:
            assert "\n" not in str(e)
            continue
        assert math.isfinite(v) and -1 <= v <= MAX_BYTES
    with contextlib.suppress(InputError):
        parse_size(x, what="--gpu-memory")


@pytest.mark.parametrize("text", ["1e308TiB", "inf", "nan", "-inf", "9" * 400, "1e400", "-3GiB"])
def test_absurd_sizes_are_one_line_errors(text):
    with pytest.raises(InputError) as e:
        parse_size(text, what="--gpu-memory", bare="GiB")
    assert "\n" not in str(e.value) and len(str(e.value)) < 200


def test_a_bare_number_takes_the_bare_unit():
    assert parse_size("80", bare="GiB") == 80 * GiB
    assert parse_size("80GB") == 80 * 10**9 and parse_size("79.18GiB") == round(79.18 * GiB)


def test_token_counts_get_token_count_messages():
    for bad in ("8,192", None, "lots"):
        with pytest.raises(InputError, match=r"token count such as 8192, 8k \(8,000\), 8K \(8,192\)"):
            convert(BY_DEST["max_model_len"], bad)
    assert convert(BY_DEST["max_model_len"], "128K") == 131072
    assert convert(BY_DEST["max_model_len"], "128k") == 128000
    assert human_readable_int("25G") == 25 * GiB
