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
    _mod, ev, s = acc
    assert s["verdicts"]["started_predicted_refused"] == []
    assert any(not r["case"].started for r in ev["rows"])  # refusals are among the records


def test_cross_validation_refits_without_the_held_out_group(acc):
    mod, ev, _s = acc
    items = [(r["parts"], r["case"].logged_kv) for r in ev["rows"] if r["case"].version and r["parts"]]
    groups = {r["case"].group for r in ev["rows"] if r["case"].version and r["parts"]}
    assert len(groups) >= 5
    # leaving a group out changes the fit: the held-out records were not used to predict themselves
    g = next(iter(sorted(groups)))
    rest = [(p, kv) for (p, kv), r in zip(items, [r for r in ev["rows"] if r["case"].version and r["parts"]],
                                          strict=True) if r["case"].group != g]
    assert mod.fit(rest) != mod.fit(items)


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
