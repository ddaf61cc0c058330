"""Turn a Hugging Face config.json (plus an optional ModelOpt hf_quant_config.json) into a ModelSpec.

vLLM reads the decoder geometry from `hf_text_config` (the nested `text_config` / `llm_config`
of multimodal models), takes transformers' class defaults for absent keys, and decides per layer
which KV-cache spec it registers. This module mirrors those rules; the sources are named inline.
"""

from __future__ import annotations

from typing import Any

from configurator.errors import ConfigError
from configurator.model.layer_kinds import is_latent_split_mha, layer_geometries
from configurator.model.quantization import read_quantization
from configurator.model.sparse_attention import (
    DSA_LAYER_TYPES,
    DSA_MODEL_TYPES,
    block_sparse_indexer_layers,
    compress_ratios,
    dsa_indexer_layers,
)
from configurator.model.spec import ModelSpec

# re-exported: moved to the modules of what they read (issue 29); callers import them from here
__all__ = ["DSA_LAYER_TYPES", "DSA_MODEL_TYPES", "read_quantization"]

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
    model_type, defaults, cfg = _text_config(config, raw_text, name, notes)
    num_layers, num_heads, hidden = _geometry(cfg, name)
    is_mla, head_dim, kv_heads = _attention_heads(cfg, raw_text, defaults, model_type, name, num_heads, hidden,
                                                  notes)

    dtype = _dtype(config, raw_text)
    quant = read_quantization(config, raw_text, hf_quant_config)
    layers = layer_geometries(cfg, model_type, num_layers, num_heads, int(kv_heads), head_dim, is_mla, notes)
    layers += dsa_indexer_layers(cfg, model_type, num_layers, layers, notes)
    layers += block_sparse_indexer_layers(cfg, num_layers, notes)
    if not layers:
        notes.append("no layer keeps a KV cache (attention-free)")

    max_len_keys, rope_items = _max_len_and_rope(cfg)
    vocab, inter = _vocab_and_ffn(cfg, config, name, hidden)
    tie = cfg.get("tie_word_embeddings", config.get("tie_word_embeddings", False))
    archs = tuple(config.get("architectures") or raw_text.get("architectures") or ())
    _architecture_notes(archs, cfg, num_layers, notes)
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


def _text_config(config: dict, raw_text: dict, name: str, notes: list[str]) -> tuple[str, dict, dict]:
    """(the decoder's model type, transformers' class defaults for it, its config with those defaults filled in)."""
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
    return model_type, defaults, cfg


def _geometry(cfg: dict, name: str) -> tuple[Any, Any, Any]:
    """(layers, attention heads, hidden size), each present and in range."""
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
    return num_layers, num_heads, hidden


def _attention_heads(cfg: dict, raw_text: dict, defaults: dict, model_type: str, name: str, num_heads: int,
                     hidden: int, notes: list[str]) -> tuple[bool, int, Any]:
    """(is MLA, the head size vLLM caches, the KV heads), checked."""
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
        cfg.get("head_dim") is not None if compress_ratios(cfg) else cfg.get("kv_lora_rank") is not None)
    try:
        head_dim = _head_size(cfg, num_heads, hidden, is_mla)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{name}: the head size keys (head_dim, kv_lora_rank, qk_*_head_dim) must be integers") \
            from None
    if head_dim <= 0:
        raise ConfigError(f"{name}: cannot derive head_dim (hidden_size {hidden} / heads {num_heads})")
    _in_range(name, "head_dim", head_dim)
    if not is_mla and is_latent_split_mha(cfg):
        notes.append(f"latent-projected attention stored uncompressed: K and V of qk_nope_head_dim + "
                     f"qk_rope_head_dim = {head_dim} per head, every head (V padded to it)")
        kv_heads = num_heads
    elif "head_dim" not in raw_text and not is_mla and "head_dim" not in defaults:
        notes.append(f"head_dim absent: hidden_size / num_attention_heads = {hidden} / {num_heads} = {head_dim}")
    return is_mla, head_dim, kv_heads


def _max_len_and_rope(cfg: dict) -> tuple[tuple[tuple[str, int], ...], tuple]:
    """The context-length keys present (vLLM takes their minimum) and the RoPE scaling items."""
    max_len_keys = tuple((k, int(cfg[k])) for k in MAX_LEN_KEYS
                         if isinstance(cfg.get(k), int | float) and not isinstance(cfg.get(k), bool))
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    if isinstance(rope, dict) and rope and all(isinstance(v, dict) for v in rope.values()):
        rope = rope.get("full_attention", {})  # per-layer-type rope (Gemma 4): the global layers'
    rope_items = tuple(sorted((str(k), v) for k, v in rope.items()
                              if isinstance(v, str | int | float))) if isinstance(rope, dict) else ()
    return max_len_keys, rope_items


def _vocab_and_ffn(cfg: dict, config: dict, name: str, hidden: int) -> tuple[Any, Any]:
    """(vocab size, the MLP's intermediate size), each in range."""
    vocab = cfg.get("vocab_size") or config.get("vocab_size") or 0
    if vocab:
        _in_range(name, "vocab_size", vocab)
    inter = cfg.get("intermediate_size") or cfg.get("ffn_hidden_size") or cfg.get("ff_intermediate_size") \
        or cfg.get("n_inner") or 4 * hidden  # ff_intermediate_size: Phi-3-small
    if isinstance(inter, list):
        inter = max(inter, default=4 * hidden) if all(isinstance(x, int) for x in inter) else None
    _in_range(name, "intermediate_size", inter)
    return vocab, inter


def _architecture_notes(archs: tuple, cfg: dict, num_layers: int, notes: list[str]) -> None:
    """Notes on architectures vLLM no longer serves and on cross-attention layers."""
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


def _head_size(cfg: dict, num_heads: int, hidden: int, is_mla: bool) -> int:
    """ModelArchConfigConvertor.get_head_size: MLA latent, else head_dim, else hidden / heads."""
    if is_mla and compress_ratios(cfg):
        return int(cfg["head_dim"])  # DeepSeek-V4: one 512-wide latent (448 NoPE + 64 RoPE)
    if is_mla:
        return int(cfg["kv_lora_rank"]) + int(cfg.get("qk_rope_head_dim") or 0)
    if is_latent_split_mha(cfg):
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
