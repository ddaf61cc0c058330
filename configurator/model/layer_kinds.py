"""Which KV-cache spec each decoder layer registers, one reader per way a config declares its layer kinds."""

from __future__ import annotations

from collections.abc import Callable

from configurator.errors import ConfigError
from configurator.model.recurrent import mamba_geometry
from configurator.model.sparse_attention import DSA_LAYER_TYPES, compress_ratios, compressed_sparse_layers
from configurator.model.spec import LayerGeometry, MambaGeometry

# one attention layer's geometry: attn(index, kind, kv heads, head_dim, v head_dim, window, why)
AttnFn = Callable[..., LayerGeometry]


def is_latent_split_mha(cfg: dict) -> bool:
    """A q/kv-LoRA attention that caches full K and V per head (not an MLA latent).

    vLLM 0.33.0 model_executor/models/minicpm3.py::MiniCPM3Attention: Attention(num_heads,
    qk_head_dim = qk_nope_head_dim + qk_rope_head_dim, num_kv_heads=num_heads), V zero-padded to
    qk_head_dim. Applies when the model type is not one vLLM runs as MLA (is_deepseek_mla).
    """
    return isinstance(cfg.get("qk_nope_head_dim"), int) and isinstance(cfg.get("qk_rope_head_dim"), int) \
        and cfg.get("kv_lora_rank") is not None


class _Decoder:
    """What every layer-kind reader needs: the config and the model's default attention geometry (a plain class:
    a dataclass would cost the cold start its decorator's work)."""

    __slots__ = ("attn", "cfg", "head_dim", "kv_heads", "mamba", "model_type", "n", "notes", "num_heads", "window")

    def __init__(self, cfg: dict, model_type: str, n: int, num_heads: int, kv_heads: int, head_dim: int,
                 window: int | None, attn: AttnFn, mamba: MambaGeometry | None, notes: list[str]) -> None:
        self.cfg, self.model_type, self.n, self.num_heads, self.kv_heads = cfg, model_type, n, num_heads, kv_heads
        self.head_dim, self.window, self.attn, self.mamba, self.notes = head_dim, window, attn, mamba, notes


def _attention(kv_heads: int, head_dim: int, head_v: int, is_mla: bool) -> AttnFn:
    """The builder of one attention layer, defaulting to the model's KV heads and head sizes."""

    def attn(i: int, kind: str = "full", heads: int = kv_heads, hd: int = head_dim, hv: int = head_v,
             win: int | None = None, why: str = "") -> LayerGeometry:
        if is_mla:
            return LayerGeometry(i, "mla", 1, hd, 0, why=why or "MLA latent (kv_lora_rank + qk_rope_head_dim)")
        return LayerGeometry(i, kind, heads, hd, hv, window=win, why=why)  # type: ignore[arg-type]

    return attn


def layer_geometries(cfg: dict, model_type: str, n: int, num_heads: int, kv_heads: int, head_dim: int,
                     is_mla: bool, notes: list[str]) -> list[LayerGeometry]:
    """Which spec each decoder layer registers, following each family's own declaration."""
    head_v = int(cfg.get("v_head_dim") or 0) if not is_mla else 0
    if (head_v == 0 and not is_mla) or is_latent_split_mha(cfg):
        head_v = head_dim  # MiniCPM3 pads V to qk_head_dim
    window = cfg.get("sliding_window")
    if window == 0:
        window = None  # vLLM treats sliding_window 0 as none
    attn = _attention(kv_heads, head_dim, head_v, is_mla)
    mamba = mamba_geometry(cfg, model_type)

    ratios = compress_ratios(cfg)
    if ratios and is_mla:
        return compressed_sparse_layers(cfg, n, head_dim, ratios, window, notes)

    d = _Decoder(cfg, model_type, n, num_heads, kv_heads, head_dim, window, attn, mamba, notes)
    for family in (_hybrid_override_layers, _block_config_layers, _hybrid_layer_pattern_layers, _jamba_layers,
                   _falcon_h1_layers):
        out = family(d)
        if out is not None:
            return out
    kinds = _layer_kinds(d)
    shared = _shared_and_global(d)  # read (and checked) whatever the kinds
    if kinds is None:
        return _uniform_layers(d)
    return _typed_layers(d, kinds, *shared)


