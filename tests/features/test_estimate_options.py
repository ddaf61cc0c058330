"""`estimate --image`, `estimate --calibration` with bad files, and the `nvidia.com/gpu.memory` node label,
as the README documents them."""

from __future__ import annotations

import json

import pytest

from configurator.hardware.labels import SMI_TO_CUDA_MARGIN_MIB

QWEN = ("--model", "Qwen/Qwen3-0.6B", "--gpu", "l4")


@pytest.mark.parametrize("image, version, warns", [
    ("vllm/vllm-openai:v0.11.0", "0.11.0", None),
    ("docker.io/vllm/vllm-openai:v0.10.1.1", "0.10.1.1", None),
    ("localhost:5000/vllm/vllm-openai:v0.28.0", "0.28.0", None),  # a registry port is not a tag
    ("vllm/vllm-openai:v0.11.0@sha256:" + "a" * 64, "0.11.0", None),  # the tag, not the digest
    ("vllm/vllm-openai:latest", "newest", "names no vLLM release"),
    ("vllm/vllm-openai", "newest", "names no vLLM release"),
])
def test_image_tag_picks_the_release_and_wins_over_vllm_version(run_cli, image, version, warns):
    newest = json.loads(run_cli("estimate", *QWEN, "--format", "json").stdout)["vllm_version"]
    res = run_cli("estimate", *QWEN, "--vllm-version", "0.10.1", "--image", image, "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["vllm_version"] == (newest if version == "newest" else version)
    if warns:
        assert warns in res.stderr and newest in res.stderr
    else:
        assert "warning" not in res.stderr


def test_image_of_a_v0_release_says_it_is_not_predicted(run_cli):
    res = run_cli("estimate", *QWEN, "--image", "vllm/vllm-openai:v0.5.0")
    assert "vLLM 0.5.0" in res.stdout and "NOT PREDICTED" in res.stdout and "V0" in res.stdout


def test_image_changes_the_prediction_as_the_release_does(estimate_json):
    _, by_image = estimate_json(*QWEN, "--image", "vllm/vllm-openai:v0.11.0")
    _, by_version = estimate_json(*QWEN, "--vllm-version", "0.11.0")
    assert by_image["memory"] == by_version["memory"] and by_image["kv_cache"] == by_version["kv_cache"]


CAL = """calibration_version: 1
model: Qwen/Qwen3-0.6B
gpu: l4
vllm_version: 0.33.0
flags: {max_model_len: 40960}
measured: {overhead_bytes: 1000000000, available_kv_bytes: 15000000000, weights_bytes: 1200000000}
predicted_overhead_bytes: 900000000
source: vllm.log
"""


@pytest.mark.parametrize("name, text, says", [
    ("cal.yaml", "model: [unclosed\n", "not valid YAML"),
    ("cal.json", "{not json", "not valid JSON"),
    ("cal.yaml", "- a list\n", "not a calibration file"),
    ("cal.yaml", CAL.replace("model: Qwen/Qwen3-0.6B\n", ""), "not a calibration file (model"),
    ("cal.yaml", CAL.replace("overhead_bytes: 1000000000", "overhead_bytes: lots"), "measured.overhead_bytes"),
    ("cal.yaml", "", "not a calibration file"),
])
def test_bad_calibration_files_are_one_line_exit_2(run_cli, tmp_path, name, text, says):
    path = tmp_path / name
    path.write_text(text)
    res = run_cli("estimate", *QWEN, "--calibration", str(path))
    assert res.exit_code == 2 and not res.stdout
    assert says in res.stderr and str(path) in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_a_missing_calibration_file_is_exit_2(run_cli, tmp_path):
    res = run_cli("estimate", *QWEN, "--calibration", str(tmp_path / "nope.yaml"))
    assert res.exit_code == 2 and "nope.yaml" in res.stderr and "Traceback" not in res.output


def test_a_valid_calibration_is_applied_and_one_for_another_gpu_or_release_is_ignored(estimate_json, tmp_path):
    path = tmp_path / "cal.yaml"
    path.write_text(CAL)
    _, plain = estimate_json(*QWEN)
    _, cal = estimate_json(*QWEN, "--calibration", str(path))
    assert cal["memory"]["weights_bytes"] == 1_200_000_000 != plain["memory"]["weights_bytes"]
    assert not any("calibration ignored" in w for w in cal["warnings"])
    for other in (("--gpu", "l40s"), ("--vllm-version", "0.28.0")):
        args = [*QWEN, *other] if other[0] != "--gpu" else ["--model", "Qwen/Qwen3-0.6B", *other]
        _, out = estimate_json(*args, "--calibration", str(path))
        assert any("calibration ignored" in w for w in out["warnings"]), other
        _, bare = estimate_json(*args)
        assert out["memory"] == bare["memory"]


def _deployment(selector: dict) -> str:
    return json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m"},
        "spec": {"template": {"spec": {
            "nodeSelector": selector,
            "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.28.0",
                            "args": ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "32768"],
                            "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})


def _check(run_cli, tmp_path, selector):
    path = tmp_path / "d.yaml"
    path.write_text(_deployment(selector))
    res = run_cli("check", "--format", "json", str(path))
    (server,) = json.loads(res.stdout)["servers"]
    return res.exit_code, server


def test_gpu_memory_node_label_is_mib_as_nvidia_smi_shows_it(run_cli, estimate_json, tmp_path):
    _, server = _check(run_cli, tmp_path, {"nvidia.com/gpu.memory": "23034"})
    assert server["gpu"] == "custom" and server["gpu_source"] == "nvidia.com/gpu.memory=23034"
    # the same prediction as estimate on a GPU of that memory less CUDA's share
    _, est = estimate_json("--model", "meta-llama/Llama-3.1-8B-Instruct", "--vllm-version", "0.28.0",
                           "--max-model-len", "32768", "--gpu-memory", f"{23034 - SMI_TO_CUDA_MARGIN_MIB}MiB")
    assert server["kv_cache_bytes"] == est["memory"]["kv_cache_bytes"]
    # more memory on the node: more KV cache and a clean verdict; less: vLLM would refuse
    code_big, big = _check(run_cli, tmp_path, {"nvidia.com/gpu.memory": "81559"})
    assert big["kv_cache_bytes"] > server["kv_cache_bytes"] and code_big == 0 and big["verdict"] == "fits"
    code_small, small = _check(run_cli, tmp_path, {"nvidia.com/gpu.memory": "16384"})
    assert small["verdict"] == "refused" and code_small == 1


def test_a_product_label_wins_over_the_memory_label(run_cli, tmp_path):
    _, server = _check(run_cli, tmp_path, {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                                           "nvidia.com/gpu.memory": "16384"})
    assert server["gpu"] == "h100-80gb" and server["gpu_source"].startswith("nvidia.com/gpu.product")


def test_a_memory_label_that_is_not_a_number_gives_no_gpu(run_cli, tmp_path):
    _, server = _check(run_cli, tmp_path, {"nvidia.com/gpu.memory": "80GB"})
    assert server["gpu"] is None and server["catalog"]  # judged against the catalog instead
