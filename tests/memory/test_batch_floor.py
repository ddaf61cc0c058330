"""vLLM's defaulted max_num_batched_tokens on the records' GPUs and models (configurator/vllm/mm_items.py)."""

from configurator.estimate import EstimateRequest, estimate
from configurator.model.resolve import resolve_model
from configurator.vllm.mm_items import prefix_lm_max_item_tokens


def _mnbt(model: str, gpu: str, version: str, **flags) -> int:
    r = estimate(EstimateRequest(model=model, gpu=gpu, vllm_version=version,
                                 flags={"max_model_len": 32768} | flags))
    return int(r.flags["max_num_batched_tokens"])


def test_gemma4_video_item_is_the_largest():
    assert prefix_lm_max_item_tokens(resolve_model("google/gemma-4-26B-A4B", allow_hub=False)) == 2496
    assert prefix_lm_max_item_tokens(resolve_model("Qwen/Qwen3-14B", allow_hub=False)) == 0


def test_prefix_lm_floor_from_0_24_only_when_defaulted():
    assert _mnbt("google/gemma-4-26B-A4B", "l40s", "0.25.1") == 2496
    assert _mnbt("google/gemma-4-26B-A4B", "l40s", "0.20.0") == 2048
    assert _mnbt("google/gemma-4-26B-A4B", "l40s", "0.25.1", max_num_batched_tokens=1024) == 1024
    assert _mnbt("Qwen/Qwen3-14B", "l40s", "0.25.1") == 2048


def test_gb10_takes_the_small_tier_in_every_release():
    # NVML has no device memory on GB10: get_batch_defaults falls back to device_memory = 0 (<= 0.25.1),
    # and 0.33 keeps it small by compute capability
    for version in ("0.19.0", "0.25.0", "0.33.0"):
        assert _mnbt("Qwen/Qwen3-14B", "gb10", version) == 2048
