"""Turn a Hugging Face config.json (plus an optional ModelOpt hf_quant_config.json) into a ModelSpec.

vLLM reads the decoder geometry from `hf_text_config` (the nested `text_config` / `llm_config`
of multimodal models), takes transformers' class defaults for absent keys, and decides per layer
which KV-cache spec it registers. This module mirrors those rules; the sources are named inline.
"""

from __future__ import annotations

from typing import Any

from configurator.errors import ConfigError
from configurator.model.spec import LayerGeometry, MambaGeometry, ModelSpec, Quantization

# vllm/transformers_utils/model_arch_config_convertor.py::is_deepseek_mla (0.33): MLA only when
# the model type is one of these *and* kv_lora_rank is set.
MLA_MODEL_TYPES = frozenset({
    "axk1", "deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_v4", "deepseek_v41",
    "dots3_note", "deepseek_mtp", "k3_dspark", "glm5_next", "glm5_next_text", "glm_moe_dsa",
    "glm4_moe_lite", "glm4_moe_lite_mtp", "kimi_k2", "kimi_linear", "longcat_flash",
    "pangu_ultra_moe", "pangu_ultra_moe_mtp", "bailing_hybrid", "bailing_hybrid_mtp", "bailing_hybrid_v3_mtp",
    "hy_v4", "hy_v4_mtp",
    # Mistral Small 4's text_config (mistral4, q/kv LoRA keys): no vLLM release lists it, but none loads that
    # config either. With --config-format auto a repository holding consolidated*.safetensors and params.json
    # is read in the Mistral format (vllm==0.25.0 transformers_utils/config.py get_config,
    # repo_utils.is_mistral_model_repo), and an MoE with shared experts becomes model_type deepseek_v3
    # (transformers_utils/configs/mistral.py adapt_config_dict): MLA, one kv_lora_rank + rope latent per token
    "mistral4",
})
# Sparse-attention (DSA) MLA models keep a second, per-token indexer key cache beside the latent.
DSA_MODEL_TYPES = frozenset({"deepseek_v32", "glm_moe_dsa"})
# Per-layer type names of a DSA layer: GLM-5.x's layer_types ("deepseek_sparse_attention",
# vllm/models/glm5next/common/model.py, 0.33.0) and transformers' GlmMoeDsaConfig default
# ("indexed_attention", transformers==5.24.0 models/glm_moe_dsa/configuration_glm_moe_dsa.py).
DSA_LAYER_TYPES = frozenset({"deepseek_sparse_attention", "indexed_attention"})

# Outer model_type -> the config class its nested text_config becomes when the dict names none:
# Gemma3Config builds a Gemma3TextConfig; vLLM 0.33.0 transformers_utils/configs/kimi_k3.py::KimiK3Config
# always builds a KimiLinearConfig (model_type kimi_linear, an MLA type for is_deepseek_mla).
NESTED_TEXT_MODEL_TYPES = {"gemma3": "gemma3_text", "kimi_k3": "kimi_linear"}

# Architectures vLLM no longer serves, and the last release that served them
# (vllm/model_executor/models/registry.py::_PREVIOUSLY_SUPPORTED_MODELS, 0.33.0; the encoder-decoder entries
# from 0.11.0's table, which 0.33.0 no longer lists). MotifForCausalLM: 0.33.0 says 0.10.2, but 0.11.0's
# registry (_TEXT_GENERATION_MODELS) still serves it, so 0.11.0 is the last release known to.
REMOVED_ARCHITECTURES = {
    "Phi3SmallForCausalLM": "0.9.2",
    "DonutForConditionalGeneration": "0.10.2", "MllamaForConditionalGeneration": "0.10.2",
    "BartModel": "0.10.2", "BartForConditionalGeneration": "0.10.2", "MBartForConditionalGeneration": "0.10.2",
    "Florence2ForConditionalGeneration": "0.10.2",
    "MotifForCausalLM": "0.11.0", "Phi4FlashForCausalLM": "0.10.2",
    "Phi4MultimodalForCausalLM": "0.12.0",
    "JAISLMHeadModel": "0.22.0",
    "BaiChuanForCausalLM": "0.23.0", "BaichuanForCausalLM": "0.23.0", "BambaForCausalLM": "0.23.0",
    "Dots1ForCausalLM": "0.23.0", "ErnieForSequenceClassification": "0.23.0",
    "ErnieForTokenClassification": "0.23.0", "ErnieModel": "0.23.0", "InternLM2VEForCausalLM": "0.23.0",
    "InternLMForCausalLM": "0.23.0", "MiniMaxForCausalLM": "0.23.0", "MiniMaxM1ForCausalLM": "0.23.0",
    "MiniMaxText01ForCausalLM": "0.23.0", "MiniMaxVL01ForConditionalGeneration": "0.23.0",
    "QWenLMHeadModel": "0.23.0", "QwenVLForConditionalGeneration": "0.23.0",
    "Tarsier2ForConditionalGeneration": "0.23.0", "XverseForCausalLM": "0.23.0",
    "AquilaForCausalLM": "0.24.0", "AquilaModel": "0.24.0", "AyaVisionForConditionalGeneration": "0.24.0",
    "Grok1ForCausalLM": "0.24.0", "Grok1ModelForCausalLM": "0.24.0",
    "MantisForConditionalGeneration": "0.24.0", "MusicFlamingoForConditionalGeneration": "0.24.0",
    "TarsierForConditionalGeneration": "0.24.0",
    "FuyuForCausalLM": "0.25.0", "PersimmonForCausalLM": "0.25.0", "TeleChatForCausalLM": "0.25.0",
    "OuroForCausalLM": "0.26.0", "Plamo2ForCausalLM": "0.26.0",
    "ArcticForCausalLM": "0.28.0", "ChameleonForConditionalGeneration": "0.28.0", "Cheers": "0.28.0",
    "CheersForConditionalGeneration": "0.28.0", "Fairseq2LlamaForCausalLM": "0.28.0",
    "FireRedLIDForConditionalGeneration": "0.28.0", "GritLM": "0.28.0", "HCXVisionForCausalLM": "0.28.0",
    "MPTForCausalLM": "0.28.0", "MptForCausalLM": "0.28.0", "PrithviGeoSpatialMAE": "0.28.0",
    "RWForCausalLM": "0.28.0", "StableLMEpochForCausalLM": "0.28.0",
}

