"""`plan`: feasible plans really fit, capacity is monotone, infeasible answers carry checked remedies."""

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from configurator.errors import InputError
from configurator.estimate import EstimateRequest, estimate
from configurator.plan import PlanRequest, less_headroom, plan, with_headroom
from configurator.workloads import builtin_workloads, load_workload, override

MODELS = ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "openai/gpt-oss-20b",
          "Qwen/Qwen3.6-27B-FP8", "mistralai/Mistral-7B-v0.1", "google/gemma-2-9b-it", "Qwen/Qwen3-30B-A3B",
          "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "meta-llama/Llama-3.3-70B-Instruct"]
GPUS = ["l4", "a10g", "l40s", "a100-80gb", "h100", "h200", "rtx-4090"]


def _refit(p):
    """Feed the plan's flags back into estimate, as a user would."""
    return estimate(EstimateRequest(model=p.model, gpu=p.gpu, vllm_version=p.vllm_version, flags=dict(p.flags)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(MODELS), gpu=st.sampled_from(GPUS), workload=st.sampled_from(builtin_workloads()),
       concurrency=st.integers(1, 96), gpus=st.sampled_from([None, 2, 4]))
# found by CI's run: a pool of exactly 50 x 1.1 = 55 requests, which float arithmetic calls short
@example(model="openai/gpt-oss-20b", gpu="l4", workload="long-context", concurrency=50, gpus=2)
def test_every_feasible_plan_fits_and_carries_its_workload(model, gpu, workload, concurrency, gpus):
    w = load_workload(workload)
    try:
        w = override(w, concurrency=concurrency)
        p = plan(PlanRequest(model=model, gpu=gpu, gpus=gpus, workload=w))
    except InputError:
        return  # e.g. a context beyond the model's limit: bad input, covered elsewhere
    if p.status == "nothing-starts":
        assert not p.feasible and p.shortfall_bytes > 0 and not p.serve_command
        return
    r = _refit(p)
    assert r.fits, r.errors
    assert r.flags["max_model_len"] >= w.max_context_tokens
    if p.status == "short":  # the best plan: it starts, admits no more than its pool holds, and says how far
        assert not p.feasible and p.shortfall_bytes > 0 and p.carried_concurrency < w.concurrency
        assert p.flags["max_num_seqs"] <= p.capacity.requests_at_typical_length
        return
    assert p.feasible and p.status == "carries"
    assert p.gpus == (gpus or 1)
    ways = p.replicas * (p.flags.get("data_parallel_size") or 1)  # schedulers sharing the workload
    if p.queued:  # a queue workload (batch): what the pools hold runs, the rest waits, and the plan says so
        assert w.queue and p.carried_concurrency + p.queued == w.concurrency
        assert p.flags["max_num_seqs"] * ways <= p.capacity.requests_at_typical_length
        assert "wait in vLLM's queue" in p.summary
        return
    # exact, as the plan counts it: 50 x 1.1 is 55, where float multiplication gives 55.000000000000007 and ceil() 56
    assert p.capacity.requests_at_typical_length >= with_headroom(w.concurrency, p.capacity.headroom)
    assert p.flags["max_num_seqs"] * ways >= w.concurrency


@settings(max_examples=25, deadline=None)
@given(model=st.sampled_from(MODELS[:7]), base=st.integers(20, 120), extra=st.integers(1, 60),
       length=st.sampled_from([4096, 8192, 16384, 32768]))
def test_more_memory_or_fp8_never_lowers_capacity(model, base, extra, length):
    # the same flags throughout (vLLM's own defaults change with the GPU class: >= 70 GiB raises
    # max_num_batched_tokens, which widens sliding-window requests)
    def cap(mem, kv="auto"):
        r = estimate(EstimateRequest(model=model, gpu_memory=f"{mem}GiB",
                                     flags={"max_model_len": length, "kv_cache_dtype": kv, "max_num_seqs": 64,
                                            "max_num_batched_tokens": 2048}))
        return r.kv_cache.max_concurrency if r.fits else 0.0
    assert cap(base + extra) >= cap(base)
    assert cap(base, "fp8") >= cap(base)


@settings(max_examples=25, deadline=None)
@given(model=st.sampled_from(MODELS[:7]), mem=st.integers(24, 160),
       short=st.sampled_from([2048, 4096, 8192]), factor=st.sampled_from([2, 4]))
def test_a_longer_context_never_raises_concurrency(model, mem, short, factor):
    def conc(length):
        r = estimate(EstimateRequest(model=model, gpu_memory=f"{mem}GiB",
                                     flags={"max_model_len": length, "max_num_seqs": 64,
                                            "max_num_batched_tokens": 2048}))
        return r.kv_cache.max_concurrency if r.fits else 0.0
    assert conc(short * factor) <= conc(short)


def test_hybrid_sizing_story(run_cli):
    """27B hybrid on a 94 GB H100 NVL, util 0.75, fp8 KV, 128K: 16 full-attention layers, not 64."""
    res = run_cli("plan", "--model", "Qwen/Qwen3.6-27B-FP8", "--gpu", "h100-nvl", "--workload", "long-context",
                  "--concurrency", "2", "--max-gpu-memory-utilization", "0.75", "--kv-cache-dtype", "fp8",
                  "--format", "json")
    assert res.exit_code == 0
    p = json.loads(res.stdout)
    kv = p["estimate"]["kv_cache"]
    assert kv["bytes_per_token"] == 32_768 and kv["state_bytes_per_sequence"] > 0
    at_128k = next(a for a in p["alternatives"] if a["max_model_len"] == 131072)
    assert at_128k["requests_at_max_model_len"] > 3 * 2.7  # the naive 64-layer count says about 2.7
    assert "recurrent state" in p["summary"]


def test_prefers_full_precision_kv_when_it_carries_the_workload():
    p = plan(PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", workload=load_workload("chat")))
    assert p.feasible and p.flags["kv_cache_dtype"] == "auto"
    tight = override(load_workload("rag"), concurrency=64)
    p2 = plan(PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", gpu="h100", workload=tight))
    # bf16 needs 71 x 8,704 tokens x 128 KiB = 75 GiB; the pool is ~58 GiB: fp8 halves it
    assert p2.feasible and p2.flags["kv_cache_dtype"] == "fp8"


def test_deterministic():
    req = PlanRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100", gpus=4,
                      workload=load_workload("agentic-coding"))
    assert plan(req).model_dump() == plan(req).model_dump()


def test_infeasible_70b_on_one_24gb_card_has_remedies_that_solve(run_cli):
    res = run_cli("plan", "--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "l4", "--workload",
                  "long-context", "--format", "json")
    assert res.exit_code == 1
    p = json.loads(res.stdout)
    assert not p["feasible"] and p["shortfall_bytes"] > 0 and p["remedies"]
    for r in p["remedies"]:
        ch = r["changes"]
        w = load_workload("long-context")
        if "max_context_tokens" in ch or "concurrency" in ch:
            w = override(w, **ch)
        again = plan(PlanRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu=ch.get("gpu", "l4"),
                                 gpus=ch.get("gpus"), workload=w, kv_cache_dtype=ch.get("kv_cache_dtype"),
                                 quantization=ch.get("quantization")))
        assert again.feasible, r


def test_emit_serve_and_args(run_cli):
    serve = run_cli("plan", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", "--workload", "chat", "--concurrency", "16",
                    "--emit", "serve")
    assert serve.exit_code == 0 and serve.stdout.startswith("vllm serve Qwen/Qwen3-8B --gpu-memory-utilization")
    args = json.loads(run_cli("plan", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", "--workload", "chat",
                              "--concurrency", "16", "--emit", "args").stdout)
    # pasted as `args:` under the stock image's `vllm serve` entrypoint: no second "serve"
    assert args[0] == "Qwen/Qwen3-8B" and "serve" not in args and "--max-num-seqs" in args
    assert serve.stdout.split() == ["vllm", "serve", *args]
    flags_once = [a for a in args if a.startswith("--")]
    assert len(flags_once) == len(set(flags_once))


def test_json_follows_schema(run_cli):
    import jsonschema

    from configurator.schemas import schema

    p = json.loads(run_cli("plan", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", "--concurrency", "16",
                           "--format", "json").stdout)
    jsonschema.validate(p, schema("plan.schema.json"))
    for key in ("feasible", "flags", "estimate", "reasons", "alternatives", "remedies"):
        assert key in p


@pytest.mark.parametrize("args,needle", [
    (("--workload", "chitchat"), "unknown workload"),
    (("--concurrency", "-3"), "--concurrency"),
    (("--max-context", "1000000"), "beyond the model's limit"),
    (("--headroom", "1.5"), "--headroom"),
    (("--gpus", "0"), "--gpus"),
])
def test_bad_input_exit_2(run_cli, args, needle):
    res = run_cli("plan", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", *args)
    assert res.exit_code == 2 and needle in res.stderr and "Traceback" not in res.stderr


def test_workload_files_and_overrides(tmp_path, run_cli):
    f = tmp_path / "w.yaml"
    f.write_text("name: mine\nmax_context_tokens: 4096\nprompt_tokens: 1000\noutput_tokens: 200\nconcurrency: 8\n")
    p = json.loads(run_cli("plan", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", "--workload", str(f),
                           "--format", "json").stdout)
    assert p["workload"]["name"] == "mine" and p["flags"]["max_model_len"] >= 4096
    f.write_text("name: bad\nmax_context_tokens: 100\nprompt_tokens: 1000\noutput_tokens: 200\nconcurrency: 8\n")
    res = run_cli("plan", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", "--workload", str(f))
    assert res.exit_code == 2 and "exceed max_context_tokens" in res.stderr


# ---- a plan that falls short is still a plan (issue 13 items 11-16) ----------------------------

L4_CHAT = ("plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4")


def test_default_chat_on_one_l4_gives_the_best_plan_marked_short():
    w = load_workload("chat")
    p = plan(PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", gpu="l4", workload=w))
    assert p.status == "short" and not p.feasible
    assert 0 < p.carried_concurrency < w.concurrency and p.shortfall_bytes > 0
    # the flags start, admit no more than the pool keeps with the headroom, and carry the most of the
    # workload among the candidates (no other utilization / KV dtype holds more at this length)
    r = _refit(p)
    assert r.fits and p.flags["max_num_seqs"] == p.carried_concurrency
    assert p.carried_concurrency <= less_headroom(p.capacity.requests_at_typical_length, p.capacity.headroom)
    for a in p.alternatives:
        if a.max_model_len == p.flags["max_model_len"]:
            assert a.requests_at_typical_length <= p.capacity.requests_at_typical_length
    assert f"{p.carried_concurrency} of the {w.concurrency}" in p.summary and p.serve_command and p.remedies


def test_short_plan_text_and_exit_code(run_cli):
    res = run_cli(*L4_CHAT)
    assert res.exit_code == 1 and "Traceback" not in res.stderr
    assert "SHORT OF THE TARGET: the best plan carries" in res.stdout
    assert "Run (best effort, short of the target):\n  vllm serve meta-llama/Llama-3.1-8B-Instruct" in res.stdout


def test_remedies_are_numbered_one_to_n(run_cli):
    import re

    for args in (L4_CHAT, ("plan", "--model", "meta-llama/Meta-Llama-3.1-405B", "--gpu", "h100", "--gpus", "8")):
        out = run_cli(*args).stdout
        numbers = [int(n) for n in re.findall(r"^  (\d+)\. ", out, re.M)]
        assert numbers and numbers == list(range(1, len(numbers) + 1)), out


def test_emit_of_a_short_plan_needs_best_effort(run_cli, tmp_path):
    res = run_cli(*L4_CHAT, "--emit", "helm")
    assert res.exit_code == 1 and res.stdout == ""
    assert "SHORT OF THE TARGET" in res.stderr and "--best-effort" in res.stderr.splitlines()[-1]
    out = tmp_path / "values.yaml"
    res = run_cli(*L4_CHAT, "--emit", "helm", "--best-effort", "-o", str(out))
    assert res.exit_code == 1 and res.stdout == "" and "warning: best effort" in res.stderr
    text = out.read_text()
    assert "# best effort: short of the target, carries" in text and "maxNumSeqs" in text
    args = json.loads(run_cli(*L4_CHAT, "--emit", "args", "--best-effort").stdout)
    p = plan(PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", gpu="l4", workload=load_workload("chat")))
    assert args == p.serve_args and args[args.index("--max-num-seqs") + 1] == str(p.carried_concurrency)


def test_nothing_starts_emits_nothing_even_with_best_effort(run_cli, tmp_path):
    out = tmp_path / "values.yaml"
    res = run_cli("plan", "--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "l4", "--emit", "helm",
                  "--best-effort", "-o", str(out))
    assert res.exit_code == 1 and not out.exists() and "none of the candidates" in res.stderr


@pytest.mark.parametrize("workload,extra,want", [
    ("chat", (), 8192),                                   # not the model's 131,072
    ("long-context", ("--concurrency", "1"), 131072),     # not the model's 262,144
    ("chat", ("--max-context", "5000"), 5120),            # rounded up to a multiple of 1,024
    ("chat", ("--max-model-len", "16384"), 16384),        # asked for more
    ("chat", ("--max-model-len", "full"), 131072),
])
def test_max_model_len_is_what_the_workload_needs_unless_asked(run_cli, workload, extra, want):
    model = "Qwen/Qwen3.6-27B-FP8" if workload == "long-context" else "meta-llama/Llama-3.1-8B-Instruct"
    res = run_cli("plan", "--model", model, "--gpu", "h200", "--workload", workload, *extra, "--format", "json")
    p = json.loads(res.stdout)
    assert res.exit_code == 0 and p["flags"]["max_model_len"] == want


def test_max_model_len_shorter_than_the_workload_is_bad_input(run_cli):
    res = run_cli("plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100", "--max-model-len", "4096")
    assert res.exit_code == 2 and "shorter than the workload's longest request" in res.stderr


def test_every_catalog_gpu_has_a_class():
    from configurator.hardware.catalog import list_gpus
    from configurator.plan import GPU_CLASS_LABELS

    assert all(g.gpu_class in GPU_CLASS_LABELS for g in list_gpus())


@pytest.mark.parametrize("gpu", ["l4", "h100", "rtx-4090", "rtx-6000-ada", "a10g"])
def test_larger_gpu_remedies_stay_in_the_gpu_class(gpu):
    from configurator.hardware.catalog import find_gpu
    from configurator.plan import GPU_CLASS_LABELS, _larger_gpus

    g = find_gpu(gpu)
    req = PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", gpu=gpu, workload=load_workload("chat"))
    offered = _larger_gpus(g, req)
    for action, _rank, changes, _alt in offered:
        other = find_gpu(changes["gpu"])
        assert other.gpu_class == g.gpu_class and other.total_bytes > g.total_bytes
        assert f"larger {GPU_CLASS_LABELS[g.gpu_class]} GPU" in action


def test_l4_plan_never_suggests_consumer_cards():
    p = plan(PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", gpu="l4", workload=load_workload("rag")))
    gpus = [r.changes["gpu"] for r in p.remedies if "gpu" in r.changes]
    assert gpus and all("rtx" not in g and g != "gb10" for g in gpus)
    assert all("data-centre" in r.action for r in p.remedies if "gpu" in r.changes)


def test_405b_on_8_h100_shows_the_preferred_tp8_and_why():
    p = plan(PlanRequest(model="meta-llama/Meta-Llama-3.1-405B", gpu="h100", gpus=8, workload=load_workload("chat")))
    assert p.status == "nothing-starts"
    assert (p.flags["tensor_parallel_size"], p.flags["pipeline_parallel_size"]) == (8, 1)
    assert "No split of the 8 GPUs starts" in p.summary and "preferred one, tensor parallel 8" in p.summary
    more = [r for r in p.remedies if "gpus" in r.changes]
    assert more and "tensor parallel 8 x pipeline parallel 2" in more[0].action
    assert all(r.changes.get("gpu") != "gb10" for r in p.remedies)


def test_16_gpus_on_8_gpu_nodes_keep_tensor_parallelism_within_a_node():
    # docs/plan.md: tensor parallelism within a node, pipeline stages across nodes
    p = plan(PlanRequest(model="meta-llama/Meta-Llama-3.1-405B", gpu="h100", gpus=16, workload=load_workload("chat")))
    assert p.feasible and (p.flags["tensor_parallel_size"], p.flags["pipeline_parallel_size"]) == (8, 2)


def test_parallel_splits_are_the_divisors():
    from configurator.plan import _divisors

    assert _divisors(1) == [1] and _divisors(16) == [1, 2, 4, 8, 16] and _divisors(36) == [1, 2, 3, 4, 6, 9, 12, 18, 36]
    assert _divisors(1024) == [1 << i for i in range(11)]


@pytest.mark.parametrize("args", [("--gpus", "1025"), ("--gpus", "1" + "0" * 30), ("-tp", "4096"),
                                  ("--gpus-per-node", "0")])
def test_gpu_counts_are_bounded(run_cli, args):
    import time

    t0 = time.perf_counter()
    res = run_cli("plan", "--model", "Qwen/Qwen3-8B", "--gpu", "h100", *args)
    assert res.exit_code == 2 and "between 1 and 1,024" in res.stderr and "Traceback" not in res.stderr
    assert time.perf_counter() - t0 < 5  # not a loop to N (1e30 never ended before)


# ---- -o: no clobber at write time, no symlinks, never an input ----------------------------------

PLAN_OK = ("plan", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", "--concurrency", "16")


def test_output_refuses_a_dangling_symlink(run_cli, tmp_path):
    link = tmp_path / "plan.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    for extra in ((), ("--force",)):
        res = run_cli(*PLAN_OK, "--format", "json", "-o", str(link), *extra)
        assert res.exit_code == 2 and "symbolic link" in res.stderr
    assert not (tmp_path / "elsewhere.json").exists()


def test_output_never_replaces_the_workload_file(run_cli, tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("name: mine\nmax_context_tokens: 4096\nprompt_tokens: 1000\noutput_tokens: 200\nconcurrency: 8\n")
    before = f.read_text()
    res = run_cli("plan", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", "--workload", str(f), "-o", str(f), "--force")
    assert res.exit_code == 2 and "inputs" in res.stderr and f.read_text() == before


def test_no_clobber_is_checked_at_write_time(run_cli, tmp_path, monkeypatch):
    """A file that appears while the plan is computed (a racing writer) is not replaced."""
    import configurator.plan as plan_module

    out = tmp_path / "plan.txt"
    real = plan_module.plan

    def racing(req):
        result = real(req)
        out.write_text("the other writer\n")
        return result

    monkeypatch.setattr(plan_module, "plan", racing)
    res = run_cli(*PLAN_OK, "-o", str(out))
    assert res.exit_code == 2 and "exists" in res.stderr and out.read_text() == "the other writer\n"
