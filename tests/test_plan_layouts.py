"""Issue 28's new-user cases, through the CLI: quantized remedies, the larger GPU of the same family first,
replicas instead of pipeline stages across nodes, data parallel + expert parallel for a MoE / MLA model, a
queue workload, and TTFT / TPOT targets (the fewest GPUs that meet them, what binds, the next step up)."""

import json

import yaml

from configurator.hardware.catalog import find_gpu
from configurator.plan import PlanRequest, _larger_gpus, plan
from configurator.workloads import load_workload

MIXTRAL = "mistralai/Mixtral-8x7B-Instruct-v0.1"
QWEN_MOE_FP8 = "Qwen/Qwen3-235B-A22B-FP8"


def _plan_json(run_cli, *args):
    res = run_cli("plan", *args, "--format", "json")
    return res.exit_code, json.loads(res.stdout)


def _rows(p) -> dict:
    return {r["flag"]: r for r in p["reasons"]}


def test_mixtral_on_two_a100_40gb_is_offered_fp8_weights_that_carry_it(run_cli):
    code, p = _plan_json(run_cli, MIXTRAL, "--gpu", "a100-40gb", "--gpus", "2")
    assert code == 1 and p["status"] == "nothing-starts"
    quant = [r for r in p["remedies"] if r["changes"] == {"quantization": "fp8"}]
    assert quant and quant[0]["carries_target"] and quant[0]["requests_at_typical_length"] >= 71
    assert "Marlin" in quant[0]["action"]  # Ampere has no FP8 compute: weight-only, and the plan says so
    assert p["remedies"][0] == quant[0]  # cheaper than more GPUs or a larger GPU
    code, q = _plan_json(run_cli, MIXTRAL, "--gpu", "a100-40gb", "--gpus", "2", "-q", "fp8")
    assert code == 0 and q["status"] == "carries" and q["flags"]["quantization"] == "fp8"
    assert "fp8 weights: about half the bytes" in _rows(q)["quantization"]["why"]  # the flag has its row


def test_phi4_on_one_a10g_is_offered_fp8_weights_even_short_of_the_target(run_cli):
    res = run_cli("plan", "microsoft/phi-4", "--gpu", "a10g")
    assert res.exit_code == 1 and "quantize the weights to fp8 (--quantization fp8" in res.stdout
    _, p = _plan_json(run_cli, "microsoft/phi-4", "--gpu", "a10g")
    quant = next(r for r in p["remedies"] if r["changes"] == {"quantization": "fp8"})
    # vLLM starts with fp8 weights but holds fewer than the 64 of the target: offered, and marked so
    assert not quant["carries_target"] and 0 < quant["requests_at_typical_length"] < 64
    assert "vLLM then starts, short of the target" in quant["action"]
    code, q = _plan_json(run_cli, "microsoft/phi-4", "--gpu", "a10g", "-q", "fp8")
    assert code == 1  # short of the target: exit 1
    assert q["status"] == "short" and q["carried_concurrency"] > 0 and f"carries {q['carried_concurrency']}" in \
        quant["action"]


def test_the_larger_gpu_for_an_a100_40gb_is_the_a100_80gb_first(run_cli):
    req = PlanRequest(model=MIXTRAL, gpu="a100-40gb", workload=load_workload("chat"))
    order = [changes["gpu"] for _, _, changes, _ in _larger_gpus(find_gpu("a100-40gb"), req)]
    assert order[0] == "a100-80gb" and "h100-pcie" in order
    _, p = _plan_json(run_cli, MIXTRAL, "--gpu", "a100-40gb", "--gpus", "2")
    gpus = [r["changes"]["gpu"] for r in p["remedies"] if "gpu" in r["changes"]]
    assert gpus[0] == "a100-80gb"
    # estimate's next steps name the same larger GPU first
    res = run_cli("estimate", MIXTRAL, "--gpu", "a100-40gb", "-tp", "2")
    larger = [line for line in res.stdout.splitlines() if "(a larger GPU" in line]
    assert larger and larger[0].strip().startswith("--gpu a100-80gb")