# Architectures whose vLLM class is SupportsV0Only (vllm==0.10.1.1 model_executor/models/: bart.py, bloom.py,
# florence2.py, gritlm.py, mllama.py, phi4flash.py, plamo2.py, whisper.py): before 0.11.0 vLLM runs them on
# its V0 engine (EngineArgs._is_v1_supported_oracle), which is not modelled.
V0_ONLY_ARCHITECTURES = frozenset({
    "BartForConditionalGeneration", "MBartForConditionalGeneration", "BloomForCausalLM",
    "Florence2ForConditionalGeneration", "GritLM", "MllamaForConditionalGeneration", "Phi4FlashForCausalLM",
    "Plamo2ForCausalLM", "WhisperForConditionalGeneration",
})

# CONFIG_FIELD_ALIASES["total_num_kv_heads"] (vLLM): first present wins, else MHA.
KV_HEAD_KEYS = ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
                "num_attention_groups")
LAYER_KEYS = ("num_hidden_layers", "n_layer", "n_layers", "num_layers")
HEAD_KEYS = ("num_attention_heads", "n_head", "n_heads", "num_heads")
HIDDEN_KEYS = ("hidden_size", "n_embd", "d_model", "dim")
# vllm/config/model.py::_get_and_verify_max_len: the minimum of the present keys.
MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                "model_max_length", "max_target_positions", "max_sequence_length",
                "max_seq_length", "seq_len")

# transformers' class defaults for keys that real config.json files leave out. Only the keys the
# memory model reads; source: transformers/models/<type>/configuration_<type>.py.
TRANSFORMERS_DEFAULTS: dict[str, dict[str, Any]] = {
    # Gemma3TextConfig: 5 sliding layers : 1 global, window 4096, head_dim 256.
    "gemma3_text": {"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
                    "head_dim": 256, "max_position_embeddings": 131072, "sliding_window": 4096,
                    "sliding_window_pattern": 6, "tie_word_embeddings": True},
    "gemma2": {"head_dim": 256, "sliding_window": 4096, "max_position_embeddings": 8192,
               "tie_word_embeddings": True},
    "gemma": {"head_dim": 256, "max_position_embeddings": 8192, "tie_word_embeddings": True},
    # LlamaConfig (llava-1.5's text_config names only model_type and a few keys)
    "llama": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
              "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048},
    "qwen3": {"head_dim": 128},
    "qwen3_moe": {"head_dim": 128},
    # MistralConfig (transformers==5.24.0, transformers/models/mistral/configuration_mistral.py):
    # llava-v1.6-mistral's text_config names only a few keys and takes the rest from these.
    "mistral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
                "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                "max_position_embeddings": 4096 * 32, "sliding_window": 4096},
    "llama4_text": {"attention_chunk_size": 8192, "no_rope_layer_interval": 4},
    # tie_word_embeddings where the class default is True and real configs leave it out (transformers==4.57.1:
    # CohereConfig / Cohere2Config `tie_word_embeddings=True`; OPTConfig sets none, so PretrainedConfig's True).
    # vLLM agrees: commandr.py computes the logits from embed_tokens (no lm_head at all), opt.py ties the
    # lm_head when the config says so (0.33.0). Untied, aya-23-8B and c4ai-command-r7b counted 1.05B extra.
    "cohere": {"tie_word_embeddings": True},
    "cohere2": {"tie_word_embeddings": True},
    "opt": {"tie_word_embeddings": True},
    # Phi-3-small's remote-code Phi3SmallConfig (configuration_phi3_small.py, code index id 7375870458) takes no
    # tie_word_embeddings, so PretrainedConfig's True applies: counted untied, 0.41B too many
    "phi3small": {"tie_word_embeddings": True},
    "gpt_oss": {"head_dim": 64, "sliding_window": 128},
}

_DTYPES = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16",
           "half": "float16", "float32": "float32", "fp32": "float32", "float": "float32"}


def text_config_of(config: dict) -> dict:
    """vLLM's get_hf_text_config: the decoder's config of a multimodal model, else the config."""
    for key in ("text_config", "llm_config", "language_config", "thinker_config"):
        sub = config.get(key)
        if isinstance(sub, dict) and sub:
            if key == "thinker_config" and isinstance(sub.get("text_config"), dict):
                return sub["text_config"]
            return sub
    return config


def _first(cfg: dict, keys: tuple[str, ...], default: Any = None) -> Any:
    for k in keys:
        v = cfg.get(k)
        if v is not None:
            return v
    return default


