"""The speed model: physical bounds, monotonic behaviour, and its public API on a real estimate."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from configurator.model.resolve import resolve_model
from configurator.speed import Speculative, Workload, estimate_speed, gpu_speed, speed_for_estimate
from configurator.speed.geometry import geometry
from tests.conftest import DATA

POINTS = DATA / "benchmarks" / "vllm-bench-points.jsonl"


def _est(model="Qwen/Qwen3-8B", gpu="h100-80gb", **kw):
    wl = kw.pop("workload", Workload(input_len=1024, output_len=256, concurrency=1))
    return estimate_speed(model, gpu, workload=wl, max_num_seqs=kw.pop("max_num_seqs", 256),
                          max_num_batched_tokens=8192, kv_tokens=kw.pop("kv_tokens", 400_000), **kw)


def test_single_stream_decode_is_slower_than_the_memory_roofline():
    """A token at batch 1 must at least read every dense weight once at the datasheet bandwidth."""
    s = _est()
    g = geometry(resolve_model("Qwen/Qwen3-8B", allow_hub=False))
    floor_ms = g.dense_bytes / (gpu_speed("h100-80gb").hbm_gbs * 1e9) * 1e3
    assert floor_ms * 1.05 < s.tpot_ms < floor_ms * 3
    assert s.prediction.bound.startswith("memory-bandwidth")


def test_more_concurrency_more_throughput_and_slower_tokens():
    prev = None
    for c in (1, 8, 64, 256):
        s = _est(workload=Workload(input_len=1024, output_len=256, concurrency=c))
        if prev:
            assert s.output_tok_s > prev.output_tok_s
            assert s.tpot_ms >= prev.tpot_ms
        prev = s


def test_kv_cache_caps_the_running_requests_and_says_so():
    s = _est(workload=Workload(input_len=4000, output_len=1000, concurrency=500), kv_tokens=45_000)
    assert s.prediction.running == pytest.approx(45_000 / 4500, rel=0.01)
    assert s.prediction.limits == ("KV cache", "queue")
    assert s.ttft_ms > _est(workload=Workload(input_len=4000, output_len=1000, concurrency=10),
                            kv_tokens=45_000).ttft_ms * 5  # the queue shows in the time to first token


def test_fp8_kv_halves_the_kv_bytes_and_tp_splits_them():
    m = resolve_model("Qwen/Qwen3-32B", allow_hub=False)
    auto, fp8, tp2 = geometry(m), geometry(m, kv_cache_dtype="fp8"), geometry(m, tp=2)
    assert fp8.kv_bytes_per_token == auto.kv_bytes_per_token / 2
    assert tp2.kv_bytes_per_token == auto.kv_bytes_per_token / 2
    assert auto.kv_bytes_per_token == 64 * 8 * 2 * 128 * 2  # layers x kv heads x (K, V) x head_dim x bf16


def test_moe_reads_the_active_experts_at_batch_one_and_all_of_them_at_large_batches():
    g = geometry(resolve_model("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", allow_hub=False), tp=4)
    assert g.num_experts == 128 and g.top_k == 8
    assert g.experts_touched(1) == pytest.approx(8 / 128)
    assert g.experts_touched(4096) > 0.999
    assert g.active_params < g.expert_bytes  # 22B active of 235B: the active share is far below the weights


def test_routed_pairs_move_activations_by_top_k_hidden_and_moe_layers():
    """The routed experts' activation traffic per token grows with top_k x hidden x MoE layers: Qwen3-235B-A22B
    (top-8, hidden 4,096, 94 MoE layers) moves several times what gpt-oss-120b (top-4, 2,880, 36) does, and
    expert parallelism leaves each expert's width whole on its rank."""
    big = geometry(resolve_model("Qwen/Qwen3-235B-A22B-Instruct-2507", allow_hub=False), tp=8)
    small = geometry(resolve_model("openai/gpt-oss-120b", allow_hub=False), tp=8)
    per_token = [g.act_bytes_pair * g.top_k for g in (big, small)]
    assert per_token[0] > 5 * per_token[1]
    ep = geometry(resolve_model("Qwen/Qwen3-235B-A22B-Instruct-2507", allow_hub=False), tp=8, ep_size=8)
    assert ep.act_bytes_pair > big.act_bytes_pair
    dense = geometry(resolve_model("Qwen/Qwen3-8B", allow_hub=False))
    assert dense.act_bytes_pair == 0 and dense.act_bytes_token > 0


