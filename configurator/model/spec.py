"""The model description the memory core consumes: geometry per KV-holding layer, dtype, quantization.

Everything here is a small frozen value; nothing reads files. `configurator.model.hf_config`
builds these from a config.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

# What a layer keeps per request, in vLLM's terms:
#   full     FullAttentionSpec            K and V for every token of the context
#   sliding  SlidingWindowSpec            only the last `window` tokens
#   chunked  ChunkedLocalAttentionSpec    only the current `window`-token chunk (Llama 4)
#   mla      MLAAttentionSpec             one compressed latent per token (DeepSeek, Kimi, GLM-5)
#   mamba    MambaSpec                    a fixed state per sequence (Mamba, Gated DeltaNet, ...)
LayerKind = Literal["full", "sliding", "chunked", "mla", "mamba"]


@dataclass(frozen=True)
class MambaGeometry:
    """Shape parameters of a recurrent layer's state, before tensor parallelism.

    Mirrors vLLM's MambaStateShapeCalculator (vllm/model_executor/layers/mamba/mamba_utils.py).
    `variant` selects the formula: mamba1, mamba2, gdn (Gated DeltaNet), kda (Kimi Delta Attention),
    short_conv, linear_attention.
    """

    variant: Literal["mamba1", "mamba2", "gdn", "kda", "short_conv", "linear_attention"]
    conv_kernel: int = 4
    intermediate_size: int = 0  # mamba1/mamba2: channels of the SSM (E or n_heads x head_dim)
    state_size: int = 0  # d_state
    num_heads: int = 0  # mamba2 heads, GDN value heads, linear-attention heads
    head_dim: int = 0  # mamba2 head_dim, GDN value head dim, linear-attention head dim
    n_groups: int = 1  # mamba2 groups
    num_k_heads: int = 0  # GDN key heads
    k_head_dim: int = 0  # GDN key head dim
    ssm_dtype: str | None = None  # a dtype the checkpoint (or the layer itself) asks for (e.g. float32)
    # True when the layer's own code picks ssm_dtype for '--mamba-ssm-cache-dtype auto' on every
    # release, whatever the config says (KDA: MambaStateDtypeCalculator.kda_state_dtype -> float32)
    ssm_dtype_fixed: bool = False

    def state_elements(self, tp: int, num_spec_tokens: int = 0) -> tuple[int, int]:
        """(conv elements, ssm elements) held per sequence on one tensor-parallel rank."""
        k = self.conv_kernel - 1 + num_spec_tokens
        if self.variant == "mamba1":
            e = self.intermediate_size // tp
            return k * e, e * self.state_size
        if self.variant == "mamba2":
            # Groups are replicated up to the TP size when they do not divide it
            # (MambaStateShapeCalculator.extra_groups_for_head_shards).
            groups = self.n_groups if self.n_groups % tp == 0 else self.n_groups + (tp - self.n_groups)
            conv_dim = (self.intermediate_size + 2 * groups * self.state_size) // tp
            return k * conv_dim, (self.num_heads // tp) * self.head_dim * self.state_size
        if self.variant in ("gdn", "kda"):
            # kda_state_shape: conv over q, k, v (heads x head_dim each); a head_dim x head_dim state
            # per head. Kimi-Linear-48B, TP 1: conv 3 x 12,288, state 32 x 128 x 128.
            conv_dim = (2 * self.num_k_heads * self.k_head_dim + self.num_heads * self.head_dim) // tp
            return k * conv_dim, (self.num_heads // tp) * self.head_dim * self.k_head_dim
        if self.variant == "short_conv":
            return k * (self.intermediate_size // tp), 0
        # linear_attention (MiniMax-Text-01 lightning attention): a head_dim x head_dim state per head
        return 0, (self.num_heads // tp) * self.head_dim * self.head_dim


@dataclass(frozen=True)
class LayerGeometry:
    """One KV-holding module of the decoder (a decoder layer can hold two: Falcon-H1)."""

    index: int  # decoder layer index
    kind: LayerKind
    num_kv_heads: int = 0
    head_size: int = 0
    head_size_v: int = 0  # 0 for MLA (the latent is stored once)
    window: int | None = None  # sliding window or attention chunk size
    mamba: MambaGeometry | None = None
    kv_bytes_override: int | None = None  # element bytes fixed by the layer (e.g. the uint8 DSA indexer)
    why: str = ""


@dataclass(frozen=True)
class Quantization:
    """How the checkpoint's weights and (optionally) KV cache are quantized."""

    method: str | None = None  # fp8, awq, gptq, compressed-tensors, mxfp4, modelopt, bitsandbytes, ...
    weight_bits: float | None = None  # effective bits per quantized linear weight (incl. scales)
    group_size: int | None = None
    kv_cache_dtype: str | None = None  # what `--kv-cache-dtype auto` becomes: 'fp8', 'nvfp4' or None
    source: str = ""  # where it was read: config.json quantization_config, hf_quant_config.json


@dataclass(frozen=True)
class ModelSpec:
    """A decoder model's geometry, as vLLM sees it (hf_text_config)."""

    name: str
    model_type: str
    architectures: tuple[str, ...]
    dtype: str  # checkpoint dtype after vLLM's 'auto' rule: bfloat16 | float16 | float32
    num_hidden_layers: int
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_kv_heads: int  # of the full-attention layers (what TP divisibility is checked against)
    head_dim: int
    vocab_size: int
    layers: tuple[LayerGeometry, ...]
    quant: Quantization = field(default_factory=Quantization)
    tie_word_embeddings: bool = False
    max_len_keys: tuple[tuple[str, int], ...] = ()  # the config keys vLLM derives max_model_len from
    rope_scaling: tuple[tuple[str, Any], ...] = ()
    is_mla: bool = False
    is_multimodal: bool = False
    is_attention_free: bool = False
    weights_bytes: int | None = None  # checkpoint tensor bytes when known (safetensors index)
    weights_source: str | None = None
    hf_id: str | None = None
    notes: tuple[str, ...] = ()  # traps handled and defaults taken, shown to the user
    # how the geometry was inferred rather than read from this model's own config.json (a derivative's name,
    # a path's last part, a derived catalog entry): check reports it (model-inferred)
    inferred: str | None = None
    text_config: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    full_config: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @cached_property  # frozen: computed once (every estimate asks, per layer group)
    def has_mamba(self) -> bool:
        return any(layer.kind == "mamba" for layer in self.layers)

    @property
    def mamba_all_mode_capable(self) -> bool:
        """Whether vLLM's 'all' Mamba cache mode (prefix caching, 0.15-0.27) serves this model.

        Only models implementing SupportsMambaPrefixCaching get it: the Mamba1 / Mamba2 families
        (mamba, mamba2, jamba, bamba, nemotron_h, falcon_h1, granitemoehybrid, zamba2 in
        vllm/model_executor/models, 0.19.0-0.25.1); Gated DeltaNet, KDA, linear attention and short
        convolutions fall back to 'align' (model_executor/models/config.py, 0.24.0).
        """
        variants = {layer.mamba.variant for layer in self.layers if layer.mamba is not None}
        return bool(variants) and variants <= {"mamba1", "mamba2"}

    @property
    def is_hybrid(self) -> bool:
        kinds = {layer.kind for layer in self.layers}
        return len(kinds) > 1

    def layers_of(self, kind: LayerKind) -> tuple[LayerGeometry, ...]:
        return tuple(layer for layer in self.layers if layer.kind == kind)
