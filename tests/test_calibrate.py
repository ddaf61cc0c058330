"""`calibrate`: a real log's numbers in, a calibration file out that reproduces the logged KV memory."""

import json

import pytest

from configurator.units import GiB
from tests.conftest import ROOT, repo_data


def _log_from_record(r: dict, args: dict | None = None) -> str:
    """A V1 start-up log with the lines the record quotes (prefixes as vLLM prints them)."""
    args = {"model": r["model_id"], "max_model_len": r["max_model_len"], **(args or {})}
    p = "(EngineCore_DP0 pid=7) INFO 08-21 10:11:12 [gpu_worker.py:1] "
    lines = [f"INFO 08-21 10:11:10 [api_server.py:1] vLLM API server version {r['vllm_version']}",
             f"INFO 08-21 10:11:10 [utils.py:1] non-default args: {args!r}",
             f"{p}Model loading took {r['model_loading_gib']} GiB and 6.27 seconds",
             f"{p}Available KV cache memory: {r['available_kv_cache_gib']} GiB"]
    if r.get("kv_cache_tokens"):
        lines.append(f"{p}GPU KV cache size: {r['kv_cache_tokens']:,} tokens")
    if r.get("free_memory_line"):
        lines.append(p + r["free_memory_line"])
    return "\n".join(lines) + "\n"


# The round trip's tolerance, as README.md states it (a consistency check, not an accuracy figure).
ROUND_TRIP_GIB = 0.02


def test_the_readme_states_the_round_trip_tolerance_this_file_asserts():
    text = " ".join((ROOT / "README.md").read_text().split())
    assert f"predicting that same log again agrees within {ROUND_TRIP_GIB} GiB (tests/test_calibrate.py): a " \
           "consistency check, not an accuracy figure" in text


def _qwen3_14b_log(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(_log_from_record({"model_id": "Qwen/Qwen3-14B", "vllm_version": "0.28.0", "max_model_len": 40960,
                                     "model_loading_gib": 27.52, "available_kv_cache_gib": 11.57}))
    return log


def _calibratable() -> list:
    """Dev records chosen by what they hold, not by id: a printed release, a start, the logged weights and KV
    memory, a catalog GPU and a model the tool resolves offline (benchmarks/accuracy.py reads them)."""
    repo_data("logs", "vllm-startup-logs.dev.jsonl")
    from tests.conftest import load_benchmark

    cases, _ = load_benchmark("accuracy").cases()
    return [c for c in cases if c.version and c.started and c.logged_kv and c.logged_weights and "gpu" in c.gpu
            and c.record.get("max_model_len")]


def _cli_flags(flags: dict) -> list[str]:
    out = []
    for k, v in sorted(flags.items()):
        if isinstance(v, bool):
            out.append(f"--{k.replace('_', '-')}" if v else f"--no-{k.replace('_', '-')}")
        elif isinstance(v, dict):
            out += [f"--{k.replace('_', '-')}", json.dumps(v)]
        else:
            out += [f"--{k.replace('_', '-')}", str(v)]
    return out


def test_enough_records_are_calibratable():
    assert len(_calibratable()) >= 4


@pytest.mark.parametrize("case", _calibratable(), ids=lambda c: c.id)
def test_calibration_reproduces_the_logged_kv_memory(case, run_cli, tmp_path):
    r = dict(case.record, model_id=case.label, vllm_version=case.version)
    gpu = case.gpu["gpu"]
    log = tmp_path / "vllm.log"
    log.write_text(_log_from_record(r, case.flags))
    out = tmp_path / "cal.yaml"
    res = run_cli("calibrate", str(log), "--gpu", gpu, "-o", str(out))
    assert res.exit_code == 0, res.stderr
    assert "vLLM measured" in res.stdout and out.exists()
    args = ["estimate", "--model", case.label, "--gpu", gpu, "--vllm-version", case.version,
            "--max-model-len", str(r["max_model_len"]), "--calibration", str(out), "--format", "json",
            *_cli_flags({k: v for k, v in case.flags.items() if k != "max_model_len"})]
    res = run_cli(*args)
    assert res.exit_code in (0, 1), res.stderr
    est = json.loads(res.stdout)
    assert abs(est["memory"]["kv_cache_bytes"] / GiB - r["available_kv_cache_gib"]) <= ROUND_TRIP_GIB
    if r.get("kv_cache_tokens"):
        assert abs(est["kv_cache"]["tokens"] - r["kv_cache_tokens"]) / r["kv_cache_tokens"] <= 0.01


def test_calibration_with_other_flags_scales_the_overheads(run_cli, tmp_path):
    log = _qwen3_14b_log(tmp_path)
    out = tmp_path / "cal.json"
    assert run_cli("calibrate", str(log), "--gpu", "l40s", "-o", str(out)).exit_code == 0
    base = ["estimate", "--model", "Qwen/Qwen3-14B", "--gpu", "l40s", "--vllm-version", "0.28.0",
            "--calibration", str(out), "--format", "json", "--max-model-len", "40960"]
    same = json.loads(run_cli(*base).stdout)["memory"]["kv_cache_bytes"]
    lower = json.loads(run_cli(*base, "--gpu-memory-utilization", "0.8").stdout)["memory"]["kv_cache_bytes"]
    assert lower < same  # same measured overheads, smaller budget


def test_calibration_for_another_model_is_ignored_with_a_warning(run_cli, tmp_path):
    log = _qwen3_14b_log(tmp_path)
    out = tmp_path / "cal.yaml"
    run_cli("calibrate", str(log), "--gpu", "l40s", "-o", str(out))
    res = run_cli("estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "l40s", "--calibration", str(out),
                  "--format", "json")
    assert any("calibration ignored" in w for w in json.loads(res.stdout)["warnings"])


def test_existing_calibration_file_is_not_overwritten(run_cli, tmp_path):
    log = _qwen3_14b_log(tmp_path)
    out = tmp_path / "cal.yaml"
    out.write_text("mine\n")
    res = run_cli("calibrate", str(log), "--gpu", "l40s", "-o", str(out))
    assert res.exit_code == 2 and "--force" in res.stderr and out.read_text() == "mine\n"


@pytest.mark.parametrize("text,needle", [
    ("", "empty"),
    ("[INFO] nginx started\n[INFO] listening on :80\n", "not a vLLM start-up log"),
    ("INFO 08-21 10:11:10 [api_server.py:1] vLLM API server version 0.28.0\n", "truncated"),
    ("INFO vLLM API server version 0.28.0\n(EngineCore_DP0 pid=7) INFO Available KV cache memory: 11.57 GiB\n"
     "INFO vLLM API server version 0.11.0\n(EngineCore_DP0 pid=8) INFO Available KV cache memory: 9.2 GiB\n", "mixes"),
])
def test_bad_logs_exit_2_with_one_line(text, needle, run_cli, tmp_path):
    log = tmp_path / "bad.log"
    log.write_text(text)
    res = run_cli("calibrate", str(log), "--gpu", "l40s", "-o", str(tmp_path / "c.yaml"))
    assert res.exit_code == 2 and "Traceback" not in res.stderr
    assert needle in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "c.yaml").exists()


