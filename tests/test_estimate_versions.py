"""Issue 12 item 2: version-table mismatches, each from the source's behaviour at the release it cites."""

import pytest

from configurator.estimate import EstimateRequest, estimate
from configurator.units import GiB


def _est(model, gpu, version, **flags):
    return estimate(EstimateRequest(model=model, gpu=gpu, vllm_version=version, flags=flags))


@pytest.mark.parametrize("model,concurrency", [("microsoft/Phi-3.5-mini-instruct", 8),
                                               ("microsoft/Phi-4-mini-instruct", 20)])
def test_longrope_defaults_to_original_max_position_embeddings_from_0_11_1(model, concurrency):
    # vllm/config/model.py::_get_and_verify_max_len (0.11.1+): no --max-model-len -> the top-level
    # original_max_position_embeddings (4096); the limit a user length is checked against stays 131,072
    r = _est(model, "l4", "0.15.0")
    assert r.flags["max_model_len"] == 4096 and r.verdict == "fits"
    assert r.kv_cache.max_concurrency > concurrency
    assert _est(model, "l4", "0.11.0").flags["max_model_len"] == 131072  # before: max_position_embeddings
    longer = _est(model, "l4", "0.33.0", max_model_len=16384)
    assert not any("User-specified max_model_len" in e for e in longer.errors)


def _pp_case(version):
    # a length one PP stage's half of the layers holds, but not the whole model
    return _est("Qwen/Qwen3-14B", "l4", version, pipeline_parallel_size=2, enforce_eager=True,
                max_model_len=40960, kv_cache_memory_bytes=int(4.5 * GiB))


def test_pp_fit_check_is_per_worker_in_0_10_and_0_11():
    # get_kv_cache_configs (0.11.0): check_enough_kv_cache_memory per worker, on that worker's layers
    for version in ("0.10.0", "0.11.0"):
        r = _pp_case(version)
        assert not any("To serve at least one request" in e for e in r.errors), version


def test_pp_fit_check_is_whole_model_vs_smallest_worker_in_0_15_to_0_17():
    # get_kv_cache_configs (0.15.0): the global groups (all layers) against min(available_memory)
    for version in ("0.15.0", "0.17.0"):
        r = _pp_case(version)
        assert any("To serve at least one request" in e for e in r.errors), version
        assert r.verdict == "refused"


def test_v1_releases_0_8_and_0_9_are_modelled_from_their_source():
    # EngineArgs._set_default_args_v1: 0.8.0-0.8.4 by device name; 0.8.5 >= 70 GiB with A100; 0.9.0+ not A100
    assert _est("Qwen/Qwen3-8B", "h100-80gb", "0.8.2", max_model_len=8192).flags["max_num_batched_tokens"] == 8192
    assert _est("Qwen/Qwen3-8B", "a100-80gb", "0.8.2", max_model_len=8192).flags["max_num_batched_tokens"] == 2048
    assert _est("Qwen/Qwen3-8B", "a100-80gb", "0.8.5", max_model_len=8192).flags["max_num_seqs"] == 1024
    assert _est("Qwen/Qwen3-8B", "a100-80gb", "0.9.0", max_model_len=8192).flags["max_num_seqs"] == 256
    # gpu_worker.determine_available_memory (0.8.5): non-torch bytes in use, the CUDA context too, are
    # subtracted; 0.9.1 moved to memory_profiling (weights + peak increase + non-torch increase)
    old = _est("Qwen/Qwen3-8B", "h100-80gb", "0.9.0", max_model_len=8192)
    new = _est("Qwen/Qwen3-8B", "h100-80gb", "0.9.1", max_model_len=8192)
    assert new.memory.kv_cache_bytes - old.memory.kv_cache_bytes >= 512 * 2**20
    # 0.8.0-0.9.0 log no "Available KV cache memory" line; 0.8.0-0.8.2 print "GB"
    assert not any(x.startswith("Available KV") for x in old.vllm_log)
    first = _est("Qwen/Qwen3-8B", "h100-80gb", "0.8.0", max_model_len=8192).vllm_log[0]
    assert first.startswith("Model loading took") and " GB and" in first


