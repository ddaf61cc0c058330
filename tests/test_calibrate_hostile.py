"""Issue 30, calibrate: a V1-format log naming a release before 0.8 is calibrated (measured figures only, as a V0
log is), not a KeyError; a log whose numbers are impossible (weights + KV cache above what vLLM may use) is refused
in one line instead of writing a negative overhead."""

import yaml

from tests.test_calibrate import _log_from_record

RECORD = {"model_id": "Qwen/Qwen3-14B", "max_model_len": 40960, "model_loading_gib": 27.52,
          "available_kv_cache_gib": 11.57}


def test_v1_format_log_of_a_release_before_0_8(run_cli, tmp_path):
    log = tmp_path / "old.log"
    log.write_text(_log_from_record({**RECORD, "vllm_version": "0.7.3"}))
    out = tmp_path / "c.yaml"
    res = run_cli("calibrate", str(log), "--gpu", "l40s", "-o", str(out))
    assert res.exit_code == 0 and "not predicted" in res.stdout, res.stdout + res.stderr
    measured = yaml.safe_load(out.read_text())["measured"]
    assert measured["overhead_bytes"] > 0
    # requested = 0.9 (vLLM's default) x the L40S's CUDA total, weights and KV as logged
    assert abs(measured["requested_bytes"] - measured["weights_bytes"] - measured["available_kv_bytes"]
               - measured["overhead_bytes"]) <= 1


def test_impossible_log_is_refused_not_written(run_cli, tmp_path):
    log = tmp_path / "bad.log"
    log.write_text(_log_from_record({**RECORD, "vllm_version": "0.28.0", "available_kv_cache_gib": 500.0}))
    out = tmp_path / "c.yaml"
    res = run_cli("calibrate", str(log), "--gpu", "l40s", "-o", str(out))
    err = res.stderr.strip()
    assert res.exit_code == 2 and "impossible" in err and len(err.splitlines()) == 1, err
    assert not out.exists()
