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


def test_chat_output_lengths_are_sent_mixed_as_the_benchmark_samples_them():
    """A chat dataset's exponential output lengths keep their mean and cap, but come in a mixed order (the
    benchmark samples ShareGPT at random): any max_num_seqs requests sent together hold short and long outputs
    alike. Sent shortest first, the first batch admitted finished at once and churned prefills, and the longest
    were left to a drain at a small batch."""
    import statistics

    from configurator.speed.schedule import output_lengths
    outs = output_lengths(1000, 200.0, True, isl=220)
    assert abs(statistics.fmean(outs) - 200) < 1 and max(outs) <= 2048 - 220
    assert outs == output_lengths(1000, 200.0, True, isl=220)  # deterministic, order included
    for start in range(0, 1000 - 256, 64):
        window = outs[start:start + 256]
        assert 150 < statistics.fmean(window) < 250, start  # each batch's mean near the whole's
        assert min(window) < 20 and max(window) > 600, start
    assert output_lengths(10, 200.0, False) == [200] * 10


@pytest.mark.parametrize("model,has_fp8,dense,experts", [
    ("Qwen/Qwen3-14B-AWQ", True, True, False),  # W4A16 everywhere
    ("Qwen/Qwen3-14B-FP8", False, True, False),  # FP8 weights on a GPU without FP8 tensor cores: W8A16
    ("Qwen/Qwen3-14B-FP8", True, False, False),  # W8A8 on FP8 tensor cores: nothing to unpack
    ("Qwen/Qwen3-14B", False, False, False),
    ("openai/gpt-oss-120b", True, False, True),  # MXFP4 experts, 16-bit attention
])
def test_which_gemms_dequantize_their_weights(model, has_fp8, dense, experts):
    g = geometry(resolve_model(model, allow_hub=False), gpu_has_fp8=has_fp8)
    assert (g.dequant_dense, g.dequant_experts) == (dense, experts)


def test_a_dequantizing_gemm_is_slower_only_where_the_step_is_compute_bound():
    """eta_wq slows a weight-only checkpoint's GEMMs: a large batch (compute-bound) takes longer, a single
    decode (bound by reading the weights) does not."""
    from configurator.speed.model import Layout, Params, step_time
    g = geometry(resolve_model("Qwen/Qwen3-14B-AWQ", allow_hub=False))
    gpu = gpu_speed("a100-80gb")
    full, slow = Params(eta_wq=1.0), Params(eta_wq=0.5)
    big = dict(decodes=256, ctx=500, prefill=1500, prefill_ctx=800)
    assert step_time(g, gpu, Layout(), slow, **big)[0] > 1.2 * step_time(g, gpu, Layout(), full, **big)[0]
    one = dict(decodes=1, ctx=500)
    assert step_time(g, gpu, Layout(), slow, **one)[0] == pytest.approx(step_time(g, gpu, Layout(), full, **one)[0])


def test_the_lm_head_multiplies_one_row_per_request_not_every_prompt_token():
    """vLLM computes logits for the rows it samples (hidden_states[logits_indices]): a 4,096-token prefill pays
    the lm_head once, 4,096 decodes pay it 4,096 times. Qwen3-0.6B's tied 151,936 x 1,024 head is a quarter of
    what a token multiplies: counted per prompt token it would add a third to its prefill's GEMMs."""
    from configurator.speed.model import Layout, Params, step_time
    g = geometry(resolve_model("Qwen/Qwen3-0.6B", allow_hub=False))
    assert g.head_params == pytest.approx(151_936 * 1_024)
    assert g.head_params > 0.2 * g.active_params
    headless = dataclasses.replace(g, head_params=0.0, active_params=g.active_params - g.head_params)
    gpu, lay, p = gpu_speed("h100-80gb"), Layout(), Params(t0=0.0, t_seq=0.0)

    def ratio(**step):
        return step_time(g, gpu, lay, p, **step)[0] / step_time(headless, gpu, lay, p, **step)[0]
    assert ratio(decodes=0, ctx=0, prefill=4096, prefill_ctx=2048) < 1.01
    assert ratio(decodes=4096, ctx=64) > 1.08


def test_expert_parallel_in_one_engine_runs_the_fused_kernel_over_every_pair():
    """EP inside one engine (dp 1) keeps every token on every rank: the fused-MoE kernel walks all (token,
    expert) pairs and writes zeros for the other ranks' experts, so a rank's activation traffic is all pairs at
    the whole expert width. Across DP engines the all-to-all hands a rank its share of everyone's pairs."""
    from configurator.speed.model import Layout, Params, step_time
    model = resolve_model("Qwen/Qwen3-235B-A22B-Instruct-2507", allow_hub=False)
    gpu, p = gpu_speed("h100-80gb"), Params()
    bw = p.eta_bw * gpu.hbm_gbs * 1e9
    for lay, share in ((Layout(tp=8, ep=True), 1.0), (Layout(tp=4, dp=2, ep=True), 2 / 8)):
        g = geometry(model, tp=lay.tp, ep_size=lay.tp * lay.dp)
        assert g.expert_width == 1536  # whole experts on a rank
        extra = (step_time(g, gpu, lay, p, decodes=256, ctx=512)[0]
                 - step_time(dataclasses.replace(g, act_bytes_pair=0.0), gpu, lay, p, decodes=256, ctx=512)[0])
        assert extra == pytest.approx(256 * g.top_k * share * g.act_bytes_pair / bw, rel=1e-6), lay


