"""CLI behaviour: exit codes, one-line errors, vLLM's refusal text, `-- vllm serve` commands."""

import json

import jsonschema
import pytest

from configurator.schemas import estimate_schema


def _one_line_error(res, *needles):
    assert res.exit_code == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    err = res.stderr.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, err


def test_bad_input_is_one_line_and_exit_2(run_cli, tmp_path):
    _one_line_error(run_cli("estimate", "--model", "meta-llama/Llama-2-7b", "--gpu", "a100"),
                    "unknown model", "Llama-2-7b-hf")
    _one_line_error(run_cli("estimate", "--model", "llama-2-7b", "--gpu", "h1000"), "unknown GPU", "nearest")
    bad = tmp_path / "config.json"
    bad.write_text('{"num_hidden_layers": 32, "hidden_size": 40')
    _one_line_error(run_cli("estimate", "--model", str(bad), "--gpu", "l4"), "malformed or truncated")
    bad.write_text('{"model_type": "qwen2", "hidden_size": 4096}')
    _one_line_error(run_cli("estimate", "--model", str(bad), "--gpu", "l4"), "num_hidden_layers")
    for args, needle in (
        (("--gpu-memory-utilization", "1.5"), "(0, 1]"),
        (("--gpu-memory-utilization", "0"), "(0, 1]"),
        (("--kv-cache-dtype", "fp7"), "unknown --kv-cache-dtype"),
        (("-tp", "3"), "divisible by tensor parallel size"),
        (("--max-model-len", "-5"), "--max-model-len"),
        (("--kv-cache-memory-bytes", "-1"), "negative"),
        (("--max-num-seqs", "abc"), "invalid int value: 'abc'"),
    ):
        _one_line_error(run_cli("estimate", "--model", "llama-2-7b", "--gpu", "a100", *args), needle)
    _one_line_error(run_cli("estimate", "--model", "llama-2-7b", "--gpu-memory", "-3GiB"), "--gpu-memory")


def test_refusal_exit_1_with_vllms_text(run_cli):
    res = run_cli("estimate", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4",
                  "--max-model-len", "131072", "--vllm-version", "0.33.0")
    assert res.exit_code == 1
    assert "To serve at least one request with the model's max seq len (131072)" in res.stdout
    assert "the estimated maximum model length is" in res.stdout


def test_old_release_wording(estimate_json):
    code, r = estimate_json("--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4",
                            "--max-model-len", "131072", "--vllm-version", "0.11.0")
    assert code == 1 and r["vllm_version"] == "0.11.0"
    assert "models's max seq len" in r["errors"][0]
    assert r["flags"]["gpu_memory_utilization"] == 0.9


def test_serve_command_after_double_dash(estimate_json):
    code, r = estimate_json("--gpu", "l4", "--", "vllm", "serve", "Qwen/Qwen3-8B", "--max_model_len=8192",
                            "--gpu-memory-utilization", "0.9", "--kv-cache-dtype", "fp8")
    assert code == 0
    assert r["flags"]["max_model_len"] == 8192 and r["flags"]["kv_cache_dtype"] == "fp8"
    assert r["flags"]["gpu_memory_utilization"] == 0.9


def test_kv_cache_memory_bytes_used_exactly(estimate_json):
    _, r = estimate_json("--model", "Qwen/Qwen2-7B-Instruct", "--gpu", "a100-80gb", "--max-model-len", "16384",
                         "--kv-cache-memory-bytes", "5G", "--vllm-version", "0.10.2")
    assert r["memory"]["kv_cache_bytes"] == 5 * 2**30
    assert r["kv_cache"]["num_blocks"] == 5 * 2**30 // (28 * 2 * 4 * 128 * 2 * 16)


def test_auto_max_model_len_fits_memory(estimate_json):
    code, r = estimate_json("--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4", "--max-model-len", "auto")
    assert code == 0 and 0 < r["flags"]["max_model_len"] < 131072
    code, _r2 = estimate_json("--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4",
                             "--max-model-len", str(r["flags"]["max_model_len"] + 64))
    assert code == 1  # one step longer is refused