def test_qwen3_235b_fp8_on_16_h100_is_two_replicas_of_tp8(run_cli):
    code, p = _plan_json(run_cli, QWEN_MOE_FP8, "--gpu", "h100", "--gpus", "16")
    assert code == 0 and p["gpus"] == 16 and p["replicas"] == 2
    f = p["flags"]
    # two engines of one 8-GPU node each, no pipeline stages: tensor parallel 8 (with EP, which the FP8 block
    # shards need); DP 8 + EP is listed, predicted within DP_MARGIN of it, which no benchmark run can confirm
    assert f["pipeline_parallel_size"] == 1 and f["enable_expert_parallel"]
    assert f["tensor_parallel_size"] == 8 and (f.get("data_parallel_size") or 1) == 1
    assert "replicas" in _rows(p)["tensor_parallel_size"]["why"]
    assert p["layout"] == "2 replicas of tensor parallel 8"
    dp = next(o for o in p["layouts"] if o["data_parallel_size"] == 8 and o["replicas"] == 2)
    chosen = next(o for o in p["layouts"] if o["chosen"])
    if dp["speed"]["output_tok_s_per_gpu"] > chosen["speed"]["output_tok_s_per_gpu"]:
        assert "no published run the speed model was fitted on has dp > 1" in _rows(p)["tensor_parallel_size"]["why"]
    # the Deployment runs two pods of 8 GPUs: no LeaderWorkerSet, no Ray, no pipeline stages across nodes
    res = run_cli("plan", QWEN_MOE_FP8, "--gpu", "h100", "--gpus", "16", "--emit", "manifest")
    docs = [d for d in yaml.safe_load_all(res.stdout) if d]
    kinds = [d["kind"] for d in docs]
    assert res.exit_code == 0 and "LeaderWorkerSet" not in kinds and "Deployment" in kinds
    dep = next(d for d in docs if d["kind"] == "Deployment")
    assert dep["spec"]["replicas"] == 2
    limits = dep["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == "8"


def test_pipeline_stages_across_nodes_only_when_one_node_cannot_hold_the_model_and_have_their_row():
    p = plan(PlanRequest(model="meta-llama/Meta-Llama-3.1-405B", gpu="h100", gpus=16, workload=load_workload("chat")))
    assert p.replicas == 1 and (p.flags["tensor_parallel_size"], p.flags["pipeline_parallel_size"]) == (8, 2)
    row = next(r for r in p.reasons if r.flag == "pipeline_parallel_size")
    assert row.value == 2 and "stages span the nodes" in row.why
    assert "no engine within a 8-GPU node starts" in next(r for r in p.reasons if r.flag == "tensor_parallel_size").why
    # nothing starts on 16 L40S: the layout shown is the one engine over every GPU, not a replica of a part
    p = plan(PlanRequest(model="meta-llama/Meta-Llama-3.1-405B", gpu="l40s", gpus=16, workload=load_workload("chat")))
    assert p.status == "nothing-starts" and p.replicas == 1 and p.gpus == 16
    assert "preferred one, tensor parallel 8 x pipeline parallel 2" in p.summary


def test_every_parallelism_flag_the_plan_sets_has_its_row():
    for model, gpu, n in ((QWEN_MOE_FP8, "h100", 8), ("meta-llama/Meta-Llama-3.1-405B", "h100", 16),
                          ("deepseek-ai/DeepSeek-V3", "h200", 8)):
        p = plan(PlanRequest(model=model, gpu=gpu, gpus=n, workload=load_workload("chat")))
        assert_rows(p)
    assert_rows(plan(PlanRequest(model="Qwen/Qwen3-32B", gpu="l40s", workload=load_workload("chat"),
                                 tensor_parallel_size=2, pipeline_parallel_size=2, quantization="fp8")))


def assert_rows(p):
    """Every flag the plan sets beyond vLLM's defaults (parallelism, quantization) has its row in the table."""
    rows = {r.flag for r in p.reasons}
    keys = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "enable_expert_parallel",
            "quantization")
    set_flags = {k for k, v in p.flags.items() if k in keys and v not in (None, 1, False)}
    assert set_flags and set_flags <= rows, (p.model, set_flags - rows)


