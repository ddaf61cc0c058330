"""The available-KV prediction on dev + dev2 meets the claims benchmarks/accuracy.md publishes
(benchmarks/accuracy.py: in-sample, leave-one-group-out cross-validated, verdicts)."""

import importlib
import sys

import pytest

from tests.conftest import ROOT, shared_or_skip


def load_benchmark(name: str):
    """benchmarks/<name>.py imported as a module (its dataclasses need a sys.modules entry)."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


@pytest.fixture(scope="module")
def acc():
    shared_or_skip("data", "vllm-startup-logs.dev2.jsonl")
    mod = load_benchmark("accuracy")
    ev = mod.evaluate()
    return mod, ev, mod.summary(ev)


def test_every_published_claim_is_met(acc):
    mod, _ev, s = acc
    assert not mod.claims_missed(s), mod.claims_missed(s)
    assert s["in"]["n"] >= 10 and s["apart"]["n"] >= 10


def test_accuracy_md_publishes_the_scripts_claims():
    text = (ROOT / "benchmarks" / "accuracy.md").read_text()
    for key, value in load_benchmark("accuracy").CLAIMS.items():
        assert f"| {key} | <= {value} |" in text


def test_tool_beats_the_naive_baseline_in_and_out_of_sample(acc):
    _mod, _ev, s = acc
    assert s["in"]["median"] < s["naive"]["median"] and s["cv"]["median"] < s["naive"]["median"]


def test_no_record_that_started_is_predicted_refused(acc):
    mod, ev, s = acc
    assert s["versioned_started_predicted_refused"] == []
    # a record that prints no release is evaluated as the tool's default; at the plausible older
    # releases none is refused (their logs show no CUDA-graph estimate, so they predate 0.20)
    assert len(s["unversioned_false_refusals"][mod.NEWEST]) <= mod.CLAIMS[
        "unversioned_started_predicted_refused_at_default"]
    assert all(not ids for v, ids in s["unversioned_false_refusals"].items() if v != mod.NEWEST)
    assert any(not r["case"].started for r in ev["rows"])  # refusals are among the records


def test_cross_validation_refits_without_the_held_out_group(acc):
    mod, ev, _s = acc
    items = [(r["parts"], r["case"].logged_kv) for r in ev["rows"] if r["case"].version and r["parts"]]
    groups = {r["case"].group for r in ev["rows"] if r["case"].version and r["parts"]}
    assert len(groups) >= 5
    # leaving a group out refits without it: some group's absence changes the coefficients (a group
    # that sits at the pooled optimum may not), so the held-out records never predict themselves
    rows = [r for r in ev["rows"] if r["case"].version and r["parts"]]
    full = mod.fit(items)
    assert any(mod.fit([(r["parts"], r["case"].logged_kv) for r in rows if r["case"].group != g]) != full
               for g in sorted(groups))


def test_default_utilization_is_the_release_default():
    """CacheConfig.gpu_memory_utilization: 0.9 in vllm/config/cache.py 0.19.1 (Field(default=0.9)),
    0.92 from 0.20.0 (Field(default=0.92), read in 0.20.0, 0.23.0, 0.26.0, 0.27.0, 0.28.0, 0.33.0)."""
    from configurator.vllm.versions import behaviour
    assert behaviour("0.9.0").default_gpu_memory_utilization == 0.9
    assert behaviour("0.19.1").default_gpu_memory_utilization == 0.9
    assert behaviour("0.20.0").default_gpu_memory_utilization == 0.92
    assert behaviour("0.28.0").default_gpu_memory_utilization == 0.92


def test_sampler_and_moe_workspace_follow_the_release():
    """FlashInfer's sampler is the default 0.9.0-0.11.0 and opt-in from 0.13.0
    (v1/sample/ops/topk_topp_sampler.py); the fused-MoE workspace is persistent from 0.19.0."""
    from configurator.memory.overheads import estimate_overheads, moe_workspace_bytes
    from configurator.vllm.versions import behaviour
    assert behaviour("0.11.0").flashinfer_sampler and not behaviour("0.13.0").flashinfer_sampler
    assert not behaviour("0.11.0").moe_workspace_persistent and behaviour("0.19.0").moe_workspace_persistent
    assert moe_workspace_bytes(8192, 8, 512, 2048, 1) == 512 * 2**20
    kw = dict(hidden_size=2048, intermediate_size=0, num_attention_heads=16, num_kv_heads=2, head_dim=256,
              vocab_size=248320, num_layers_on_rank=40, max_num_batched_tokens=8192, max_num_seqs=1, tp=1, pp=1,
              last_stage=True, enforce_eager=True, cudagraph_counted=False, v2_sampler_state=False,
              moe_intermediate_size=512, experts_per_token=8)
    assert estimate_overheads(**kw, moe_workspace_persistent=True).activation_bytes >= 512 * 2**20
    fi = estimate_overheads(**{**kw, "max_num_seqs": 256}, flashinfer_sampler=True).activation_bytes
    assert fi >= int(256 * 248320 * 4 * 2.5)


def test_records_without_a_release_are_reported_apart_with_their_spread(acc):
    mod, ev, s = acc
    apart = [r for r in ev["rows"] if not r["case"].version]
    assert apart and all(r["version"] == mod.NEWEST for r in apart)
    assert set(s["apart_spread"]) == set(mod.PLAUSIBLE)


def test_multi_gpu_record_without_a_layout_runs_tensor_parallel():
    kv = load_benchmark("kv_reproduction")
    assert kv.parallel_for({"num_gpus": 2}) == {"tensor_parallel_size": 2}
    assert kv.parallel_for({"num_gpus": 8, "data_parallel_size": 8}) == {}
    assert kv.gpu_for({"gpu_family": "unknown 80GB", "gpu_total_memory_logged": "77.78/79.33 GiB (free/total)"}) \
        == {"gpu_memory": "79.33GiB"}
    with pytest.raises(LookupError):
        kv.gpu_for({"gpu_family": "unknown 24 GB", "gpu": "24 GB GPU (model not stated)"})


def test_the_script_exits_one_when_a_claim_is_missed(acc, monkeypatch, tmp_path):
    mod, _ev, _s = acc
    monkeypatch.setitem(mod.CLAIMS, "cv_median_gib", 0.0)
    assert mod.main(["--out", str(tmp_path / "a.md")]) == 1


def test_a_quantized_checkpoint_resolved_to_its_base_carries_the_records_quantization():
    kv = load_benchmark("kv_reproduction")
    nvfp4 = {"model": "Qwen3.6-35B-A3B NVFP4 checkpoint (local dir ~/.cache/x; HF repo id not shown)",
             "quantization": "modelopt (NVFP4 checkpoint)"}
    spec, label = kv.model_for(nvfp4)
    assert spec.quant.method == "modelopt" and spec.quant.weight_bits == 4.5 and "Qwen3.6-35B-A3B" in label
    assert kv.quantization_for(nvfp4) is None  # vLLM reads the method from the checkpoint's config
    online = {"model": "Qwen/Qwen3-14B", "quantization": "fp8"}
    assert kv.quantization_for(online) == "fp8"
    with pytest.raises(LookupError):  # 'Mistral-7B' names checkpoints of different geometry
        kv.model_for({"model": "Mistral-7B GPTQ checkpoint (local path /models/mistral-7b)"})
