"""Attention and mixer parameters of one decoder layer: GQA, MLA, compressed sparse, recurrent."""

from __future__ import annotations

from configurator.model.spec import ModelSpec


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


def csa_params(c: dict, h: int, heads: int, ratio: int) -> tuple[int, int, int]:
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


def mla_params(c: dict, h: int, heads: int) -> int:
    """One MLA layer's projections: q (through q_lora_rank when set), kv_a, kv_b and o."""
    rope = int(c.get("qk_rope_head_dim") or 64)
    nope = int(c.get("qk_nope_head_dim") or 128)
    v = int(c.get("v_head_dim") or 128)
    kv_rank = int(c.get("kv_lora_rank") or 512)
    q_rank = c.get("q_lora_rank")
    q = (h * int(q_rank) + int(q_rank) * heads * (nope + rope)) if q_rank else h * heads * (nope + rope)
    return q + h * (kv_rank + rope) + kv_rank * heads * (nope + v) + heads * v * h


def attention_by_layer(model: ModelSpec) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
    """Per decoder layer holding attention: (its quantizable attention linears, the replicated ones among them,
    its 16-bit extras), by layer index."""
    c = model.text_config
    h = model.hidden_size
    heads = model.num_attention_heads
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
            attn_by_layer[g.index], repl_by_layer[g.index], other_by_layer[g.index] = csa_params(c, h, heads, r)
        elif model.is_mla:
            attn_by_layer[g.index] = mla_params(c, h, heads)
        else:
            q = heads * g.head_size
            kv = g.num_kv_heads * (g.head_size + g.head_size_v)
            attn_by_layer[g.index] = h * q * (1 + gate) + h * kv + q * h
    return attn_by_layer, repl_by_layer, other_by_layer


def mixer_by_layer(model: ModelSpec) -> dict[int, int]:
    """The projections of each recurrent (Mamba, Gated DeltaNet, linear-attention) layer, by layer index."""
    h = model.hidden_size
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
    return mamba_by_layer
