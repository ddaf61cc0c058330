"""Issue 25: release-table claims, each checked against the released wheels' source (cited per test).

Each test fails on the rule the table had before (checkpoint KV from 0.19, max_num_seqs capture size from 0.29,
the fp8-KV V0 fallback only on Hopper, the FlashInfer sampler until 0.13, hybrid MLA blocks aligned to 16 until
0.19, no V2-runner fallback at 0.29, pre-releases refused)."""

import json

import pytest

from configurator.estimate import EstimateRequest, estimate
from configurator.hardware.catalog import find_gpu
from configurator.model.hf_config import read_model_spec
from configurator.units import GiB
from configurator.vllm.defaults import cudagraph_capture_sizes
from configurator.vllm.versions import behaviour, normalize, sampler_note, v1_runs_kv_dtype, v2_fallback
from tests.conftest import repo_data
from tests.model_reader._fixtures import spec


def _config(name: str) -> dict:
    return json.loads(repo_data("model-configs", f"{name}.json").read_text())


def _tokens(model, version: str, gpu: str = "h100-80gb", **flags) -> int:
    return estimate(EstimateRequest(model=model, gpu=gpu, vllm_version=version,
                                    flags={"max_model_len": 4096, "kv_cache_memory_bytes": 8 * GiB} | flags)
                    ).kv_cache.tokens


def test_compressed_tensors_kv_scheme_followed_from_0_15_0():
    # attention/layer.py 0.15.0: `if getattr(quant_config, "kv_cache_scheme", None) is not None:
    # kv_cache_dtype = "fp8"` (absent in 0.14.0): an FP8-KV llm-compressor checkpoint gets twice the tokens
    cfg = _config("Qwen__Qwen3-8B") | {"quantization_config": {
        "quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8, "type": "float"},
        "config_groups": {}}}
    m = read_model_spec(cfg, name="qwen3-8b-fp8kv")
    plain = read_model_spec(_config("Qwen__Qwen3-8B"), name="qwen3-8b")
    assert _tokens(m, "0.14.0") == _tokens(plain, "0.14.0")
    for v in ("0.15.0", "0.18.0"):
        assert _tokens(m, v) > 1.9 * _tokens(plain, v), v


def test_modelopt_kv_quant_algo_followed_from_0_14_0():
    # utils/torch_utils.py::resolve_kv_cache_dtype_string, called by EngineArgs.create_engine_config (0.14.0;
    # absent in 0.13.0): quant_method modelopt* with kv_cache_quant_algo FP8 -> cache_dtype fp8
    name = "nvidia__Llama-3.1-70B-Instruct-FP8"
    hq = json.loads(repo_data("model-configs", f"{name}.hf_quant_config.json").read_text())
    cfg = _config(name)
    cfg["quantization_config"] = {"quant_method": "modelopt", **hq.get("quantization", hq)}
    m = read_model_spec(cfg, name=name, hf_quant_config=hq)
    assert m.quant.kv_cache_dtype == "fp8"
    t13, t14 = _tokens(m, "0.13.0"), _tokens(m, "0.14.0")
    assert t14 > 1.9 * t13
    assert behaviour("0.14.0").modelopt_kv_auto and not behaviour("0.14.0").checkpoint_kv_auto


def test_max_num_seqs_capture_size_from_0_31_0():
    # config/vllm.py 0.31.0: `elif max_num_seqs <= max_cudagraph_capture_size: uniform_decode_sizes =
    # [max_num_seqs]`; 0.29.0 / 0.30.0 fill uniform_decode_sizes only when decode_query_len > 1
    gpu = find_gpu("h100-80gb")
    for v, has in (("0.29.0", False), ("0.30.0", False), ("0.31.0", True), ("0.33.0", True)):
        assert (6 in cudagraph_capture_sizes(behaviour(v), gpu, 6, 8192)) is has, v