def test_activation_traffic_slows_a_large_moe_batch_not_a_single_token():
    """At one token the activations are a rounding error of the weight reads; at a 256-sequence MoE batch they
    are a visible part of the step."""
    from configurator.speed.model import Layout, Params, step_time

    g = geometry(resolve_model("Qwen/Qwen3-235B-A22B-Instruct-2507", allow_hub=False), tp=8)
    gpu, lay = gpu_speed("a100-80gb"), Layout(tp=8)
    no_act = dataclasses.replace(g, act_bytes_pair=0.0, act_bytes_token=0.0)
    for decodes, lo, hi in ((1, 1.0, 1.01), (256, 1.03, 1.5)):
        with_act = step_time(g, gpu, lay, Params(), decodes=decodes, ctx=1024)[0]
        without = step_time(no_act, gpu, lay, Params(), decodes=decodes, ctx=1024)[0]
        assert lo <= with_act / without <= hi, (decodes, with_act / without)


def test_a_step_larger_than_a_cuda_graph_pays_each_layers_launches():
    """vLLM captures CUDA graphs up to min(2 x max_num_seqs, 512) tokens: one token more and every layer's kernels
    are launched one by one (t_eager_layer x layers), one token fewer and they are not."""
    from configurator.speed.model import Layout, Params, step_time

    g = geometry(resolve_model("Qwen/Qwen3-8B", allow_hub=False))
    gpu, p = gpu_speed("h100-80gb"), Params(t_eager_layer=100e-6)
    t = {n: step_time(g, gpu, Layout(), p, decodes=n, ctx=512)[0] for n in (511, 512, 513)}
    assert t[513] - t[512] == pytest.approx(g.layers * 100e-6, rel=0.05)
    assert t[512] - t[511] < 0.1 * g.layers * 100e-6
    small = step_time(g, gpu, Layout(), p, decodes=300, ctx=512, graph_max=256)[0]  # max_num_seqs 128
    assert small > step_time(g, gpu, Layout(), p, decodes=300, ctx=512)[0] + 0.9 * g.layers * 100e-6


def test_tensor_parallel_shortens_the_token_on_nvlink():
    one = _est(model="Qwen/Qwen3-32B")
    two = _est(model="Qwen/Qwen3-32B", tp=2)
    assert two.tpot_ms < one.tpot_ms * 0.75 and two.gpus == 2


def test_speculative_decoding_shortens_the_token_at_low_concurrency():
    plain = _est()
    spec = _est(speculative=Speculative(num_tokens=3, acceptance=0.7))
    assert spec.tpot_ms < plain.tpot_ms
    assert any("speculative" in n for n in spec.notes)


def test_gpu_without_datasheet_figures_has_no_estimate():
    assert gpu_speed("gb10") is None
    assert _est(gpu="gb10") is None
    assert gpu_speed("a100-80gb:3g.40gb") is None


def test_bands_hold_the_prediction(estimate_json):
    code, d = estimate_json("--gpu", "h100-80gb", "--max-model-len", "8192", "--", "vllm", "serve", "Qwen/Qwen3-8B")
    assert code == 0
    s = speed_for_estimate(d, Workload(input_len=1024, output_len=256, concurrency=32))
    assert s is not None
    for m in ("ttft_ms", "tpot_ms", "output_tok_s"):
        lo, hi = s[m + "_band"]
        assert lo <= s[m] <= hi
    assert s["running_per_engine"] == 32 and s["gpu_figures"]["source"].startswith("https://")


def test_benchmark_points_are_complete_and_split_by_their_source_url():
    points = [json.loads(line) for line in POINTS.read_text().splitlines()]
    assert len(points) >= 40 and len({p["source_url"] for p in points}) >= 15
    for p in points:
        assert p["provenance"] in ("A", "B", "C") and p["source_url"].startswith("http")
        assert p["split"] == ("test" if hashlib.sha256(p["source_url"].encode()).hexdigest()[0] in "01234" else "train")
        assert p["output_throughput"] or p["median_tpot_ms"] or p["mean_tpot_ms"] or p["median_itl_ms"]
        assert gpu_speed(p["gpu"]) is not None, p["gpu"]  # every point's GPU has datasheet figures


def test_a_burst_with_varied_lengths_drains_slower_than_one_of_equal_lengths():
    """All requests at once: with ShareGPT-like varied outputs the last ones decode nearly alone, so the same work
    takes longer than when every output has the mean length."""
    same = _est(workload=Workload(input_len=200, output_len=200, num_prompts=1000), max_num_seqs=1024)
    varied = _est(workload=Workload(input_len=200, output_len=200, num_prompts=1000, variable_lengths=True),
                  max_num_seqs=1024)
    assert varied.output_tok_s < same.output_tok_s * 0.9
    queued = _est(workload=Workload(input_len=200, output_len=200, num_prompts=1000), max_num_seqs=64)
    assert queued.ttft_ms > same.ttft_ms * 3  # the median request waits for a queue to drain


