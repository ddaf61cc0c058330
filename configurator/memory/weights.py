"""Weight bytes per GPU ("Model loading took X GiB"), from the checkpoint size or the config.

vLLM loads checkpoints as stored: column/row-parallel linears and the vocab-parallel embedding
and lm_head split by TP (vocab padded to a multiple of 64); norms are replicated; PP stages hold
their own layers, the first the embedding, the last the lm_head. MoE experts split by TP (or
spread by expert parallelism). Quantized linears take their quantized size; embeddings, lm_head,
norms and routers stay 16-bit.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from configurator.memory.attention_params import attention_by_layer, attn_output_gate, mixer_by_layer
from configurator.memory.build import pp_layer_split
from configurator.memory.kv_dtype import DTYPE_BYTES
from configurator.memory.mlp_params import (
    expert_hidden,
    expert_intermediate,
    experts_per_token,
    latent_params,
    mlp_gated,
    mlp_params,
    moe_layer,
    moe_params,
    num_experts,
    routed_params,
    shared_expert_intermediate,
)
from configurator.memory.mxfp4 import (
    FLASHINFER_IN_WHEEL_SINCE,
    MXFP4_BLOCK,
    MXFP4_KERNELS_IN_WHEEL_SINCE,
    MXFP4_ORACLE_SINCE,
    MXFP4_TRITON_FREES_SCALES_SINCE,
    mxfp4_backend_alignment,
    mxfp4_expert_bytes,
    mxfp4_experts,
)
from configurator.memory.per_model import per_model
from configurator.memory.towers import audio_params, model_modalities, towers_skipped, uncounted_towers, vision_params
from configurator.model.spec import ModelSpec
from configurator.units import cdiv

# moved to the modules of what they count (issue 29); importable from here as before
__all__ = [
    "FLASHINFER_IN_WHEEL_SINCE", "MXFP4_BLOCK", "MXFP4_KERNELS_IN_WHEEL_SINCE", "MXFP4_ORACLE_SINCE",
    "MXFP4_TRITON_FREES_SCALES_SINCE", "attn_output_gate", "audio_params", "expert_hidden", "expert_intermediate",
    "experts_per_token", "mlp_gated", "model_modalities", "moe_layer", "mxfp4_backend_alignment", "num_experts",
    "shared_expert_intermediate", "towers_skipped", "uncounted_towers",
]

# Bits per quantized linear weight, scales included, for `--quantization` without a declaring config
# (4-bit group-128 formats: 4 + 16/128 scale + 4/128 zero bits).
QUANT_BITS = {"fp8": 8.0, "fbgemm_fp8": 8.0, "ptpc_fp8": 8.0, "compressed-tensors": 8.0, "experts_int8": 8.0,
              "awq": 4.16, "awq_marlin": 4.16, "gptq": 4.16, "gptq_marlin": 4.16, "bitsandbytes": 4.5,
              "mxfp4": 4.25, "modelopt_fp4": 4.5, "modelopt": 8.0}


@dataclass(frozen=True)
class ParamCounts:
    """Parameters by where they live (counts, not bytes)."""

    embedding: int
    lm_head: int
    per_layer_linear: tuple[int, ...]  # quantizable linear weights of each decoder layer (all below)
    per_layer_other: tuple[int, ...]  # norms, routers, biases, SSM parameters (16-bit)
    vision: int = 0
    per_layer_attention: tuple[int, ...] = ()  # attention / linear-attention projections
    per_layer_experts: tuple[int, ...] = ()  # routed experts (FusedMoE), router excluded
    per_layer_router: tuple[int, ...] = ()  # the router's gate (ReplicatedLinear, never quantized)
    # quantized linears every TP rank holds whole (ReplicatedLinear / disable_tp, with quant_config), part of
    # per_layer_attention
    per_layer_replicated: tuple[int, ...] = ()
    experts: tuple[int, int, int] = (0, 0, 0)  # (num_experts, hidden, moe_intermediate) for kernel padding
    audio: int = 0  # an audio encoder and its projector into the text model (replicated, 16-bit)

    @property
    def total(self) -> int:
        return (self.embedding + self.lm_head + sum(self.per_layer_linear) + sum(self.per_layer_other)
                + self.vision + self.audio)


@per_model  # pure in the frozen spec and arguments; estimated many times per run (check)
def count_params(model: ModelSpec) -> ParamCounts:
    """Estimate parameter counts from the config (the same shapes vLLM's model classes build)."""
    c = model.text_config
    h = model.hidden_size
    vocab = cdiv(model.vocab_size, 64) * 64 if model.vocab_size else 0
    n = model.num_hidden_layers
    heads = model.num_attention_heads
    int(c.get("head_dim") or 0) or h // heads
    attn_by_layer, repl_by_layer, other_by_layer = attention_by_layer(model)
    mamba_by_layer = mixer_by_layer(model)
    linear, other, attn, exp, rout = _decoder_layers(model, attn_by_layer, mamba_by_layer, repl_by_layer,
                                                     other_by_layer)
    embedding = vocab * h
    lm_head = 0 if model.tie_word_embeddings else vocab * h
    ple = per_layer_input_params(model)  # Gemma 4 E-models' parts beyond the cache-holding layers
    if ple is not None:
        embedding += ple.embedding
        linear = [a + b for a, b in zip(linear, ple.linear, strict=True)]
        attn = [a + b for a, b in zip(attn, ple.attention, strict=True)]
        other = [a + b for a, b in zip(other, ple.other, strict=True)]
    n_exp = num_experts(c)
    return ParamCounts(embedding, lm_head, tuple(linear), tuple(other), vision=vision_params(model.full_config, h),
                       per_layer_attention=tuple(attn), per_layer_experts=tuple(exp), per_layer_router=tuple(rout),
                       per_layer_replicated=tuple(repl_by_layer.get(i, 0) for i in range(n)),
                       experts=(n_exp, expert_hidden(c, h), expert_intermediate(c)) if n_exp else 0,
                       audio=audio_params(model.full_config, h))


def _decoder_layers(model: ModelSpec, attn_by_layer: dict[int, int], mamba_by_layer: dict[int, int],
                    repl_by_layer: dict[int, int], other_by_layer: dict[int, int]) -> tuple[list[int], ...]:
    """Per decoder layer: (all linears, 16-bit others, attention / mixer linears, routed experts, router gate).
    A latent MoE's projections join the layer's replicated linears (repl_by_layer, updated in place)."""
    c, h = model.text_config, model.hidden_size
    dense_mlp = mlp_params(h, int(c.get("intermediate_size_mlp") or model.intermediate_size), c)
    moe = moe_params(c, h)
    routed, router = routed_params(c, h)
    latent = latent_params(c, h)
    linear, other, attn, exp, rout = [], [], [], [], []
    pattern = c.get("hybrid_override_pattern") if isinstance(c.get("hybrid_override_pattern"), str) else None
    blocks = c.get("block_configs") if isinstance(c.get("block_configs"), list) else None
    for i in range(model.num_hidden_layers):
        lin = attn_by_layer.get(i, 0) + mamba_by_layer.get(i, 0)
        attn.append(lin)
        ffn, has_moe = _ffn_params(c, h, i, blocks, pattern, moe, dense_mlp)
        lin += ffn
        if has_moe and latent:  # counted in moe; whole on every rank, quantized like the attention linears
            attn[-1] += latent
            repl_by_layer[i] = repl_by_layer.get(i, 0) + latent
        linear.append(lin)
        other.append(2 * h + other_by_layer.get(i, 0))
        exp.append(routed if has_moe else 0)
        rout.append(router if has_moe else 0)
    return linear, other, attn, exp, rout


def _ffn_params(c: dict, h: int, i: int, blocks: list | None, pattern: str | None, moe: int,
                dense_mlp: int) -> tuple[int, bool]:
    """Layer i's MLP or MoE parameters, and whether it has routed experts."""
    if blocks is not None and i < len(blocks) and isinstance(blocks[i], dict):
        ffn = blocks[i].get("ffn") or {}
        if ffn.get("no_op"):
            return 0, False
        # DeciLM _ffn_mult_to_intermediate_size: 2/3 x mult x hidden, rounded up to 256
        inter = cdiv(int(2 * float(ffn.get("ffn_mult") or 0) * h / 3), 256) * 256
        return mlp_params(h, inter, c), False
    if pattern is not None:
        ch = pattern[i] if i < len(pattern) else "-"
        return (moe if ch == "E" else dense_mlp if ch == "-" else 0), ch == "E"
    if moe and moe_layer(c, i):
        if c.get("enable_moe_block") or str(c.get("model_type", "")).startswith("gemma4"):
            return moe + dense_mlp, True  # Gemma 4 runs a dense MLP beside the experts in every layer
        return moe, True
    return dense_mlp, False


@dataclass(frozen=True)
class PerLayerInputParams:
    """Parameters of a Gemma 4 E-model (E2B, E4B) that the KV-holding layers do not show."""

    embedding: int  # vocab-parallel per-layer-input table + its model projection, split by TP
    linear: tuple[int, ...]  # per decoder layer: KV-shared layers' attention, double-wide MLP halves
    attention: tuple[int, ...]  # the attention part of `linear`
    other: tuple[int, ...]  # per decoder layer, replicated: the per-layer input gate and projection


def per_layer_input_params(model: ModelSpec) -> PerLayerInputParams | None:
    """Gemma 4's per-layer inputs and KV-shared layers (vllm==0.25.0 model_executor/models/gemma4.py).

    Gemma4Model builds embed_tokens_per_layer, a VocabParallelEmbedding of vocab_size_per_layer_input x
    (num_hidden_layers x hidden_size_per_layer_input), and per_layer_model_projection, a ColumnParallelLinear
    hidden -> that width; every decoder layer a per_layer_input_gate (hidden -> per-layer width) and a
    per_layer_projection (back), both ReplicatedLinear. The last num_kv_shared_layers layers read an earlier
    layer's KV cache but still build their own QKVParallelLinear and o_proj (head_dim global_head_dim on
    full-attention layers), and with use_double_wide_mlp their MLP is twice intermediate_size wide.
    E2B: 262,144 x 35 x 256 = 2.35B table parameters, more than the rest of its text model. None for other
    models."""
    c = model.text_config
    if not str(c.get("model_type") or model.model_type).startswith("gemma4"):
        return None
    n, h = model.num_hidden_layers, model.hidden_size
    width = int(c.get("hidden_size_per_layer_input") or 0)
    shared = int(c.get("num_kv_shared_layers") or 0)
    if not width and not shared:
        return None
    types = c.get("layer_types") if isinstance(c.get("layer_types"), list) else []
    embedding = 0
    if width:
        vocab = int(c.get("vocab_size_per_layer_input") or model.vocab_size)
        embedding = cdiv(vocab, 64) * 64 * n * width + h * n * width
    heads, kv, hd = model.num_attention_heads, model.num_kv_heads, model.head_dim
    global_hd = int(c.get("global_head_dim") or hd)
    global_kv = int(c.get("num_global_key_value_heads") or kv) if c.get("attention_k_eq_v") else kv
    linear, attention, other = [], [], []
    for i in range(n):
        a = mlp = 0
        if shared and i >= n - shared:  # not in model.layers: no cache of its own, weights all the same
            full = i < len(types) and types[i] == "full_attention"
            d, k = (global_hd, global_kv) if full else (hd, kv)
            a = h * heads * d + h * 2 * k * d + heads * d * h  # QKVParallelLinear keeps K and V slots
            if c.get("use_double_wide_mlp"):
                mlp = mlp_params(h, model.intermediate_size, c)
        linear.append(a + mlp)
        attention.append(a)
        other.append(2 * h * width + width if width else 0)
    return PerLayerInputParams(embedding, tuple(linear), tuple(attention), tuple(other))


@dataclass(frozen=True)
class WeightEstimate:
    """Weight bytes on the most loaded rank, and how they were obtained."""

    per_rank_bytes: int
    total_bytes: int
    source: str  # 'checkpoint' (safetensors size known) or 'config' (parameter count x bytes)
    params: int


def weight_bytes(model: ModelSpec, *, tp: int, pp: int, quantization: str | None = None,
                 dtype: str | None = None, compute_capability: int = 0, max_num_batched_tokens: int = 0,
                 modalities_off: Collection[str] = (), vllm_version: str = "") -> WeightEstimate:
    """Bytes per GPU on the heaviest rank, as the checkpoint lands on the GPU.

    Each part takes the bytes its quantization method gives it in vLLM (see _part_bytes):
    embeddings, lm_head, norms, routers and vision / audio towers stay in the model dtype; MXFP4
    quantizes only the MoE experts, padded to the kernel's alignment (compute_capability and vllm_version pick
    the kernel; no version: the newest rule). A known checkpoint size replaces the count for methods that load
    tensors as stored.
    modalities_off: the modalities --limit-mm-per-prompt sets to 0 (all of them with
    --language-model-only): a tower all of whose modalities are off is not built (towers_skipped).
    max_num_batched_tokens > 0 adds the buffers the model allocates at that size while it loads
    (model_load_buffer_bytes)."""
    method = quant_method_bits(model, quantization)[0]
    if method != "mxfp4" and not mxfp4_experts(model, method):
        compute_capability, vllm_version = 0, ""  # they pick only the MXFP4 expert kernel (_part_bytes)
    return _weight_bytes(model, tp, pp, quantization, dtype, compute_capability, max_num_batched_tokens,
                         frozenset(modalities_off), vllm_version)


@per_model(max_entries=256)  # pure in the frozen spec and arguments; estimated many times per run (check)
def _weight_bytes(model: ModelSpec, tp: int, pp: int, quantization: str | None, dtype: str | None,
                  compute_capability: int, max_num_batched_tokens: int, modalities_off: frozenset[str],
                  vllm_version: str) -> WeightEstimate:
    p = count_params(model)
    dt = DTYPE_BYTES.get(dtype or model.dtype, 2)
    method, bits = quant_method_bits(model, quantization)
    per_layer = _part_bytes(model, p, tp, dt, method, bits, compute_capability, vllm_version)
    stages = pp_layer_split(model.num_hidden_layers, pp)
    off = towers_skipped(modalities_off)
    towers = (0 if "vision" in off else p.vision) + (0 if "audio" in off else p.audio)
    best_rank = 0.0
    first_rank = 0.0
    for s, layers in enumerate(stages):
        b = sum(per_layer[i] for i in layers)
        b += sum(p.per_layer_other[i] for i in layers) * dt
        if s == 0:
            b += p.embedding * dt / tp + towers * dt
        if s == len(stages) - 1:
            b += (p.lm_head if p.lm_head else (p.embedding if pp > 1 else 0)) * dt / tp
        if s == 0:
            first_rank = b
        best_rank = max(best_rank, b)
    # buffers the model allocates while it loads (not in the checkpoint, so never scaled by its size below)
    buffers = model_load_buffer_bytes(model, max_num_batched_tokens, dt)
    # one copy of the replicated parts (routers, replicated linears) in the checkpoint, a TP share of the rest
    width = _attention_width(model, dt, method, bits)
    repl = sum(_replicated_bytes(p, i, dt, width) for i in range(len(per_layer)))
    total = (p.embedding + p.lm_head + p.vision + p.audio + sum(p.per_layer_other)) * dt \
        + (sum(per_layer) - repl) * tp + repl
    # registered buffers load with the weights: the RoPE cos/sin cache (one per distinct RoPE)
    rope = _rope_cache_bytes(model, dt)
    best_rank += rope
    first_rank += rope
    if model.weights_bytes and quantization in (None, model.quant.method) and method not in REPACKED:
        share = best_rank / total if total else 1.0
        heaviest = max(best_rank, first_rank + buffers) if buffers else best_rank
        extra = heaviest - best_rank  # the buffers' excess on the heaviest rank, in bytes as allocated
        return WeightEstimate(int(model.weights_bytes * share + extra), model.weights_bytes, "checkpoint", p.total)
    return WeightEstimate(int(max(best_rank, first_rank + buffers)), int(total), "config", p.total)


def model_load_buffer_bytes(model: ModelSpec, max_num_batched_tokens: int, dt: int) -> int:
    """Buffers a model allocates at max_num_batched_tokens while it is built, so inside 'Model loading took'.
    Gemma 4 with per-layer inputs: Gemma4ForConditionalGeneration.__init__ pre-allocates per_layer_embeddings,
    torch.zeros(max_num_batched_tokens, num_hidden_layers, hidden_size_per_layer_input) in the model dtype,
    for CUDA-graph capture (vllm==0.21.0 / 0.25.0 / 0.28.0 / 0.33.0 model_executor/models/gemma4_mm.py), on every TP
    rank. gemma-4-E4B at 2,048 tokens: 2,048 x 42 x 256 x 2 B = 42 MiB; E2B at 8,192: 140 MiB. 0 otherwise."""
    if max_num_batched_tokens <= 0 or "Gemma4ForConditionalGeneration" not in model.architectures:
        return 0  # the class that allocates it (a text-only Gemma4ForCausalLM does not)
    width = int(model.text_config.get("hidden_size_per_layer_input") or 0)
    return max_num_batched_tokens * model.num_hidden_layers * width * dt


# methods whose tensors on the GPU differ from the checkpoint's (padding, repacking)
REPACKED = frozenset({"mxfp4"})


def quant_method_bits(model: ModelSpec, quantization: str | None) -> tuple[str | None, float | None]:
    """(method, bits per quantized weight incl. scales): the checkpoint's declaration, else --quantization
    (online quantization, or a method the config did not declare) through QUANT_BITS."""
    method = model.quant.method or quantization
    bits = model.quant.weight_bits
    if bits is None and quantization in QUANT_BITS:
        bits = QUANT_BITS[quantization]
    return method, bits


def _linear_bits(model: ModelSpec, method: str | None, bits: float | None) -> float | None:
    """Bits of the quantized non-expert linears: FP8 (8) beside MXFP4 experts in an FP8 checkpoint, else `bits`."""
    return 8.0 if method != "mxfp4" and mxfp4_experts(model, method) else bits


def expert_bytes_per_param(model: ModelSpec, quantization: str | None, dtype: str | None) -> float:
    """Bytes per routed-expert parameter as weight_bytes takes it, without the kernels' padding: MXFP4 e2m1
    pairs + one e8m0 scale per 32; else the quantized width, or the model dtype."""
    method, bits = quant_method_bits(model, quantization)
    if mxfp4_experts(model, method):
        return 0.5 + 1 / MXFP4_BLOCK
    return bits / 8 if bits else DTYPE_BYTES.get(dtype or model.dtype, 2)


def _attention_width(model: ModelSpec, dt: int, method: str | None, bits: float | None) -> float:
    """Bytes per attention-projection parameter: the model dtype for MXFP4 checkpoints (linears unquantized) and
    configs that leave self_attn out of the quantization, else the linears' quantized width."""
    if method == "mxfp4" or _unquantized_attention(model):
        return dt
    lbits = _linear_bits(model, method, bits)
    return lbits / 8 if lbits else dt


def _replicated_bytes(p: ParamCounts, i: int, dt: int, attn_width: float) -> float:
    """Bytes of layer i every TP rank holds whole: the router gate (16-bit) and replicated attention linears."""
    router = p.per_layer_router[i] if p.per_layer_router else 0
    repl = p.per_layer_replicated[i] if p.per_layer_replicated else 0
    return router * dt + repl * attn_width


def _unquantized_attention(model: ModelSpec) -> bool:
    """The quantization config leaves the attention projections in 16-bit (modules_to_not_convert /
    ignore list naming self_attn, as gpt-oss's does: 'model.layers.*.self_attn')."""
    qc = model.full_config.get("quantization_config") or model.text_config.get("quantization_config") or {}
    if not isinstance(qc, dict):
        return False
    skip = []
    for key in ("modules_to_not_convert", "ignore", "ignored_layers", "exclude_modules"):
        if isinstance(qc.get(key), list):
            skip += [str(x) for x in qc[key]]
    return any("self_attn" in x and not re.search(r"vision|visual|audio", x) for x in skip)


def _part_bytes(model: ModelSpec, p: ParamCounts, tp: int, dt: int, method: str | None, bits: float | None,
                capability: int, version: str = "") -> tuple[float, ...]:
    """Bytes of each decoder layer's linear weights on one TP rank."""
    mx = mxfp4_experts(model, method)
    lbits = _linear_bits(model, method, bits)
    q = lbits / 8 if lbits else dt
    attn_b = _attention_width(model, dt, method, bits)
    out = []
    for i, lin in enumerate(p.per_layer_linear):
        attn = p.per_layer_attention[i] if p.per_layer_attention else 0
        exp = p.per_layer_experts[i] if p.per_layer_experts else 0
        router = p.per_layer_router[i] if p.per_layer_router else 0
        repl = p.per_layer_replicated[i] if p.per_layer_replicated else 0
        rest = lin - attn - exp - router  # dense MLP, shared experts
        if method == "mxfp4":
            # vllm/model_executor/layers/quantization/mxfp4.py (0.19.0-0.25.1): Mxfp4Config quantizes only
            # FusedMoE; every LinearBase falls back to UnquantizedLinearMethod
            b = (attn - repl + rest) * dt / tp + repl * dt + \
                (mxfp4_expert_bytes(p.experts, tp, capability, version=version) if exp else 0)
        elif mx:
            # FusedMoE(has_bias) is False here (models/deepseek_v4/nvidia/model.py, 0.25.0): no expert biases
            b = ((attn - repl) * attn_b + rest * q) / tp + repl * attn_b + \
                (mxfp4_expert_bytes(p.experts, tp, capability, bias=False, version=version) if exp else 0)
        else:
            b = ((attn - repl) * attn_b + (rest + exp) * q) / tp + repl * attn_b
        # the router gate is a ReplicatedLinear / GateLinear without quant_config: whole on every TP rank
        # (model_executor/models/qwen3_moe.py, mixtral.py, gpt_oss.py ReplicatedLinear; deepseek_v2.py,
        # gemma4.py, minimax_m2.py GateLinear(ReplicatedLinear), 0.25.0)
        out.append(b + router * dt)
    return tuple(out)


def _rope_cache_bytes(model: ModelSpec, dt: int) -> int:
    """vLLM's RotaryEmbedding cos_sin_cache: max_position x rotary_dim in the model dtype; M-RoPE
    enlarges the positions 4x for video (Qwen3.5-0.8B: 262,144 x 4 x 64 x 2 B = 128 MiB)."""
    c = model.text_config
    if model.is_mla or not model.layers:
        return 0
    max_pos = dict(model.max_len_keys).get("max_position_embeddings", 0)
    rope = dict(model.rope_scaling)
    params = c.get("rope_parameters") if isinstance(c.get("rope_parameters"), dict) else {}
    per_type = {k: v for k, v in params.items() if isinstance(v, dict)}
    if per_type:
        return max_pos * dt * sum(_per_type_rope_dims(model, per_type))
    factor = rope.get("partial_rotary_factor") or params.get("partial_rotary_factor") \
        or c.get("partial_rotary_factor") or 1.0
    rot_dim = int(model.head_dim * float(factor))
    mrope = "mrope_section" in params or "mrope_section" in (c.get("rope_scaling") or {})
    return max_pos * (4 if mrope else 1) * rot_dim * dt


def _per_type_rope_dims(model: ModelSpec, per_type: dict[str, dict]) -> list[int]:
    """Rotary widths of the distinct RoPE caches of a config whose rope_parameters are keyed by layer type
    (Gemma 4: sliding_attention / full_attention). vllm==0.25.0 model_executor/models/gemma4.py builds each
    attention layer's get_rope(head_dim, rope_parameters[layer_type]) with head_dim = global_head_dim on
    full-attention layers; get_rope (layers/rotary_embedding/__init__.py) keeps one cache per distinct
    (head_size, rotary_dim, rope parameters): rotary_dim = head_size x partial_rotary_factor, but a
    'proportional' RoPE (Gemma4RotaryEmbedding, gemma4_rope.py) passes rotary_dim = head_size to the base
    class, its cache max_position x head_size wide. gemma-4-E4B: 131,072 x (256 + 512) x 2 B = 192 MiB, of
    which the 512-wide full-attention cache (128 MiB) a single head_dim-wide cache missed."""
    c = model.text_config
    types = c.get("layer_types") if isinstance(c.get("layer_types"), list) else list(per_type)
    seen: set[tuple[int, int, str]] = set()
    for t in dict.fromkeys(types):
        rp = per_type.get(t)
        if rp is None:
            continue
        head = int(c.get("global_head_dim") or model.head_dim) if t == "full_attention" else model.head_dim
        if rp.get("rope_type") == "proportional":
            rot = head
        else:
            rot = int(head * float(rp.get("partial_rotary_factor") or 1.0))
        seen.add((head, rot, repr(sorted(rp.items()))))
    return [rot for _, rot, _ in seen]
