"""`vllm-configurator models`, nearest names, and --model-config NAME=PATH on estimate, plan and check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from configurator.model import catalog

CONFIG = Path(__file__).parent / "data" / "qwen3-0.6b.config.json"


def test_models_lists_and_searches(run_cli):
    res = run_cli("models")
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert lines[0].split()[:5] == ["id", "family", "params", "context", "attention"]
    assert len(lines) >= len(catalog.entries()) + 1
    res = run_cli("models", "qwen3", "moe")
    assert res.exit_code == 0 and "Qwen/Qwen3-30B-A3B " in res.stdout and "Qwen/Qwen3-8B " not in res.stdout


def test_models_json_has_the_columns_and_provenance(run_cli):
    res = run_cli("models", "meta-llama/Llama-2-7b-hf", "--format", "json")
    doc = json.loads(res.stdout)
    assert doc["count"] == 1
    row = doc["models"][0]
    assert row["kv_bytes_per_token_bf16"] == 524_288 and row["attention"] == "MHA"
    assert row["context_tokens"] == 4096 and 6.5e9 < row["parameters"] < 7e9
    assert row["config_source"] and row["catalog_file"].startswith("models/")


def test_models_family_filter(run_cli):
    res = run_cli("models", "--family", "deepseek-v3", "--format", "json")
    rows = json.loads(res.stdout)["models"]
    assert rows and all(r["family"] == "deepseek-v3" and r["attention"].startswith("MLA") for r in rows)


def test_models_shows_a_derivatives_base(run_cli):
    res = run_cli("models", "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic")
    assert res.exit_code == 0 and "meta-llama/Llama-3.3-70B-Instruct" in res.stdout
    assert "geometry of meta-llama/Llama-3.3-70B-Instruct, FP8 weights inferred from the name" in res.stderr


def test_models_without_a_match_lists_the_nearest(run_cli):
    res = run_cli("models", "nope")
    assert res.exit_code == 2 and "nearest:" in res.stderr


@pytest.mark.parametrize("typo", ["Qwen/Qwen3-8B-Instrut", "Qwen/Qwen-3-8B", "qwen3-7b", "Qwen/Qwen3-32B-Instuct"])
def test_a_misspelled_qwen3_id_suggests_qwen3_ids(typo):
    near = catalog.nearest(typo)
    assert near and all(n.split("/")[-1].lower().startswith("qwen3-") for n in near), near


def test_nearest_names_each_model_once_by_id():
    near = catalog.nearest("llama-2-7b-chat")
    assert near[0] in ("meta-llama/Llama-2-7b-chat-hf", "meta-llama/Llama-2-7b-hf") and len(set(near)) == len(near)


@pytest.mark.parametrize("cmd", ["estimate", "plan"])
def test_model_nope_lists_the_nearest_names(run_cli, cmd):
    res = run_cli(cmd, "--model", "nope", "--gpu", "l4")
    assert res.exit_code == 2
    assert "unknown model 'nope'; nearest: " in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_model_config_maps_a_served_path(run_cli, tmp_path):
    res = run_cli("estimate", "--model", "/models/qwen", "--gpu", "l4", "--max-model-len", "4096")
    assert res.exit_code == 2 and "--model-config /models/qwen=" in res.stderr
    res = run_cli("estimate", "--model", "/models/qwen", "--model-config", f"/models/qwen={CONFIG}", "--gpu", "l4",
                  "--max-model-len", "4096", "--format", "json")
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["model"]["name"] == "/models/qwen" and doc["kv_cache"]["bytes_per_token"] == 2 * 28 * 8 * 128 * 2
    # a bare PATH stands for --model; a catalog id is a target too
    res = run_cli("estimate", "--model", "/mnt/models", "--model-config", str(CONFIG), "--gpu", "l4",
                  "--max-model-len", "4096")
    assert res.exit_code == 0, res.stderr
    res = run_cli("plan", "--model", "/mnt/models", "--model-config", "/mnt/models=Qwen/Qwen3-8B", "--gpu", "h100-80gb",
                  "--emit", "serve")
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("vllm serve /mnt/models ")


def test_model_config_in_check_goes_into_the_models_map(run_cli, tmp_path):
    folder = tmp_path / "qwen"
    folder.mkdir()
    shutil.copy(CONFIG, folder / "config.json")
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text("""apiVersion: apps/v1
kind: Deployment
metadata: {name: qwen}
spec:
  template:
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-L4}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: ["--model", "/models/qwen", "--max-model-len", "4096"]
        resources: {limits: {nvidia.com/gpu: 1}}
""")
    res = run_cli("check", str(manifest), "--format", "json")
    assert "unknown-model" in res.stdout
    res = run_cli("check", str(manifest), "--model-config", f"/models/qwen={folder}", "--format", "json")
    assert "unknown-model" not in res.stdout and res.exit_code == 0, res.stdout


def test_model_config_needs_a_name_when_there_is_no_model():
    from configurator.errors import InputError
    from configurator.model.resolve import parse_model_configs

    assert parse_model_configs(["a=b", "c"], "m") == {"a": "b", "m": "c"}
    with pytest.raises(InputError, match="NAME=PATH"):
        parse_model_configs(["=x"], "m")


@pytest.mark.parametrize("url", ["hf://meta-llama/Llama-2-7b-hf", "https://huggingface.co/meta-llama/Llama-2-7b-hf",
                                 "https://huggingface.co/meta-llama/Llama-2-7b-hf/tree/main"])
def test_a_hub_url_is_its_id(url):
    from configurator.model.resolve import resolve

    assert resolve(url, allow_hub=False).spec.hf_id == "meta-llama/Llama-2-7b-hf"


def test_an_exact_name_comes_first_and_does_not_hide_the_others(run_cli):
    res = run_cli("models", "deepseek-v3", "--format", "json")
    ids = [m["id"] for m in json.loads(res.stdout)["models"]]
    assert ids[0] == "deepseek-ai/DeepSeek-V3" and "deepseek-ai/DeepSeek-V3.2" in ids and len(ids) == len(set(ids))