def read_model_spec(
    config: dict,
    *,
    name: str,
    hf_quant_config: dict | None = None,
    weights_bytes: int | None = None,
    weights_source: str | None = None,
    hf_id: str | None = None,
) -> ModelSpec:
    """Build a ModelSpec from a parsed config.json. Raises ConfigError with one clear line."""
    if not isinstance(config, dict):
        raise ConfigError(f"{name}: config.json must be a JSON object")
    notes: list[str] = []
    raw_text = text_config_of(config)
    if raw_text is not config:
        notes.append("geometry read from the nested text_config (multimodal checkpoint)")
    model_type = str(raw_text.get("model_type") or config.get("model_type") or "")
    if raw_text is not config and not raw_text.get("model_type"):
        # the class the outer config builds its text_config with, whatever the dict says
        model_type = NESTED_TEXT_MODEL_TYPES.get(model_type, model_type)
    if model_type == "gemma3":  # a Gemma 3 text config without its own model_type
        model_type = "gemma3_text"
    defaults = TRANSFORMERS_DEFAULTS.get(model_type, {})
    cfg = dict(defaults)
    cfg.update(raw_text)  # an explicit null (Mistral v0.3's sliding_window) overrides the class default
    taken = sorted(k for k in defaults if k not in raw_text)
    if taken:
        notes.append(f"absent keys took transformers' {model_type} defaults: {', '.join(taken)}")
    _normalise_block_list(cfg, model_type, name, notes)

    num_layers = _first(cfg, LAYER_KEYS)
    if num_layers is None and isinstance(cfg.get("layer_types"), list) and cfg["layer_types"]:
        num_layers = len(cfg["layer_types"])  # a per-layer list is the layer count
    num_heads = _first(cfg, HEAD_KEYS)
    hidden = _first(cfg, HIDDEN_KEYS)
    missing = [k for k, v in (("num_hidden_layers", num_layers), ("num_attention_heads", num_heads),
                              ("hidden_size", hidden)) if v is None]
    if missing:
        raise ConfigError(f"{name}: config.json lacks the geometry key(s) {', '.join(missing)}")
    for key, val in (("num_hidden_layers", num_layers), ("num_attention_heads", num_heads),
                     ("hidden_size", hidden)):
        _in_range(name, key, val)

    kv_heads = _first(cfg, KV_HEAD_KEYS)
    if kv_heads is None and cfg.get("multi_query") is True:
        kv_heads = 1
    if kv_heads is None:
        kv_heads = num_heads
    _in_range(name, "num_key_value_heads", kv_heads)
    hd_written = cfg.get("head_dim")
    if isinstance(hd_written, int | float) and not isinstance(hd_written, bool) and hd_written <= 0:
        raise ConfigError(f"{name}: 'head_dim' must be a positive integer, got {hd_written!r}")
    # is_deepseek_mla: compress-ratio models (DeepSeek-V4) are MLA when head_dim is set, the rest
    # when kv_lora_rank is (model_arch_config_convertor.py, 0.33.0)
    is_mla = model_type in MLA_MODEL_TYPES and (
        cfg.get("head_dim") is not None if _compress_ratios(cfg) else cfg.get("kv_lora_rank") is not None)
    try:
        head_dim = _head_size(cfg, num_heads, hidden, is_mla)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{name}: the head size keys (head_dim, kv_lora_rank, qk_*_head_dim) must be integers") \
            from None
    if head_dim <= 0:
        raise ConfigError(f"{name}: cannot derive head_dim (hidden_size {hidden} / heads {num_heads})")
    _in_range(name, "head_dim", head_dim)
    if not is_mla and _is_latent_split_mha(cfg):
        notes.append(f"latent-projected attention stored uncompressed: K and V of qk_nope_head_dim + "
                     f"qk_rope_head_dim = {head_dim} per head, every head (V padded to it)")
        kv_heads = num_heads
    elif "head_dim" not in raw_text and not is_mla and "head_dim" not in defaults:
        notes.append(f"head_dim absent: hidden_size / num_attention_heads = {hidden} / {num_heads} = {head_dim}")

    dtype = _dtype(config, raw_text)
    quant = read_quantization(config, raw_text, hf_quant_config)
    layers = _layers(cfg, model_type, num_layers, num_heads, int(kv_heads), head_dim, is_mla, notes)
    layers += _dsa_indexer_layers(cfg, model_type, num_layers, layers, notes)
    layers += _block_sparse_indexer_layers(cfg, num_layers, notes)
    if not layers:
        notes.append("no layer keeps a KV cache (attention-free)")

    max_len_keys = tuple((k, int(cfg[k])) for k in MAX_LEN_KEYS
                         if isinstance(cfg.get(k), int | float) and not isinstance(cfg.get(k), bool))
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    if isinstance(rope, dict) and rope and all(isinstance(v, dict) for v in rope.values()):
        rope = rope.get("full_attention", {})  # per-layer-type rope (Gemma 4): the global layers'
    rope_items = tuple(sorted((str(k), v) for k, v in rope.items()
                              if isinstance(v, str | int | float))) if isinstance(rope, dict) else ()

    vocab = cfg.get("vocab_size") or config.get("vocab_size") or 0
    if vocab:
        _in_range(name, "vocab_size", vocab)
    inter = cfg.get("intermediate_size") or cfg.get("ffn_hidden_size") or cfg.get("ff_intermediate_size") \
        or cfg.get("n_inner") or 4 * hidden  # ff_intermediate_size: Phi-3-small
    if isinstance(inter, list):
        inter = max(inter, default=4 * hidden) if all(isinstance(x, int) for x in inter) else None
    _in_range(name, "intermediate_size", inter)
    tie = cfg.get("tie_word_embeddings", config.get("tie_word_embeddings", False))
    archs = tuple(config.get("architectures") or raw_text.get("architectures") or ())
    for arch in archs:
        if arch in REMOVED_ARCHITECTURES:
            notes.append(f"vLLM served {arch} until {REMOVED_ARCHITECTURES[arch]} "
                         "(model_executor/models/registry.py _PREVIOUSLY_SUPPORTED_MODELS, 0.33.0)")
    cross = cfg.get("cross_attention_layers")
    if isinstance(cross, list) and cross:
        # mllama: vLLM ran it only on the V0 engine (SupportsV0Only, model_executor/models/mllama.py
        # 0.10.1.1), whose CacheEngine sizes every block over all num_hidden_layers
        # (worker/cache_engine.py, ModelConfig.get_num_layers_by_block_type 0.10.1.1)
        notes.append(f"{len(cross)} of {num_layers} layers are cross-attention (cross_attention_layers): counted "
                     f"as full KV layers, as vLLM's V0 engine sizes each block over all {num_layers} layers")
    return ModelSpec(
        name=name,
        model_type=model_type,
        architectures=archs,
        dtype=dtype,
        num_hidden_layers=num_layers,
        hidden_size=hidden,
        intermediate_size=int(inter),
        num_attention_heads=num_heads,
        num_kv_heads=int(kv_heads),
        head_dim=head_dim,
        vocab_size=vocab,
        layers=tuple(layers),
        quant=quant,
        tie_word_embeddings=bool(tie),
        max_len_keys=max_len_keys,
        rope_scaling=rope_items,
        is_mla=is_mla,
        is_multimodal=raw_text is not config or "vision_config" in config,
        is_attention_free=not any(g.kind != "mamba" for g in layers),
        weights_bytes=weights_bytes,
        weights_source=weights_source,
        hf_id=hf_id,
        notes=tuple(notes),
        text_config=cfg,
        full_config=config,
    )


# Upper bounds on a model's geometry, far above any published model (the largest today: 160 layers, 128 heads,
# hidden 25,600 (the 1T models), vocab 262,144, head_dim 576 (MLA), expert FFN 65,536): a config beyond them
# is a mistake or an attack, and would cost minutes of CPU and gigabytes of memory to model (one entry per layer).
GEOMETRY_MAX = {
    "num_hidden_layers": 10_000,
    "num_attention_heads": 65_536,
    "num_key_value_heads": 65_536,
    "hidden_size": 1_048_576,
    "head_dim": 65_536,
    "vocab_size": 10_000_000,
    "intermediate_size": 10_000_000,
}


