"""Issue 13: explanation totals, per-request reservation, DSA lines, refusals, the log lines, no GPU."""

import pytest

from configurator.estimate import EstimateRequest, estimate, request_bytes
from configurator.estimate.explain import _sz
from configurator.units import GiB
from configurator.vllm import messages


def _est(model, gpu="h100-80gb", version="0.33.0", **flags):
    return estimate(EstimateRequest(model=model, gpu=gpu, vllm_version=version, flags=flags))


def test_batch_total_is_a_cap_not_a_reservation_next_to_fits():  # item 4
    r = _est("meta-llama/Llama-3.1-8B-Instruct", max_model_len=8192)
    assert r.fits
    text = "\n".join(r.derivation)
    assert "sequences =" not in text  # the old "x 1,024 sequences = 512 GiB"
    assert "is a cap, not a reservation" in text and "all 1,024 at full length would need" in text
    pool = f"the {_sz(r.memory.kv_cache_bytes)} pool holds {r.kv_cache.max_concurrency:.2f}"
    assert pool in text


@pytest.mark.parametrize("model,gpu,typical,full_len", [
    ("openai/gpt-oss-120b", "h100-80gb", 4096, 131072),
    ("google/gemma-3-12b-it", "l40s", 4096, 32768),
    ("Qwen/Qwen3.6-27B", "h100-80gb", 8192, 65536),
])
def test_per_request_bytes_agree_with_the_batch(model, gpu, typical, full_len):  # item 5
    full = _est(model, gpu, max_model_len=full_len)
    probe = _est(model, gpu, max_model_len=typical)
    each = request_bytes(full.kv_cache, typical)
    assert each == probe.kv_cache.bytes_per_request
    # N requests of `each` fill the pool: what `plan` says per request times how many it batches
    assert full.memory.kv_cache_bytes / each == pytest.approx(probe.kv_cache.max_concurrency, rel=0.01)
    # windowed layers: the reservation is window + in-flight tokens, more than per-token KV alone says
    assert each > full.kv_cache.bytes_per_token * typical


def test_window_text_explains_the_in_flight_reservation():  # item 5
    r = _est("openai/gpt-oss-120b")
    text = "\n".join(r.derivation)
    assert "keep at most their window" in text and "vLLM reserves more per request" in text
    assert f"in flight (2 batches x 8,192 = {r.kv_cache.in_flight_tokens:,})" in text
    assert r.kv_cache.in_flight_tokens == 16384


def test_dsa_latent_and_indexer_are_two_correct_lines():  # item 6
    r = _est("deepseek-ai/DeepSeek-V3.2", "h200", tensor_parallel_size=8)
    mla = [x for x in r.derivation if x.startswith("61 MLA layers")]
    idx = [x for x in r.derivation if "indexer key caches" in x]
    assert len(mla) == 1 and "576 latent" in mla[0] and "70,272 B" in mla[0]  # 61 x 576 x 2 B
    assert len(idx) == 1 and "132 B" in idx[0] and "8,052 B" in idx[0]  # 61 x (128 + 4) x 1 B
    assert not any("132 latent" in x for x in r.derivation)


def test_bf16_on_volta_refuses_with_vllms_words_and_auto_falls_back():  # item 7
    r = _est("Qwen/Qwen3-8B", "v100-32gb", dtype="bfloat16", max_model_len=4096)
    assert not r.fits and r.verdict == "refused"
    assert r.errors[0] == messages.bf16_unsupported("Tesla V100-SXM2-32GB", "7.0")
    assert "compute capability of at least 8.0" in r.errors[0]
    auto = _est("Qwen/Qwen3-8B", "v100-32gb", max_model_len=4096)
    assert auto.model.dtype == "float16" and any("Falling back to torch.float16" in w for w in auto.warnings)
    assert _est("Qwen/Qwen3-8B", "a100-80gb", dtype="bfloat16", max_model_len=4096).fits


@pytest.mark.parametrize("method", ["awq", "gptq", "gptq_marlin", "awq_marlin", "modelopt_fp4"])
def test_checkpoint_quantization_on_an_unquantized_checkpoint_refuses(method):  # item 8
    r = _est("Qwen/Qwen3-8B", "l4", quantization=method, max_model_len=4096)
    assert not r.fits and f"Cannot find the config file for {method}" in r.errors


def test_online_quantization_and_matching_checkpoints_still_start():  # item 8
    assert _est("Qwen/Qwen3-8B", "l4", quantization="fp8", max_model_len=4096).fits
    assert _est("Qwen/Qwen3-14B-AWQ", "l4", quantization="awq_marlin", max_model_len=4096).fits


@pytest.mark.parametrize("version,lines", [("0.11.0", 4), ("0.27.0", 4), ("0.28.0", 3), ("0.33.0", 3)])
def test_log_lines_mirror_the_release(version, lines):  # item 27
    r = _est("Qwen/Qwen3-8B", version=version, max_model_len=8192)
    assert len(r.vllm_log) == lines
    cap = next(x for x in r.vllm_log if x.startswith("GPU KV cache size"))
    assert ("Maximum concurrency" in cap) == (lines == 3)  # one combined line from 0.28
    loading = r.vllm_log[0]
    assert loading.startswith("Model loading took") and ("GiB memory" in loading) == (version != "0.11.0")


def test_estimate_without_a_gpu_gives_per_token_and_per_sequence_figures(estimate_json):  # item 28
    code, r = estimate_json("--model", "meta-llama/Llama-2-7b-hf", "--max-model-len", "4096")
    assert code == 3 and r["verdict"] == "not-predicted" and r["not_modelled"] and "--gpu" in r["not_modelled"]
    assert r["kv_cache"]["bytes_per_token"] == 524_288 and r["memory"]["weights_bytes"] > 12 * GiB
    assert any("2 GiB of KV per GPU" in line for line in r["derivation"])