@pytest.mark.parametrize("version,gpu,flags", [
    ("0.7.3", "h100-80gb", {}),  # a V0-engine release
    ("0.10.0", "t4", {}),  # V1 falls back to V0 below compute capability 8.0 until 0.10.1.1
    ("0.9.2", "a100-80gb", {"kv_cache_dtype": "fp8"}),  # fp8 KV in V1 only with FlashAttention 3 on Hopper
])
def test_v0_gets_one_line_and_what_is_known(version, gpu, flags):
    r = _est("Qwen/Qwen3-8B", gpu, version, max_model_len=8192, **flags)
    assert r.not_modelled and "V0" in r.not_modelled
    assert r.kv_cache.bytes_per_token > 0 and r.memory.weights_bytes > 0 and r.kv_cache.num_blocks == 0


def test_v1_on_turing_from_0_10_2_is_modelled():
    r = _est("Qwen/Qwen3-1.7B", "t4", "0.10.2", max_model_len=4096, dtype="half")
    assert r.not_modelled is None and r.kv_cache.num_blocks > 0


def test_model_runner_v2_scope_by_release():
    # VllmConfig._is_default_v2_model_runner_model (0.28.0): a dense hybrid runs on V1 unless listed;
    # 0.24.0: only the listed architectures; 0.29+: every model
    from configurator.estimate.inputs import resolve_inputs

    def v2(model, version):
        return resolve_inputs(EstimateRequest(model=model, gpu="h200", vllm_version=version)).v2

    assert not v2("nvidia/Nemotron-H-56B-Base-8K", "0.28.0")  # dense hybrid
    assert not v2("nvidia/Nemotron-H-56B-Base-8K", "0.25.0")
    assert v2("nvidia/Nemotron-H-56B-Base-8K", "0.29.0")
    assert v2("Qwen/Qwen3-8B", "0.24.0") and not v2("google/gemma-3-12b-it", "0.24.0")  # the list only
    assert v2("google/gemma-3-12b-it", "0.25.0")  # dense, not a hybrid
    r = estimate(EstimateRequest(model="nvidia/Nemotron-H-56B-Base-8K", gpu="h200", vllm_version="0.28.0"))
    assert r.memory.cudagraph_bytes > 0  # V1's graph estimate counts; V2's returned 0 before 0.29


def test_blackwell_flashinfer_gdn_checkpoint_block_and_64_alignment_in_0_33():
    # _resolve_gdn_prefill_backend (0.33.0): FlashInfer GDN prefill on sm90, and on sm10x / sm12x with 128-wide
    # key heads; its checkpoints add a block per request and align the hybrid block to 64 tokens
    hopper = _est("Qwen/Qwen3.6-27B", "h100-80gb", "0.33.0", max_model_len=32768)
    b200 = _est("Qwen/Qwen3.6-27B", "b200", "0.33.0", max_model_len=32768)
    a100 = _est("Qwen/Qwen3.6-27B", "a100-80gb", "0.33.0", max_model_len=32768)
    mamba = [g for g in b200.kv_cache.groups if g.kind == "MambaSpec"]
    assert mamba and all(g.blocks_per_request == 3 for g in mamba)  # 2 + the checkpoint block
    assert b200.kv_cache.block_size % 64 == 0 and b200.kv_cache.block_size == hopper.kv_cache.block_size
    assert a100.kv_cache.block_size % 64 != 0  # Triton prefill on Ampere: 16-token alignment
    assert all(g.blocks_per_request == 2 for g in a100.kv_cache.groups if g.kind == "MambaSpec")


def test_mamba_all_mode_rounds_the_block_to_the_chunk_size():
    # _align_hybrid_block_size, mamba_cache_mode 'all' (0.15-0.27): lcm(chunk_size, alignment) x cdiv(...)
    for version in ("0.15.0", "0.24.0"):
        on = _est("nvidia/Nemotron-H-56B-Base-8K", "h200", version, enable_prefix_caching=True)
        off = _est("nvidia/Nemotron-H-56B-Base-8K", "h200", version, enable_prefix_caching=False)
        assert on.kv_cache.block_size % 128 == 0 and on.kv_cache.block_size >= off.kv_cache.block_size, version
        assert off.kv_cache.block_size % 128 != 0, version  # 16-token alignment without prefix caching
    newer = _est("nvidia/Nemotron-H-56B-Base-8K", "h200", "0.28.0", enable_prefix_caching=True)
    assert newer.kv_cache.block_size % 128 != 0  # 'align' mode from 0.28


