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
from typing import Any

from configurator.memory.build import pp_layer_split
from configurator.memory.kv_dtype import DTYPE_BYTES
from configurator.memory.per_model import per_model
from configurator.model.spec import ModelSpec
from configurator.units import cdiv
from configurator.vllm.versions import _key

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
    attn_by_layer: dict[int, int] = {}
    repl_by_layer: dict[int, int] = {}
    other_by_layer: dict[int, int] = {}
    ratios = c.get("compress_ratios") if isinstance(c.get("compress_ratios"), list) else None
    gate = int(attn_output_gate(model))
    for g in model.layers:
        if g.kind == "mamba" or g.index in attn_by_layer:
            continue
        if ratios is not None and c.get("o_lora_rank"):
            r = int(ratios[g.index] or 0) if g.index < len(ratios) else 0
            attn_by_layer[g.index], repl_by_layer[g.index], other_by_layer[g.index] = _csa_params(c, h, heads, r)
        elif model.is_mla:
            attn_by_layer[g.index] = _mla_params(c, h, heads)
        else:
            q = heads * g.head_size
            kv = g.num_kv_heads * (g.head_size + g.head_size_v)
            attn_by_layer[g.index] = h * q * (1 + gate) + h * kv + q * h
    mamba_by_layer: dict[int, int] = {}
    for g in model.layers:
        if g.kind == "mamba" and g.mamba is not None:
            m = g.mamba
            if m.variant == "gdn":
                qk = m.num_k_heads * m.k_head_dim
                v = m.num_heads * m.head_dim
                proj = h * (2 * qk + 2 * v + 2 * m.num_heads) + v * h
            elif m.variant in ("mamba2", "mamba1"):
                inner = m.intermediate_size
                proj = h * (2 * inner + 2 * m.n_groups * m.state_size + m.num_heads) + inner * h
            elif m.variant == "linear_attention":
                # MiniMax's lightning attention (vllm==0.11.0 model_executor/layers/mamba/linear_attn.py
                # MiniMaxText01LinearAttention): qkv_proj h x 3 inner, output_gate h x inner, out_proj inner x h,
                # inner = heads x head_dim (MiniMax-M1: 64 x 128, 252 M a layer)
                proj = 5 * h * m.num_heads * m.head_dim
            else:
                proj = 2 * h * h
            mamba_by_layer[g.index] = proj
    dense_mlp = _mlp_params(h, int(c.get("intermediate_size_mlp") or model.intermediate_size), c)
    moe = _moe_params(c, h)
    routed, router = _routed_params(c, h)
    latent = _latent_params(c, h)
    linear, other, attn, exp, rout = [], [], [], [], []
    pattern = c.get("hybrid_override_pattern") if isinstance(c.get("hybrid_override_pattern"), str) else None
    blocks = c.get("block_configs") if isinstance(c.get("block_configs"), list) else None
    for i in range(n):
        lin = attn_by_layer.get(i, 0) + mamba_by_layer.get(i, 0)
        attn.append(lin)
        has_moe = False
        if blocks is not None and i < len(blocks) and isinstance(blocks[i], dict):
            ffn = blocks[i].get("ffn") or {}
            if not ffn.get("no_op"):
                # DeciLM _ffn_mult_to_intermediate_size: 2/3 x mult x hidden, rounded up to 256
                inter = cdiv(int(2 * float(ffn.get("ffn_mult") or 0) * h / 3), 256) * 256
                lin += _mlp_params(h, inter, c)
        elif pattern is not None:
            ch = pattern[i] if i < len(pattern) else "-"
            lin += moe if ch == "E" else dense_mlp if ch == "-" else 0
            has_moe = ch == "E"
        elif moe and moe_layer(c, i):
            lin += moe
            has_moe = True
            if c.get("enable_moe_block") or str(c.get("model_type", "")).startswith("gemma4"):
                lin += dense_mlp  # Gemma 4 runs a dense MLP beside the experts in every layer
        else:
            lin += dense_mlp
        if has_moe and latent:  # counted in moe; whole on every rank, quantized like the attention linears
            attn[-1] += latent
            repl_by_layer[i] = repl_by_layer.get(i, 0) + latent
        linear.append(lin)
        other.append(2 * h + other_by_layer.get(i, 0))
        exp.append(routed if has_moe else 0)
        rout.append(router if has_moe else 0)
    embedding = vocab * h
    lm_head = 0 if model.tie_word_embeddings else vocab * h
    ple = per_layer_input_params(model)  # Gemma 4 E-models' parts beyond the cache-holding layers
    if ple is not None:
        embedding += ple.embedding
        linear = [a + b for a, b in zip(linear, ple.linear, strict=True)]
        attn = [a + b for a, b in zip(attn, ple.attention, strict=True)]
        other = [a + b for a, b in zip(other, ple.other, strict=True)]
    n_exp = num_experts(c)
    return ParamCounts(embedding, lm_head, tuple(linear), tuple(other), vision=_vision_params(model.full_config, h),
                       per_layer_attention=tuple(attn), per_layer_experts=tuple(exp), per_layer_router=tuple(rout),
                       per_layer_replicated=tuple(repl_by_layer.get(i, 0) for i in range(n)),
                       experts=(n_exp, expert_hidden(c, h), expert_intermediate(c)) if n_exp else 0,
                       audio=audio_params(model.full_config, h))