def test_an_online_quantization_flag_shrinks_the_weights_read(estimate_json):
    code, d = estimate_json("--gpu", "l4", "--max-model-len", "4096", "--quantization", "fp8", "--", "vllm", "serve",
                            "Qwen/Qwen3-8B")
    assert code == 0
    wl = Workload(input_len=512, output_len=256, concurrency=1)
    fp8 = speed_for_estimate(d, wl)
    d["flags"]["quantization"] = None
    bf16 = speed_for_estimate(d, wl)
    assert fp8["tpot_ms"] < bf16["tpot_ms"] * 0.75


def test_replayed_burst_runs_max_num_seqs_and_keeps_the_step_budget():
    """A burst four times max_num_seqs with room in the KV cache: max_num_seqs run, none is preempted, every request
    finishes with its output, and a replacement's prefill shares the running decodes' steps."""
    from configurator.speed.schedule import replay
    tr = replay(256, 1000, 100.0, False, 64, 2048, 1e7, None, 128)
    assert tr.peak_running == 64 and tr.preemptions == 0
    assert all(last >= first >= 0 for first, last in zip(tr.first, tr.last, strict=True))
    assert sum(tr.output) == 256 * 100
    # every step holds at most max_num_batched_tokens tokens, and some steps mix decodes with a prompt
    classes = [c for _, _, cs in tr.segments for c in cs]
    assert all(c.decodes + c.prefill <= 2048 for c in classes)
    assert any(c.prefill > 0 and c.decodes > 0 for c in classes)


def test_a_kv_capped_burst_preempts_and_recomputes():
    """Prompts are admitted while their blocks fit, then the growing outputs overflow the pool: vLLM preempts the
    newest request and recomputes it (vllm/v1/core/sched/scheduler.py), so fewer run than the prompts suggest."""
    from configurator.speed.schedule import BLOCK, replay
    kv = 20_000
    tr = replay(1000, 200, 200.0, False, 1024, 8192, kv, None, 512)
    assert tr.preemptions > 0
    assert tr.peak_running <= kv // BLOCK // (200 // BLOCK)  # the prompts' blocks bound who runs at once
    assert sum(tr.output) / tr.steps < kv / 200  # tokens per step below what the prompts alone would allow


def test_replacement_prefills_lengthen_the_tpot_of_a_burst_beyond_the_decode_step():
    """More requests than run at once: each finished request is replaced by a waiting one whose prefill runs in the
    running decodes' steps, so the median TPOT exceeds a decode-only step of the same batch."""
    burst = _est(workload=Workload(input_len=2000, output_len=100, num_prompts=1024), max_num_seqs=64)
    steady = _est(workload=Workload(input_len=2000, output_len=100, concurrency=1), max_num_seqs=64)
    from configurator.speed import calibrated_params
    from configurator.speed.model import Layout, step_time
    g = geometry(resolve_model("Qwen/Qwen3-8B", allow_hub=False))
    t_d, _ = step_time(g, gpu_speed("h100-80gb"), Layout(), calibrated_params(), decodes=64, ctx=2050)
    assert burst.tpot_ms > t_d * 1e3 * 1.5
    assert burst.tpot_ms > steady.tpot_ms


def test_the_serving_path_cost_lands_in_ttft_only():
    """t_first (the HTTP request, tokenizing, the engine core's queue, the first token's way back) is a fixed cost
    in a request's time to first token; the steps, and so TPOT and throughput, do not change."""
    from configurator.speed import calibrated_params

    base = calibrated_params()
    wl = Workload(input_len=230, output_len=200, concurrency=4)
    a = _est(workload=wl, params=dataclasses.replace(base, t_first=0.0))
    b = _est(workload=wl, params=dataclasses.replace(base, t_first=0.05))
    assert b.ttft_ms == pytest.approx(a.ttft_ms + 50.0)
    assert (b.tpot_ms, b.output_tok_s) == (a.tpot_ms, a.output_tok_s)


def test_the_calibrated_ttft_has_a_serving_path_cost():
    """The shipped calibration carries a fitted t_first: the published single-digit-concurrency runs' TTFTs
    (37-118 ms for ~230-token prompts) are not a GPU's few milliseconds of prefill alone."""
    from configurator.speed import calibrated_params

    assert 0.005 <= calibrated_params().t_first <= 0.2
