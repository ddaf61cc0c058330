"""One list of the memory-changing options the estimate does not model (issue 29): configurator/vllm/memory_options.py.

The command parser (vllm/flags.py) and the features' check (estimate/features.py) read the same objects, and a
feature option is written once (as a key of UNMODELLED_FEATURE_FLAGS), yet a command that sets it is still marked
not modelled.
"""

from __future__ import annotations

import ast
import inspect

import pytest

from configurator.estimate import features
from configurator.vllm import flags, memory_options
from configurator.vllm.args import release_args
from configurator.vllm.flags import parse_args
from configurator.vllm.memory_options import UNMODELLED_FEATURE_FLAGS, UNMODELLED_MEMORY_OPTIONS


def _option(key: str) -> str:
    return "--" + key.replace("_", "-")


def test_parser_and_features_share_the_one_list() -> None:
    assert flags.UNMODELLED_MEMORY_OPTIONS is UNMODELLED_MEMORY_OPTIONS
    assert features.UNMODELLED_FEATURE_FLAGS is UNMODELLED_FEATURE_FLAGS


def test_a_feature_option_is_written_once() -> None:
    """The literal set of generic options names no feature option: those come from the table's keys."""
    tree = ast.parse(inspect.getsource(memory_options))
    written: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Set):
            written += [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    assert written, "the generic options' set literal was not found"
    assert len(written) == len(set(written)), sorted(o for o in written if written.count(o) > 1)
    assert not {_option(k) for k in UNMODELLED_FEATURE_FLAGS} & set(written)
    assert {_option(k) for k in UNMODELLED_FEATURE_FLAGS} <= UNMODELLED_MEMORY_OPTIONS
    assert "-dcp" in UNMODELLED_MEMORY_OPTIONS


@pytest.mark.parametrize("key", sorted(UNMODELLED_FEATURE_FLAGS))
def test_a_command_setting_a_feature_option_is_marked_not_modelled(key: str) -> None:
    """Each feature option, given on a command line of a release that has it, is an unmodelled occurrence."""
    option = _option(key)
    versions = [v for v in (None, "0.11.0") if option in release_args(v).strings]  # the newest, or 0.11.0
    assert versions, f"no release read has {option}"
    version = versions[0]
    o = release_args(version).strings[option][0]
    value = str(o.choices[-1]) if o.choices else "2"  # a value the release's parser accepts
    argv = ["vllm", "serve", "org/model", option] + ([] if o.nargs == 0 else [value])
    parsed = parse_args(argv, version)
    assert [u.dest for u in parsed.unmodelled] == [option]
    assert not any(occ.dest == key for occ in parsed.occurrences)


def test_a_feature_option_away_from_its_modelled_value_is_named() -> None:
    """estimate/features.py warns with the table's text when the value is not the one the estimate models."""
    assert features.unmodelled_flags({"moe_backend": "auto", "enable_dbo": False}) == ()
    out = features.unmodelled_flags({"moe_backend": "deep_gemm", "decode_context_parallel_size": 2})
    assert [line.split(":")[0] for line in out] == ["--decode-context-parallel-size", "--moe-backend"]