@pytest.mark.parametrize("version,sm,kv,mla,v1", [
    ("0.8.1", 90, "fp8", False, False),       # 0.8.0 / 0.8.1 arg_utils: "No Fp8 KV cache so far"
    ("0.8.2", 90, "fp8", False, True),
    ("0.9.0", 100, "fp8", False, False),      # 0.9.0 arg_utils: only FA3 on 9.x
    ("0.9.0", 90, "fp8", False, True),
    ("0.10.0", 100, "fp8", False, True),      # platforms/cuda.py: is_device_capability(100) -> supported
    ("0.10.1.1", 100, "fp8_e5m2", False, True),
    ("0.10.1.1", 103, "fp8", False, False),   # B300 (10.3) is not capability 10.0
    ("0.10.1.1", 120, "fp8", False, False),
    ("0.10.2", 89, "fp8", False, False),      # 0.10.2 still falls back off Hopper
    ("0.10.2", 89, "fp8", True, True),        # ... except MLA (FlashMLA / CUTLASS MLA run fp8)
    ("0.10.2", 90, "fp8", False, True),
    ("0.11.0", 89, "fp8", False, True),       # no V0 any more
])
def test_v1_fp8_kv_acceptance_by_release(version, sm, kv, mla, v1):
    assert v1_runs_kv_dtype(behaviour(version), sm, kv, mla) is v1


def test_b200_fp8_kv_at_0_10_1_1_is_modelled_and_l40s_at_0_10_2_is_not():
    flags = {"kv_cache_dtype": "fp8", "max_model_len": 4096}
    b200 = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu="b200", vllm_version="0.10.1.1", flags=flags))
    assert b200.verdict != "not-predicted"
    l40s = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu="l40s", vllm_version="0.10.2", flags=flags))
    assert l40s.verdict == "not-predicted"


def test_flashinfer_sampler_0_9_to_0_11_0_only_where_installed_and_the_install_is_named():
    # topk_topp_sampler.py: FlashInfer by default when importable (0.9.0, 0.9.2, 0.11.0); opt-in from 0.11.1
    # (0.11.1, 0.11.2, 0.12.0); 0.8.0-0.8.5 disable it for FlashInfer >= 0.2.3. Wheel METADATA: flashinfer-python
    # an extra of 0.9.0 / 0.11.0, a requirement from 0.11.1. So a plain pip install never samples with FlashInfer.
    from configurator.vllm.versions import flashinfer_sampler_runs
    assert [behaviour(v).flashinfer_sampler for v in ("0.8.5", "0.9.0", "0.11.0", "0.11.1", "0.12.0")] == \
        [False, True, True, False, False]
    assert not any(flashinfer_sampler_runs(behaviour(v)) for v in ("0.9.0", "0.10.1.1", "0.11.0", "0.11.1"))
    note = sampler_note(behaviour("0.10.1.1"))
    assert note and "pip install" in note and "vllm/vllm-openai" in note
    assert sampler_note(behaviour("0.11.1")) is None and sampler_note(behaviour("0.13.0")) is None
    # the estimate counts the native sampler's peak (the old rule counted FlashInfer's 2.5 copies: less memory)
    r = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu="a100-80gb", vllm_version="0.10.1.1",
                                 flags={"max_model_len": 4096}))
    assert any("samples with FlashInfer only when it is installed" in w for w in r.warnings)


def test_hybrid_mla_block_aligned_to_64_in_0_12_to_0_19():
    # model_executor/models/config.py HybridAttentionMambaModelConfig (0.12.0-0.19.1): MLA ->
    # kernel_block_alignment_size 64 (128 only for an explicitly chosen CUTLASS_MLA). Kimi-Linear at 0.19.1 on an
    # H100 (FlashAttention-MLA, block 16): 64 x cdiv(Mamba page, 64 x page per token) = 1,920, not 1,888
    m = spec("moonshotai__Kimi-Linear-48B-A3B-Instruct")
    r = estimate(EstimateRequest(model=m, gpu="h100-80gb", vllm_version="0.19.1",
                                 flags={"max_model_len": 4096, "kv_cache_memory_bytes": 8 * GiB}))
    assert r.kv_cache.block_size == 1920
    from configurator.vllm.versions import hybrid_alignment
    assert hybrid_alignment(behaviour("0.11.0"), 90, True, 576) == 16  # 0.11.0: `attn_block_size = 16 * cdiv(...)`
    assert [hybrid_alignment(behaviour(v), 90, True, 576) for v in ("0.12.0", "0.15.0", "0.19.1")] == [64] * 3


