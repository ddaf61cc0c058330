"""vLLM's `vllm serve` options per release (profiles/vllm-args) and parse_args read as vLLM reads them.

The expected values were checked by hand against each release's source in its wheel (pip download vllm==X --no-deps)
(engine/arg_utils.py, config/*.py, entrypoints/openai/cli_args.py).
"""

import pytest

from configurator.errors import InputError
from configurator.vllm.args import release_args, releases
from configurator.vllm.flags import UNMODELLED_MEMORY_OPTIONS, parse_args, unrecognized_message
from configurator.vllm.versions import SUPPORTED


def _opt(version, dest):
    return next(o for o in release_args(version).options if o.dest == dest)


def test_the_table_covers_every_supported_release_and_08_09():
    assert set(SUPPORTED) <= set(releases())
    assert {"0.8.0", "0.8.5", "0.9.0", "0.9.2"} <= set(releases())


@pytest.mark.parametrize(("version", "dest", "nargs", "type_", "choices"), [
    ("0.8.0", "max_model_len", 1, "int", None),  # plain int until human_readable_int (0.8.4)
    ("0.8.5", "max_model_len", 1, "human_int", None),
    ("0.33.0", "max_model_len", 1, "human_int_or_auto", None),
    ("0.8.0", "enable_lora", 0, None, None),  # store_true
    ("0.33.0", "enable_lora", 0, None, None),  # BooleanOptionalAction
    ("0.10.0", "block_size", 1, "int", (1, 8, 16, 32, 64, 128)),  # BlockSize Literal
    ("0.8.0", "block_size", 1, "int", (8, 16, 32, 64, 128)),
    ("0.33.0", "block_size", 1, "int", None),  # a plain int field from 0.18
    ("0.8.0", "dtype", 1, "str", ("auto", "half", "float16", "bfloat16", "float", "float32")),
    ("0.33.0", "dtype", 1, "str", ("auto", "bfloat16", "float", "float16", "float32", "half")),
    ("0.10.0", "kv_cache_dtype", 1, "str", ("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc")),
    ("0.33.0", "kv_cache_dtype", 1, "str", None),  # CacheDType | str: metavar, no choices
    ("0.33.0", "lora_modules", "+", "str", None),
])
def test_options_read_from_the_wheels(version, dest, nargs, type_, choices):
    o = _opt(version, dest)
    assert o.nargs == nargs
    if type_:
        assert o.type == type_
    assert o.choices == choices


def test_spellings_and_negations():
    assert "-tp" in _opt("0.8.0", "tensor_parallel_size").opts
    assert "-q" in _opt("0.33.0", "quantization").opts
    assert not _opt("0.8.0", "enable_lora").negatable and _opt("0.33.0", "enable_lora").negatable
    assert "--no-enable-prefix-caching" in release_args("0.10.0").strings
    assert "--disable-prefix-caching" in release_args("0.33.0").strings  # EnableDisableAction
    assert "--disable-prefix-caching" not in release_args("0.10.0").strings
    q = _opt("0.10.0", "quantization")
    assert "awq" in q.choices and "gptq" in q.choices and "None" in q.choices


def test_unmodelled_memory_options_are_real_options_somewhere():
    every = {s for v in releases() for s in release_args(v).strings}
    assert every >= UNMODELLED_MEMORY_OPTIONS, UNMODELLED_MEMORY_OPTIONS - every


@pytest.mark.parametrize(("cmd", "flags"), [
    ("vllm serve M --port 8080 --max-model-len 8192", {"model": "M", "max_model_len": 8192}),
    ("vllm serve --port 8080 M", {"model": "M"}),  # the value is consumed, M stays the model
    ("vllm serve M --max_model_len=4K", {"model": "M", "max_model_len": 4096}),
    ("vllm serve M --max-model-len auto", {"model": "M", "max_model_len": -1}),
    ("vllm serve M --max-model-len -1", {"model": "M", "max_model_len": -1}),
    ("vllm serve M --max-model 8k", {"model": "M", "max_model_len": 8000}),  # argparse prefix
    ("vllm serve M -qfp8", {"model": "M", "quantization": "fp8"}),
    ("vllm serve M --no-enable-prefix-caching", {"model": "M", "enable_prefix_caching": False}),
    ("vllm serve M --lora-modules a=b c=d -tp 2", {"model": "M", "tensor_parallel_size": 2}),
    ("python3 -m vllm.entrypoints.openai.api_server --model M --dtype half",
     {"model": "M", "dtype": "half"}),
])
def test_parse_args(cmd, flags):
    p = parse_args(cmd.split(), "0.33.0")
    assert p.flags == flags and not p.unknown


def test_unknown_tokens_carry_the_nearest_option_and_vllms_message():
    p = parse_args(["vllm", "serve", "M", "--max-modle-len", "8192", "--port", "1"], "0.33.0")
    assert [(u.token, u.index, u.suggestion, u.values) for u in p.unknown] == [
        ("--max-modle-len", 3, "--max-model-len", ("8192",))]
    assert unrecognized_message(p.unknown).startswith("unrecognized arguments: --max-modle-len 8192")
    # the api_server module takes no positional model
    p = parse_args(["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "M", "extra"])
    assert [u.token for u in p.unknown] == ["extra"]


def test_unmodelled_options_are_reported_with_their_index():
    # LoRA is modelled (configurator/estimate/features.py); KV transfer and multimodal limits are not
    p = parse_args(["vllm", "serve", "M", "--kv-transfer-config", "{}", "--mm-processor-kwargs", "{}"], "0.33.0")
    assert [(o.dest, o.index) for o in p.unmodelled] == [("--kv-transfer-config", 3), ("--mm-processor-kwargs", 5)]


@pytest.mark.parametrize(("version", "cmd", "needle"), [
    ("0.33.0", "--dtype fp16", "argument --dtype: invalid choice: 'fp16'"),
    ("0.33.0", "--port", "argument --port: expected one argument"),
    ("0.33.0", "--max 8", "ambiguous option: --max could match"),
    ("0.33.0", "--enforce-eager=true", "ignored explicit argument 'true'"),
    ("0.33.0", "--max-num-seqs x", "invalid int value: 'x'"),
    ("0.10.0", "--max-model-len 1t", "invalid human_readable_int value: '1t'"),  # no t before 0.13
    ("0.33.0", "--max-model-len 1.5K", "Decimals are not allowed with binary suffixes like K"),
    ("0.8.0", "--max-model-len 8k", "invalid int value: '8k'"),
])
def test_what_vllms_parser_refuses(version, cmd, needle):
    with pytest.raises(InputError, match=None) as e:
        parse_args(["vllm", "serve", "M", *cmd.split()], version)
    assert needle in str(e.value)


def test_releases_between_table_entries_use_the_one_before():
    assert release_args("0.11.0+cu128").version == "0.11.0"
    assert release_args(None).version == releases()[-1]
