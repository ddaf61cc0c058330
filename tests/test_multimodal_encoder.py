"""The multimodal encoder's share of vLLM's profiling run for Qwen3-VL-processor towers (Qwen3-VL, Qwen3.5 / 3.6):
the largest item the processor allows (image 16,384 merged tokens, video 12,288; video counted x 12.5 before
0.13.0), one output token as wide as the deepstack-concatenated features, and before 0.13.0 the outputs copied into
encoder-budget-sized tensors (gpu_model_runner.py profile_run, 0.11.0 / 0.12.0). Checked against a real log."""

import json
import re

import pytest

from configurator.estimate import EstimateRequest, estimate
from configurator.estimate.multimodal import encoder_output_width, plan_multimodal, qwen3vl_item
from configurator.model.resolve import resolve_model
from configurator.units import GiB
from tests.conftest import ROOT

QWEN3VL = "Qwen/Qwen3-VL-30B-A3B-Instruct"


def _record(rid: str) -> dict:
    for line in (ROOT / "data" / "logs" / "vllm-startup-logs.found.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["id"] == rid:
            return r
    raise LookupError(rid)


def _plan(version: str, **flags):
    return plan_multimodal(resolve_model(QWEN3VL), flags, dtype="bfloat16", num_tokens=2048, max_num_seqs=256,
                           max_model_len=65536, version=version)


def test_deepstack_features_widen_each_encoder_output_token():
    m = resolve_model(QWEN3VL)
    v = m.full_config["vision_config"]
    assert encoder_output_width(m) == v["out_hidden_size"] * (1 + len(v["deepstack_visual_indexes"])) == 8192


def test_a_vision_language_moe_at_tp_4_on_0_11_matches_its_log():
    """Qwen3-VL-30B-A3B, TP 4 on 4 x RTX 3090: the log prints an encoder budget of 153,600 tokens (one video item)
    and 2.31 GiB of available KV; its line numbers are 0.11.0's."""
    r = _record("vllm-log-f-042")
    budget = int(re.search(r"encoder cache budget (\d+) tokens", r["other_flags"]).group(1))
    flags = {"max_model_len": r["max_model_len"], "max_num_batched_tokens": r["max_num_batched_tokens"],
             "tensor_parallel_size": r["tensor_parallel_size"], "enable_prefix_caching": True}
    p = _plan("0.11.0")
    assert p.items == 1 and p.tokens_per_item == budget and p.expanded
    assert p.activation_bytes == budget * 8192 * 2  # the expanded outputs held while the decoder runs
    res = estimate(EstimateRequest(model=QWEN3VL, gpu="rtx-3090", vllm_version="0.11.0", flags=flags))
    logged = r["available_kv_cache_gib"] * GiB
    assert res.kv_cache_bytes_low <= logged <= res.kv_cache_bytes_high
    # the mechanism carries the prediction to within half a GiB of the log (it was 2.7 GiB over without it)
    assert abs(res.memory.kv_cache_bytes - logged) < 0.5 * GiB


@pytest.mark.parametrize("version", ["0.13.0", "0.15.0", "0.33.0"])
def test_from_0_13_the_largest_image_is_profiled_and_its_outputs_kept_as_they_are(version):
    p = _plan(version)
    assert (p.items, p.tokens_per_item, p.tokens, p.expanded) == (1, 16384, 16384, False)
    assert p.activation_bytes == 16384 * 8192 * 2
    # without images the video is profiled: one temporal patch at the video pixel cap, 12,288 tokens
    v = _plan(version, limit_mm_per_prompt='{"image": 0}')
    assert v.tokens_per_item == 12288 and v.activation_bytes == 12288 * 8192 * 2


def test_towers_outside_the_family_keep_the_budget_rule():
    gemma = resolve_model("google/gemma-3-27b-it")
    assert qwen3vl_item(gemma, ("image",), "0.33.0", 4096) == (0, 0)
