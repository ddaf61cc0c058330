"""Every real config.json in data/model-configs and every built-in profile loads and is costed."""

import json

import pytest

from configurator.estimate import EstimateRequest, estimate
from configurator.model.catalog import profile_files
from configurator.model.hf_config import read_model_spec
from configurator.model.resolve import load_profile
from tests.conftest import repo_data


def _configs():
    folder = repo_data("model-configs")
    return sorted(p for p in folder.glob("*.json") if not p.name.endswith("hf_quant_config.json"))


def test_all_shared_configs_load_and_cost():
    files = _configs()
    assert len(files) >= 50  # 54 config.json files (+ 4 hf_quant_config.json companions)
    for p in files:
        hq = p.with_name(p.stem + ".hf_quant_config.json")
        model = read_model_spec(json.loads(p.read_text()), name=p.name,
                                hf_quant_config=json.loads(hq.read_text()) if hq.exists() else None)
        r = estimate(EstimateRequest(model=model, gpu="b200", flags={"max_model_len": 4096,
                                                                     "kv_cache_memory_bytes": 40 << 30}))
        assert r.kv_cache.bytes_per_token > 0 or r.kv_cache.window_bytes_per_sequence > 0, p.name


@pytest.mark.parametrize("path", sorted(profile_files().values()), ids=lambda p: p.stem)
def test_builtin_profiles_load(path):
    m = load_profile(path)
    assert m.layers and m.num_hidden_layers > 0


def test_enough_builtin_profiles_across_families():
    names = [p.stem.lower() for p in profile_files().values()]
    assert len(names) >= 40
    for family in ("llama-2", "llama-3", "llama-4", "qwen2", "qwen2.5", "qwen3-", "qwen3.5", "qwen3.6",
                   "mistral", "mixtral", "gpt-oss", "deepseek-v3", "deepseek-r1", "distill", "kimi",
                   "gemma-2", "gemma-3", "gemma-4", "phi", "glm", "nemotron", "llava", "granite", "-awq", "gptq",
                   "fp8"):
        assert any(family in n for n in names), family