def test_calibration_file_follows_its_schema(run_cli, tmp_path):
    import jsonschema
    import yaml

    from configurator.schemas import SCHEMAS

    log = _qwen3_14b_log(tmp_path)
    out = tmp_path / "cal.yaml"
    run_cli("calibrate", str(log), "--gpu", "l40s", "-o", str(out))
    jsonschema.validate(yaml.safe_load(out.read_text()), SCHEMAS["calibration.schema.json"]())


def test_calibrate_refuses_a_fifo_and_an_endless_stream_at_once(tmp_path):
    """Issue 15: `calibrate fifo` blocked forever and `calibrate -` < /dev/zero grew without bound."""
    import os
    import subprocess
    import sys

    fifo = tmp_path / "vllm.log"
    os.mkfifo(fifo)
    vc = [sys.executable, "-m", "configurator.cli.main", "calibrate"]
    r = subprocess.run([*vc, str(fifo), "--gpu", "l4"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "FIFO" in r.stderr and "Traceback" not in r.stderr
    with open("/dev/zero", "rb") as zero:
        r = subprocess.run([*vc, "-", "--gpu", "l4"], stdin=zero, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "limit" in r.stderr and "Traceback" not in r.stderr


def test_an_argument_value_json_cannot_hold_is_dropped_not_a_traceback(run_cli, tmp_path):
    log = tmp_path / "vllm.log"
    text = _log_from_record({"model_id": "Qwen/Qwen3-14B", "vllm_version": "0.28.0", "max_model_len": 40960,
                             "model_loading_gib": 27.52, "available_kv_cache_gib": 11.57})
    log.write_text(text.replace("'max_model_len': 40960}", "'max_model_len': 40960, 'limit_mm_per_prompt': "
                                "{'image': {1, 2}}}"))
    res = run_cli("calibrate", str(log), "--gpu", "l40s", "-o", str(tmp_path / "c.yaml"))
    assert res.exit_code == 0 and "Traceback" not in res.stderr, res.stderr