def test_deepseek_v3_on_8_h200_is_offered_dp8_with_expert_parallelism_and_its_tokens(run_cli):
    code, p = _plan_json(run_cli, "deepseek-ai/DeepSeek-V3", "--gpu", "h200", "--gpus", "8")
    assert code == 0
    opts = {(o["tensor_parallel_size"], o["data_parallel_size"], o["replicas"]): o for o in p["layouts"]}
    dp, tp = opts[(1, 8, 1)], opts[(8, 1, 1)]
    assert dp["starts"] and dp["kv_cache_tokens"] == 8 * dp["kv_cache_tokens_per_rank"]
    # each rank keeps its own latent cache: about 2.2 x the single cache of tensor parallel 8
    assert dp["kv_cache_tokens"] > 2 * tp["kv_cache_tokens"] and dp["speed"] and tp["speed"]
    assert f"8 x {dp['kv_cache_tokens_per_rank']:,} = {dp['kv_cache_tokens']:,}" in p["summary"]
    # a release without V1 data-parallel serving is not offered it
    _, old = _plan_json(run_cli, "deepseek-ai/DeepSeek-V3", "--gpu", "h200", "--gpus", "8",
                        "--vllm-version", "0.8.5")
    assert all(o["data_parallel_size"] == 1 for o in old["layouts"])


def test_dp_ep_plan_sets_its_flags_and_rows():
    p = plan(PlanRequest(model="deepseek-ai/DeepSeek-V3", gpu="h200", gpus=8, workload=load_workload("chat"),
                         tensor_parallel_size=None))
    if p.flags.get("data_parallel_size"):  # chosen on throughput per GPU: then its serve line and rows are complete
        assert "--data-parallel-size 8" in p.serve_command and "--enable-expert-parallel" in p.serve_command
        assert {"data_parallel_size", "enable_expert_parallel"} <= {r.flag for r in p.reasons}


def test_batch_is_a_queue_and_its_plan_says_so(run_cli):
    code, p = _plan_json(run_cli, "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4", "--workload", "batch")
    assert code == 0 and p["feasible"] and p["status"] == "carries"
    assert p["queued"] > 0 and p["carried_concurrency"] + p["queued"] == 256
    assert f"the other {p['queued']:,} wait in vLLM's queue" in p["summary"]
    assert p["flags"]["max_num_seqs"] <= p["capacity"]["requests_at_typical_length"]  # no preemption
    res = run_cli("plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4", "--workload", "batch", "--emit", "serve")
    assert res.exit_code == 0 and res.stdout.startswith("vllm serve ")
    res = run_cli("plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4", "--workload", "batch",
                  "--emit", "manifest")
    assert res.exit_code == 0 and f"{p['queued']:,} wait in vLLM's queue" in res.stdout.splitlines()[1]
    # the same concurrency as a requirement is short of it
    code, p = _plan_json(run_cli, "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4", "--concurrency", "256")
    assert code == 1 and p["status"] == "short"