@pytest.mark.parametrize("version,gpu,block", [
    ("0.10.0", "b200", 16),  # FlashMLA is Hopper-only; CUTLASS MLA only when forced (platforms/cuda.py 0.10.0)
    ("0.11.0", "b200", 128),  # CUTLASS MLA on compute capability 10.0 (is_device_capability(100))
    ("0.11.0", "b300", 16),  # ... exactly: B300 (10.3) falls to Triton MLA
    ("0.13.0", "b300", 128),  # is_device_capability_family(100)
    ("0.15.0", "rtx-pro-6000", 16),  # sm12x: no FlashInfer / CUTLASS MLA (major == 10 only)
    ("0.33.0", "rtx-pro-6000", 16),  # sm12x priorities: TRITON_MLA first
    ("0.33.0", "h200", 16), ("0.11.0", "h200", 64),
])
def test_mla_block_size_by_release_and_gpu(version, gpu, block):
    r = _est("deepseek-ai/DeepSeek-V3", gpu, version, tensor_parallel_size=8, max_model_len=8192)
    assert r.kv_cache.block_size == block


def test_smaller_rows_batch_clamps_chunked_prefill_and_kv_bytes_flag():
    # EngineArgs (0.11.1): defaulted max_num_batched_tokens <= max_num_seqs x max_model_len; 0.11.0 has no clamp
    assert _est("Qwen/Qwen3-0.6B", "h100-80gb", "0.11.1", max_num_seqs=2, max_model_len=1024).flags[
        "max_num_batched_tokens"] == 2048
    assert _est("Qwen/Qwen3-0.6B", "h100-80gb", "0.11.0", max_num_seqs=2, max_model_len=1024).flags[
        "max_num_batched_tokens"] == 8192
    # <= 0.11.0 forces chunked prefill on (EngineArgs._set_default_args): no max(max_model_len, mnbt)
    forced = _est("Qwen/Qwen3-8B", "h100-80gb", "0.11.0", max_model_len=32768, enable_chunked_prefill=False)
    assert forced.flags["max_num_batched_tokens"] == 8192
    later = _est("Qwen/Qwen3-8B", "h100-80gb", "0.13.0", max_model_len=32768, enable_chunked_prefill=False)
    assert later.flags["max_num_batched_tokens"] == 32768
    # --kv-cache-memory-bytes arrived in 0.10.2
    old = _est("Qwen/Qwen3-8B", "h100-80gb", "0.10.1", max_model_len=8192, kv_cache_memory_bytes=8 * GiB)
    assert any("unrecognized arguments: --kv-cache-memory-bytes" in e for e in old.errors)
    assert _est("Qwen/Qwen3-8B", "h100-80gb", "0.10.2", max_model_len=8192, kv_cache_memory_bytes=8 * GiB).fits


def test_group_size_padding_rule_by_release():
    # _get_kv_cache_groups_uniform_page_size: min bucket (<= 0.11); pad to the largest under 1.25x (0.12-0.17),
    # under 1.5x (0.19+). 13 sliding + 10 full layers: ratio 1.3
    from configurator.memory.groups import build_layout
    from configurator.memory.kv_dtype import KV_DTYPES
    from configurator.memory.kv_specs import FullAttentionSpec, SlidingWindowSpec
    from configurator.vllm.versions import behaviour

    bf16 = KV_DTYPES["bfloat16"]
    specs = [SlidingWindowSpec(16, 8, 128, 128, bf16, sliding_window=4096)] * 13 + \
        [FullAttentionSpec(16, 8, 128, 128, bf16)] * 10
    sizes = {v: build_layout(specs, pad_ratio=behaviour(v).group_pad_ratio).group_size
             for v in ("0.11.0", "0.15.0", "0.20.0")}
    assert sizes == {"0.11.0": 10, "0.15.0": 10, "0.20.0": 13}