def _in_range(name: str, key: str, val: Any) -> None:
    """A geometry value must be an integer in 1..GEOMETRY_MAX[key]: one ConfigError line otherwise."""
    top = GEOMETRY_MAX[key]
    if isinstance(val, bool) or not isinstance(val, int) or not 0 < val <= top:
        shown = repr(val) if len(repr(val)) <= 40 else repr(val)[:37] + "..."
        raise ConfigError(f"{name}: '{key}' must be an integer from 1 to {top:,}, got {shown}")


def _normalise_block_list(cfg: dict, model_type: str, name: str, notes: list[str]) -> None:
    """Nemotron-H's `layers_block_type` list -> the `hybrid_override_pattern` vLLM's nemotron_h.py reads.

    transformers' NemotronHConfig (transformers==5.24.0, models/nemotron_h/configuration_nemotron_h.py)
    keeps the list and derives `hybrid_override_pattern` and `num_hidden_layers` (its length) from it;
    legacy names mamba / attention are remapped (configuration_utils._LEGACY_LAYER_TYPE_REMAP).
    vLLM 0.33.0 model_executor/models/nemotron_h.py builds one layer per pattern character.
    """
    blocks = cfg.get("layers_block_type")
    if not (model_type.startswith("nemotron_h") and isinstance(blocks, list) and blocks):
        return
    chars = {"mamba": "M", "linear_attention": "M", "attention": "*", "full_attention": "*",
             "moe": "E", "mlp": "-"}
    bad = sorted({str(b) for b in blocks if b not in chars})
    if bad:
        raise ConfigError(f"{name}: layers_block_type has unknown block type(s) {', '.join(bad)} "
                          f"(mamba / linear_attention, attention / full_attention, moe, mlp)")
    pattern = "".join(chars[b] for b in blocks)
    if cfg.get("hybrid_override_pattern") not in (None, pattern):
        notes.append("layers_block_type and hybrid_override_pattern disagree: layers_block_type wins "
                     "(transformers' NemotronHConfig)")
    cfg["hybrid_override_pattern"] = pattern
    if cfg.get("num_hidden_layers") not in (None, len(blocks)):
        notes.append(f"num_hidden_layers {cfg['num_hidden_layers']} ignored: layers_block_type lists {len(blocks)}")
    cfg["num_hidden_layers"] = len(blocks)


def _is_latent_split_mha(cfg: dict) -> bool:
    """A q/kv-LoRA attention that caches full K and V per head (not an MLA latent).

    vLLM 0.33.0 model_executor/models/minicpm3.py::MiniCPM3Attention: Attention(num_heads,
    qk_head_dim = qk_nope_head_dim + qk_rope_head_dim, num_kv_heads=num_heads), V zero-padded to
    qk_head_dim. Applies when the model type is not one vLLM runs as MLA (is_deepseek_mla).
    """
    return isinstance(cfg.get("qk_nope_head_dim"), int) and isinstance(cfg.get("qk_rope_head_dim"), int) \
        and cfg.get("kv_lora_rank") is not None


def _head_size(cfg: dict, num_heads: int, hidden: int, is_mla: bool) -> int:
    """ModelArchConfigConvertor.get_head_size: MLA latent, else head_dim, else hidden / heads."""
    if is_mla and _compress_ratios(cfg):
        return int(cfg["head_dim"])  # DeepSeek-V4: one 512-wide latent (448 NoPE + 64 RoPE)
    if is_mla:
        return int(cfg["kv_lora_rank"]) + int(cfg.get("qk_rope_head_dim") or 0)
    if _is_latent_split_mha(cfg):
        return int(cfg["qk_nope_head_dim"]) + int(cfg["qk_rope_head_dim"])
    hd = cfg.get("head_dim")
    if isinstance(hd, int) and hd > 0:
        return hd
    if isinstance(cfg.get("hidden_size_per_head"), int):
        return int(cfg["hidden_size_per_head"])
    return hidden // num_heads


def _dtype(config: dict, text: dict) -> str:
    """vLLM's dtype='auto': the checkpoint's dtype, with float32 (or none declared) -> bfloat16."""
    for src in (text, config):
        for key in ("torch_dtype", "dtype"):
            v = src.get(key)
            if isinstance(v, str) and v.lower() in _DTYPES:
                d = _DTYPES[v.lower()]
                return "bfloat16" if d == "float32" else d
    return "bfloat16"


def read_quantization(config: dict, text: dict, hf_quant_config: dict | None) -> Quantization:
    """Weights' quantization and the KV dtype a checkpoint declares (what `auto` resolves to)."""
    qc = config.get("quantization_config") or text.get("quantization_config") or {}
    method = qc.get("quant_method") if isinstance(qc, dict) else None
    bits: float | None = None
    group = None
    kv = None
    source = "config.json quantization_config" if method else ""
    if isinstance(qc, dict) and qc:
        kv = _kv_scheme(qc.get("kv_cache_scheme")) or _kv_algo(qc.get("kv_cache_quant_algo"))
        m = (method or "").lower()
        group = qc.get("group_size") or qc.get("q_group_size")
        if str(qc.get("quant_algo") or "").upper() == "MIXED_PRECISION":
            bits = _mixed_precision_bits(qc)  # ModelOpt mixed exports, whatever quant_method says
        elif m == "fp8" and str(config.get("expert_dtype") or text.get("expert_dtype") or "") == "fp4":
            # DeepSeek-V4: FP8 block-scaled linears, MXFP4 routed experts (most of the parameters)
            # (vllm 0.33.0 vllm/models/deepseek_v4/quant_config.py, expert_dtype 'fp4' -> Mxfp4MoEMethod)
            bits = 4.25
        elif m in ("fp8", "fbgemm_fp8", "ptpc_fp8", "experts_int8"):
            bits = 8.0
        elif m in ("awq", "gptq", "awq_marlin", "gptq_marlin", "auto-round", "auto_round"):
            b = qc.get("bits") or qc.get("w_bit") or 4
            g = group if isinstance(group, int) and group > 0 else 128
            # int weights + fp16 scale per group (+ packed zeros): e.g. 4 + 16/128 + 4/128 bits
            bits = float(b) + 16 / g + float(b) / g
        elif m == "mxfp4":
            bits = 4.25  # e2m1 + one e8m0 scale per 32
        elif m == "bitsandbytes":
            bits = 4.5 if qc.get("load_in_4bit") or qc.get("bnb_4bit_quant_type") else 8.0
        elif m == "compressed-tensors":
            bits = _compressed_tensors_bits(qc)
        elif m in ("modelopt", "modelopt_fp4", "modelopt_mixed"):
            algo = str(qc.get("quant_algo") or "").upper()
            bits = 4.5 if "FP4" in algo or "NVFP4" in algo else 8.0
    if hf_quant_config:
        q = hf_quant_config.get("quantization", hf_quant_config)
        algo = str(q.get("quant_algo") or "").upper()
        kv = _kv_algo(q.get("kv_cache_quant_algo")) or kv
        method = method or "modelopt"
        if bits is None:
            if "NVFP4" in algo or "FP4" in algo:
                bits = 4.5
            elif algo == "MIXED_PRECISION":
                bits = _mixed_precision_bits(q)
            else:
                bits = 8.0
        source = (source + " + " if source else "") + "hf_quant_config.json"
    return Quantization(method=method, weight_bits=bits, group_size=group if isinstance(group, int) else None,
                        kv_cache_dtype=kv, source=source)


