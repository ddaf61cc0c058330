"""Issue 13, item 7: a release whose wheel ships no kernels for the GPU's architecture is refused with CUDA's
words in `estimate`, `plan` and `check`; `plan` offers the newest release that still runs the GPU.

The release ranges are measured from the wheels (configurator/hardware/catalog.py WHEEL_MIN_SM,
docs/gpus.md): 0.19.1 ships sm_70 cubins, 0.20.0 does not.
"""

import json

import pytest

from configurator.hardware.catalog import find_gpu, newest_release_for, no_kernel_image, wheel_min_sm
from configurator.vllm.versions import SUPPORTED

MODEL = ["--model", "Qwen/Qwen2.5-1.5B-Instruct", "--max-model-len", "8192", "--dtype", "half"]
NO_KERNEL = "no kernel image is available for execution on the device"


@pytest.mark.parametrize("version,sm", [("0.6.6", 70), ("0.8.0", 70), ("0.19.1", 70), ("0.20.0", 75),
                                        ("0.20.2", 75), ("0.33.0", 75)])
def test_lowest_architecture_each_release_ships(version, sm):
    assert wheel_min_sm(version) == sm


def test_newest_release_for_a_v100_is_0_19_1_and_a_t4_runs_everything():
    assert newest_release_for(find_gpu("v100-32gb"), SUPPORTED) == "0.19.1"
    assert newest_release_for(find_gpu("t4"), SUPPORTED) == SUPPORTED[-1]
    assert no_kernel_image(find_gpu("t4"), "0.33.0", SUPPORTED) is None
    assert no_kernel_image(find_gpu("h100"), "0.33.0", SUPPORTED) is None


@pytest.mark.parametrize("version,code", [("0.33.0", 1), ("0.20.0", 1), ("0.19.1", 0)])
def test_estimate_refuses_v100_on_a_release_without_its_kernels(version, code, run_cli):
    res = run_cli("estimate", *MODEL, "--gpu", "v100-32gb", "--vllm-version", version, "--format", "json")
    assert res.exit_code == code
    errors = json.loads(res.stdout)["errors"]
    assert any(NO_KERNEL in e for e in errors) == (code == 1)
    if code:
        assert any("the newest release that runs it is 0.19.1" in e for e in errors)


def test_plan_on_v100_says_it_does_not_start_and_offers_0_19_1(run_cli):
    res = run_cli("plan", "--model", "Qwen/Qwen2.5-1.5B-Instruct", "--gpu", "v100-32gb", "--format", "json")
    assert res.exit_code == 1
    p = json.loads(res.stdout)
    assert p["status"] == "nothing-starts" and NO_KERNEL in p["summary"] and p["shortfall_bytes"] == 0
    first = p["remedies"][0]
    assert first["changes"] == {"vllm_version": "0.19.1"} and first["cost_rank"] == 1


def test_plan_with_the_offered_release_carries_the_workload(run_cli):
    res = run_cli("plan", "--model", "Qwen/Qwen2.5-1.5B-Instruct", "--gpu", "v100-32gb", "--vllm-version", "0.19.1",
                  "--format", "json")
    assert res.exit_code == 0 and json.loads(res.stdout)["status"] == "carries"


def test_check_flags_the_image_release_on_a_v100(run_cli, tmp_path):
    manifest = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: v100}
spec:
  template:
    spec:
      nodeSelector: {nvidia.com/gpu.product: Tesla-V100-SXM2-32GB}
      containers:
        - name: vllm
          image: vllm/vllm-openai:IMAGE
          args: ["vllm", "serve", "Qwen/Qwen2.5-1.5B-Instruct", "--max-model-len", "8192", "--dtype", "half"]
          resources: {limits: {nvidia.com/gpu: 1}}
"""
    new, old = tmp_path / "new.yaml", tmp_path / "old.yaml"
    new.write_text(manifest.replace("IMAGE", "v0.33.0"))
    old.write_text(manifest.replace("IMAGE", "v0.19.1"))
    res = run_cli("check", str(new))
    assert res.exit_code == 1 and "gpu-arch-unsupported" in res.stdout and NO_KERNEL in res.stdout
    assert ":7:" in res.stdout  # at the nodeSelector that names the GPU
    res = run_cli("check", str(old))
    assert res.exit_code == 0 and "gpu-arch-unsupported" not in res.stdout
