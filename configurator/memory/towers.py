"""Vision and audio towers: their parameters, the modalities they serve, and which ones vLLM skips."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from configurator.model.spec import ModelSpec


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


def vision_params(config: dict, text_hidden: int) -> int:
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
    if isinstance(v, dict) and not vision_params(config, 0):
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