def _mixed_precision_bits(q: dict) -> float:
    """ModelOpt MIXED_PRECISION: FP4 on the MLP / expert weights (most of the parameters) -> 4.5 bits
    (e2m1 + an fp8 scale per 16), else 8."""
    layers = q.get("quantized_layers") or {}
    fp4 = isinstance(layers, dict) and any(
        "FP4" in str((v or {}).get("quant_algo", "")).upper() for k, v in layers.items()
        if isinstance(v, dict) and ("mlp" in k or "expert" in k))
    return 4.5 if fp4 else 8.0


def _kv_scheme(scheme: Any) -> str | None:
    """compressed-tensors / ModelOpt `kv_cache_scheme` ({num_bits: 8, type: float} -> fp8)."""
    if not isinstance(scheme, dict):
        return None
    if scheme.get("num_bits") == 8 and scheme.get("type", "float") == "float":
        return "fp8"
    if scheme.get("num_bits") == 4 and scheme.get("type") == "float":
        return "nvfp4"
    return None


def _kv_algo(algo: Any) -> str | None:
    """ModelOpt `kv_cache_quant_algo`: FP8 -> fp8 (e4m3), NVFP4 -> nvfp4."""
    a = str(algo or "").upper()
    if a == "FP8":
        return "fp8"
    if a in ("NVFP4", "FP4"):
        return "nvfp4"
    return None


def _compressed_tensors_bits(qc: dict) -> float:
    groups = qc.get("config_groups") or {}
    best = 16.0
    for g in groups.values():
        w = (g or {}).get("weights") or {}
        nb = w.get("num_bits")
        if isinstance(nb, int | float):
            gs = w.get("group_size")
            extra = 16 / gs if isinstance(gs, int) and gs > 0 else 0.0
            if w.get("type") == "float" and nb == 4:
                # an 8-bit scale per group: NVFP4 (fp8 per 16) 4.5 bits, MXFP4 (e8m0 per 32) 4.25
                extra = 8 / gs if isinstance(gs, int) and gs > 0 else 8 / 16
            best = min(best, float(nb) + extra)
    return best


# ---------------------------------------------------------------------------------------------
# Layer kinds


