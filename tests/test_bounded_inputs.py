"""Issue 30, bounded everywhere: every file the tool reads goes through safe_io's capped, non-blocking reader
(a FIFO or /dev/zero is one line, never a hang or the OOM killer); model geometry is range-checked at load; JSON
nesting is bounded; absurd numbers on the command line and a million tiny documents are cheap refusals."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT, repo_data

QWEN = repo_data("model-configs", "Qwen__Qwen2.5-1.5B.json")
OK_MANIFEST = ROOT / "tests" / "manifests" / "docs-example-ok.yaml"


def _one_line_exit_2(res, needle: str) -> None:
    assert res.exit_code == 2, (res.exit_code, res.stdout, res.stderr)
    err = res.stderr.strip()
    assert needle in err and "Traceback" not in err and len(err.splitlines()) == 1, err


@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "pipe.yaml"
    os.mkfifo(p)
    return p


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_workload_file_is_never_read_from_a_fifo_or_device(run_cli, tmp_path, fifo, special):
    path = str(fifo) if special == "fifo" else special
    _one_line_exit_2(run_cli("plan", "--model", "Qwen/Qwen3-0.6B", "--gpu", "L4", "--workload", path),
                     "not a regular file")
    cfg = tmp_path / ".vllm-configurator.yaml"  # the config file's workload: reaches the same reader
    cfg.write_text(f"workload: {path}\n")
    _one_line_exit_2(run_cli("check", str(OK_MANIFEST), "--config", str(cfg)), "not a regular file")


def test_calibration_file_is_bounded(run_cli, tmp_path, fifo):
    _one_line_exit_2(run_cli("estimate", "--model", "Qwen/Qwen3-0.6B", "--gpu", "L4", "--calibration", "/dev/zero"),
                     "character device")
    _one_line_exit_2(run_cli("estimate", "--model", "Qwen/Qwen3-0.6B", "--gpu", "L4", "--calibration", str(fifo)),
                     "FIFO")
    big = tmp_path / "cal.yaml"
    with open(big, "wb") as f:
        f.truncate(5 << 20)  # sparse: past the 4 MiB cap of a calibration file
    _one_line_exit_2(run_cli("estimate", "--model", "Qwen/Qwen3-0.6B", "--gpu", "L4", "--calibration", str(big)),
                     "4 MiB limit")


def _config(tmp_path, **changes):
    cfg = json.loads(QWEN.read_text())
    cfg.update(changes)
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    return p


@pytest.mark.parametrize("key,value", [
    ("num_hidden_layers", 10_000_000), ("num_hidden_layers", 1e7), ("vocab_size", -1),
    ("num_key_value_heads", 0), ("head_dim", 0), ("head_dim", -128), ("hidden_size", 10**12),
    ("num_attention_heads", "12"), ("intermediate_size", 1e400),
])
def test_absurd_geometry_is_one_line_exit_2_and_fast(run_cli, tmp_path, key, value):
    p = _config(tmp_path, **{key: value})
    t = time.monotonic()
    res = run_cli("estimate", "--model", "m", "--model-config", f"m={p}", "--gpu", "L4")
    _one_line_exit_2(res, key)
    assert time.monotonic() - t < 10  # the issue: num_hidden_layers 1e7 took 93 s and 5.2 GB


def test_geometry_at_the_edge_of_real_models_still_loads(run_cli, tmp_path):
    p = _config(tmp_path, vocab_size=262_144, num_hidden_layers=160)
    assert run_cli("estimate", "--model", "m", "--model-config", f"m={p}", "--gpu", "H200").exit_code in (0, 1)


def test_deep_and_huge_config_json(run_cli, tmp_path):
    deep = tmp_path / "deep" / "config.json"
    deep.parent.mkdir()
    deep.write_text("[" * 100_000 + "]" * 100_000)
    _one_line_exit_2(run_cli("estimate", "--model", "m", "--model-config", f"m={deep}", "--gpu", "L4"),
                     "nested deeper than 64 levels")
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(QWEN.read_text())
    with open(folder / "model.safetensors.index.json", "wb") as f:
        f.truncate(40 << 20)  # sparse, past the 32 MiB cap of a JSON file
    _one_line_exit_2(run_cli("estimate", "--model", "m", "--model-config", f"m={folder}", "--gpu", "L4"),
                     "32 MiB limit")
    (folder / "model.safetensors.index.json").unlink()
    os.mkfifo(folder / "hf_quant_config.json")
    _one_line_exit_2(run_cli("estimate", "--model", "m", "--model-config", f"m={folder}", "--gpu", "L4"), "FIFO")


@pytest.mark.parametrize("option", ["--concurrency", "--max-context", "--prompt-tokens", "--output-tokens"])
def test_absurd_numbers_on_the_command_line(run_cli, option):
    _one_line_exit_2(run_cli("plan", "--model", "Qwen/Qwen3-0.6B", "--gpu", "L4", option, str(10**309)),
                     "positive integer up to")


def test_a_million_tiny_documents_stay_small(tmp_path):
    """The issue: 14 MB of a million `x: N` documents took 3.84 GB and 138 s. Now the first 10,000 documents are
    read and the rest reported (parse-error, exit 1), in bounded memory."""
    f = tmp_path / "million.yaml"
    f.write_text("".join(f"---\nx: {i}\n" for i in range(1_000_000)))
    t = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "configurator.cli.main", "check", str(f)], capture_output=True,
                          text=True, timeout=120)
    rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert proc.returncode == 1 and "more than 10,000 YAML documents" in proc.stdout, proc.stdout + proc.stderr
    assert rss_kib < 1 << 20, f"{rss_kib} KiB"  # under 1 GiB (measured: ~75 MB)
    assert time.monotonic() - t < 60


def test_absurd_config_in_the_hf_cache_is_refused_by_check_fast(run_cli, tmp_path, monkeypatch):
    """The issue: num_hidden_layers 1e7 was reachable from `check` through the local Hugging Face cache."""
    cache = tmp_path / "hf-cache"
    commit = "0" * 40
    snap = cache / "models--acme--evil" / "snapshots" / commit
    snap.mkdir(parents=True)
    (cache / "models--acme--evil" / "refs").mkdir()
    (cache / "models--acme--evil" / "refs" / "main").write_text(commit)
    cfg = json.loads(QWEN.read_text())
    cfg["num_hidden_layers"] = 10_000_000
    (snap / "config.json").write_text(json.dumps(cfg))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(OK_MANIFEST.read_text().replace("mistralai/Mistral-7B-Instruct-v0.3", "acme/evil"))
    assert "acme/evil" in manifest.read_text()
    t = time.monotonic()
    res = run_cli("check", str(manifest), "--format", "json")
    report = json.loads(res.stdout)
    assert time.monotonic() - t < 10
    assert all(s["verdict"] == "not-checked" for s in report["servers"]) and report["servers"]
    assert any("num_hidden_layers" in f["message"] for f in report["findings"])
