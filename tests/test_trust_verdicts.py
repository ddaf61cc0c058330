"""Issue 25: `fits` only when the tool knows. Not predicted is never `fits`; what vLLM refuses before memory
(a removed architecture, a block-quantized shard, weights larger than the card) is `refused`; a GPU class no
log covers gets a widened band that says so; gpt-oss's MXFP4 weights as the release's kernel lays them out."""

from __future__ import annotations

import json

import jsonschema
import pytest

from configurator.errors import ExitCode
from configurator.estimate import EstimateRequest, estimate
from configurator.estimate.band import _doc, gpu_class_of
from configurator.estimate.loadable import block_shape_refusal, removed_architecture, v0_only
from configurator.hardware.catalog import find_gpu
from configurator.memory.weights import mxfp4_backend_alignment
from configurator.model.resolve import resolve_model
from configurator.plan import PlanRequest, plan
from configurator.schemas import estimate_schema
from configurator.units import GiB
from configurator.workloads import load_workload

# -- 1. not predicted is never `fits` ----------------------------------------------------------------------


def test_no_gpu_is_not_predicted_with_its_own_exit_code(run_cli):
    res = run_cli("estimate", "--model", "Qwen/Qwen3-8B", "--format", "json")
    out = json.loads(res.stdout)
    jsonschema.validate(out, estimate_schema())
    assert out["verdict"] == "not-predicted" and out["fits"] is None and out["not_modelled"]
    assert res.exit_code == ExitCode.NOT_PREDICTED == 3
    text = run_cli("estimate", "--model", "Qwen/Qwen3-8B")
    assert text.exit_code == 3 and "NOT PREDICTED" in text.stdout and "FITS" not in text.stdout


def test_v0_fallback_is_not_predicted_but_weights_over_the_card_are_refused(run_cli):
    # 0.10.1.1 runs V0 below compute capability 8.0 (EngineArgs._is_v1_supported_oracle): not predicted
    res = run_cli("estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "v100-32gb", "--vllm-version", "0.10.1.1",
                  "--dtype", "float16", "--format", "json")
    out = json.loads(res.stdout)
    assert (out["verdict"], out["fits"], res.exit_code) == ("not-predicted", None, 3)
    # a release whose default engine is V0 (before 0.8)
    res = run_cli("estimate", "--model", "Qwen/Qwen2.5-7B", "--gpu", "h100-80gb", "--vllm-version", "0.7.3",
                  "--format", "json")
    out = json.loads(res.stdout)
    assert (out["verdict"], out["fits"], res.exit_code) == ("not-predicted", None, 3)
    # the same V0 release with weights larger than the card: refused, whatever the engine
    res = run_cli("estimate", "--model", "Qwen/Qwen3-32B", "--gpu", "v100-32gb", "--vllm-version", "0.10.1.1",
                  "--dtype", "float16", "--format", "json")
    out = json.loads(res.stdout)
    assert (out["verdict"], out["fits"], res.exit_code) == ("refused", False, 1)
    assert "CUDA out of memory while loading the model" in out["errors"][0]


# -- 2. refused before memory -------------------------------------------------------------------------------

MLLAMA = "meta-llama/Llama-3.2-90B-Vision-Instruct"


def test_removed_architecture_is_refused_in_vllms_words(run_cli):
    res = run_cli("estimate", "--model", MLLAMA, "--gpu", "h100-80gb", "-tp", "4", "--vllm-version", "0.11.0",
                  "--format", "json")
    out = json.loads(res.stdout)
    assert (out["verdict"], out["fits"], res.exit_code) == ("refused", False, 1)
    # vllm==0.11.0 model_executor/models/registry.py _raise_for_unsupported
    assert out["errors"][0] == ("Model architecture MllamaForConditionalGeneration was supported in vLLM until "
                                "v0.10.2, and is not supported anymore. Please use an older version of vLLM if "
                                "you want to use this model architecture.")
    # no GPU named: still refused (the registry check needs none)
    res = run_cli("estimate", "--model", MLLAMA, "--vllm-version", "0.11.0", "--format", "json")
    assert json.loads(res.stdout)["verdict"] == "refused" and res.exit_code == 1