def _layers(cfg: dict, model_type: str, n: int, num_heads: int, kv_heads: int, head_dim: int,
            is_mla: bool, notes: list[str]) -> list[LayerGeometry]:
    """Which spec each decoder layer registers, following each family's own declaration."""
    head_v = int(cfg.get("v_head_dim") or 0) if not is_mla else 0
    if (head_v == 0 and not is_mla) or _is_latent_split_mha(cfg):
        head_v = head_dim  # MiniCPM3 pads V to qk_head_dim
    window = cfg.get("sliding_window")
    if window == 0:
        window = None  # vLLM treats sliding_window 0 as none

    def attn(i: int, kind: str = "full", heads: int = kv_heads, hd: int = head_dim, hv: int = head_v,
             win: int | None = None, why: str = "") -> LayerGeometry:
        if is_mla:
            return LayerGeometry(i, "mla", 1, hd, 0, why=why or "MLA latent (kv_lora_rank + qk_rope_head_dim)")
        return LayerGeometry(i, kind, heads, hd, hv, window=win, why=why)  # type: ignore[arg-type]

    out: list[LayerGeometry] = []
    types = cfg.get("layer_types")
    mamba = _mamba_geometry(cfg, model_type)

    ratios = _compress_ratios(cfg)
    if ratios and is_mla:
        return _compressed_sparse_layers(cfg, n, head_dim, ratios, window, notes)

    # Nemotron-H: one character per layer: M Mamba2, * attention, - MLP, E MoE.
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        for i, ch in enumerate(pattern):
            if ch == "*":
                out.append(attn(i, why="attention layer ('*' in hybrid_override_pattern)"))
            elif ch == "M":
                out.append(LayerGeometry(i, "mamba", mamba=mamba, why="Mamba2 layer: fixed state ('M')"))
        notes.append(f"hybrid_override_pattern: {pattern.count('*')} attention, {pattern.count('M')} Mamba2, "
                     f"{len(pattern) - pattern.count('*') - pattern.count('M')} MLP/MoE-only layers")
        return out

    # DeciLM / Nemotron-NAS: per-layer block_configs; no_op attention keeps no cache.
    blocks = cfg.get("block_configs")
    if isinstance(blocks, list) and blocks and isinstance(blocks[0], dict) and "attention" in blocks[0]:
        skipped = 0
        for i, b in enumerate(blocks):
            a = b.get("attention") or {}
            if a.get("no_op") or a.get("replace_with_linear"):
                skipped += 1
                continue
            group = a.get("n_heads_in_group") or 1
            out.append(attn(i, heads=num_heads // int(group),
                            why=f"attention with n_heads_in_group {group}"))
        notes.append(f"block_configs: {skipped} of {len(blocks)} layers have no attention (no_op / linear)")
        return out

    # MiMo-V2-Flash: hybrid_layer_pattern 1 = sliding-window layer (own head counts), 0 = full.
    hlp = cfg.get("hybrid_layer_pattern")
    if isinstance(hlp, list) and hlp:
        swa_heads = int(cfg.get("swa_num_key_value_heads") or kv_heads)
        swa_hd = int(cfg.get("swa_head_dim") or head_dim)
        swa_hv = int(cfg.get("swa_v_head_dim") or swa_hd)
        win = cfg.get("sliding_window_size") or window
        for i, flag in enumerate(hlp):
            if flag:
                out.append(attn(i, "sliding", swa_heads, swa_hd, swa_hv, win, f"sliding window {win}"))
            else:
                out.append(attn(i, why="full attention"))
        return out

    # Jamba: attention every attn_layer_period layers at attn_layer_offset, Mamba elsewhere.
    if cfg.get("attn_layer_period") and model_type.startswith("jamba"):
        period, offset = int(cfg["attn_layer_period"]), int(cfg.get("attn_layer_offset", 0))
        for i in range(n):
            if i % period == offset:
                out.append(attn(i, why="attention layer (attn_layer_period/offset)"))
            else:
                out.append(LayerGeometry(i, "mamba", mamba=mamba, why="Mamba layer: fixed state"))
        return out

    # Falcon-H1: every layer runs attention and Mamba2 in parallel.
    if model_type == "falcon_h1":
        for i in range(n):
            out.append(attn(i, why="attention half of a parallel hybrid layer"))
            out.append(LayerGeometry(i, "mamba", mamba=mamba, why="Mamba2 half of a parallel hybrid layer"))
        return out

    kinds: list[str] | None = None
    lac = cfg.get("linear_attn_config")
    if isinstance(types, list) and types:
        kinds = [str(t) for t in types[:n]]
    elif isinstance(lac, dict) and isinstance(lac.get("kda_layers"), list):
        # Kimi-Linear / Kimi K3: KimiLinearConfig.is_kda_layer(i) = (i + 1) in kda_layers (1-based);
        # every other layer is MLA (vllm/transformers_utils/configs/kimi_linear.py and
        # vllm/models/kimi_k3/nvidia/model.py::KimiDecoderLayer, 0.33.0; kimi_linear.py in 0.20.0)
        kda = {int(x) for x in lac["kda_layers"] if isinstance(x, int)}
        kinds = ["linear_attention" if i + 1 in kda else "full_attention" for i in range(n)]
        notes.append(f"linear_attn_config: {len(kda & set(range(1, n + 1)))} Kimi Delta Attention layers "
                     f"(kda_layers, 1-based), {n - len(kda & set(range(1, n + 1)))} attention layers")
    elif isinstance(cfg.get("layers_block_type"), list):
        kinds = [str(t) for t in cfg["layers_block_type"][:n]]
    elif isinstance(cfg.get("attn_type_list"), list):  # MiniMax-Text-01: 0 linear, 1 softmax
        kinds = ["full_attention" if t else "minimax_linear" for t in cfg["attn_type_list"][:n]]
    elif cfg.get("full_attention_interval") and model_type.startswith(("qwen3_next", "qwen3_5")):
        k = int(cfg["full_attention_interval"])
        kinds = ["full_attention" if (i + 1) % k == 0 else "linear_attention" for i in range(n)]
    elif model_type in ("gemma3_text", "gemma3", "cohere2"):
        # Gemma3TextConfig / Cohere2Config (transformers 4.57) build layer_types from sliding_window_pattern
        # (default 6 / 4): layer i is full when (i + 1) % pattern == 0; vLLM reads config.layer_types
        # (0.25.0 model_executor/models/commandr.py::CohereAttention)
        p = int(cfg.get("sliding_window_pattern") or (4 if model_type == "cohere2" else 6))
        kinds = ["sliding_attention" if (i + 1) % p else "full_attention" for i in range(n)]
    elif model_type == "gemma2" and window:
        # Gemma2Attention: even layers slide (transformers: `not bool(layer_idx % 2)`).
        kinds = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)]
    elif model_type.startswith("llama4") and cfg.get("attention_chunk_size"):
        nope = cfg.get("no_rope_layers")
        if not isinstance(nope, list) or len(nope) < n:
            k = int(cfg.get("no_rope_layer_interval") or 4)
            nope = [int((i + 1) % k != 0) for i in range(n)]
        # layers that use RoPE attend within a chunk; the NoPE layers are global
        kinds = ["chunked_attention" if nope[i] else "full_attention" for i in range(n)]

    shared = int(cfg.get("num_kv_shared_layers") or 0)
    first_shared = n - shared if shared else n
    global_hd = int(cfg.get("global_head_dim") or head_dim)
    # Gemma 4: global layers use global_head_dim, and num_global_key_value_heads only when
    # attention_k_eq_v (vllm/model_executor/models/gemma4.py)
    global_kv = int(cfg.get("num_global_key_value_heads") or kv_heads) if cfg.get("attention_k_eq_v") \
        else kv_heads
    if kinds is None:
        uniform_sw = window is not None and cfg.get("use_sliding_window", True) is not False
        if window is not None and not uniform_sw:
            notes.append(f"sliding_window {window} declared but use_sliding_window is false: full attention")
        for i in range(n):
            if uniform_sw:
                out.append(attn(i, "sliding", win=int(window), why=f"sliding window {window} on every layer"))
            else:
                out.append(attn(i, why="full attention"))
        return out

    for i, t in enumerate(kinds):
        if i >= first_shared:
            continue  # KV shared with an earlier layer (Gemma 3n / 4 num_kv_shared_layers): no cache
        if t in ("sliding_attention", "sliding", "local", "local_attention"):
            out.append(attn(i, "sliding", win=int(window) if window else None, why=f"sliding window {window}"))
        elif t in ("chunked_attention",):
            c = int(cfg["attention_chunk_size"])
            out.append(attn(i, "chunked", win=c, why=f"chunked local attention, chunk {c}"))
        elif t in DSA_LAYER_TYPES:
            # GLM-5.x: an MLA layer whose indexer cache _dsa_indexer_layers adds
            out.append(attn(i, why="sparse MLA (DSA) layer"))
        elif t in ("full_attention", "attention", "global", "global_attention", "hybrid"):
            if global_hd != head_dim or global_kv != kv_heads:
                hv = global_hd
                out.append(attn(i, "full", global_kv, global_hd, hv,
                                why=f"global attention ({global_kv} KV heads x head_dim {global_hd})"))
            else:
                out.append(attn(i, why="full attention"))
        elif t in ("linear_attention", "mamba", "mamba2", "minimax_linear", "conv"):
            g = mamba
            if t == "minimax_linear":
                g = MambaGeometry("linear_attention", num_heads=num_heads, head_dim=head_dim)
            if g is None:
                raise ConfigError(f"layer {i} is '{t}' but the config has no recurrent-state geometry")
            label = {"gdn": "Gated DeltaNet", "kda": "Kimi Delta Attention", "mamba2": "Mamba2",
                     "mamba1": "Mamba", "short_conv": "short convolution",
                     "linear_attention": "linear attention"}[g.variant]
            out.append(LayerGeometry(i, "mamba", mamba=g, why=f"{label} layer: fixed state per sequence"))
        elif t in ("moe", "mlp", "none", "identity"):
            continue
        else:
            raise ConfigError(f"layer {i} has an unknown layer type '{t}'")
    if shared:
        notes.append(f"the last {shared} layers reuse earlier layers' KV (num_kv_shared_layers): no cache of their own")
    return out