def attn_output_gate(model: ModelSpec) -> bool:
    """Full-attention layers whose q projection also yields a sigmoid output gate, one per head dimension:
    vllm==0.25.0 model_executor/models/qwen3_next.py Qwen3NextAttention (also what qwen3_5.py builds) sizes
    qkv_proj with total_num_heads * (1 + attn_output_gate) query heads, reading
    getattr(config, "attn_output_gate", True): Qwen3.5 / 3.6 / 3.8 configs set the key, Qwen3-Next's omit it
    (gated all the same). Qwen3.6-27B (24 heads x 256, hidden 5,120): 16 layers x 31.5 M = 0.50 B more
    parameters than an ungated q projection."""
    c = model.text_config
    gate = c.get("attn_output_gate")
    if gate is None:
        return str(c.get("model_type") or model.model_type).startswith("qwen3_next")
    return bool(gate)


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
                mlp = _mlp_params(h, model.intermediate_size, c)
        linear.append(a + mlp)
        attention.append(a)
        other.append(2 * h * width + width if width else 0)
    return PerLayerInputParams(embedding, tuple(linear), tuple(attention), tuple(other))


def _ratio(x: Any, default: float = 4.0) -> float:
    """An MLP ratio from a config, or `default` when it is not a positive finite number."""
    try:
        r = float(x)
    except (TypeError, ValueError, OverflowError):
        return default
    return r if 0 < r < 1e6 else default


def _whole(x: Any, default: int = 0) -> int:
    """A config value as a whole number, or `default` when it is not one (a tower whose keys are malformed is
    then not counted, and uncounted_towers says so, instead of failing the estimate)."""
    try:
        return int(x) if x is not None and not isinstance(x, bool) else default
    except (TypeError, ValueError, OverflowError):
        return default


def _vision_params(config: dict, text_hidden: int) -> int:
    """A ViT encoder plus its projector, loaded with multimodal checkpoints (replicated, 16-bit):
    depth x (4 h^2 attention + 2 h x intermediate MLP) + patch embedding + merger to the text width."""
    v = config.get("vision_config")
    if not isinstance(v, dict):
        return _clip_img_processor_params(config, text_hidden)
    # Kimi-K2.5's MoonViT names its shapes vt_*: vllm==0.33.0 model_executor/models/kimi_k25_vit.py, blocks with
    # a two-matrix MLP2 (fc0 / fc1), a patch merger over merge_kernel_size (linear_1 4h -> 4h, linear_2 -> text)
    h = _whole(v.get("hidden_size") or v.get("embed_dim") or v.get("vt_hidden_size") or 0)
    depth = _whole(v.get("depth") or v.get("num_hidden_layers") or v.get("vt_num_hidden_layers") or 0)
    inter = _whole(v.get("intermediate_size") or v.get("vt_intermediate_size") or 4 * h)
    out = _whole(v.get("out_hidden_size") or v.get("text_hidden_size") or text_hidden)
    if v.get("embed_dim"):
        # Qwen2-VL's convention (vllm==0.11.0 model_executor/models/qwen2_vl.py Qwen2VisionTransformer): the
        # blocks are embed_dim wide with an MLP of embed_dim x mlp_ratio, and hidden_size is the merger's
        # output (the text width), not the tower's
        h = _whole(v["embed_dim"])
        inter = _whole(v.get("intermediate_size")) or _whole(h * _ratio(v.get("mlp_ratio")))
        out = _whole(v.get("out_hidden_size")) or _whole(v.get("hidden_size")) or out
    if not h or not depth:
        return 0
    patch = _whole(v.get("patch_size") or 14)
    chans = _whole(v.get("in_channels") or v.get("num_channels") or 3) * _whole(v.get("temporal_patch_size") or 1)
    kernel = v.get("merge_kernel_size")
    merge = _whole(kernel[0]) * _whole(kernel[1]) if isinstance(kernel, list) and len(kernel) == 2 \
        else _whole(v.get("spatial_merge_size") or 1) ** 2
    mlp = 2 * h * inter
    extra = 0
    if "qwen2_5_vl" in (str(config.get("model_type", "")), str(v.get("model_type", ""))):
        # Qwen2.5-VL's vision blocks have a gated MLP: vllm==0.11.0 model_executor/models/qwen2_5_vl.py
        # Qwen2_5_VisionMLP is gate_up_proj (MergedColumnParallelLinear, [intermediate] * 2) + down_proj
        # (Qwen2-VL's and Qwen3-VL's towers have two: fc1 / fc2, linear_fc1 / linear_fc2)
        mlp = 3 * h * inter
    if str(v.get("model_type", "")) == "gemma4_vision":
        # Gemma 4's vision tower (transformers' Gemma4VisionModel, which vLLM 0.25.1 gemma4_mm.py builds
        # with AutoModel.from_config) has a gated gate/up/down MLP and a factorized position table
        # [position_embedding_size, 2, hidden]; vLLM leaves it unquantized (intermediate 4,304 is not
        # a multiple of 64)
        mlp = 3 * h * inter
        extra = _whole(v.get("position_embedding_size") or 0) * 2 * h
    return depth * (4 * h * h + mlp) + chans * patch * patch * h + h * merge * (h * merge) + h * merge * out + extra


