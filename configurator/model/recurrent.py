"""Recurrent-state geometry of hybrid layers (Mamba, Mamba2, Gated DeltaNet, Kimi Delta Attention, short conv)."""

from __future__ import annotations

from configurator.model.spec import MambaGeometry


def mamba_geometry(cfg: dict, model_type: str) -> MambaGeometry | None:
    """Recurrent-state geometry from the config's own key names (one family at a time)."""
    ssm_dtype = cfg.get("mamba_ssm_dtype") or cfg.get("mamba_ssm_cache_dtype")
    ssm_dtype = str(ssm_dtype) if ssm_dtype else None
    if cfg.get("linear_num_value_heads"):  # Gated DeltaNet: Qwen3-Next, Qwen3.5, Qwen3.6
        return MambaGeometry(
            "gdn", conv_kernel=int(cfg.get("linear_conv_kernel_dim") or 4),
            num_heads=int(cfg["linear_num_value_heads"]), head_dim=int(cfg["linear_value_head_dim"]),
            num_k_heads=int(cfg["linear_num_key_heads"]), k_head_dim=int(cfg["linear_key_head_dim"]),
            ssm_dtype=ssm_dtype)
    kda = kda_geometry(cfg)
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


def kda_geometry(cfg: dict) -> MambaGeometry | None:
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