def test_cudagraph_estimate_follows_the_number_of_capture_sizes():
    # VllmConfig._set_cudagraph_sizes: 51 sizes at the 512 ceiling; 83 on data-centre Blackwell from 0.28
    from configurator.hardware.catalog import find_gpu
    from configurator.vllm.defaults import cudagraph_capture_sizes
    from configurator.vllm.versions import behaviour

    assert len(cudagraph_capture_sizes(behaviour("0.33.0"), find_gpu("h100-80gb"), 1024, 8192)) == 51
    assert len(cudagraph_capture_sizes(behaviour("0.28.0"), find_gpu("b200"), 1024, 16384)) == 83
    assert len(cudagraph_capture_sizes(behaviour("0.27.0"), find_gpu("b200"), 1024, 16384)) == 51
    assert cudagraph_capture_sizes(behaviour("0.33.0"), find_gpu("l4"), 8, 2048) == [1, 2, 4, 8, 16]
    b27 = _est("Qwen/Qwen3-30B-A3B", "b200", "0.27.0", max_model_len=8192)  # MoE, not listed: runner V1
    b28 = _est("Qwen/Qwen3-30B-A3B", "b200", "0.28.0", max_model_len=8192)
    assert b28.memory.cudagraph_bytes > b27.memory.cudagraph_bytes
    few = _est("Qwen/Qwen3-8B", "h100-80gb", "0.33.0", max_model_len=8192, max_num_seqs=8)
    many = _est("Qwen/Qwen3-8B", "h100-80gb", "0.33.0", max_model_len=8192)
    assert few.memory.cudagraph_bytes < many.memory.cudagraph_bytes


def test_config_ssm_dtype_only_where_vllm_reads_it_and_never_over_the_user():
    # model_executor/models/config.py: Qwen3_5*Config reads mamba_ssm_dtype (0.17+); NemotronH reads
    # mamba_ssm_cache_dtype; a user --mamba-ssm-cache-dtype other than auto wins
    default = _est("Qwen/Qwen3.5-27B", "h200", "0.33.0", max_model_len=8192)
    user = _est("Qwen/Qwen3.5-27B", "h200", "0.33.0", max_model_len=8192, mamba_ssm_cache_dtype="bfloat16")
    assert user.kv_cache.state_bytes_per_sequence < default.kv_cache.state_bytes_per_sequence  # fp32 -> bf16
    before = _est("Qwen/Qwen3.5-27B", "h200", "0.15.0", max_model_len=8192)
    assert before.kv_cache.state_bytes_per_sequence < default.kv_cache.state_bytes_per_sequence


def test_hybrid_mla_mamba_blocks_align_to_128_from_0_27():
    # platforms/interface.py::_align_hybrid_block_size (0.27+): max(alignment, 128) for hybrid MLA/Mamba models.
    # No profile is one, so a Qwen3.6-27B whose attention layers are MLA stands in (geometry only).
    from dataclasses import replace

    from configurator.model.resolve import resolve_model
    from configurator.model.spec import LayerGeometry

    base = resolve_model("Qwen/Qwen3.6-27B")
    layers = tuple(LayerGeometry(g.index, "mla", 1, 576, 0) if g.kind == "full" else g for g in base.layers)
    hybrid_mla = replace(base, layers=layers, is_mla=True)
    for version, aligned in (("0.26.0", False), ("0.27.0", True), ("0.33.0", True)):
        r = estimate(EstimateRequest(model=hybrid_mla, gpu="a100-80gb", vllm_version=version,
                                     flags={"max_model_len": 8192, "enable_prefix_caching": False}))
        assert (r.kv_cache.block_size % 128 == 0) == aligned, version


def test_mamba_state_in_the_kv_dtype_in_0_10_0():
    # gpu_model_runner.get_kv_cache_spec (0.10.0): MambaSpec(dtype=self.kv_cache_dtype); 0.10.1: the state's own dtypes
    old = _est("nvidia/Nemotron-H-56B-Base-8K", "h200", "0.10.0", max_model_len=8192, kv_cache_dtype="fp8")
    new = _est("nvidia/Nemotron-H-56B-Base-8K", "h200", "0.10.1", max_model_len=8192, kv_cache_dtype="fp8")
    assert old.kv_cache.state_bytes_per_sequence * 2 == new.kv_cache.state_bytes_per_sequence  # 1 B vs bf16
