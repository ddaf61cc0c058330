"""`plan`: feasible plans really fit, capacity is monotone, infeasible answers carry checked remedies."""

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from configurator.errors import InputError
from configurator.estimate import EstimateRequest, estimate
from configurator.plan import PlanRequest, plan
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
def test_every_feasible_plan_fits_and_carries_its_workload(model, gpu, workload, concurrency, gpus):
    w = load_workload(workload)
    try:
        w = override(w, concurrency=concurrency)
        p = plan(PlanRequest(model=model, gpu=gpu, gpus=gpus, workload=w))
    except InputError:
        return  # e.g. a context beyond the model's limit: bad input, covered elsewhere
    if not p.feasible:
        assert p.shortfall_bytes > 0 and not p.serve_command
        return
    r = _refit(p)
    assert r.fits, r.errors
    assert r.flags["max_model_len"] >= w.max_context_tokens
    assert p.capacity.requests_at_typical_length >= math.ceil(w.concurrency * (1 + p.capacity.headroom))
    assert p.flags["max_num_seqs"] >= w.concurrency
    assert p.gpus == (gpus or 1)


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
    assert args[:2] == ["serve", "Qwen/Qwen3-8B"] and "--max-num-seqs" in args
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
