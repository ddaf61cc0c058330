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

    def line(self) -> str:
        if self.skipped:
            return f"multimodal encoder: {self.skipped}; the profiling run adds nothing for it"
        per = (f"{self.items} dummy item{'s' if self.items != 1 else ''} of {self.tokens_per_item:,} tokens"
               if self.tokens_per_item else "items of unknown size filling the encoder budget")
        return (f"multimodal encoder budget ({', '.join(self.modalities)}): the profiling run encodes {per} "
                f"(encoder_budget.py, compute_mm_encoder_budget) and keeps their {self.tokens:,} output tokens "
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


def plan_multimodal(model: ModelSpec, flags: dict[str, Any], *, dtype: str, num_tokens: int, max_num_seqs: int,
                    max_model_len: int, chunked: bool = True) -> MultimodalPlan | None:
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
    t = _tokens_per_image(model) if on == ("image",) else 0
    limit = min(limits.get(m, MM_DEFAULT_LIMIT) for m in on)
    p = encoder_profile(t, max_num_batched_tokens=num_tokens, max_num_seqs=max_num_seqs, max_model_len=max_model_len,
                        limit=limit, chunked_prefill=chunked)
    act = encoder_outputs_bytes(p, model.hidden_size, DTYPE_BYTES.get(dtype, 2))
    warn = ("the multimodal encoder's own transient peak in the profiling run (the vision / audio tower run on "
            f"{p.tokens:,} tokens of dummy input) depends on the tower and processor and is not modelled; only "
            "the encoder outputs it leaves in the encoder cache are counted")
    if flags.get("mm_processor_kwargs"):
        warn += "; --mm-processor-kwargs may change the tokens per item"
    return MultimodalPlan(modalities=on, tokens_per_item=t, items=p.items, tokens=p.tokens, activation_bytes=act,
                          warning=warn)
