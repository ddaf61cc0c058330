"""vLLM's defaults for the flags a user leaves out, per release and GPU (each default lives here).

Sources: vllm/engine/arg_utils.py (get_batch_defaults, _set_default_max_num_seqs_and_batched_tokens_args),
vllm/config/model.py (_get_and_verify_max_len), vllm/config/cache.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from configurator.model.spec import ModelSpec
from configurator.units import GiB
from configurator.vllm.versions import Behaviour

EntryPoint = Literal["server", "offline"]


class GPU(Protocol):
    """What vLLM's defaults read of a device (configurator.hardware.catalog.GPU has it; the hardware layer sits
    above this one, so the defaults name only the fields)."""

    total_bytes: int
    compute_capability: str
    product_name: str

    @property
    def sm(self) -> int: ...

# Rope types whose max_position_embeddings already includes the scaling (not multiplied again).
_ROPE_NO_SCALE = {"su", "longrope", "llama3", "deepseek_yarn", "deepseek_llama_scaling", "mrope",
                  "default", "proportional"}


@dataclass(frozen=True)
class BatchDefaults:
    max_num_seqs: int
    max_num_batched_tokens: int
    tier: str


def batch_defaults(b: Behaviour, gpu: GPU, entry: EntryPoint = "server") -> BatchDefaults:
    """Default max_num_seqs / max_num_batched_tokens by device memory and name (get_batch_defaults).

    >= 160 GiB (B200, B300, MI300X; 0.30+): 16,384 tokens, 1,024 seqs.
    >= 70 GiB and not an A100 (H100, H200): 8,192 tokens (server) / 16,384 (offline), 1,024 seqs.
    Otherwise (A100, L40S, L4, RTX): 2,048 (server) / 8,192 (offline), 256 seqs.
    """
    mem = gpu.total_bytes
    is_gb10 = gpu.compute_capability == "12.1"
    name = gpu.product_name.lower()
    offline = entry != "server"
    if b.batch_tiers == "h100_name":  # 0.8.0-0.8.4: by device name (EngineArgs._set_default_args_v1)
        if "h100" in name or "h200" in name:
            return BatchDefaults(1024, 16384 if offline else 8192, "H100 / H200")
        return BatchDefaults(b.small_tier_seqs, 8192 if offline else 2048, "GPUs other than H100 / H200")
    if b.batch_tiers == "mem70":  # 0.8.5: >= 70 GiB, A100-80GB included
        if mem >= 70 * GiB:
            return BatchDefaults(1024, 16384 if offline else 8192, ">= 70 GiB")
        return BatchDefaults(256, 8192 if offline else 2048, "under 70 GiB")
    if b.batch_tiers == "three_tiers" and mem >= 160 * GiB:
        return BatchDefaults(1024, 16384, ">= 160 GiB")
    if mem >= 70 * GiB and "a100" not in gpu.product_name.lower() and not (b.gb10_small_tier and is_gb10):
        return BatchDefaults(1024, 8192 if entry == "server" else 16384, ">= 70 GiB, not A100")
    return BatchDefaults(256, 2048 if entry == "server" else 8192, "smaller GPUs and A100")


@dataclass(frozen=True)
class DerivedLen:
    value: int  # the limit a user-given --max-model-len is checked against
    key: str  # which config key limited it
    why: str
    default: int | None = None  # the length vLLM runs at when none is given (None: `value`)
    default_why: str = ""

    @property
    def default_len(self) -> int:
        return self.default if self.default is not None else self.value


def derived_max_model_len(model: ModelSpec, b: Behaviour) -> DerivedLen:
    """The model's context limit as vLLM derives it from the config (_get_and_verify_max_len)."""
    keys = dict(model.max_len_keys)
    if not keys:
        return DerivedLen(2048, "default", "no length key in config.json: vLLM assumes 2048")
    if "model_max_length" in keys:
        key, value = "model_max_length", keys["model_max_length"]
    else:
        key, value = min(keys.items(), key=lambda kv: kv[1])
    rope = dict(model.rope_scaling)
    rtype = str(rope.get("rope_type") or rope.get("type") or "")
    factor = rope.get("factor")
    why = f"{key} = {value:,}"
    if rtype in ("longrope", "su"):
        # not scaled; from 0.11.1 the default length (no --max-model-len, or auto) is the top-level
        # original_max_position_embeddings "to avoid performance degradation for shorter sequences"
        # (vllm/config/model.py::_get_and_verify_max_len, 0.11.1-0.33.0); the limit stays as derived
        ompe = model.text_config.get("original_max_position_embeddings")
        if b.longrope_default_original and isinstance(ompe, int) and ompe > 0:
            return DerivedLen(value, key, why, default=ompe,
                              default_why=f"longrope: vLLM defaults to original_max_position_embeddings = {ompe:,}")
    elif rtype and isinstance(factor, int | float) and not model.model_type.startswith("gemma3"):
        if rtype == "yarn" and b.yarn_max_len == "as_is":
            pass
        elif rtype == "yarn" and rope.get("original_max_position_embeddings"):
            value = int(rope["original_max_position_embeddings"] * factor)
            why = f"yarn: original_max_position_embeddings x factor = {value:,}"
        elif rtype not in _ROPE_NO_SCALE:
            value = int(value * factor)
            why = f"{key} x rope factor {factor} ({rtype}) = {value:,}"
    return DerivedLen(value, key, why)


def cudagraph_capture_sizes(b: Behaviour, gpu: GPU, max_num_seqs: int, max_num_batched_tokens: int,
                            max_capture_size: int | None = None) -> list[int]:
    """The batch sizes vLLM captures CUDA graphs for by default (VllmConfig._set_cudagraph_sizes, 0.19+).

    ceiling = min(2 x max_num_seqs, 512 (1,024 on data-centre Blackwell from 0.28), max_num_batched_tokens);
    sizes 1, 2, 4, then every 8 up to 248, then every 16 from 256 to the ceiling: 51 at 512, 83 at 1,024;
    plus max_num_batched_tokens when it fits (0.21+) and max_num_seqs when it fits (0.31+; 0.29 / 0.30 add
    decode sizes only with speculative decoding, which this list leaves out).
    --max-cudagraph-capture-size replaces the 2 x max_num_seqs / 512 ceiling, and then max_num_seqs is not
    added (0.33.0 config/vllm.py: uniform_decode_sizes is filled only when the ceiling is computed there).
    """
    default_max = 1024 if b.capture_blackwell_1024 and gpu.sm // 10 == 10 else 512
    decode_max = max_capture_size or min(max_num_seqs * 2, default_max)
    ceiling = min(max_num_batched_tokens, decode_max)
    sizes = {n for n in (1, 2, 4) if n <= ceiling}
    sizes.update(range(8, min(ceiling + 1, 256), 8))
    sizes.update(range(256, ceiling + 1, 16))
    if b.capture_mnbt and max_num_batched_tokens <= ceiling:
        sizes.add(max_num_batched_tokens)
    if b.capture_decode_size and not max_capture_size and max_num_seqs <= decode_max \
            and max_num_seqs <= max_num_batched_tokens:
        sizes.add(max_num_seqs)
    return sorted(sizes)