def test_expert_parallel_across_dp_engines_serves_every_engines_tokens():
    """DP 8 + EP: each rank holds 1/8 of the experts and multiplies the pairs all eight engines route to them, as
    many as a TP 8 + EP rank that runs all the tokens in one engine. One GPU with the flag has no rank to wait
    for: no imbalance."""
    from configurator.speed.model import Layout, Params, step_time
    model = resolve_model("Qwen/Qwen3-235B-A22B-Instruct-2507", allow_hub=False)
    gpu, p = gpu_speed("h100-80gb"), Params(eta_bw=1e6, ep_imbalance=1.0)  # compute only: no byte term binds

    def expert_time(lay, g, tokens):
        step = dict(decodes=0, ctx=0, prefill=tokens, prefill_ctx=0)
        no_experts = dataclasses.replace(g, expert_active_params=0.0, active_params=g.active_params
                                         - g.expert_active_params)
        return step_time(g, gpu, lay, p, **step)[0] - step_time(no_experts, gpu, lay, p, **step)[0]
    dp, tp = Layout(tp=1, dp=8, ep=True), Layout(tp=8, ep=True)
    assert expert_time(dp, geometry(model, tp=1, ep_size=8), 1024) == pytest.approx(
        expert_time(tp, geometry(model, tp=8, ep_size=8), 8192), rel=1e-6)
    one = geometry(resolve_model("Qwen/Qwen3-30B-A3B", allow_hub=False))
    assert expert_time(Layout(ep=True), one, 4096) == pytest.approx(expert_time(Layout(), one, 4096), rel=1e-9)


def test_a_tensor_parallel_slice_of_an_expert_computes_slower_than_a_whole_expert():
    """moe_w_half: Qwen3-235B-A22B's 1,536-wide experts sliced over TP8 are 192 wide, narrow GEMMs whose
    compute-bound steps slow down; whole experts (EP) much less; a single decode, bound by the weight reads,
    not at all. ep_imbalance slows only the expert-parallel layout's expert GEMMs."""
    from configurator.speed.model import Layout, Params, step_time
    model = resolve_model("Qwen/Qwen3-235B-A22B-Instruct-2507", allow_hub=False)
    tp, ep = geometry(model, tp=8), geometry(model, tp=8, ep_size=8)
    assert tp.expert_width == 1536 / 8
    gpu, big = gpu_speed("a100-80gb"), dict(decodes=0, ctx=0, prefill=8192, prefill_ctx=4096)
    flat, narrow = Params(moe_w_half=0.0), Params(moe_w_half=256.0)

    def slowdown(g, lay, **step):
        return step_time(g, gpu, lay, narrow, **step)[0] / step_time(g, gpu, lay, flat, **step)[0]
    assert slowdown(tp, Layout(tp=8), **big) > 1.3
    assert 1.0 < slowdown(ep, Layout(tp=8, ep=True), **big) < slowdown(tp, Layout(tp=8), **big)
    assert slowdown(tp, Layout(tp=8), decodes=1, ctx=512) == pytest.approx(1.0)
    skew = Params(ep_imbalance=1.0)
    assert step_time(ep, gpu, Layout(tp=8, ep=True), skew, **big)[0] > 1.2 * step_time(
        ep, gpu, Layout(tp=8, ep=True), Params(), **big)[0]
    assert step_time(tp, gpu, Layout(tp=8), skew, **big)[0] == step_time(tp, gpu, Layout(tp=8), Params(), **big)[0]


def test_a_sliding_window_group_holds_its_window_not_the_whole_request():
    """A hybrid pool (gpt-oss: half the layers slide over 128 tokens) counts blocks over its groups as vLLM
    does: the full-attention group grows with the request, the window group holds its window and the tokens of
    the step (vLLM frees the blocks that fall out of the window). Long prompts then fit more requests than
    counting every layer as full attention would."""
    from configurator.estimate import EstimateRequest, estimate
    from configurator.record import to_json
    from configurator.speed.schedule import BLOCK, group_cap, kv_groups, replay

    result = estimate(EstimateRequest(model="openai/gpt-oss-120b", gpu="h100-80gb", vllm_version="0.11.0"))
    est = json.loads(to_json(result))
    groups = kv_groups(est["kv_cache"])
    assert sorted(groups) == [-128, 0]
    assert kv_groups(result.kv_cache) == groups  # the record itself reads as its JSON does
    assert group_cap(-128, 1) == 128 // BLOCK + 1 and group_cap(-128, 2048) == -(-(127 + 2048) // BLOCK) + 1
    assert kv_groups({"groups": []}) == (0,) and kv_groups(None) == (0,)
    kv = 60_000
    flat = replay(200, 16_000, 50.0, False, 256, 8192, kv, None, 512)
    hybrid = replay(200, 16_000, 50.0, False, 256, 8192, kv, None, 512, groups)
    assert hybrid.peak_running > flat.peak_running
    # decoding, a request holds its window's blocks, not the window and a prefill chunk: 2,000-token prompts in
    # a pool of 2,000 x 40 / 16 blocks run about twice the requests counting every layer as full would
    long_flat = replay(200, 2000, 400.0, False, 256, 8192, 80_000, None, 512)
    long_hybrid = replay(200, 2000, 400.0, False, 256, 8192, 80_000, None, 512, (-128, 0))
    assert long_hybrid.peak_running > 1.6 * long_flat.peak_running
    # a request shorter than the window's blocks holds as many blocks in each group: no change
    short_flat = replay(50, 200, 20.0, False, 256, 8192, kv, None, 512)
    short_hybrid = replay(50, 200, 20.0, False, 256, 8192, kv, None, 512, (600, 0))
    assert short_flat.peak_running == short_hybrid.peak_running


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