def _mamba_geometry(cfg: dict, model_type: str) -> MambaGeometry | None:
    """Recurrent-state geometry from the config's own key names (one family at a time)."""
    ssm_dtype = cfg.get("mamba_ssm_dtype") or cfg.get("mamba_ssm_cache_dtype")
    ssm_dtype = str(ssm_dtype) if ssm_dtype else None
    if cfg.get("linear_num_value_heads"):  # Gated DeltaNet: Qwen3-Next, Qwen3.5, Qwen3.6
        return MambaGeometry(
            "gdn", conv_kernel=int(cfg.get("linear_conv_kernel_dim") or 4),
            num_heads=int(cfg["linear_num_value_heads"]), head_dim=int(cfg["linear_value_head_dim"]),
            num_k_heads=int(cfg["linear_num_key_heads"]), k_head_dim=int(cfg["linear_key_head_dim"]),
            ssm_dtype=ssm_dtype)
    kda = _kda_geometry(cfg)
    if kda is not None:
        return kda
    hidden = int(cfg.get("hidden_size") or 0)
    if model_type in ("nemotron_h", "granitemoehybrid", "bamba", "falcon_h1", "zamba2", "nemotron_h_puzzle") \
            or cfg.get("mamba_n_heads") or cfg.get("mamba_num_heads"):
        heads = int(cfg.get("mamba_num_heads") or cfg.get("mamba_n_heads") or 0)
        hd = int(cfg.get("mamba_head_dim") or cfg.get("mamba_d_head") or 0)
        if not heads and not hd:
            return None
        inter = int(cfg.get("mamba_intermediate_size") or 0) or (heads * hd if heads and hd
                                                                 else int(cfg.get("mamba_expand", 2)) * hidden)
        if not heads:
            heads = inter // hd
        if not hd:
            hd = inter // heads
        return MambaGeometry(
            "mamba2", conv_kernel=int(cfg.get("conv_kernel") or cfg.get("mamba_d_conv") or 4),
            intermediate_size=inter, state_size=int(cfg.get("ssm_state_size") or cfg.get("mamba_d_state") or 128),
            num_heads=heads, head_dim=hd, n_groups=int(cfg.get("n_groups") or cfg.get("mamba_n_groups") or 1),
            ssm_dtype=ssm_dtype)
    if cfg.get("mamba_d_state") or cfg.get("mamba_expand") or model_type in ("jamba", "mamba"):
        expand = int(cfg.get("mamba_expand") or cfg.get("expand") or 2)
        return MambaGeometry(
            "mamba1", conv_kernel=int(cfg.get("mamba_d_conv") or cfg.get("conv_kernel") or 4),
            intermediate_size=int(cfg.get("intermediate_size") if model_type == "mamba" else expand * hidden),
            state_size=int(cfg.get("mamba_d_state") or cfg.get("state_size") or 16), ssm_dtype=ssm_dtype)
    if cfg.get("conv_L_cache"):  # LFM2 short convolutions
        return MambaGeometry("short_conv", conv_kernel=int(cfg["conv_L_cache"]), intermediate_size=hidden)
    return None


def _kda_geometry(cfg: dict) -> MambaGeometry | None:
    """Kimi Delta Attention state (Kimi-Linear, Kimi K3, GLM-5.x linear layers).

    MambaStateShapeCalculator.kda_state_shape (vllm/model_executor/layers/mamba/mamba_utils.py,
    0.24.0-0.33.0): conv (kernel - 1 [+ spec]) x 3 x heads x head_dim, recurrent heads x head_dim
    x head_dim. kda_state_dtype: conv in the model / --mamba-cache-dtype, recurrent float32 under
    'auto' (0.20.0-0.33.0; 0.33.0 also takes --mamba-ssm-cache-dtype float32 / bfloat16).
    Keys: Kimi's linear_attn_config {num_heads, head_dim, short_conv_kernel_size}; GLM-5.x's
    linear_num_heads / linear_head_dim / linear_conv_kernel_dim (vllm/models/glm5next/common/model.py).
    """
    lac = cfg.get("linear_attn_config")
    lac = lac if isinstance(lac, dict) else {}
    heads = cfg.get("linear_num_heads") or lac.get("num_heads")
    hd = cfg.get("linear_head_dim") or lac.get("head_dim")
    if not (isinstance(heads, int) and isinstance(hd, int) and heads > 0 and hd > 0):
        return None
    kernel = cfg.get("linear_conv_kernel_dim") or lac.get("short_conv_kernel_size") or 4
    return MambaGeometry("kda", conv_kernel=int(kernel), num_heads=heads, head_dim=hd,
                         num_k_heads=heads, k_head_dim=hd, ssm_dtype="float32", ssm_dtype_fixed=True)


