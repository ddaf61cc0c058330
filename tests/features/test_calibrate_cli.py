"""`calibrate -` (the log on standard input), `calibrate LOG -- vllm serve ...` (flags the log does not show)
and `calibrate --format json`, as the README documents them. The log lines are vLLM's own wording; the
figures are the README's Qwen3-14B / L40S / 0.28 example."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from configurator.cli.main import cli
from configurator.units import GiB

WORKER = "(EngineCore_DP0 pid=7) INFO 08-21 10:11:12 [gpu_worker.py:1] "
BANNER = "INFO 08-21 10:11:10 [api_server.py:1] vLLM API server version 0.28.0\n"
MEASURED = (f"{WORKER}Model loading took 27.52 GiB and 6.27 seconds\n"
            f"{WORKER}Available KV cache memory: 11.57 GiB\n")
ARGS = "INFO 08-21 10:11:10 [utils.py:1] non-default args: {'model': 'Qwen/Qwen3-14B', 'max_model_len': 40960}\n"


def _calibrate(*args, stdin=None):
    return CliRunner().invoke(cli, ["calibrate", *args], input=stdin, catch_exceptions=False)


def test_log_on_standard_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = _calibrate("-", "--gpu", "l40s", stdin=BANNER + ARGS + MEASURED)
    assert res.exit_code == 0, res.output
    assert "Qwen/Qwen3-14B, l40s, vLLM 0.28.0 (from <stdin>)" in res.stdout
    assert "11.57 GiB (+0.000 GiB vs the log)" in res.stdout
    cal = yaml.safe_load((tmp_path / "vllm.calibration.yaml").read_text())  # the default name for stdin
    assert cal["source"] == "<stdin>" and cal["model"] == "Qwen/Qwen3-14B"
    assert cal["measured"]["available_kv_bytes"] == round(11.57 * GiB)


def test_flags_after_double_dash_fill_in_what_the_log_does_not_show(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(BANNER + MEASURED)  # no model, no non-default args
    out = tmp_path / "cal.yaml"
    res = _calibrate(str(log), "--gpu", "l40s", "-o", str(out))
    assert res.exit_code == 2 and "does not name the model" in res.stderr and not out.exists()
    res = _calibrate(str(log), "--gpu", "l40s", "-o", str(out), "--",
                     "vllm", "serve", "Qwen/Qwen3-14B", "--max-model-len", "16384", "--max-num-seqs", "32")
    assert res.exit_code == 0, res.output
    cal = yaml.safe_load(out.read_text())
    assert cal["model"] == "Qwen/Qwen3-14B"
    assert cal["flags"]["max_model_len"] == 16384 and cal["flags"]["max_num_seqs"] == 32


def test_flags_after_double_dash_win_over_the_logged_ones(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(BANNER + ARGS + MEASURED)
    out = tmp_path / "cal.json"
    res = _calibrate(str(log), "--gpu", "l40s", "-o", str(out), "--format", "json", "--",
                     "vllm", "serve", "--max-model-len", "8192")
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["flags"]["max_model_len"] == 8192


def test_json_report(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(BANNER + ARGS + MEASURED)
    out = tmp_path / "cal.json"
    res = _calibrate(str(log), "--gpu", "l40s", "-o", str(out), "--format", "json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["calibration_file"] == str(out)
    assert report["calibration"] == json.loads(out.read_text())  # the report holds what was written
    assert report["logged_kv_bytes"] == report["calibrated_kv_bytes"] == round(11.57 * GiB)
    assert report["predicted_kv_bytes"] != report["logged_kv_bytes"]
    rows = {r[0]: r[1:] for r in report["rows"]}
    assert rows["weights"][0] == round(27.52 * GiB)
    assert rows["available KV cache"] == [report["logged_kv_bytes"], report["predicted_kv_bytes"]]


def test_the_calibration_written_from_stdin_is_what_estimate_uses(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _calibrate("-", "--gpu", "l40s", stdin=BANNER + ARGS + MEASURED).exit_code == 0
    res = CliRunner().invoke(cli, ["estimate", "--model", "Qwen/Qwen3-14B", "--gpu", "l40s", "--vllm-version",
                                   "0.28.0", "--max-model-len", "40960", "--calibration", "vllm.calibration.yaml",
                                   "--format", "json"])
    assert json.loads(res.stdout)["memory"]["kv_cache_bytes"] == round(11.57 * GiB)


def test_no_version_printed_assumes_the_newest_and_says_so(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(ARGS + MEASURED)
    res = _calibrate(str(log), "--gpu", "l40s", "-o", str(tmp_path / "c.yaml"), "--format", "json")
    assert res.exit_code == 0
    assert any("newest modelled release" in w for w in json.loads(res.stdout)["warnings"])
