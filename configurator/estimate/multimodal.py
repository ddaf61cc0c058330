"""The multimodal encoder's share of the profiling run, from --limit-mm-per-prompt and the model's modalities."""


from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from configurator.errors import InputError
from configurator.estimate.option_values import truthy
from configurator.memory.features import encoder_outputs_bytes, encoder_profile
from configurator.memory.kv_dtype import DTYPE_BYTES
from configurator.memory.weights import model_modalities
from configurator.model.spec import ModelSpec
from configurator.units import human_bytes

# vllm/config/multimodal.py (0.33.0): a modality --limit-mm-per-prompt leaves out keeps count 999
MM_DEFAULT_LIMIT = 999


@dataclass(frozen=True)
class MultimodalPlan:
    """The multimodal encoder's share of the profiling run (gpu_model_runner.py profile_run, 0.33.0)."""

    modalities: tuple[str, ...]  # the model's non-text modalities still enabled (limit > 0)
    tokens_per_item: int  # the largest item's tokens when the config gives them (0: unknown)
    items: int
    tokens: int
    activation_bytes: int  # encoder outputs held in encoder_cache during the decoder's dummy pass
    skipped: str = ""  # why nothing is profiled (text-only limits, --skip-mm-profiling)
    warning: str | None = None
    width: int = 0  # one output token's elements (deepstack towers concatenate their features: encoder_output_width)
    expanded: bool = False  # the outputs are copied into encoder-budget-sized tensors (profile_run, 0.11-0.12)

    def line(self) -> str:
        if self.skipped:
            return f"multimodal encoder: {self.skipped}; the profiling run adds nothing for it"
        per = (f"{self.items} dummy item{'s' if self.items != 1 else ''} of {self.tokens_per_item:,} tokens"
               if self.tokens_per_item else "items of unknown size filling the encoder budget")
        kept = (f"keeps their outputs, expanded to the {self.tokens:,}-token encoder budget (profile_run before "
                f"0.13.0)," if self.expanded else f"keeps their {self.tokens:,} output tokens")
        wide = f" of {self.width:,} elements" if self.width else ""
        return (f"multimodal encoder budget ({', '.join(self.modalities)}): the profiling run encodes {per} "
                f"(encoder_budget.py, compute_mm_encoder_budget) and {kept}{wide} "
                f"in the encoder cache while the decoder's dummy pass runs: +{human_bytes(self.activation_bytes)} "
                f"activation peak; --limit-mm-per-prompt '{{\"image\":0}}' (every modality 0) removes it")


def flag_mm_limits(flags: dict[str, Any]) -> dict[str, int]:
    """The per-modality limits the flags set: --limit-mm-per-prompt, or 0 for every modality with
    --language-model-only (vllm==0.33.0 config/multimodal.py MultiModalConfig.get_limit_per_prompt returns 0
    for every modality when language_model_only is set: "Equivalent to setting --limit-mm-per-prompt to 0 for
    every modality")."""
    if truthy(flags.get("language_model_only", False)):
        return {"image": 0, "video": 0, "audio": 0}
    return mm_limits(flags.get("limit_mm_per_prompt"))


def mm_limits(raw: Any) -> dict[str, int]:
    """--limit-mm-per-prompt: JSON {"image": 2, "video": {"count": 1, ...}} (0.33.0 config/multimodal.py, the
    legacy count-only form too) or the old image=2,video=1 form."""
    if raw in (None, ""):
        return {}
    if isinstance(raw, dict):
        d = raw
    else:
        text = str(raw).strip()
        try:
            d = json.loads(text)
        except ValueError:
            try:
                d = {k.strip(): int(v) for k, v in (x.split("=", 1) for x in text.split(",") if x.strip())}
            except ValueError:
                raise InputError(f"--limit-mm-per-prompt: expected a JSON object, got {text[:60]!r}") from None
    if not isinstance(d, dict):
        raise InputError(f"--limit-mm-per-prompt: expected a JSON object, got {str(raw)[:60]!r}")
    out = {}
    for k, v in d.items():
        n = v.get("count", MM_DEFAULT_LIMIT) if isinstance(v, dict) else v
        try:
            out[str(k)] = int(n)
        except (TypeError, ValueError):
            raise InputError(f"--limit-mm-per-prompt: {k}: expected a count, got {n!r}") from None
    return out