def test_targets_pick_the_fewest_gpus_that_meet_them_and_say_what_binds(run_cli):
    args = ("meta-llama/Llama-3.1-70B-Instruct", "--gpu", "h100", "--tpot-ms", "20")
    code, p = _plan_json(run_cli, *args)
    assert code == 0 and p["meets_targets"] and p["speed"]["tpot_ms"] <= 20
    assert p["binding"].startswith("time per output token")
    assert p["next_step"].startswith(f"{2 * p['gpus']} GPUs")
    # half the GPUs does not meet it
    code, half = _plan_json(run_cli, *args, "--gpus", str(p["gpus"] // 2))
    assert code == 1 and half["meets_targets"] is False and half["speed"]["tpot_ms"] > 20
    res = run_cli("plan", *args)
    assert "Binds: time per output token" in res.stdout and "Next step up:" in res.stdout
    # a target no GPU count meets: the plan says so, names the nearest, and exits 1
    code, p = _plan_json(run_cli, "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "h100", "--tpot-ms", "1")
    assert code == 1 and p["meets_targets"] is False and "No GPU count up to 64 meets the targets" in p["summary"]


def test_targets_in_a_workload_file(tmp_path, run_cli):
    f = tmp_path / "interactive.yaml"
    f.write_text("max_context_tokens: 8192\nprompt_tokens: 1024\noutput_tokens: 256\nconcurrency: 16\n"
                 "ttft_ms: 500\ntpot_ms: 40\n")
    code, p = _plan_json(run_cli, "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4", "--workload", str(f))
    assert p["workload"]["tpot_ms"] == 40 and p["meets_targets"] is not None
    assert (code == 0) == bool(p["meets_targets"] and p["feasible"])
    res = run_cli("plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4", "--tpot-ms", "-3")
    assert res.exit_code == 2 and "--tpot-ms" in res.stderr


def test_replicas_where_they_are_as_fast_per_gpu(monkeypatch):
    """The rule, apart from the speed model's calibration: equal throughput per GPU -> replicas; a wider
    engine 5% faster per GPU -> the wider engine."""
    import configurator.plan.context as context

    def fake(per_gpu_by_replicas):
        def speed(model, gpu, req, c):
            v = per_gpu_by_replicas[c.lay.replicas]
            return {"ttft_ms": 50.0, "ttft_ms_band": [40.0, 60.0], "tpot_ms": 10.0, "tpot_ms_band": [8.0, 12.0],
                    "output_tok_s": v * c.lay.gpus, "output_tok_s_per_gpu": v, "bound": "x", "limits": [],
                    "gpu_figures": {}}
        return speed

    req = PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", gpus=2, workload=load_workload("chat"))
    monkeypatch.setattr(context, "candidate_speed", fake({1: 1000.0, 2: 1000.0}))
    p = plan(req)
    assert p.replicas == 2 and p.flags["tensor_parallel_size"] == 1 and p.gpus == 2
    monkeypatch.setattr(context, "candidate_speed", fake({1: 1050.0, 2: 1000.0}))
    p = plan(req)
    assert p.replicas == 1 and p.flags["tensor_parallel_size"] == 2


def test_data_parallel_attention_must_be_clearly_faster_to_be_chosen(monkeypatch):
    """The speed model has no benchmark run with dp > 1: DP 8 + EP 4% faster per GPU than TP 8 is not chosen,
    6% faster is."""
    import configurator.plan.context as context
    from configurator.plan.speed import DP_MARGIN

    def fake(dp_gain):
        def speed(model, gpu, req, c):
            v = 1000.0 * (dp_gain if c.lay.dp > 1 else 1.0)
            return {"ttft_ms": 50.0, "ttft_ms_band": [40.0, 60.0], "tpot_ms": 10.0, "tpot_ms_band": [8.0, 12.0],
                    "output_tok_s": v * c.lay.gpus, "output_tok_s_per_gpu": v, "bound": "x", "limits": [],
                    "gpu_figures": {}}
        return speed

    req = PlanRequest(model="deepseek-ai/DeepSeek-V3", gpu="h200", gpus=8, workload=load_workload("chat"))
    assert DP_MARGIN == 1.05
    monkeypatch.setattr(context, "candidate_speed", fake(1.04))
    assert plan(req).flags.get("data_parallel_size", 1) == 1
    monkeypatch.setattr(context, "candidate_speed", fake(1.06))
    assert plan(req).flags["data_parallel_size"] == 8


def test_every_flag_the_plan_sets_reaches_the_serve_command():
    """A flag of vLLM's flag table set in a plan's flags is written to `vllm serve` (data parallel size was not:
    the command of a DP 8 + EP plan started one rank per node)."""
    from configurator.vllm.flags import BY_DEST
    from configurator.vllm.serve import serve_args

    args = serve_args("m", {"data_parallel_size": 8, "enable_expert_parallel": True, "tensor_parallel_size": 1,
                            "max_num_seqs": 100})
    assert args[args.index("--data-parallel-size") + 1] == "8" and "--enable-expert-parallel" in args
    assert "--tensor-parallel-size" not in args  # vLLM's neutral value is left out
    for dest in ("data_parallel_size", "swap_space", "max_num_partial_prefills"):
        if dest in BY_DEST and BY_DEST[dest].type != "bool":
            assert BY_DEST[dest].option in serve_args("m", {dest: 3})


def test_the_plan_times_a_hybrid_pool_by_its_groups(monkeypatch):
    """A sliding-window model's KV pool is counted over its groups when the plan times a candidate, as the
    speed benchmark counts it: gpt-oss-20b's window layers hold at most their window a request."""
    import configurator.plan.speed as plan_speed

    seen = []
    real = plan_speed.estimate_speed

    def spy(*args, **kw):
        seen.append(kw.get("kv_groups"))
        return real(*args, **kw)

    monkeypatch.setattr(plan_speed, "estimate_speed", spy)
    p = plan(PlanRequest(model="openai/gpt-oss-20b", gpu="h100", gpus=1, workload=load_workload("chat")))
    assert p.speed is not None and seen
    assert all(sorted(g) == [-128, 0] for g in seen), seen  # one full group, one 128-token window group
