"""A calibration measured without LoRA slots (or CPU offload) still counts them when the estimate asks for
them; one measured with the same LoRA flags already holds them and does not count them twice."""

from __future__ import annotations

import json

from configurator.units import GiB

HEAD = "INFO 12-02 10:11:10 [api_server.py:1] vLLM API server version 0.19.0\n"
WORKER = "(EngineCore_DP0 pid=7) INFO 12-02 10:11:12 [gpu_worker.py:1] "
LORA = ["--enable-lora", "--max-loras", "8", "--max-lora-rank", "64"]
BASE = ["--model", "Qwen/Qwen3-8B", "--gpu", "h100-80gb", "--vllm-version", "0.19.0", "--max-model-len", "8192"]


def _calibration(run_cli, tmp_path, args: dict, weights_gib: float, kv_gib: float):
    log = tmp_path / f"{len(args)}.log"
    log.write_text(HEAD + f"INFO 12-02 10:11:10 [utils.py:1] non-default args: {args!r}\n"
                   + f"{WORKER}Model loading took {weights_gib} GiB memory and 6.27 seconds\n"
                   + f"{WORKER}Available KV cache memory: {kv_gib} GiB\n")
    out = tmp_path / f"{len(args)}.json"
    assert run_cli("calibrate", str(log), "--gpu", "h100-80gb", "-o", str(out)).exit_code == 0
    return out


def _weights(run_cli, *args) -> float:
    res = run_cli("estimate", *BASE, *args, "--format", "json")
    return json.loads(res.stdout)["memory"]["weights_bytes"] / GiB


def test_lora_slots_are_added_to_a_calibration_measured_without_them(run_cli, tmp_path):
    plain = _calibration(run_cli, tmp_path, {"model": "Qwen/Qwen3-8B", "max_model_len": 8192}, 15.27, 52.0)
    uncalibrated = _weights(run_cli, *LORA)
    lora_bytes = uncalibrated - _weights(run_cli)
    assert lora_bytes > 1  # 8 slots of rank 64 on every linear layer
    assert abs(_weights(run_cli, *LORA, "--calibration", str(plain)) - (15.27 + lora_bytes)) < 0.01
    # --cpu-offload-gb keeps 4 GiB of the measured weights in host memory
    assert abs(_weights(run_cli, "--cpu-offload-gb", "4", "--calibration", str(plain)) - (15.27 - 4)) < 0.01


def test_a_calibration_with_the_same_lora_flags_is_not_counted_twice(run_cli, tmp_path):
    with_lora = _calibration(run_cli, tmp_path, {"model": "Qwen/Qwen3-8B", "max_model_len": 8192,
                                                 "enable_lora": True, "max_loras": 8, "max_lora_rank": 64}, 18.2, 49.0)
    assert abs(_weights(run_cli, *LORA, "--calibration", str(with_lora)) - 18.2) < 0.01


def test_a_revision_for_a_catalog_model_is_said_to_be_ignored(run_cli):
    res = run_cli("estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", "--revision", "deadbeef")
    assert "--revision deadbeef is not read" in res.output and "offline catalog" in res.output
