"""Derivative names -> their catalog base and the quantization the name implies, or unknown (a table)."""

from __future__ import annotations

import pytest

from configurator.errors import NotFoundError
from configurator.model.derivatives import resolve_derivative, split_name
from configurator.model.resolve import resolve

# name -> (base, quant_method, a key of the implied quantization_config and its value) ; None: stays unknown
TABLE = [
    ("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "meta-llama/Llama-3.3-70B-Instruct", "fp8", None),
    ("RedHatAI/Llama-3.3-70B-Instruct-FP8-Dynamic", "meta-llama/Llama-3.3-70B-Instruct", "fp8", None),
    ("neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8", "meta-llama/Meta-Llama-3.1-8B", "fp8", None),
    ("nvidia/Llama-3.1-8B-Instruct-FP8", "meta-llama/Llama-3.1-8B-Instruct", "fp8", None),
    ("nvidia/Llama-3.1-8B-Instruct-FP8-KV", "meta-llama/Llama-3.1-8B-Instruct", "fp8", ("kv_cache_scheme", {
        "num_bits": 8, "type": "float"})),
    ("RedHatAI/Mixtral-8x7B-Instruct-v0.1-FP8", "mistralai/Mixtral-8x7B-Instruct-v0.1", "fp8", None),
    ("Qwen/Qwen3-235B-A22B-Thinking-2507-FP8", "Qwen/Qwen3-235B-A22B", "fp8", None),
    ("TheBloke/Llama-2-13B-chat-AWQ", "meta-llama/Llama-2-13b-hf", "awq", ("bits", 4)),
    ("casperhansen/llama-3.3-70b-instruct-awq", "meta-llama/Llama-3.3-70B-Instruct", "awq", ("bits", 4)),
    ("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "meta-llama/Llama-3.1-70B-Instruct", "awq", ("bits", 4)),
    ("RedHatAI/Qwen2.5-VL-7B-Instruct-FP8-Dynamic", "Qwen/Qwen2.5-VL-7B-Instruct", "fp8", None),
    ("TheBloke/Llama-2-7B-Chat-GPTQ", "meta-llama/Llama-2-7b-hf", "gptq", ("bits", 4)),
    ("Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4", "Qwen/Qwen2.5-32B", "gptq", ("bits", 4)),
    ("Qwen/Qwen2.5-32B-Instruct-GPTQ-Int8", "Qwen/Qwen2.5-32B", "gptq", ("bits", 8)),
    ("RedHatAI/Llama-3.1-8B-Instruct-quantized.w4a16", "meta-llama/Llama-3.1-8B-Instruct", "compressed-tensors",
     ("config_groups", {"group_0": {"weights": {"num_bits": 4, "type": "int", "group_size": 128}}})),
    ("RedHatAI/Meta-Llama-3.1-70B-Instruct-quantized.w8a8", "meta-llama/Llama-3.1-70B-Instruct",
     "compressed-tensors", ("config_groups", {"group_0": {"weights": {"num_bits": 8, "type": "int"}}})),
    ("nvidia/Qwen3-8B-NVFP4", "Qwen/Qwen3-8B", "modelopt", ("quant_algo", "NVFP4")),
    ("nvidia/Llama-3.3-70B-Instruct-NVFP4", "meta-llama/Llama-3.3-70B-Instruct", "modelopt", ("quant_algo", "NVFP4")),
    ("unsloth/gpt-oss-20b-MXFP4", "openai/gpt-oss-20b", "mxfp4", None),
    ("unsloth/gemma-3-12b-it-bnb-4bit", "google/gemma-3-12b-it", "bitsandbytes", ("load_in_4bit", True)),
    ("unsloth/Qwen3-8B-unsloth-bnb-4bit", "Qwen/Qwen3-8B", "bitsandbytes", ("load_in_4bit", True)),
    ("unsloth/Llama-3.2-3B-Instruct-bnb-8bit", "meta-llama/Llama-3.2-3B-Instruct", "bitsandbytes",
     ("load_in_8bit", True)),
    # fine-tunes and re-releases: the base's geometry and dtype
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen/Qwen3-30B-A3B", None, None),
    ("google/gemma-3-4b-it-qat", "google/gemma-3-4b-it", None, None),
    ("acme/Qwen3-32B-Distill", "Qwen/Qwen3-32B", None, None),
    ("NousResearch/Hermes-3-Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct", None, None),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B-AWQ", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "awq", None),
    ("RedHatAI/gpt-oss-20b", "openai/gpt-oss-20b", None, None),  # another publisher's copy: the base as is
    # the name does not say enough: unknown, with the nearest names
    ("TheBloke/Mistral-7B-Instruct-v0.1-GGUF", None, None, None),  # GGUF: bits in the file, not the name
    ("mlx-community/Qwen3-8B-4bit", None, None, None),  # a width without its format
    ("bartowski/Llama-3.3-70B-Instruct-Q4_K_M", None, None, None),  # llama.cpp quant
    ("turboderp/Llama-3.1-8B-Instruct-exl2", None, None, None),
    ("casperhansen/mixtral-instruct-awq", None, None, None),  # no size: which Mixtral?
    ("RedHatAI/Llama-3.1-8B-Instruct-quantized", None, None, None),  # quantized how?
    ("acme/Llama-3.1-8B-Instruct-FP4", None, None, None),  # NVFP4 or MXFP4?
    ("meta-llama/Llama-2-7b", None, None, None),  # the publisher's own id shortened (Llama-2-7b-hf)
    ("acme/totally-new-7B-FP8", None, None, None),  # no catalog base
    ("acme/Llama-AWQ", None, None, None),
    ("mistralai/Mistral-7B-Instruct-v0.2", None, None, None),  # v0.2 is not v0.1 or v0.3 (a version is geometry)
    ("microsoft/Phi-3-mini-128k-instruct", None, None, None),  # 128k is not the 4k release
    ("Qwen/Qwen2.5-7B-Instruct-1M", None, None, None),
]


@pytest.mark.parametrize(("name", "base", "method", "extra"), TABLE, ids=[t[0] for t in TABLE])
def test_derivative_names(fixture_catalog, name, base, method, extra):
    got = resolve_derivative(name)
    if base is None:
        assert got is None, f"{name} resolved to {got and got[0].hf_id}"
        return
    assert got is not None, name
    entry, qc, warning = got
    assert entry.hf_id == base
    assert (qc or {}).get("quant_method") == method
    if extra is not None:
        assert qc[extra[0]] == extra[1]
    assert warning.startswith(f"geometry of {base}, ") and warning.endswith("; pass --model-config to be exact")


def test_the_warning_names_the_base_and_the_inferred_weights(fixture_catalog):
    r = resolve("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", allow_hub=False)
    assert r.how == "derivative"
    assert r.warnings == ("geometry of meta-llama/Llama-3.3-70B-Instruct, FP8 weights inferred from the name; "
                          "pass --model-config to be exact",)
    assert r.spec.quant.method == "fp8" and r.spec.quant.weight_bits == 8.0
    assert r.spec.weights_bytes is None  # the base's checkpoint size is not the derivative's
    assert r.spec.num_hidden_layers == 80 and r.spec.name == "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"
    assert r.config_source.startswith("meta-llama/Llama-3.3-70B-Instruct: ")


def test_a_quantized_base_loses_its_quantization_when_the_name_says_another(fixture_catalog):
    assert resolve_derivative("acme/Qwen3-32B-AWQ-FP8") is None  # two formats: unclear
    spec = resolve("RedHatAI/Qwen3-30B-A3B-quantized.w4a16", allow_hub=False).spec
    assert spec.quant.method == "compressed-tensors" and spec.quant.weight_bits == 4 + 16 / 128


def test_a_copy_keeps_the_bases_quantization(fixture_catalog):
    spec = resolve("RedHatAI/gpt-oss-20b", allow_hub=False).spec
    assert spec.quant.method == "mxfp4"


@pytest.mark.parametrize(("path", "base"), [("/models/Qwen3-8B", "Qwen/Qwen3-8B"),
                                            ("/mnt/models/Llama-3.3-70B-Instruct-FP8-dynamic/",
                                             "meta-llama/Llama-3.3-70B-Instruct")])
def test_a_missing_path_named_after_a_model_takes_its_geometry(fixture_catalog, path, base):
    r = resolve(path, allow_hub=False)
    assert r.how == "path-name" and r.spec.name == path
    assert f"its last part names {base}" in r.warnings[0] and f"--model-config {path}=" in r.warnings[0]


def test_unknown_derivative_lists_the_nearest_names(fixture_catalog):
    with pytest.raises(NotFoundError) as e:
        resolve("TheBloke/Mistral-7B-Instruct-v0.1-GGUF", allow_hub=False)
    assert "nearest: mistralai/" in str(e.value)


def test_estimate_prints_the_warning(run_cli):
    res = run_cli("estimate", "--model", "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "--gpu", "h100-80gb",
                  "-tp", "2")
    assert res.exit_code == 0, res.stderr
    assert ("warning: geometry of meta-llama/Llama-3.3-70B-Instruct, FP8 weights inferred from the name; "
            "pass --model-config to be exact") in res.stderr


def test_tokens():
    assert split_name("RedHatAI/Llama-3.1-8B-Instruct-quantized.w4a16") == [
        "llama", "3.1", "8b", "instruct", "quantized", "w4a16"]
    assert split_name("Qwen/Qwen2.5-7B-Instruct") == ["qwen2.5", "7b", "instruct"]
    assert split_name("mistralai/Mistral-7B-Instruct-v0.3") == ["mistral", "7b", "instruct", "v0.3"]


def test_a_compressed_tensors_qat_checkpoint_resolves_to_its_base_in_the_shipped_catalog():
    # '-ct' says compressed-tensors next to its scheme (w4a16); the base comes from catalog part E
    entry, qc, warning = resolve_derivative("google/gemma-4-E4B-it-qat-w4a16-ct")
    assert entry.hf_id == "google/gemma-4-E4B-it"
    assert qc["quant_method"] == "compressed-tensors"
    assert qc["config_groups"]["group_0"]["weights"]["num_bits"] == 4
    assert "INT4 weights" in warning
    assert resolve_derivative("google/gemma-4-E4B-it-ct") is None  # 'ct' alone names no scheme: not noise