def _tokens_per_image(model: ModelSpec) -> int:
    """The tokens one image becomes, when the config states it: mm_tokens_per_image (Gemma 3),
    vision_config.default_output_length (Gemma 4), image_seq_length; else 0 (the processor decides)."""
    c = model.full_config
    vision = c.get("vision_config") if isinstance(c.get("vision_config"), dict) else {}
    for v in (c.get("mm_tokens_per_image"), vision.get("default_output_length"), c.get("image_seq_length")):
        if isinstance(v, int) and v > 0:
            return v
    return 0


# The Qwen3-VL processor (Qwen3VLProcessor: Qwen3-VL, and the Qwen3.5 / 3.6 checkpoints that ship it) sizes the
# largest item from the checkpoint's preprocessor_config.json / video_preprocessor_config.json, which config.json
# does not carry; their shipped values: image size.longest_edge 16,777,216 pixels, video 25,165,824 (both frames of
# a temporal patch). One merged token covers (patch_size x spatial_merge_size)^2 pixels.
QWEN3VL_IMAGE_LONGEST_EDGE = 16_777_216
QWEN3VL_VIDEO_LONGEST_EDGE = 25_165_824
# vllm/model_executor/models/qwen3_vl.py get_max_video_tokens, 0.11.0 / 0.12.0: the video's soft tokens x 12.5 (the
# timestamp text each one becomes), removed in 0.13.0
QWEN3VL_VIDEO_FORMAT_FACTOR = 12.5
QWEN3VL_VIDEO_FORMAT_UNTIL = (0, 13)
# v1/worker/gpu_model_runner.py profile_run, 0.11.0 / 0.12.0: dummy encoder outputs shorter than the encoder
# budget are copied into new_zeros((encoder_budget, width)) tensors kept in encoder_cache ("expanded_outputs");
# 0.13.0 / 0.14.0 / 0.15.0 / 0.33.0 keep the outputs as they are
ENCODER_OUTPUTS_EXPANDED_UNTIL = (0, 13)


def _release(version: str) -> tuple[int, int]:
    try:
        major, minor = str(version).split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return (99, 0)


def encoder_output_width(model: ModelSpec) -> int:
    """The width of one encoder output token: vision_config.out_hidden_size x (1 + len(deepstack_visual_indexes))
    where the vision tower states its output size (vllm/model_executor/models/qwen3_vl.py Qwen3_VisionTransformer,
    0.11.0 / 0.33.0: "out_hidden_size is enlarged due to deepstack", the deepstack features are concatenated to the
    embeddings the encoder cache holds), else the language model's hidden size."""
    vision = model.full_config.get("vision_config")
    out = vision.get("out_hidden_size") if isinstance(vision, dict) else None
    if not isinstance(out, int) or out <= 0:
        return model.hidden_size
    return out * (1 + len(vision.get("deepstack_visual_indexes") or []))