def test_json_follows_schema(estimate_json):
    _, r = estimate_json("--model", "llama-2-7b", "--gpu", "h100")
    jsonschema.validate(r, estimate_schema())
    for key in ("total_bytes", "requested_bytes", "weights_bytes", "activation_bytes", "non_torch_bytes",
                "cudagraph_bytes", "kv_cache_bytes"):
        assert isinstance(r["memory"][key], int)


def test_gpu_memory_used_triggers_free_memory_refusal(estimate_json):
    code, r = estimate_json("--model", "llama-2-7b", "--gpu", "l4", "--gpu-memory-used", "6GiB",
                            "--gpu-memory-utilization", "0.9")
    assert code == 1 and "Free memory on device" in r["errors"][0]


def test_gpus_lists_catalog(run_cli):
    res = run_cli("gpus", "--format", "json")
    names = {g["name"] for g in json.loads(res.stdout)}
    assert {"h100-80gb", "a100-80gb", "l4", "h200", "b200", "mi300x"} <= names


def test_refusal_text_matches_a_real_log():
    """vllm-log-014: Qwen2.5-7B geometry, max_model_len 32768, 'Available KV cache memory' ~1.096 GiB."""
    from configurator.vllm import messages

    logged = ("To serve at least one request with the model's max seq len (32768), (1.75 GiB KV cache is needed, "
              "which is larger than the available KV cache memory (1.1 GiB). Based on the available memory, the "
              "estimated maximum model length is 20512.")
    text = messages.too_long("v0_23", 32768, 2048 * 917_504, 1282 * 917_504 + 1000, 20512)
    assert text.startswith(logged)


def test_weights_larger_than_the_gpu(estimate_json):
    code, r = estimate_json("--model", "deepseek-ai/DeepSeek-R1", "--gpu", "h100", "--max-model-len", "16000")
    assert code == 1 and r["errors"][0].startswith("CUDA out of memory while loading the model")


def test_typo_after_double_dash_exits_1_with_vllms_text_and_nearest_flag(run_cli):
    res = run_cli("estimate", "--gpu", "l4", "--", "vllm", "serve", "Qwen/Qwen3-8B", "--max-modle-len", "8192")
    assert res.exit_code == 1
    assert "vllm: error: unrecognized arguments: --max-modle-len 8192" in res.stderr
    assert "--max-model-len" in res.stderr.split("unrecognized arguments")[1].split("8192", 1)[1]


def test_option_not_in_the_release_is_unrecognized(run_cli):
    # --kv-cache-memory-bytes arrived in 0.10.2 (vllm/engine/arg_utils.py)
    res = run_cli("estimate", "--model", "Qwen/Qwen2-7B-Instruct", "--gpu", "a100-80gb",
                  "--kv-cache-memory-bytes", "5G", "--vllm-version", "0.10.1.1")
    assert res.exit_code == 1 and "unrecognized arguments: --kv-cache-memory-bytes=5G" in res.stderr


def test_values_outside_the_releases_choices_are_refused_in_vllms_words(run_cli):
    for version, args, needle in (
        ("0.33.0", ("--dtype", "fp16"), "argument --dtype: invalid choice: 'fp16' (choose from 'auto',"),
        ("0.33.0", ("--dtype", "bf16"), "invalid choice: 'bf16'"),
        ("0.10.0", ("-q", "bogus"), "argument --quantization/-q: invalid choice: 'bogus'"),
        ("0.33.0", ("-q", "bogus"), "Unknown quantization method: bogus"),
        ("0.10.0", ("--block-size", "7"), "argument --block-size: invalid choice: 7 (choose from 1, 8, 16"),
    ):
        _one_line_error(run_cli("estimate", "--model", "llama-2-7b", "--gpu", "a100-80gb", "--vllm-version",
                                version, *args), needle)
        _one_line_error(run_cli("estimate", "--gpu", "a100-80gb", "--vllm-version", version, "--", "vllm", "serve",
                                "llama-2-7b", *args), needle)