def _hybrid_override_layers(d: _Decoder) -> list[LayerGeometry] | None:
    """Nemotron-H: one character per layer: M Mamba2, * attention, - MLP, E MoE."""
    pattern = d.cfg.get("hybrid_override_pattern")
    if not (isinstance(pattern, str) and pattern):
        return None
    out: list[LayerGeometry] = []
    for i, ch in enumerate(pattern):
        if ch == "*":
            out.append(d.attn(i, why="attention layer ('*' in hybrid_override_pattern)"))
        elif ch == "M":
            out.append(LayerGeometry(i, "mamba", mamba=d.mamba, why="Mamba2 layer: fixed state ('M')"))
    d.notes.append(f"hybrid_override_pattern: {pattern.count('*')} attention, {pattern.count('M')} Mamba2, "
                   f"{len(pattern) - pattern.count('*') - pattern.count('M')} MLP/MoE-only layers")
    return out


def _block_config_layers(d: _Decoder) -> list[LayerGeometry] | None:
    """DeciLM / Nemotron-NAS: per-layer block_configs; no_op attention keeps no cache."""
    blocks = d.cfg.get("block_configs")
    if not (isinstance(blocks, list) and blocks and isinstance(blocks[0], dict) and "attention" in blocks[0]):
        return None
    out: list[LayerGeometry] = []
    skipped = 0
    for i, b in enumerate(blocks):
        a = b.get("attention") or {}
        if a.get("no_op") or a.get("replace_with_linear"):
            skipped += 1
            continue
        group = a.get("n_heads_in_group") or 1
        out.append(d.attn(i, heads=d.num_heads // int(group), why=f"attention with n_heads_in_group {group}"))
    d.notes.append(f"block_configs: {skipped} of {len(blocks)} layers have no attention (no_op / linear)")
    return out


def _hybrid_layer_pattern_layers(d: _Decoder) -> list[LayerGeometry] | None:
    """MiMo-V2-Flash: hybrid_layer_pattern 1 = sliding-window layer (own head counts), 0 = full."""
    cfg = d.cfg
    hlp = cfg.get("hybrid_layer_pattern")
    if not (isinstance(hlp, list) and hlp):
        return None
    swa_heads = int(cfg.get("swa_num_key_value_heads") or d.kv_heads)
    swa_hd = int(cfg.get("swa_head_dim") or d.head_dim)
    swa_hv = int(cfg.get("swa_v_head_dim") or swa_hd)
    win = cfg.get("sliding_window_size") or d.window
    out: list[LayerGeometry] = []
    for i, flag in enumerate(hlp):
        if flag:
            out.append(d.attn(i, "sliding", swa_heads, swa_hd, swa_hv, win, f"sliding window {win}"))
        else:
            out.append(d.attn(i, why="full attention"))
    return out


def _jamba_layers(d: _Decoder) -> list[LayerGeometry] | None:
    """Jamba: attention every attn_layer_period layers at attn_layer_offset, Mamba elsewhere."""
    if not (d.cfg.get("attn_layer_period") and d.model_type.startswith("jamba")):
        return None
    period, offset = int(d.cfg["attn_layer_period"]), int(d.cfg.get("attn_layer_offset", 0))
    out: list[LayerGeometry] = []
    for i in range(d.n):
        if i % period == offset:
            out.append(d.attn(i, why="attention layer (attn_layer_period/offset)"))
        else:
            out.append(LayerGeometry(i, "mamba", mamba=d.mamba, why="Mamba layer: fixed state"))
    return out


def _falcon_h1_layers(d: _Decoder) -> list[LayerGeometry] | None:
    """Falcon-H1: every layer runs attention and Mamba2 in parallel."""
    if d.model_type != "falcon_h1":
        return None
    out: list[LayerGeometry] = []
    for i in range(d.n):
        out.append(d.attn(i, why="attention half of a parallel hybrid layer"))
        out.append(LayerGeometry(i, "mamba", mamba=d.mamba, why="Mamba2 half of a parallel hybrid layer"))
    return out


def _layer_kinds(d: _Decoder) -> list[str] | None:
    """The per-layer type names a config declares (layer_types or a family's own keys); None: all alike."""
    cfg, model_type, n, window = d.cfg, d.model_type, d.n, d.window
    types = cfg.get("layer_types")
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
        d.notes.append(f"linear_attn_config: {len(kda & set(range(1, n + 1)))} Kimi Delta Attention layers "
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
    return kinds


def _uniform_layers(d: _Decoder) -> list[LayerGeometry]:
    """No per-layer kinds: every layer full attention, or a sliding window on every layer."""
    window = d.window
    uniform_sw = window is not None and d.cfg.get("use_sliding_window", True) is not False
    if window is not None and not uniform_sw:
        d.notes.append(f"sliding_window {window} declared but use_sliding_window is false: full attention")
    out: list[LayerGeometry] = []
    for i in range(d.n):
        if uniform_sw:
            out.append(d.attn(i, "sliding", win=int(window), why=f"sliding window {window} on every layer"))
        else:
            out.append(d.attn(i, why="full attention"))
    return out


def _shared_and_global(d: _Decoder) -> tuple[int, int, int]:
    """(num_kv_shared_layers, the global layers' head_dim, their KV heads)."""
    cfg = d.cfg
    shared = int(cfg.get("num_kv_shared_layers") or 0)
    global_hd = int(cfg.get("global_head_dim") or d.head_dim)
    # Gemma 4: global layers use global_head_dim, and num_global_key_value_heads only when
    # attention_k_eq_v (vllm/model_executor/models/gemma4.py)
    global_kv = int(cfg.get("num_global_key_value_heads") or d.kv_heads) if cfg.get("attention_k_eq_v") \
        else d.kv_heads
    return shared, global_hd, global_kv


def _typed_layers(d: _Decoder, kinds: list[str], shared: int, global_hd: int, global_kv: int) -> list[LayerGeometry]:
    """One spec per declared layer type; the last num_kv_shared_layers keep none of their own."""
    cfg, window, attn = d.cfg, d.window, d.attn
    first_shared = d.n - shared if shared else d.n
    out: list[LayerGeometry] = []
    for i, t in enumerate(kinds):
        if i >= first_shared:
            continue  # KV shared with an earlier layer (Gemma 3n / 4 num_kv_shared_layers): no cache
        if t in ("sliding_attention", "sliding", "local", "local_attention"):
            out.append(attn(i, "sliding", win=int(window) if window else None, why=f"sliding window {window}"))
        elif t in ("chunked_attention",):
            c = int(cfg["attention_chunk_size"])
            out.append(attn(i, "chunked", win=c, why=f"chunked local attention, chunk {c}"))
        elif t in DSA_LAYER_TYPES:
            # GLM-5.x: an MLA layer whose indexer cache sparse_attention.dsa_indexer_layers adds
            out.append(attn(i, why="sparse MLA (DSA) layer"))
        elif t in ("full_attention", "attention", "global", "global_attention", "hybrid"):
            if global_hd != d.head_dim or global_kv != d.kv_heads:
                hv = global_hd
                out.append(attn(i, "full", global_kv, global_hd, hv,
                                why=f"global attention ({global_kv} KV heads x head_dim {global_hd})"))
            else:
                out.append(attn(i, why="full attention"))
        elif t in ("linear_attention", "mamba", "mamba2", "minimax_linear", "conv"):
            out.append(_recurrent_layer(d, i, t))
        elif t in ("moe", "mlp", "none", "identity"):
            continue
        else:
            raise ConfigError(f"layer {i} has an unknown layer type '{t}'")
    if shared:
        d.notes.append(f"the last {shared} layers reuse earlier layers' KV (num_kv_shared_layers): "
                       "no cache of their own")
    return out


def _recurrent_layer(d: _Decoder, i: int, t: str) -> LayerGeometry:
    """A linear-attention / Mamba / short-conv layer: a fixed state per sequence."""
    g = d.mamba
    if t == "minimax_linear":
        g = MambaGeometry("linear_attention", num_heads=d.num_heads, head_dim=d.head_dim)
    if g is None:
        raise ConfigError(f"layer {i} is '{t}' but the config has no recurrent-state geometry")
    label = {"gdn": "Gated DeltaNet", "kda": "Kimi Delta Attention", "mamba2": "Mamba2",
             "mamba1": "Mamba", "short_conv": "short convolution",
             "linear_attention": "linear attention"}[g.variant]
    return LayerGeometry(i, "mamba", mamba=g, why=f"{label} layer: fixed state per sequence")
