"""The largest single multimodal item of a prefix-LM model, in tokens: vLLM's batch floor.

vLLM (engine/arg_utils.py::_set_default_max_num_seqs_and_batched_tokens_args, 0.24.0-0.33.0) raises a
defaulted max_num_batched_tokens to the largest per-item token count of a multimodal prefix-LM model,
so that one item fits in one batch (such models do not chunk multimodal input). The count comes from
the model's processing info (get_mm_max_tokens_per_item), asked for one item of every modality the
model supports, whatever --limit-mm-per-prompt allows; models without that method raise nothing.
"""

from __future__ import annotations

from configurator.model.spec import ModelSpec

# vllm/model_executor/models/gemma4_mm.py (0.24.0, 0.25.1, 0.33.0): a video is at most 32 frames of
# 70 soft tokens, plus boi + eoi + ~6 timestamp tokens each
GEMMA4_VIDEO_MAX_FRAMES = 32
GEMMA4_VIDEO_FRAME_TOKENS = 70 + 2 + 6


def prefix_lm_max_item_tokens(model: ModelSpec) -> int:
    """Tokens of the largest single multimodal item vLLM sizes the batch for; 0 when it raises nothing.

    Gemma 4 is a prefix-LM when its text config sets use_bidirectional_attention = "vision"
    (transformers_utils/model_arch_config_convertor.py::Gemma4ModelArchConfigConvertor, 0.25.1); its
    items: an image of vision_config.default_output_length soft tokens (280), a video of
    32 x 78 = 2,496 tokens (audio, when present, is sized by the processor and not modelled here).
    Gemma-4 26B-A4B on an L40S, 0.25.1: max_num_batched_tokens 2,048 -> 2,496, which widens each
    sliding-window group's reservation from 193 to 221 blocks per request (321,600 tokens logged)."""
    if not model.is_multimodal or not str(model.model_type).startswith("gemma4"):
        return 0
    if model.text_config.get("use_bidirectional_attention") != "vision":
        return 0
    vision = model.full_config.get("vision_config") or {}
    image = int(vision.get("default_output_length") or 0) if isinstance(vision, dict) else 0
    return max(image, GEMMA4_VIDEO_MAX_FRAMES * GEMMA4_VIDEO_FRAME_TOKENS)
