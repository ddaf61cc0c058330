"""A quantized or fine-tuned derivative of a catalog model, recognised from its name alone.

`RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic`, `unsloth/gemma-3-27b-it-bnb-4bit` or
`Qwen/Qwen3-30B-A3B-Instruct-2507` keep their base's geometry (layers, heads, head size): a quantizer
or a fine-tune changes the weights, not the shapes. The rules are generic, never keyed on one model:

- the publisher (the part before '/') is dropped: RedHatAI/, neuralmagic/, unsloth/, TheBloke/, ...;
- the name is split into tokens on '-' and '_' (and '.' between words: `quantized.w4a16`);
- quantization tokens say the weight format: FP8 (-dynamic / -static), AWQ, GPTQ (-Int4 / -Int8),
  w4a16 / w8a8 / w8a16 (compressed-tensors), NVFP4, MXFP4, bnb-4bit / bnb-8bit; `FP8-KV` also says
  the KV cache is fp8;
- variant tokens (instruct, chat, it, base, hf, qat, distill, thinking, a 4-digit release date such as
  2507, ...) do not change the geometry;
- the base is the catalog model whose remaining tokens are the same, or, when one name carries a
  fine-tuner's prefix (`Hermes-3-Llama-3.1-8B`), whose tokens end the other's, with a size token among
  them (8b, 70b, 8x7b, a3b).

Where the name does not say enough (a format without its bits such as `-4bit` or `-GGUF`, two bases of
different geometry, no size to anchor a prefix), the derivative is not resolved and the caller reports
the model as unknown with the nearest names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from configurator.model import catalog
from configurator.model.catalog import Entry

# tokens that change nothing of the geometry: the model's variant, release date, training stage, dtype
VARIANT_TOKENS = frozenset({
    "instruct", "chat", "it", "pt", "base", "hf", "qat", "distill", "distilled", "thinking", "reasoning",
    "sft", "dpo", "orpo", "grpo", "rl", "rlhf", "preview", "latest", "bf16", "fp16", "fp32", "original",
    "abliterated", "uncensored", "unsloth",
})
# tokens that only decorate a quantization token next to them
QUANT_NOISE = frozenset({"dynamic", "static", "block", "marlin", "gemm", "gemv", "quantized", "quant",
                         "channelwise", "tensorwise", "kv", "unsloth", "ct"})  # ct: compressed-tensors
_DATE = re.compile(r"^\d{4}$")  # 2507, 2407, 0528: a release, not a size
_SIZE = re.compile(r"^(\d+x)?\d+(\.\d+)?[bmk]$|^a\d+(\.\d+)?b$|^e\d+b$")
_WA = re.compile(r"^w(\d+)a(\d+)$")
# a format vLLM does not load from safetensors (GGUF, EXL2, MLX), or a width without its format ('4bit')
UNCLEAR_TOKENS = frozenset({"gguf", "ggml", "exl2", "exl3", "mlx", "hqq", "eetq", "aqlm", "4bit", "8bit", "3bit",
                            "2bit", "int4", "int8", "fp4", "nf4"})
_UNCLEAR = re.compile(r"^q\d(_[0-9a-z]+)*$|^\d+(\.\d+)?bpw$")  # llama.cpp's q4_k_m, EXL2's 4.0bpw


@dataclass(frozen=True)
class Quant:
    """What the name says of the weights: a quantization_config vLLM would read, and how it was read."""

    config: dict | None  # None: the base's dtype (no quantization implied)
    label: str  # "FP8 weights", "AWQ 4-bit weights"
    kv_fp8: bool = False


class Unclear(Exception):
    """The name names a format without saying enough of it (its bits, or a layout vLLM does not load)."""


def split_name(name: str) -> list[str]:
    """'RedHatAI/Llama-3.1-8B-Instruct-quantized.w4a16' -> ['llama', '3.1', '8b', 'instruct', 'quantized',
    'w4a16']: the repository name in lower case, split on '-', '_', and '.' between two words."""
    bare = name.strip().rsplit("/", 1)[-1].lower()
    out: list[str] = []
    for tok in re.split(r"[-_]+", bare):
        parts = tok.split(".")
        # '3.1', 'qwen2.5', 'v0.3' keep their dots (a digit after it); 'quantized.w4a16' splits
        merged = [parts[0]]
        for p in parts[1:]:
            if p[:1].isdigit():
                merged[-1] += "." + p
            else:
                merged.append(p)
        out += [m for m in merged if m]
    return out


def read_quant(tokens: list[str]) -> tuple[list[str], Quant | None]:
    """(the tokens with the quantization tokens taken out, the quantization they say, or None when none).
    Raises Unclear when a quantization token does not say enough."""
    rest: list[str] = []
    found: list[Quant] = []
    kv_fp8 = False
    i = 0
    while i < len(tokens):
        t = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if t == "fp8":
            if nxt == "kv":
                kv_fp8 = True
            found.append(Quant({"quant_method": "fp8"}, "FP8 weights"))
        elif t == "awq":
            if nxt in ("int4", "4bit", "w4"):  # AWQ-INT4: the width AWQ always has
                i += 1
            found.append(Quant({"quant_method": "awq", "bits": 4, "group_size": 128}, "AWQ 4-bit weights"))
        elif t == "gptq":
            bits = {"int4": 4, "int8": 8, "4bit": 4, "8bit": 8}.get(nxt)
            if bits is not None:
                i += 1
            label = f"GPTQ {bits or 4}-bit weights" + ("" if bits else " (GPTQ's usual width, assumed)")
            found.append(Quant({"quant_method": "gptq", "bits": bits or 4, "group_size": 128}, label))
        elif (m := _WA.match(t)) is not None:
            wbits, abits = int(m.group(1)), int(m.group(2))
            group = {"num_bits": wbits, "type": "int"}
            if abits >= 16:
                group["group_size"] = 128
            found.append(Quant({"quant_method": "compressed-tensors",
                                "config_groups": {"group_0": {"weights": group}}},
                               f"INT{wbits} weights ({t}, compressed-tensors)"))
        elif t == "nvfp4":
            found.append(Quant({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "NVFP4 weights"))
        elif t == "mxfp4":
            found.append(Quant({"quant_method": "mxfp4"}, "MXFP4 weights"))
        elif t == "bnb" and nxt in ("4bit", "8bit", "nf4"):
            i += 1
            if nxt == "8bit":
                found.append(Quant({"quant_method": "bitsandbytes", "load_in_8bit": True},
                                   "bitsandbytes 8-bit weights"))
            else:
                found.append(Quant({"quant_method": "bitsandbytes", "load_in_4bit": True,
                                    "bnb_4bit_quant_type": "nf4"}, "bitsandbytes 4-bit weights"))
        elif t in UNCLEAR_TOKENS or _UNCLEAR.match(t):
            raise Unclear(f"'{t}' does not say the weight format and width vLLM would load")
        elif t in QUANT_NOISE and (found or _quant_ahead(tokens, i)):
            pass
        else:
            rest.append(t)
        i += 1
    if not found:
        return rest, None
    if len({repr(q.config) for q in found}) > 1:
        raise Unclear("the name names two quantization formats")
    q = found[0]
    return rest, Quant(q.config, q.label, kv_fp8)


def _quant_ahead(tokens: list[str], i: int) -> bool:
    return any(t in ("fp8", "awq", "gptq", "nvfp4", "mxfp4", "bnb") or _WA.match(t) for t in tokens[i + 1:])


def _core(tokens: list[str]) -> tuple[str, ...]:
    """The tokens that carry the geometry: the variant and date tokens taken out (but never the first)."""
    return tuple(t for i, t in enumerate(tokens) if i == 0 or (t not in VARIANT_TOKENS and not _DATE.match(t)))


@lru_cache(maxsize=1)
def _bases() -> tuple[tuple[tuple[str, ...], tuple[str, ...], bool, Entry], ...]:
    """(core tokens, all tokens but the quantization's, quantized?, entry) of every catalog id and alias."""
    out = []
    for e in catalog.entries():
        for n in (e.hf_id, *e.aliases):
            try:
                rest, q = read_quant(split_name(n))
            except Unclear:
                continue
            out.append((_core(rest), tuple(rest), q is not None or "quantization_config" in e.config, e))
    return tuple(out)


def _geometry(e: Entry) -> tuple:
    """What two bases must share for either to stand for a derivative (not the weights' format)."""
    from configurator.model.hf_config import text_config_of

    t = text_config_of(e.config)
    keys = ("model_type", "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
            "head_dim", "intermediate_size", "vocab_size", "kv_lora_rank", "num_experts", "n_routed_experts",
            "num_local_experts", "layer_types", "sliding_window")
    return tuple(repr(t.get(k)) for k in keys)


def find_base(name: str) -> tuple[Entry, Quant | None] | None:
    """The catalog model a derivative name stands on and the quantization its name says, or None.
    Raises Unclear when the name names a format without saying enough of it."""
    tokens = split_name(name)
    org = name.strip().rpartition("/")[0].lower()
    rest, quant = read_quant(tokens)
    core = _core(rest)
    if not core:
        return None
    exact, affix = [], []
    for order, (b_core, b_rest, b_quant, e) in enumerate(_bases()):
        # an unquantized base first, then the one sharing most variant tokens ('instruct'), then catalog order
        key = (b_quant, -len(set(rest) & set(b_rest)), order)
        if quant is None and set(rest) <= set(b_rest) and (not org or org == e.hf_id.rpartition("/")[0].lower()):
            continue  # the publisher's own id shortened (Llama-2-7b of Llama-2-7b-hf), not a derivative
        if b_core == core:
            exact.append((key, e))
        elif _affix(core, b_core):
            affix.append((key, e))
    for found in (exact, affix):
        if not found:
            continue
        found.sort(key=lambda x: x[0])
        geometries = {_geometry(e) for _, e in found}
        if len(geometries) > 1:
            raise Unclear("it matches catalog models of different geometry: " +
                          ", ".join(sorted({e.hf_id for _, e in found})[:4]))
        return found[0][1], quant
    return None


def _affix(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """One core ends the other (a fine-tuner's prefix: Hermes-3-Llama-3.1-8B ends with Llama-3.1-8B), and
    the shorter names a size (so 'Llama' alone never matches)."""
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return (len(short) >= 2 and len(short) < len(long_) and long_[-len(short):] == short
            and any(_SIZE.match(t) for t in short))


def resolve_derivative(name: str) -> tuple[Entry, dict | None, str] | None:
    """(base entry, the quantization_config the name implies or None, the warning naming the base) for a
    derivative of a catalog model; None when the name is not one, or does not say enough."""
    if "/" in name and name.rsplit("/", 1)[-1] == "":
        return None
    try:
        found = find_base(name)
    except Unclear:
        return None
    if found is None:
        return None
    base, quant = found
    if base.hf_id.lower() == name.strip().lower():
        return None
    if quant is None:
        what = "weights as the base's (the name implies no other format)"
        config = None
    else:
        what = f"{quant.label} inferred from the name"
        config = dict(quant.config or {})
        if quant.kv_fp8:
            config["kv_cache_scheme"] = {"num_bits": 8, "type": "float"}
            what += ", fp8 KV cache"
    return base, config, f"geometry of {base.hf_id}, {what}; pass --model-config to be exact"
