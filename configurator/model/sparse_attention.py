"""The extra caches of sparse attention: DSA indexer keys, DeepSeek-V4's compressed latents, block-sparse index keys."""

from __future__ import annotations

from configurator.model.spec import LayerGeometry

# Sparse-attention (DSA) MLA models keep a second, per-token indexer key cache beside the latent.
DSA_MODEL_TYPES = frozenset({"deepseek_v32", "glm_moe_dsa"})
# Per-layer type names of a DSA layer: GLM-5.x's layer_types ("deepseek_sparse_attention",
# vllm/models/glm5next/common/model.py, 0.33.0) and transformers' GlmMoeDsaConfig default
# ("indexed_attention", transformers==5.24.0 models/glm_moe_dsa/configuration_glm_moe_dsa.py).
DSA_LAYER_TYPES = frozenset({"deepseek_sparse_attention", "indexed_attention"})


def dsa_indexer_layers(cfg: dict, model_type: str, n: int, layers: list[LayerGeometry],
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


def compress_ratios(cfg: dict) -> list[int]:
    """Per-layer KV compress ratios (0 = sliding window only), MTP layers included.

    vllm/transformers_utils/deepseek_v4_utils.py::getcompress_ratios (0.33.0): the config's
    compress_ratios, else compress_rates[layer_type] over layer_types (upstream DeepseekV4Config).
    """
    ratios = cfg.get("compress_ratios")
    if isinstance(ratios, list):
        return [int(r or 0) for r in ratios]
    rates, types = cfg.get("compress_rates"), cfg.get("layer_types")
    if isinstance(rates, dict) and isinstance(types, list):
        return [int(rates.get(t) or 0) for t in types]
    return []


def compressed_sparse_layers(cfg: dict, n: int, head_dim: int, ratios: list[int], window: int | None,
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


def block_sparse_indexer_layers(cfg: dict, n: int, notes: list[str]) -> list[LayerGeometry]:
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