def test_v0_only_model_is_not_predicted_on_a_release_with_v0():
    m = resolve_model(MLLAMA)
    assert removed_architecture(m, "0.10.1.1") is None
    assert "SupportsV0Only" in v0_only(m, "0.10.1.1")
    assert v0_only(m, "0.11.0") is None  # no V0 engine any more: the registry refuses instead
    r = estimate(EstimateRequest(model=m, gpu="h100-80gb", vllm_version="0.10.1.1",
                                 flags={"tensor_parallel_size": 4}))
    assert (r.verdict, r.fits) == ("not-predicted", None)


def test_a_release_that_still_serves_a_listed_architecture_goes_on():
    from dataclasses import replace
    m = replace(resolve_model("Qwen/Qwen3-8B"), architectures=("MotifForCausalLM",))
    assert removed_architecture(m, "0.11.0") is None  # still in 0.11.0's registry
    assert "was supported in vLLM until v0.11.0" in removed_architecture(m, "0.12.0")


@pytest.mark.parametrize("model,tp,width", [("Qwen/Qwen3-30B-A3B-FP8", 4, 192),
                                            ("Qwen/Qwen3-235B-A22B-FP8", 8, 192)])
def test_block_quantized_moe_shard_not_a_whole_block_is_refused(model, tp, width):
    m = resolve_model(model)
    msg = (f"The output_size of gate's and up's weight = {width} is not divisible by weight quantization "
           f"block_n = 128.")
    assert block_shape_refusal(m, {}, tp) == msg
    r = estimate(EstimateRequest(model=m, gpu="h100-80gb", flags={"tensor_parallel_size": tp}))
    assert r.verdict == "refused" and r.fits is False and msg in r.errors
    # expert parallelism keeps whole experts on a rank (FusedMoE tp_size 1): the width is the full one
    assert block_shape_refusal(m, {"enable_expert_parallel": True}, tp) is None
    # half the TP: a whole number of blocks
    assert block_shape_refusal(m, {}, tp // 2) is None
    # data parallelism without EP flattens into the MoE's TP: TP 2 x DP 2 splits like TP 4
    assert block_shape_refusal(m, {"data_parallel_size": tp // 2}, 2) == msg


def test_plan_never_emits_a_layout_vllm_refuses_to_load():
    """Qwen3-235B-A22B-FP8 on 8 H100: TP 8 shards each expert's 1,536-wide projection into 192 columns, not a
    multiple of the FP8 block (128), which vLLM refuses without expert parallelism. Whichever layout the speed
    model prefers (TP 8 + EP or DP 8 + EP), the plan loads; forced to TP 8 it takes EP and says why."""
    def one(**kw):
        return plan(PlanRequest(model="Qwen/Qwen3-235B-A22B-FP8", workload=load_workload("chat"), gpu="h100-80gb",
                                gpus=8, **kw))

    for p in (one(), one(tensor_parallel_size=8)):
        f = p.flags
        assert f["tensor_parallel_size"] * f["pipeline_parallel_size"] * (f.get("data_parallel_size") or 1) == 8
        assert f["tensor_parallel_size"] != 8 or f.get("enable_expert_parallel") is True
        assert "--enable-expert-parallel" in p.serve_command
        assert p.estimate.verdict != "refused" and not any("divisible" in e for e in p.estimate.errors)
    forced = one(tensor_parallel_size=8)
    assert forced.flags["tensor_parallel_size"] == 8
    assert any(r.flag == "enable_expert_parallel" and "= 192 is not divisible" in r.why for r in forced.reasons)


# -- 3. a GPU class no log covers ---------------------------------------------------------------------------

def test_gpu_classes():
    assert [gpu_class_of(find_gpu(g)) for g in ("mi300x", "h100-80gb", "gb10")] == ["rocm", "datacenter", "integrated"]
    seen = _doc()["seen"]  # logs behind the band per key value (profiles/error_bands.yaml)
    assert int(seen.get("gpu_class=rocm", 0)) == 0 and int(seen.get("gpu_class=datacenter", 0)) >= 5


def test_rocm_band_is_widened_and_says_so():
    flags = {"max_model_len": 98304}
    r = estimate(EstimateRequest(model="meta-llama/Llama-3.1-70B-Instruct", gpu="mi300x", flags=flags))
    width = r.memory.kv_cache_bytes - r.kv_cache_bytes_low
    assert width == r.kv_cache_bytes_high - r.memory.kv_cache_bytes
    # no log of a ROCm GPU: the spread unseen combinations show, the wider of its GiB and budget-share widths
    # (error_bands.yaml), whatever unit the validated key values use
    u = _doc()["unseen"]
    assert width >= int(max(u["gib"] * GiB, u["budget_fraction"] * r.memory.requested_bytes)) - 1
    assert width >= int(u["budget_fraction"] * r.memory.requested_bytes) - 1
    assert "band widened to +-" in r.band_basis and "gpu_class=rocm (0)" in r.band_basis
    # the central prediction holds a 98,304-token request, the band's low end does not: at-risk, not fits
    assert r.fits and r.kv_cache.bytes_per_request <= r.memory.kv_cache_bytes
    assert r.kv_cache_bytes_low < r.kv_cache.bytes_per_request and r.verdict == "at-risk"
    h = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu="h100-80gb", vllm_version="0.11.0"))
    assert h.band_basis.startswith("validated by ") and "logs of this kind" in h.band_basis
    assert h.memory.kv_cache_bytes - h.kv_cache_bytes_low < width


# -- 4. MXFP4 weights as loaded -----------------------------------------------------------------------------

def test_mxfp4_backend_by_release_and_arch():
    # vllm==0.11.0 quantization/mxfp4.py get_mxfp4_backend (lines 59-107): no FlashInfer / triton_kernels in a
    # plain install -> Marlin, create_weights (lines 189-205): hidden to 256, intermediate to 128
    assert mxfp4_backend_alignment(90, "0.11.0") == (256, 128)
    assert mxfp4_backend_alignment(100, "0.11.0") == (256, 128)
    assert mxfp4_backend_alignment(100, "0.11.2") == (256, 256)  # FlashInfer required by the 0.11.2 wheel
    assert mxfp4_backend_alignment(90, "0.15.0") == (1, 64)  # vendored triton_kernels from 0.12.0
    assert mxfp4_backend_alignment(120, "0.15.0") == (256, 128)
    assert mxfp4_backend_alignment(120, "0.19.0") == (128, 128)  # the oracle's FlashInfer CUTLASS


def test_gpt_oss_120b_on_one_h100_at_0_11_is_not_fits():
    r = estimate(EstimateRequest(model="openai/gpt-oss-120b", gpu="h100-80gb", vllm_version="0.11.0"))
    # 'Model loading took 65.97 GiB' (vLLM issue #23278, Marlin on an H100; data/notes/vllm-memory-notes.md)
    assert abs(r.memory.weights_bytes / GiB - 65.97) <= 0.03 * 65.97
    assert r.verdict in ("refused", "at-risk") and r.verdict != "fits"


def test_gpt_oss_20b_dev_log_weights_hold(tmp_path):
    from tests.conftest import repo_data
    rec = next(json.loads(line) for line in repo_data("logs", "vllm-startup-logs.dev.jsonl").open()
               if '"openai/gpt-oss-20b"' in line)
    r = estimate(EstimateRequest(model=rec["model"], gpu="a100-80gb", vllm_version=rec["vllm_version"],
                                 flags={"gpu_memory_utilization": rec["gpu_memory_utilization"],
                                        "max_model_len": rec["max_model_len"]}))
    assert abs(r.memory.weights_bytes / GiB - rec["model_loading_gib"]) <= 0.01 * rec["model_loading_gib"]


def test_plan_says_why_nothing_starts_before_memory():
    chat = load_workload("chat")
    removed = plan(PlanRequest(model=MLLAMA, workload=chat, gpu="h100-80gb", gpus=4, vllm_version="0.11.0"))
    assert removed.status == "nothing-starts" and removed.shortfall_bytes == 0
    assert removed.summary.startswith("Does not start: Model architecture MllamaForConditionalGeneration was "
                                      "supported in vLLM until v0.10.2")
    v0 = plan(PlanRequest(model="Qwen/Qwen3-8B", workload=chat, gpu="v100-32gb", vllm_version="0.10.1.1"))
    assert v0.status == "nothing-starts" and v0.shortfall_bytes == 0
    assert v0.summary.startswith("Not predicted: ") and "V0" in v0.summary and "short" not in v0.summary


def test_gpt_oss_120b_triton_on_hopper_keeps_the_scales_until_0_25():
    # 0.12.0-0.24.0: Triton on SM90 swizzles the scales into new tensors and keeps the checkpoint's (vllm==0.15.0
    # quantization/mxfp4.py 745-784 deletes only w13_weight / w2_weight); 0.25.0 frees them (oracle/mxfp4.py)
    kept = estimate(EstimateRequest(model="openai/gpt-oss-120b", gpu="h100-80gb", vllm_version="0.15.0"))
    # 'Model loading took 64.38 GiB' (Triton on an H100, vLLM issue #33155; data/notes/vllm-memory-notes.md)
    assert abs(kept.memory.weights_bytes / GiB - 64.38) <= 0.01 * 64.38
    assert kept.verdict != "fits"
    freed = estimate(EstimateRequest(model="openai/gpt-oss-120b", gpu="h100-80gb", vllm_version="0.25.0"))
    assert 3 * GiB < kept.memory.weights_bytes - freed.memory.weights_bytes < 3.6 * GiB


def test_block_quantized_dense_mlp_shard_not_a_whole_block_is_refused():
    # fp8_utils.py validate_fp8_block_shape (vllm==0.11.0 lines 750-782): gate/up's per-rank output partition
    # 25,600 / 16 = 1,600 is not a multiple of block_n 128; TP 8 (3,200 = 25 x 128) loads
    m = resolve_model("Qwen/Qwen3-32B-FP8")
    assert block_shape_refusal(m, {}, 16) == ("Weight output_partition_size = 1600 is not divisible by weight "
                                              "quantization block_n = 128.")
    assert block_shape_refusal(m, {}, 8) is None
    assert block_shape_refusal(m, {"enable_expert_parallel": True}, 16) is not None  # EP does not split MLPs
    # an unquantized checkpoint has no blocks
    assert block_shape_refusal(resolve_model("Qwen/Qwen3-32B"), {}, 16) is None


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: m}
spec:
  selector: {matchLabels: {app: m}}
  template:
    metadata: {labels: {app: m}}
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: ["--model", "MODEL", "--tensor-parallel-size", "4"]
        resources: {limits: {nvidia.com/gpu: 4}}
"""


def test_check_refuses_a_removed_architecture_and_reports_the_band_basis(run_cli, tmp_path):
    f = tmp_path / "d.yaml"
    f.write_text(DEPLOYMENT.replace("MODEL", MLLAMA))
    res = run_cli("check", str(f), "--format", "json")
    out = json.loads(res.stdout)
    assert res.exit_code == 1
    assert [s["verdict"] for s in out["servers"]] == ["refused"]
    assert any(x["rule"] == "vllm-refuses" and "was supported in vLLM until v0.10.2" in x["message"]
               for x in out["findings"])
    f.write_text(DEPLOYMENT.replace("MODEL", "Qwen/Qwen3-8B"))
    server = json.loads(run_cli("check", str(f), "--format", "json").stdout)["servers"][0]
    assert server["verdict"] == "fits" and server["band_basis"].startswith("validated by ")