def audio_params(config: dict, text_hidden: int) -> int:
    """Gemma 4's audio tower plus its projector, which vLLM loads whenever the config has an audio_config
    (vllm==0.21.0 / 0.25.0 / 0.28.0 model_executor/models/gemma4_mm.py: `AutoModel.from_config(config.audio_config)`
    under `_mark_tower_model(vllm_config, "audio")`, which builds nothing when --limit-mm-per-prompt gives
    audio 0; then `embed_audio`, a Gemma4MultimodalEmbedder: ReplicatedLinear output_proj_dims -> text hidden,
    its RMSNorm without weight). The tower is transformers' Gemma4AudioModel (transformers==5.12.1
    models/gemma4/modeling_gemma4.py), H = hidden_size:
    - subsample_conv_projection: two 3x3 Conv2d without bias (1 -> c0, c0 -> c1 channels,
      subsampling_conv_channels), each with a LayerNorm without bias, then input_proj_linear
      (c0 // 4 x c1) -> H;
    - per layer (Gemma4AudioLayer): feed_forward1 and feed_forward2 (H -> 4H -> H, pre/post RMSNorm each),
      self_attn (q, k, v, post: H x H; relative_k_proj H x H; per_dim_scale head_dim = H / heads),
      lconv1d (linear_start H -> 2H, linear_end H -> H, a depthwise Conv1d of conv_kernel_size, two
      RMSNorms), norm_pre_attn, norm_post_attn, norm_out: 24 H^2 + 9 H + kernel x H + head_dim;
      with use_clipped_linears every Gemma4ClippableLinear (10 per layer) registers four scalar buffers
      (input/output min/max, persistent, loaded with the weights);
    - output_proj: H -> output_proj_dims with bias.
    vLLM swaps the nn.Linear modules for ReplicatedLinear (recursive_replace_linear): whole on every TP rank,
    16-bit unless the quantization config quantizes the tower (compressed-tensors would, unless its `ignore`
    list names the tower, as quantized Gemma checkpoints do). gemma-4-E4B (H 1,024, 12 layers, 8 heads,
    kernel 5, channels [128, 32], output 1,536, text hidden 2,560): 0.309 B parameters, 0.58 GiB in bf16.
    0 without an audio_config of model_type gemma4_audio."""
    a = config.get("audio_config")
    if isinstance(a, dict) and str(a.get("model_type", "")) == "voxtral_encoder":
        return _whisper_audio_params(a, text_hidden)
    if not isinstance(a, dict) or str(a.get("model_type", "")) != "gemma4_audio":
        return 0
    h = int(a.get("hidden_size") or 0)
    n = int(a.get("num_hidden_layers") or 0)
    heads = int(a.get("num_attention_heads") or 0)
    if not h or not n or not heads:
        return 0
    kernel = int(a.get("conv_kernel_size") or 0)
    chans = a.get("subsampling_conv_channels") if isinstance(a.get("subsampling_conv_channels"), list) else []
    out = int(a.get("output_proj_dims") or h)
    clipped = 10 * 4 if a.get("use_clipped_linears") else 0
    layer = 24 * h * h + 9 * h + kernel * h + h // heads + clipped
    sub = 0
    if len(chans) == 2:
        c0, c1 = int(chans[0]), int(chans[1])
        sub = 9 * c0 + c0 + 9 * c0 * c1 + c1 + (c0 // 4) * c1 * h
    return n * layer + sub + h * out + out + out * text_hidden


def _whisper_audio_params(a: dict, text_hidden: int) -> int:
    """Voxtral's audio tower, a Whisper encoder, plus its adapter (vllm==0.33.0 model_executor/models/voxtral.py
    VoxtralEncoderModel -> whisper.py WhisperEncoder: conv1 mel_bins -> d (kernel 3), conv2 d -> d (kernel 3),
    embed_positions max_source_positions x d, per layer q/k/v/out d x d (k without bias) + fc1 / fc2 d x ffn
    + two LayerNorms, a final LayerNorm; AudioLanguageAdapter w_in (d x 4) -> text hidden, w_out text -> text,
    no bias: the 4 x d input is transformers==4.57.1 VoxtralMultiModalProjector's audio_config.intermediate_size).
    Voxtral-Mini-3B-2507 (32 layers, d 1,280, ffn 5,120, 128 mel bins, text 3,072): 0.66 B parameters."""
    d = _whole(a.get("hidden_size") or a.get("d_model") or 0)
    n = _whole(a.get("num_hidden_layers") or a.get("encoder_layers") or 0)
    ffn = _whole(a.get("intermediate_size") or a.get("encoder_ffn_dim") or 4 * d)
    if not d or not n:
        return 0
    mels = _whole(a.get("num_mel_bins") or 128)
    layer = 4 * d * d + 3 * d + 2 * d * ffn + ffn + d + 4 * d
    convs = mels * d * 3 + d + d * d * 3 + d
    adapter = ffn * text_hidden + text_hidden * text_hidden
    return n * layer + convs + _whole(a.get("max_source_positions") or 1500) * d + 2 * d + adapter


def _clip_img_processor_params(config: dict, text_hidden: int) -> int:
    """Phi-3-vision's image tower, named by `img_processor` rather than a vision_config: vllm==0.33.0
    model_executor/models/phi3v.py builds CLIP_VIT_LARGE_PATCH14_336_CONFIG (24 layers, 1,024 wide, MLP 4,096,
    patch 14, image 336) cut at img_processor.layer_idx (default -2: 23 layers), and Phi3HDImageEmbedding's
    img_projection Linear(4 x image_dim_out, hidden) [GELU, Linear(hidden, hidden) for projection_cls 'mlp']
    with glb_GN / sub_GN (4 x image_dim_out each). Phi-3.5-vision-instruct: 0.31 B parameters."""
    ip = config.get("img_processor")
    if not isinstance(ip, dict):
        return 0
    layer_idx = _whole(ip.get("layer_idx"), -2)
    n = 24 + layer_idx + 1 if layer_idx < 0 else layer_idx + 1
    d, mlp, patch, image = 1024, 4096, 14, 336
    layer = 4 * d * d + 4 * d + 2 * d * mlp + mlp + d + 4 * d
    embeddings = 3 * patch * patch * d + d + ((image // patch) ** 2 + 1) * d + 2 * d  # + class embedding, pre-LN
    out = _whole(ip.get("image_dim_out") or d) * 4
    embd = config.get("embd_layer") if isinstance(config.get("embd_layer"), dict) else {}
    proj = out * text_hidden + text_hidden
    if embd.get("projection_cls", "linear") == "mlp":
        proj += text_hidden * text_hidden + text_hidden
    return n * layer + embeddings + proj + 2 * out


def uncounted_towers(config: dict, modalities_off: Collection[str] = ()) -> list[str]:
    """Towers a config declares whose weights the count leaves out (their shapes are in keys it does not read),
    less those vLLM does not build with these modalities off (towers_skipped); the estimate says so (a
    not-modelled warning) instead of passing the shortfall in silence."""
    skipped = towers_skipped(modalities_off)
    out: list[tuple[frozenset[str], str]] = []
    embd = config.get("embd_layer") if isinstance(config.get("embd_layer"), dict) else {}
    if isinstance(embd.get("image_embd_layer"), dict) and not isinstance(config.get("img_processor"), dict):
        out.append(({"vision"}, "image tower (its shapes are under embd_layer.image_embd_layer, which the count "
                                "does not read)"))
    if isinstance(config.get("audio_processor"), dict):
        out.append(({"audio"}, "audio tower (its shapes are under audio_processor, which the count does not read)"))
    a = config.get("audio_config")
    if isinstance(a, dict) and str(a.get("model_type", "")) not in ("gemma4_audio", "voxtral_encoder"):
        out.append(({"audio"}, f"audio tower (an audio_config of model_type {a.get('model_type') or 'unnamed'}, "
                               "which the count does not read)"))
    v = config.get("vision_config")
    if isinstance(v, dict) and not _vision_params(config, 0):
        out.append(({"vision"}, f"vision tower (a vision_config of model_type {v.get('model_type') or 'unnamed'}, "
                                "which the count does not read)"))
    archs = [str(a) for a in config.get("architectures") or [] if isinstance(a, str)]
    towers = ("vision_config", "audio_config", "img_processor", "embd_layer", "audio_processor")
    if any(a.endswith("ForConditionalGeneration") for a in archs) and not any(k in config for k in towers):
        # a copy trimmed to its text_config (catalog part E's gemma-4-E2B-it): the class still builds its towers,
        # from its config class's defaults
        out.append(({"vision", "audio"}, f"multimodal towers ({archs[0]} builds them from its class defaults; this "
                                         "config names none)"))
    return [text for kinds, text in out if not kinds <= skipped]


def _csa_params(c: dict, h: int, heads: int, ratio: int) -> tuple[int, int, int]:
    """(all quantized attention linears, the replicated ones among them, 16-bit parameters) of one layer of
    compressed sparse attention with grouped low-rank output (config keys compress_ratios, o_groups,
    o_lora_rank), as vllm/models/deepseek_v4/attention.py and compressor.py (0.25.0) build it:
    fused_wqa_wkv H x (q_rank + head_dim) (MergedColumnParallelLinear, disable_tp: replicated), wq_b
    q_rank x heads x head_dim (column), wo_a heads x head_dim / groups x groups x o_rank (column), wo_b
    groups x o_rank x H (row), all with the quant config; a layer with compress ratio r > 1 adds a
    compressor fused_wkv_wgate H x 2 x coff x head_dim (coff 2 for r = 4, else 1; quant_config None,
    replicated) and ape (r x coff x head_dim, fp32); an r = 4 layer adds the indexer: wq_b q_rank x
    index_heads x index_head_dim (replicated, quantized), weights_proj H x index_heads (16-bit) and its own
    compressor (coff 2, index_head_dim). V4-Flash (H 4,096, 64 x 512, q_rank 1,024, 8 x 1,024): 107 M
    quantized parameters per layer, 6.3 M of them replicated."""
    q_rank = int(c.get("q_lora_rank") or 0)
    hd = int(c.get("head_dim") or 512)
    groups = int(c.get("o_groups") or 1)
    o_rank = int(c.get("o_lora_rank") or 0)
    repl = h * (q_rank + hd)
    split = q_rank * heads * hd + (heads * hd // groups) * groups * o_rank + groups * o_rank * h
    other = 0
    if ratio > 1:
        coff = 2 if ratio == 4 else 1
        other += h * 2 * coff * hd + 2 * ratio * coff * hd  # fused_wkv_wgate + fp32 ape (2 x 16-bit)
    if ratio == 4:
        ihd, iheads = int(c.get("index_head_dim") or 128), int(c.get("index_n_heads") or 64)
        repl += q_rank * iheads * ihd
        other += h * iheads + h * 2 * 2 * ihd + 2 * ratio * 2 * ihd
    hc = int(c.get("hc_mult") or 0)
    if hc:
        # hyper-connections (models/deepseek_v4/nvidia/model.py DeepseekV4DecoderLayer): hc_attn_fn / hc_ffn_fn
        # (mix, hc x H), bases (mix) and scales (3), fp32 (2 x 16-bit), mix = (2 + hc) x hc
        mix = (2 + hc) * hc
        other += 2 * (2 * mix * hc * h + 2 * mix + 6)
    return split + repl, repl, other


def _mla_params(c: dict, h: int, heads: int) -> int:
    rope = int(c.get("qk_rope_head_dim") or 64)
    nope = int(c.get("qk_nope_head_dim") or 128)
    v = int(c.get("v_head_dim") or 128)
    kv_rank = int(c.get("kv_lora_rank") or 512)
    q_rank = c.get("q_lora_rank")
    q = (h * int(q_rank) + int(q_rank) * heads * (nope + rope)) if q_rank else h * heads * (nope + rope)
    return q + h * (kv_rank + rope) + kv_rank * heads * (nope + v) + heads * v * h


def mlp_gated(c: dict) -> bool:
    """Whether the MLPs (and the experts) have a gate: gate_up_proj + down_proj, three h x intermediate
    matrices, rather than up_proj + down_proj (relu2, gelu)."""
    act = str(c.get("mlp_hidden_act") or c.get("hidden_act") or c.get("activation_function")
              or c.get("hidden_activation") or "silu")
    return act not in ("gelu", "gelu_new", "relu", "relu2", "gelu_fast", "gelu_pytorch_tanh") or \
        str(c.get("model_type", "")).startswith(("gemma", "phi3"))


def _mlp_params(h: int, inter: int, c: dict) -> int:
    return (3 if mlp_gated(c) else 2) * h * inter


def num_experts(c: dict) -> int:
    """Routed experts per MoE layer from a (text) config; 0 for a dense model."""
    experts = c.get("num_experts") or c.get("n_routed_experts") or c.get("num_local_experts") or 0
    if isinstance(experts, list):
        experts = experts[0]
    return int(experts or 0)


def experts_per_token(c: dict) -> int:
    """Routed experts each token goes to (top-k) from a (text) config; 0 for a dense model."""
    return int(c.get("num_experts_per_tok") or c.get("top_k_experts") or c.get("moe_topk") or 0)


def expert_intermediate(c: dict) -> int:
    """One routed expert's intermediate width from a (text) config (the dense width when it names none)."""
    return int(c.get("moe_intermediate_size") or c.get("expert_intermediate_size") or c.get("intermediate_size") or 0)


def expert_hidden(c: dict, h: int) -> int:
    """The width the routed experts work at: a latent MoE projects the hidden state down first
    (nemotron_h moe_latent_size: vllm==0.33.0 model_executor/models/nemotron_h.py NemotronHMoE builds the
    FusedMoE at moe_hidden_size = moe_latent_size, between fc1_latent_proj / fc2_latent_proj; Kimi-K3
    routed_expert_hidden_size: vllm/models/kimi_k3/nvidia/model.py, routed_expert_down_proj / _up_proj), else
    the hidden size."""
    return int(c.get("moe_latent_size") or c.get("routed_expert_hidden_size") or h)


def _latent_params(c: dict, h: int) -> int:
    """A latent MoE's two projections, hidden -> latent -> hidden (ReplicatedLinear: whole on every rank)."""
    lat = expert_hidden(c, h)
    return 2 * h * lat if lat != h else 0


def _routed_params(c: dict, h: int) -> tuple[int, int]:
    """(routed experts' weights, router gate) of one MoE layer: gate/up/down, or up/down for experts
    without a gate (nemotron_h's relu2: FusedMoE(activation=activation_without_mul(mlp_hidden_act)))."""
    experts = num_experts(c)
    if not experts:
        return 0, 0
    inter = expert_intermediate(c)
    return experts * (3 if mlp_gated(c) else 2) * expert_hidden(c, h) * inter, h * experts


def moe_layer(c: dict, i: int) -> bool:
    """Whether decoder layer i of an MoE model has routed experts. Llama 4 interleaves them: vllm==0.11.0
    model_executor/models/llama4.py Llama4DecoderLayer builds Llama4MoE where
    `interleave_moe_layer_step > 0 and (layer_idx + 1) % interleave_moe_layer_step == 0`, else a dense
    LlamaMLP of intermediate_size_mlp (Maverick: step 2, 24 of 48 layers; Scout: step 1, all 48). Others:
    first_k_dense_replace dense layers, then every moe_layer_freq-th."""
    step = c.get("interleave_moe_layer_step")
    if isinstance(step, int) and not isinstance(step, bool):
        return step > 0 and (i + 1) % step == 0
    flags = c.get("moe_layer_freq")
    if isinstance(flags, list):  # one flag a layer (MiniMax-M3: vllm/models/minimax_m3/nvidia/model.py,
        return i < len(flags) and flags[i] != 0  # 0.33.0: `moe_layer_freq[layer_id] != 0`)
    first_dense = int(c.get("first_k_dense_replace") or 0)
    freq = int(flags or 1) if isinstance(flags, int) and not isinstance(flags, bool) else 1
    return i >= first_dense and (i - first_dense) % max(freq, 1) == 0


def _moe_params(c: dict, h: int) -> int:
    """One MoE layer: routed experts, router, shared experts (at the full hidden size) and a latent MoE's
    projections."""
    routed, router = _routed_params(c, h)
    if not routed:
        return 0
    return routed + router + _mlp_params(h, shared_expert_intermediate(c), c) + _latent_params(c, h)


def shared_expert_intermediate(c: dict) -> int:
    """The shared experts' total intermediate width in one MoE layer (0 without any): Qwen's
    shared_expert_intermediate_size; nemotron_h's moe_shared_expert_intermediate_size x n_shared_experts
    (NemotronHMoE, vllm==0.33.0); Llama 4's one shared expert of intermediate_size (Llama4MoE, vllm==0.11.0
    llama4.py); else n_shared_experts x moe_intermediate_size (DeepSeek, Kimi)."""
    shared = 1 if str(c.get("model_type", "")).startswith("llama4") else \
        int(c.get("n_shared_experts") or c.get("num_shared_experts") or 0)
    return int(c.get("shared_expert_intermediate_size") or 0) or \
        int(c.get("moe_shared_expert_intermediate_size") or 0) * shared or shared * expert_intermediate(c)


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


def towers_skipped(modalities_off: Collection[str]) -> frozenset[str]:
    """The towers vLLM does not build when these modalities are limited to 0: SupportsMultiModal.
    _mark_tower_model (vllm==0.28.0 model_executor/models/interfaces.py) replaces a tower's modules by
    StageMissingLayer when the limit of every modality it serves is 0; gemma4_mm.py marks the vision tower
    for {"image", "video"} and the audio tower for "audio". Which modalities another model's tower serves is
    its class's choice, so a vision tower is dropped only when both image and video are off (counting a
    tower vLLM skips errs towards less KV, never towards a false `fits`)."""
    off = {str(m) for m in modalities_off}
    skipped = set()
    if {"image", "video"} <= off:
        skipped.add("vision")
    if "audio" in off:
        skipped.add("audio")
    return frozenset(skipped)


def model_modalities(model: ModelSpec) -> tuple[str, ...]:
    """Non-text modalities the config declares: a vision tower -> image (and video when it has a
    temporal patch size, the Qwen-VL video input), an audio tower -> audio."""
    c = model.full_config
    vision = c.get("vision_config")
    embd = c.get("embd_layer") if isinstance(c.get("embd_layer"), dict) else {}
    out = []
    # Phi-3-vision / Phi-4-multimodal name their towers img_processor, embd_layer and audio_processor
    # (a nested text_config alone says multimodal, not which: Voxtral's is audio only)
    if isinstance(vision, dict) or isinstance(c.get("img_processor"), dict) \
            or isinstance(embd.get("image_embd_layer"), dict) \
            or (model.is_multimodal and not isinstance(c.get("audio_config"), dict)):
        out.append("image")
        if isinstance(vision, dict) and vision.get("temporal_patch_size"):
            out.append("video")
    if isinstance(c.get("audio_config"), dict) or isinstance(c.get("audio_processor"), dict):
        out.append("audio")
    return tuple(out)


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


def _mxfp4_experts(model: ModelSpec, method: str | None) -> bool:
    """The routed experts load through Mxfp4MoEMethod: an MXFP4 checkpoint, or an FP8 one whose config says
    expert_dtype 'fp4' (vllm/models/deepseek_v4/quant_config.py DeepseekV4FP8Config.get_quant_method, 0.25.0:
    FP8 block-scaled linears, Mxfp4MoEMethod for RoutedExperts unless moe_quant_algo is NVFP4)."""
    if method == "mxfp4":
        return True
    c = model.text_config
    qc = model.full_config.get("quantization_config") or c.get("quantization_config") or {}
    algo = str(qc.get("moe_quant_algo") or "").upper() if isinstance(qc, dict) else ""
    return method in ("fp8", "deepseek_v4_fp8") and str(c.get("expert_dtype") or
                                                         model.full_config.get("expert_dtype") or "") == "fp4" \
        and algo != "NVFP4"


def _linear_bits(model: ModelSpec, method: str | None, bits: float | None) -> float | None:
    """Bits of the quantized non-expert linears: FP8 (8) beside MXFP4 experts in an FP8 checkpoint, else `bits`."""
    return 8.0 if method != "mxfp4" and _mxfp4_experts(model, method) else bits


def expert_bytes_per_param(model: ModelSpec, quantization: str | None, dtype: str | None) -> float:
    """Bytes per routed-expert parameter as weight_bytes takes it, without the kernels' padding: MXFP4 e2m1
    pairs + one e8m0 scale per 32; else the quantized width, or the model dtype."""
    method, bits = quant_method_bits(model, quantization)
    if _mxfp4_experts(model, method):
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
                capability: int, version: str = "") -> list[float]:
    """Bytes of each decoder layer's linear weights on one TP rank."""
    mx = _mxfp4_experts(model, method)
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
                (_mxfp4_expert_bytes(p, tp, capability, version=version) if exp else 0)
        elif mx:
            # FusedMoE(has_bias) is False here (models/deepseek_v4/nvidia/model.py, 0.25.0): no expert biases
            b = ((attn - repl) * attn_b + rest * q) / tp + repl * attn_b + \
                (_mxfp4_expert_bytes(p, tp, capability, bias=False, version=version) if exp else 0)
        else:
            b = ((attn - repl) * attn_b + (rest + exp) * q) / tp + repl * attn_b
        # the router gate is a ReplicatedLinear / GateLinear without quant_config: whole on every TP rank
        # (model_executor/models/qwen3_moe.py, mixtral.py, gpt_oss.py ReplicatedLinear; deepseek_v2.py,
        # gemma4.py, minimax_m2.py GateLinear(ReplicatedLinear), 0.25.0)
        out.append(b + router * dt)
    return out


MXFP4_BLOCK = 32  # elements per e8m0 scale
# the first release whose MXFP4 MoE backend comes from fused_moe/oracle/mxfp4.py (select_mxfp4_moe_backend);
# before it, quantization/mxfp4.py get_mxfp4_backend chooses
MXFP4_ORACLE_SINCE = "0.19.0"
# the first release whose wheel carries triton_kernels (vllm/third_party/triton_kernels, which
# utils/import_utils.py has_triton_kernels accepts) and requires flashinfer-python (Requires-Dist, not an extra):
# present in the 0.12.0, 0.13.0 and 0.15.0 wheels, absent from 0.11.0's and 0.11.2's
MXFP4_KERNELS_IN_WHEEL_SINCE = "0.12.0"
# flashinfer-python: an extra of the 0.11.0 wheel, a requirement of 0.11.2's (0.11.1 not read)
FLASHINFER_IN_WHEEL_SINCE = "0.11.2"


def mxfp4_backend_alignment(capability: int, version: str = "") -> tuple[int, int]:
    """(hidden, intermediate) alignment of the MXFP4 MoE kernel vLLM picks on a GPU, for a release.

    Before MXFP4_ORACLE_SINCE (vllm==0.11.0 model_executor/layers/quantization/mxfp4.py lines 59-107,
    get_mxfp4_backend): FlashInfer only when it is installed (the wheel's `flashinfer` extra; on SM90 also only
    with VLLM_USE_FLASHINFER_MOE_MXFP4_BF16), else Triton only with the optional `triton_kernels` package, which
    the wheel does not require (its Requires-Dist names torch==2.8.0 and no triton_kernels), else Marlin: a
    plain `pip install vllm` runs Marlin on every CUDA GPU (0.11.2: the same, except FlashInfer, now required,
    on SM100: (256, 256)). Mxfp4MoEMethod.create_weights (lines 189-205) pads
    Marlin's hidden size to 256 and the per-rank intermediate to 128 ("n % 256 == 0 and k % 128 == 0").
    gpt-oss-120b on one H100: hidden 2,880 -> 3,072, intermediate 2,880 -> 2,944, 'Model loading took 65.97
    GiB' (vLLM issue #23278, Marlin; data/notes/vllm-memory-notes.md), not the 60.8 GiB of the raw shapes.

    From MXFP4_KERNELS_IN_WHEEL_SINCE to the oracle (vllm==0.12.0 / 0.15.0 quantization/mxfp4.py
    get_mxfp4_backend): FlashInfer MXFP4 BF16 on the SM100 family (256, 256), Triton on (9,0) <= cc < (11,0)
    (intermediate to 64), else Marlin (256, 128).

    From MXFP4_ORACLE_SINCE:
    vllm/model_executor/layers/fused_moe/oracle/mxfp4.py (0.19.0; same rule in 0.24.0 / 0.25.1):
    select_mxfp4_moe_backend tries FLASHINFER_TRTLLM (SM100 family) > TRITON ((9,0) <= cc < (11,0))
    > FLASHINFER_CUTLASS (SM90/100/110/120) > MARLIN (cc >= 7.5); mxfp4_round_up_hidden_size_and_
    intermediate_size pads TRTLLM to (256, 256), CUTLASS to (128, 128), MARLIN to (256, 128) and the
    Triton path's intermediate to 64. gpt-oss-20b on an A100 (Marlin): hidden 2,880 -> 3,072,
    intermediate 2,880 -> 2,944: the experts take 11.07 GB instead of 10.15 GB."""
    if version and _key(version) < _key(MXFP4_KERNELS_IN_WHEEL_SINCE):
        # FlashInfer MXFP4 BF16 on SM100 once the wheel requires FlashInfer (0.11.2), else Marlin
        return (256, 256) if capability == 100 and _key(version) >= _key(FLASHINFER_IN_WHEEL_SINCE) else (256, 128)
    if version and _key(version) < _key(MXFP4_ORACLE_SINCE) and capability >= 110:
        return 256, 128  # Marlin: no CUTLASS MXFP4 path before the oracle, Triton only below (11, 0)
    if 100 <= capability < 110:
        return 256, 256
    if 90 <= capability < 110:
        return 1, 64
    if capability >= 110:
        return 128, 128
    return 256, 128


# the first release whose Triton MXFP4 path frees the checkpoint's block scales once swizzled (fused_moe/oracle/
# mxfp4.py TRITON_BACKENDS branch, 0.25.0: `del layer.w13_weight_scale`); 0.12.0-0.24.0 delete only the weights
MXFP4_TRITON_FREES_SCALES_SINCE = "0.25.0"


def _pad(x: int, m: int) -> int:
    return cdiv(x, m) * m


def _mxfp4_expert_bytes(p: ParamCounts, tp: int, capability: int, bias: bool = True, version: str = "") -> float:
    """One MoE layer's experts on one TP rank: uint8 e2m1 pairs + one uint8 e8m0 scale per 32
    (Mxfp4MoEMethod.create_weights: w13 [E, 2I, H/2], w2 [E, H, I/2], scales /32), on the padded
    shapes, plus the bf16 biases (w13_bias [E, 2I], w2_bias [E, H]); Marlin's repacking keeps the
    sizes (marlin_utils_fp4.prepare_moe_mxfp4_layer_for_marlin: scales back to e8m0).

    The Triton path on Hopper re-lays the experts out after loading (vllm==0.15.0 quantization/mxfp4.py lines
    745-784, utils/mxfp4_utils.py _swizzle_mxfp4; the same in the 0.19.0-0.24.0 oracle): the biases become
    float32; the weights are swizzled (triton_kernels HopperMXValueLayout: a [M, K] byte matrix padded to 16 x
    32, the originals deleted); the scales are swizzled into a new tensor (HopperMXScaleLayout, num_warps 8: M
    padded to 2 x 8 x 2 x 8 = 256, K to 2) while the checkpoint's scales stay registered on the layer until
    0.25.0 frees them. gpt-oss-120b on one H100: 60.78 GiB of raw shapes + 3.46 GiB of swizzled scales + 0.07
    GiB of float32 biases = 64.32 GiB, logged 'Model loading took 64.38 GiB' (Triton, vLLM issue #33155;
    data/notes/vllm-memory-notes.md). Without a release (version ''), only the padded shapes are counted."""
    n, h, inter = p.experts
    ah, ai = mxfp4_backend_alignment(capability, version)
    hp = cdiv(h, ah) * ah
    ip = cdiv(cdiv(inter, tp), ai) * ai
    elements = n * 3 * hp * ip
    raw_scales = n * 3 * hp * ip / MXFP4_BLOCK
    if version and (ah, ai) == (1, 64) and 90 <= capability < 100:  # Triton with Hopper layouts, for a release
        values = n * (_pad(2 * ip, 16) * _pad(hp // 2, 32) + _pad(hp, 16) * _pad(ip // 2, 32))
        swizzled = n * (_pad(2 * ip, 256) * _pad(cdiv(hp, MXFP4_BLOCK), 2)
                        + _pad(hp, 256) * _pad(cdiv(ip, MXFP4_BLOCK), 2))
        kept = raw_scales if version and _key(version) < _key(MXFP4_TRITON_FREES_SCALES_SINCE) else 0
        return values + swizzled + kept + (n * (2 * ip + hp) * 4 if bias else 0)
    return elements * 0.5 + raw_scales + (n * (2 * ip + hp) * 2 if bias else 0)


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