def qwen3vl_item(model: ModelSpec, modalities: tuple[str, ...], version: str, max_model_len: int) -> tuple[int, int]:
    """(tokens the encoder budget counts for the largest item, rows of encoder output it yields) for a model whose
    vision tower is Qwen3-VL's (model_type qwen3*, a vision_config with patch_size, spatial_merge_size and
    temporal_patch_size); (0, 0) for any other. vLLM profiles the modality with the most tokens
    (MultiModalBudget.get_modality_with_max_tokens). Image: longest_edge / (patch x merge)^2 (16,384 at patch 16,
    merge 2). Video: one temporal patch at the video longest_edge (12,288; 0.15.0+ get_max_video_tokens asks for 2
    frames at longest_edge / temporal_patch_size; 0.11.0-0.14.0 add frames up to the same pixel cap, capped by
    max_model_len), counted x 12.5 before 0.13.0 (QWEN3VL_VIDEO_FORMAT_FACTOR). Qwen3-VL-30B-A3B at 0.11.0 logs
    "Encoder cache will be initialized with a budget of 153600 tokens, and profiled with 1 video items"."""
    vision = model.full_config.get("vision_config")
    if not str(model.model_type).startswith("qwen3") or not isinstance(vision, dict):
        return 0, 0
    patch, merge, temporal = (vision.get(k) for k in ("patch_size", "spatial_merge_size", "temporal_patch_size"))
    if not all(isinstance(x, int) and x > 0 for x in (patch, merge, temporal)):
        return 0, 0
    per_token = (patch * merge) ** 2
    items = []
    if "image" in modalities:
        n = QWEN3VL_IMAGE_LONGEST_EDGE // per_token
        items.append((n, n))
    if "video" in modalities:
        rows = QWEN3VL_VIDEO_LONGEST_EDGE // temporal // per_token
        if _release(version) < (0, 15):
            rows = min(rows, max_model_len)
        counted = int(rows * QWEN3VL_VIDEO_FORMAT_FACTOR) if _release(version) < QWEN3VL_VIDEO_FORMAT_UNTIL else rows
        items.append((counted, rows))
    return max(items, default=(0, 0))


def plan_multimodal(model: ModelSpec, flags: dict[str, Any], *, dtype: str, num_tokens: int, max_num_seqs: int,
                    max_model_len: int, chunked: bool = True, version: str = "") -> MultimodalPlan | None:
    """The encoder's dummy batch in the profiling run (None for a text-only model)."""
    mods = model_modalities(model)
    if not mods:
        return None
    limits = flag_mm_limits(flags)
    on = tuple(m for m in mods if limits.get(m, MM_DEFAULT_LIMIT) > 0)
    if not on:
        return MultimodalPlan(modalities=(), tokens_per_item=0, items=0, tokens=0, activation_bytes=0,
                              skipped="every modality limited to 0 (text-only), so compute_mm_encoder_budget "
                                      "returns 0 and no encoder cache is initialized")
    if truthy(flags.get("skip_mm_profiling", False)):
        return MultimodalPlan(modalities=on, tokens_per_item=0, items=0, tokens=0, activation_bytes=0,
                              skipped="--skip-mm-profiling: the encoder is not profiled (its memory at serving "
                                      "time then comes out of the KV headroom)")
    t, rows = qwen3vl_item(model, on, version, max_model_len)
    t = t or (_tokens_per_image(model) if on == ("image",) else 0)
    limit = min(limits.get(m, MM_DEFAULT_LIMIT) for m in on)
    p = encoder_profile(t, max_num_batched_tokens=num_tokens, max_num_seqs=max_num_seqs, max_model_len=max_model_len,
                        limit=limit, chunked_prefill=chunked)
    width = encoder_output_width(model)
    tokens, expanded = p.tokens, False
    if rows and p.items:
        # each item's output rows, or the encoder budget's where the release expands the outputs to it
        expanded = _release(version) < ENCODER_OUTPUTS_EXPANDED_UNTIL and p.budget_tokens > rows
        tokens = p.items * (p.budget_tokens if expanded else rows)
        act = tokens * width * DTYPE_BYTES.get(dtype, 2)
    else:
        act = encoder_outputs_bytes(p, width, DTYPE_BYTES.get(dtype, 2))
    warn = ("the multimodal encoder's own transient peak in the profiling run (the vision / audio tower run on "
            f"{p.tokens:,} tokens of dummy input) depends on the tower and processor and is not modelled; only "
            "the encoder outputs it leaves in the encoder cache are counted")
    if flags.get("mm_processor_kwargs"):
        warn += "; --mm-processor-kwargs may change the tokens per item"
    return MultimodalPlan(modalities=on, tokens_per_item=t, items=p.items, tokens=tokens, activation_bytes=act,
                          warning=warn, width=width, expanded=expanded)
