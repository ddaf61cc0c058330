"""The pure memory core: grouping, hybrid block alignment, version rules."""

from configurator.estimate import EstimateRequest, estimate
from configurator.memory.build import pp_layer_split
from configurator.vllm.versions import behaviour, normalize, version_from_image


def _est(model, **flags):
    gpu = flags.pop("gpu", "h100")
    version = flags.pop("version", "latest")
    return estimate(EstimateRequest(model=model, gpu=gpu, vllm_version=version, flags=flags))


def test_qwen3_next_groups_and_block_size():
    r = _est("Qwen/Qwen3-Next-80B-A3B-Thinking", version="0.30.0", max_model_len=8192,
             kv_cache_memory_bytes=20 << 30)
    kinds = [g.kind for g in r.kv_cache.groups]
    assert kinds.count("MambaSpec") == 3 and kinds.count("FullAttentionSpec") == 1
    assert all(g.num_layers == 12 for g in r.kv_cache.groups)
    assert r.kv_cache.block_size == 544  # 16 x cdiv(1,097,728, 16 x 2,048)


def test_qwen3_next_033_aligns_to_flashinfer_checkpoint_on_hopper():
    r = _est("Qwen/Qwen3-Next-80B-A3B-Thinking", version="0.33.0", max_model_len=8192,
             kv_cache_memory_bytes=20 << 30)
    assert r.kv_cache.block_size == 576


def test_gpt_oss_two_groups_of_18():
    r = _est("openai/gpt-oss-120b", max_model_len=131072, kv_cache_memory_bytes=10 << 30)
    assert sorted(g.num_layers for g in r.kv_cache.groups) == [18, 18]


def test_pp_split_gives_remainder_to_earlier_stages():
    # vllm get_pp_indices: the remainder goes to partitions[-2], [-3], ...
    assert [len(r) for r in pp_layer_split(61, 4)] == [15, 15, 16, 15]
    assert [len(r) for r in pp_layer_split(10, 3)] == [3, 4, 3]


def test_version_rows():
    assert behaviour("0.19.0").default_gpu_memory_utilization == 0.9
    assert behaviour("0.20.0").default_gpu_memory_utilization == 0.92
    assert behaviour("0.20.0").tokens == "blocks" and behaviour("0.21.0").tokens == "concurrency"
    assert behaviour("0.25.1").in_flight == "mnbt" and behaviour("0.26.0").in_flight == "batches"
    assert normalize("v0.11.0") == "0.11.0" and normalize("0.11.0+cu128") == "0.11.0"
    assert version_from_image("vllm/vllm-openai:v0.11.0") == ("0.11.0", None)
    v, warn = version_from_image("vllm/vllm-openai:latest")
    assert warn and v == normalize("latest")


def test_sliding_window_credit_changes_with_release():
    old = _est("openai/gpt-oss-120b", version="0.25.1", max_model_len=131072, kv_cache_memory_bytes=10 << 30)
    new = _est("openai/gpt-oss-120b", version="0.26.0", max_model_len=131072, kv_cache_memory_bytes=10 << 30)
    assert new.kv_cache.blocks_per_request > old.kv_cache.blocks_per_request  # 2 x mnbt in flight


def test_model_runner_v2_profiles_its_sampler_without_top_k_top_p():
    # V2's dummy requests carry no top-k / top-p (gpu/model_runner.py _dummy_sampler_run, 0.25.0): bf16 logits and
    # one fp32 copy, whatever the fitted sort-based copies are; V1 takes the fitted copies
    from dataclasses import replace

    from configurator.memory.overheads import DEFAULT_COEFFICIENTS, V2_SAMPLER_COPIES, estimate_overheads

    def act(v2: bool, copies: float) -> int:
        co = replace(DEFAULT_COEFFICIENTS, sampler_copies_at_256=copies, forward_bytes_per_element=0.0)
        return estimate_overheads(hidden_size=1024, intermediate_size=4096, num_attention_heads=16, num_kv_heads=8,
                                  head_dim=64, vocab_size=100_000, num_layers_on_rank=8, max_num_batched_tokens=2048,
                                  max_num_seqs=256, tp=1, pp=1, last_stage=True, enforce_eager=True,
                                  cudagraph_counted=False, v2_sampler_state=v2, coeffs=co).activation_bytes

    assert act(True, 3.0) == act(True, 9.0) == int(256 * 100_000 * 4 * V2_SAMPLER_COPIES)
    assert act(False, 9.0) == 3 * act(False, 3.0)