def _dsa_indexer_layers(cfg: dict, model_type: str, n: int, layers: list[LayerGeometry],
                        notes: list[str]) -> list[LayerGeometry]:
    """The per-token indexer key cache of sparse-attention (DSA) MLA layers.

    DeepseekV32IndexerCache: uint8 keys + an fp32 scale per 128 -> 128 + 4 = 132 B per token
    (DeepSeek-V3.2, GLM-5). From vLLM 0.24.0 a layer that reuses an earlier layer's top-k has no
    indexer (vllm/models/deepseek_v32/attention.py, 0.33.0: index_topk_pattern 'S', else
    max(i - index_skip_topk_offset + 1, 0) % index_topk_freq != 0). GLM-5.x's kpool indexer keeps
    one key per index_kpool tokens (Glm5NextIndexerCache, tokens_per_state = index_kpool,
    vllm/models/glm5next/common/attention.py, 0.33.0).
    """
    types = cfg.get("layer_types") if isinstance(cfg.get("layer_types"), list) else []
    dsa = model_type in DSA_MODEL_TYPES or any(t in DSA_LAYER_TYPES for t in types)
    if not dsa or not cfg.get("index_head_dim"):
        return []
    ihd = int(cfg["index_head_dim"])
    size = ihd + ihd // 128 * 4
    kpool = int(cfg.get("index_kpool") or 1)
    if kpool > 1 and size % kpool == 0:
        size //= kpool
    freq = max(int(cfg.get("index_topk_freq") or 1), 1)
    offset = int(cfg.get("index_skip_topk_offset", 2))
    pattern = cfg.get("index_topk_pattern")

    def skips(i: int) -> bool:
        if isinstance(pattern, str | list) and pattern:
            return 0 <= i < len(pattern) and pattern[i] == "S"
        return max(i - offset + 1, 0) % freq != 0

    owners = [g for g in layers if g.kind == "mla" and g.index < n and not skips(g.index)]
    if types and any(t in DSA_LAYER_TYPES for t in types):
        owners = [g for g in owners if g.index < len(types) and types[g.index] in DSA_LAYER_TYPES]
    pool = f" (one {size * kpool} B key per {kpool} tokens)" if kpool > 1 else ""
    notes.append(f"sparse attention (DSA): {len(owners)} MLA layers also keep a {size} B/token indexer "
                 f"key cache{pool}")
    return [LayerGeometry(g.index, "mla", 1, size, 0, kv_bytes_override=1, why="DSA indexer key cache")
            for g in owners]


def _compress_ratios(cfg: dict) -> list[int]:
    """Per-layer KV compress ratios (0 = sliding window only), MTP layers included.

    vllm/transformers_utils/deepseek_v4_utils.py::get_compress_ratios (0.33.0): the config's
    compress_ratios, else compress_rates[layer_type] over layer_types (upstream DeepseekV4Config).
    """
    ratios = cfg.get("compress_ratios")
    if isinstance(ratios, list):
        return [int(r or 0) for r in ratios]
    rates, types = cfg.get("compress_rates"), cfg.get("layer_types")
    if isinstance(rates, dict) and isinstance(types, list):
        return [int(rates.get(t) or 0) for t in types]
    return []


def _compressed_sparse_layers(cfg: dict, n: int, head_dim: int, ratios: list[int], window: int | None,
                              notes: list[str]) -> list[LayerGeometry]:
    """DeepSeek-V4's caches per layer (vllm/models/deepseek_v4/attention.py, 0.33.0).

    Every layer keeps a sliding window of the 512-wide latent (DeepseekV4SWACache, a
    SlidingWindowMLASpec of sliding_window tokens). A layer with compress ratio r > 1 also keeps one
    latent per r tokens (MLAAttentionSpec, tokens_per_state = r), and a ratio-4 layer an indexer key
    per 4 tokens (DeepseekV4IndexerCache: 128 fp8 + 4 B scale = 132 B). The compressors' small
    per-request states (CompressorStateCache) are not modelled.
    V4-Flash, bf16: 21 ratio-4 layers x (1,024 / 4 + 132 / 4) + 20 ratio-128 layers x 1,024 / 128
    = 6,229 B per token beyond the windows.
    """
    win = int(cfg.get("sliding_window") or window or 128)
    ihd = int(cfg.get("index_head_dim") or 128)
    index_state = ihd + ihd // 128 * 4
    out: list[LayerGeometry] = []
    counts: dict[int, int] = {}
    for i in range(n):
        r = ratios[i] if i < len(ratios) else 0
        counts[r] = counts.get(r, 0) + 1
        out.append(LayerGeometry(i, "sliding", 1, head_dim, 0, window=win,
                                 why=f"sliding-window latent, {win} tokens"))
        if r > 1:
            out.append(LayerGeometry(i, "mla", 1, max(1, head_dim // r), 0,
                                     why=f"compressed latent, one per {r} tokens"))
        if r == 4:
            out.append(LayerGeometry(i, "mla", 1, index_state // 4, 0, kv_bytes_override=1,
                                     why="DSA indexer key cache, one key per 4 tokens"))
    kinds = ", ".join(f"{c} x ratio {r}" if r > 1 else f"{c} window-only" for r, c in sorted(counts.items()))
    notes.append(f"compressed sparse attention (compress_ratios): {kinds}; every layer also keeps a "
                 f"{win}-token window; compressor states not modelled")
    return out


def _block_sparse_indexer_layers(cfg: dict, n: int, notes: list[str]) -> list[LayerGeometry]:
    """Index keys of block-sparse attention layers (MiniMax-M3's sparse_attention_config).

    vLLM 0.33.0 vllm/models/minimax_m3/nvidia/model.py: layers with sparse_attention_freq[i] != 0
    run MiniMaxM3SparseAttention, whose MiniMaxM3IndexerCache (common/indexer.py) is an
    MLAAttentionSpec of one sparse_index_dim key per token, in bf16 unless --attention-config sets
    indexer_kv_dtype (resolve_indexer_kv_dtype('bf16')), whatever --kv-cache-dtype is.
    MiniMax-M3: 57 layers x 128 x 2 B = 14,592 B per token beside the GQA cache.
    """
    sparse = cfg.get("sparse_attention_config")
    if not isinstance(sparse, dict) or not sparse.get("sparse_index_dim"):
        return []
    freq = sparse.get("sparse_attention_freq")
    if not isinstance(freq, list):
        return []
    dim = int(sparse["sparse_index_dim"])
    owners = [i for i, f in enumerate(freq[:n]) if f]
    notes.append(f"block-sparse attention: {len(owners)} layers also keep a {dim}-wide bf16 index key per token")
    return [LayerGeometry(i, "mla", 1, dim, 0, kv_bytes_override=2, why="block-sparse index key cache")
            for i in owners]