def test_lengths_read_as_vllm_reads_them(estimate_json):
    for text, tokens in (("8K", 8192), ("8k", 8000), ("8192", 8192), ("2.5k", 2500)):
        _, r = estimate_json("--model", "Qwen/Qwen3-8B", "--gpu", "h100-80gb", "--max-model-len", text)
        assert r["flags"]["max_model_len"] == tokens, text
        _, r = estimate_json("--gpu", "h100-80gb", "--", "vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", text)
        assert r["flags"]["max_model_len"] == tokens, text


def test_token_counts_get_token_count_messages(run_cli):
    _one_line_error(run_cli("estimate", "--model", "llama-2-7b", "--gpu", "l4", "--max-model-len", "8,192"),
                    "8k (8,000)", "8K (8,192)")
    _one_line_error(run_cli("estimate", "--model", "llama-2-7b", "--gpu", "l4", "--max-model-len", "1.5K"),
                    "Decimals are not allowed with binary suffixes like K")


def test_bare_gpu_memory_is_gib(estimate_json):
    _, bare = estimate_json("--model", "Qwen/Qwen3-8B", "--gpu-memory", "80")
    _, unit = estimate_json("--model", "Qwen/Qwen3-8B", "--gpu-memory", "80GiB")
    assert bare["memory"]["total_bytes"] == unit["memory"]["total_bytes"] == 80 * 2**30


def test_absurd_numbers_are_one_line_exit_2(run_cli):
    huge = "9" * 400
    for opt in ("--gpu-memory", "--gpu-memory-used", "--kv-cache-memory-bytes", "--max-model-len",
                "--cpu-offload-gb", "--max-num-batched-tokens"):
        for value in ("1e308TiB", "inf", "nan", huge, "-inf", "1e400"):
            args = ["estimate", "--model", "llama-2-7b", opt, value]
            if opt != "--gpu-memory":
                args += ["--gpu", "l4"]
            _one_line_error(run_cli(*args))


def test_ambiguous_alias_says_which_gpu_it_picked(run_cli):
    res = run_cli("estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "a100")
    assert "using a100-80gb" in res.stderr and "a100-40gb" in res.stderr
    res = run_cli("estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "a100-40gb")
    assert "note:" not in res.stderr


def test_closed_pipe_keeps_the_verdicts_exit_code(tmp_path):
    import subprocess
    import sys

    code = ("import sys; sys.argv = ['vllm-configurator', 'estimate', '--model', 'Qwen/Qwen3-8B', '--gpu', "
            "'h100-80gb', *sys.argv[1:]]\nfrom configurator.cli.main import main\nmain()")
    for extra, verdict in (([], 0), (["--max-model-len", "128K"], 1)):
        p = subprocess.Popen([sys.executable, "-c", code, *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        p.stdout.readline()
        p.stdout.close()  # `| head -1`
        assert p.wait(timeout=60) == verdict


def test_a_model_id_the_hub_client_refuses_is_an_unknown_model():
    """Issue 16: '.cache/huggingface' and the like get the tool's own message, never the Hub client's."""
    import pytest

    from configurator.errors import NotFoundError
    from configurator.model.resolve import resolve_model

    for bad in (".cache/huggingface", "a//b", "org/name with spaces", "Qwen/Qwen3-8BB!"):
        with pytest.raises(NotFoundError, match="unknown model"):
            resolve_model(bad, allow_hub=False)


@pytest.mark.parametrize("option", [["-dcp", "2"], ["--moe-backend", "triton"], ["--kv-transfer-config", "{}"]])
def test_an_unmodelled_memory_option_is_named_in_the_json_warnings(run_cli, option):
    res = run_cli("estimate", "--gpu", "h100-80gb", "--vllm-version", "0.25.0", "--format", "json", "--",
                  "vllm", "serve", "Qwen/Qwen3-8B", *option)
    assert res.exit_code in (0, 1), res.stderr
    warnings = json.loads(res.stdout)["warnings"]
    assert any(w.startswith("not-modelled: ") and "not modelled" in w for w in warnings), warnings
