"""`--model` from a local folder (config.json, model.safetensors.index.json, hf_quant_config.json) and from
the local Hugging Face cache (HF_HUB_CACHE), as the README documents them.

The configs written here are the built-in profiles' own (profiles/models/*.json, whose config_source says
where each came from), so no config is restated in this file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PROFILES = ROOT / "profiles" / "models"
FAKE_ID = "example-org/config-only-model"  # not a built-in profile: found only through the cache


def _profile(name: str) -> dict:
    return json.loads((PROFILES / f"{name}.json").read_text())


def _folder(tmp_path: Path, profile: str, *, total_size: int | None = None, quant: bool = False) -> Path:
    d = _profile(profile)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(d["config"]))
    if total_size is not None:
        (folder / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {"total_size": total_size}, "weight_map": {"lm_head.weight": "a.safetensors"}}))
    if quant:
        (folder / "hf_quant_config.json").write_text(json.dumps(d["hf_quant_config"]))
    return folder


def _estimate(estimate_json, *args):
    code, out = estimate_json(*args)
    assert code in (0, 1), out
    return out


def test_a_model_folder_takes_its_weights_from_the_safetensors_index(estimate_json, tmp_path):
    size = 1_500_000_000  # not what the parameter count gives: the index must be what is used
    folder = _folder(tmp_path, "Qwen__Qwen3-0.6B", total_size=size)
    out = _estimate(estimate_json, "--model", str(folder), "--gpu", "l4")
    # the checkpoint's bytes, plus the registered RoPE buffer that loads with them (a small share)
    assert size <= out["memory"]["weights_bytes"] <= 1.02 * size
    assert "model.safetensors.index.json" in out["model"]["weights_source"]
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 2 * size}}))
    doubled = _estimate(estimate_json, "--model", str(folder), "--gpu", "l4")["memory"]["weights_bytes"]
    assert doubled == pytest.approx(2 * out["memory"]["weights_bytes"], rel=1e-6)
    assert out["model"]["model_type"] == "qwen3" and out["model"]["num_hidden_layers"] == 28
    # the same folder without the index: the parameter count, as for the built-in profile
    (folder / "model.safetensors.index.json").unlink()
    bare = _estimate(estimate_json, "--model", str(folder), "--gpu", "l4")
    builtin = _estimate(estimate_json, "--model", "Qwen/Qwen3-0.6B", "--gpu", "l4")
    assert bare["memory"]["weights_bytes"] == builtin["memory"]["weights_bytes"] != size
    assert bare["kv_cache"] == builtin["kv_cache"]
    # config.json named directly works as the folder does (the index is read for a folder only)
    direct = _estimate(estimate_json, "--model", str(folder / "config.json"), "--gpu", "l4")
    assert direct["kv_cache"] == builtin["kv_cache"]


def test_hf_quant_config_beside_the_config_is_read(estimate_json, tmp_path):
    folder = _folder(tmp_path, "nvidia__Llama-3.1-70B-Instruct-FP8", quant=True)
    with_q = _estimate(estimate_json, "--model", str(folder), "--gpu", "h100", "-tp", "2")
    (folder / "hf_quant_config.json").unlink()
    without = _estimate(estimate_json, "--model", str(folder), "--gpu", "h100", "-tp", "2")
    assert with_q["model"]["quantization"] and not without["model"]["quantization"]
    assert with_q["memory"]["weights_bytes"] < 0.6 * without["memory"]["weights_bytes"]  # FP8 vs bf16


@pytest.mark.parametrize("bad, says", [
    ("{not json", "malformed or truncated"), ("[1, 2]", "must be a JSON object"),
])
def test_a_broken_index_or_config_is_one_line_exit_2(run_cli, tmp_path, bad, says):
    folder = _folder(tmp_path, "Qwen__Qwen3-0.6B", total_size=1)
    (folder / "model.safetensors.index.json").write_text(bad)
    res = run_cli("estimate", "--model", str(folder), "--gpu", "l4")
    assert res.exit_code == 2 and says in res.stderr and "Traceback" not in res.output
    (tmp_path / "empty").mkdir()
    res = run_cli("estimate", "--model", str(tmp_path / "empty"), "--gpu", "l4")
    assert res.exit_code == 2 and "no config.json" in res.stderr


def _hf_cache(root: Path, repo_id: str, config: dict) -> Path:
    """The layout huggingface_hub writes: models--org--name/{refs/main, snapshots/<commit>/config.json}."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = root / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    return snap


def test_the_hugging_face_cache_is_looked_up_through_huggingface_hub(estimate_json, run_cli, tmp_path, monkeypatch):
    import huggingface_hub.constants as hub_constants  # dev extras: present wherever the tests run

    cache = tmp_path / "hub"
    _hf_cache(cache, FAKE_ID, _profile("Qwen__Qwen3-8B")["config"])
    # not cached yet: the unknown-model message (offline, so the Hub is not asked)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    missing = run_cli("estimate", "--model", FAKE_ID, "--gpu", "l4")
    assert missing.exit_code == 2 and FAKE_ID in missing.stderr
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    out = _estimate(estimate_json, "--model", FAKE_ID, "--gpu", "l4")
    builtin = _estimate(estimate_json, "--model", "Qwen/Qwen3-8B", "--gpu", "l4")
    assert out["model"]["name"] == FAKE_ID  # named by its repository id, not the snapshot's path
    assert out["model"]["num_hidden_layers"] == builtin["model"]["num_hidden_layers"] == 36
    assert out["kv_cache"] == builtin["kv_cache"]


def test_the_hugging_face_cache_under_hf_home(estimate_json, tmp_path, monkeypatch):
    """HF_HOME/hub is the cache when HF_HUB_CACHE is unset (huggingface_hub's own rule)."""
    _hf_cache(tmp_path / "hub", FAKE_ID, _profile("Qwen__Qwen3-8B")["config"])
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = _estimate(estimate_json, "--model", FAKE_ID, "--gpu", "l4")
    assert out["model"]["name"] == FAKE_ID and out["model"]["num_hidden_layers"] == 36


def test_hf_hub_cache_set_in_the_environment_of_the_installed_command(tmp_path):
    """As a user runs it: HF_HUB_CACHE in the environment, the console script in a new process."""
    cache = tmp_path / "hub"
    _hf_cache(cache, FAKE_ID, _profile("Qwen__Qwen3-0.6B")["config"])
    exe = Path(sys.executable).parent / "vllm-configurator"
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    res = subprocess.run([str(exe), "estimate", "--model", FAKE_ID, "--gpu", "l4", "--format", "json"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["model"]["name"] == FAKE_ID and out["model"]["num_hidden_layers"] == 28