def test_hybrid_head_256_on_blackwell_aligned_to_32_in_0_13_to_0_17():
    # config.py 0.13.0-0.17.0: head size 256 on the sm10x family with the default backend -> 32; gone in 0.18.0
    b17, b18 = behaviour("0.17.0"), behaviour("0.18.0")
    from configurator.vllm.versions import hybrid_alignment
    assert hybrid_alignment(b17, 100, False, 256) == 32 and hybrid_alignment(b17, 90, False, 256) == 16
    assert hybrid_alignment(b18, 100, False, 256) == 16
    assert hybrid_alignment(behaviour("0.12.0"), 103, False, 256) == 16  # 0.12.0: capability 10.0 exactly


def test_v2_runner_falls_back_at_0_29_for_its_unsupported_features():
    # config/vllm.py 0.29.0 _get_v2_model_runner_unsupported_features
    b = behaviour("0.29.0")
    assert v2_fallback(b, {}, "ngram", tp=1, pp=1) == ("ngram/ngram_gpu speculative decoding",)
    assert v2_fallback(b, {"enable_dbo": True}, None, tp=1, pp=1) == ("dual batch overlap",)
    assert v2_fallback(b, {"compilation_config": {"mode": 1}}, None, tp=1, pp=1) == ("stock torch.compile",)
    sp = {"compilation_config": {"pass_config": {"enable_sp": True}}}
    assert v2_fallback(b, sp, None, tp=2, pp=1) == ("sequence parallelism",)
    assert not v2_fallback(b, sp, None, tp=1, pp=1)
    assert v2_fallback(b, {"logits_processors": ["x.Y"]}, None, tp=1, pp=1) == ("custom logits processors",)
    assert v2_fallback(b, {}, "eagle3", tp=1, pp=1) == ()
    assert v2_fallback(behaviour("0.31.0"), {"logits_processors": ["x.Y"]}, None, tp=1, pp=1) == ()
    assert v2_fallback(behaviour("0.28.0"), {}, "ngram", tp=1, pp=1) == ()
    # 0.32.0 / 0.33.0: ngram and stock torch.compile run on V2; DBO still falls back with the env unset
    for v in ("0.32.0", "0.33.0"):
        assert v2_fallback(behaviour(v), {"compilation_config": {"mode": 1}}, "ngram", tp=1, pp=1) == ()
        assert v2_fallback(behaviour(v), {"enable_dbo": True}, None, tp=1, pp=1) == ("dual batch overlap",)
    assert v2_fallback(behaviour("0.32.0"), {}, "medusa", tp=1, pp=1) and \
        not v2_fallback(behaviour("0.33.0"), {}, "medusa", tp=1, pp=1)
    r = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu="h100-80gb", vllm_version="0.29.0",
                                 flags={"max_model_len": 4096, "speculative_config": {
                                     "method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}}))
    assert any("using the V1 model runner" in w for w in r.warnings)


def test_pre_releases_are_modelled_as_the_release_they_lead_to():
    # the nightlies that ran Qwen3.5 (no 0.16.0 wheel has model_executor/models/qwen3_5.py) read mamba_ssm_dtype
    assert normalize("0.16.1rc1.dev111+gafd089f23") == "0.17.0"
    assert normalize("0.11.0rc2") == "0.11.0" and normalize("0.10.1.post1") == "0.10.1"
    assert normalize("0.11.0+582e4e37.nv25.11") == "0.11.0"
    from configurator.vllm.versions import version_from_image
    assert version_from_image("vllm/vllm-openai:v0.16.1rc1")[0] == "0.17.0"
    assert version_from_image("vllm/vllm-openai:v0.11.0-cu128")[0] == "0.11.0"
