"""What one decode or prefill step of a model moves and computes, per GPU, from its ModelSpec.

Parameters come from the project's own count (configurator.memory.weights.count_params) and their widths from
the checkpoint's quantization (quant_method_bits / expert_bytes_per_param), so a model the memory estimate
knows has a speed geometry too. Nothing here is keyed on a model name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from configurator.memory.kv_dtype import DTYPE_BYTES, KV_DTYPES, MODEL_DTYPE_KV
from configurator.memory.weights import (
    QUANT_BITS,
    count_params,
    expert_bytes_per_param,
    experts_per_token,
    moe_layer,
    num_experts,
    quant_method_bits,
)
from configurator.model.spec import ModelSpec

# bytes per weight for a weight dtype the checkpoint does not declare (a point's or a user's override)
OVERRIDE_BYTES = {"int4": 4.16 / 8, "w4a16": 4.16 / 8, "awq": 4.16 / 8, "gptq": 4.16 / 8, "int8": 1.0, "w8a8": 1.0,
                  "fp8": 1.0, "mxfp4": 4.25 / 8, "nvfp4": 4.5 / 8, "fp4": 4.5 / 8, "bfloat16": 2.0, "bf16": 2.0,
                  "float16": 2.0, "fp16": 2.0}
# quantization methods whose GEMMs run on the quantized dtype's tensor cores (W8A8 / W4A4); the rest dequantize
# to 16 bits (W4A16 / W8A16 Marlin, MXFP4 on Hopper) and compute at the 16-bit rate
_FP8_COMPUTE = {"fp8", "w8a8", "modelopt", "fbgemm_fp8", "compressed-tensors-fp8"}
_FP4_COMPUTE = {"nvfp4", "modelopt_fp4", "fp4"}


@dataclass(frozen=True)
class Geometry:
    """Per-token and per-step quantities of a model at a tensor-parallel size (per GPU)."""

    layers: int
    hidden: int
    dense_bytes: float  # weights every decode step reads on one rank: attention, dense MLPs, norms, lm_head
    expert_bytes: float  # all routed experts on one rank (0 for a dense model)
    num_experts: int
    top_k: int
    active_params: float  # parameters one token multiplies on one rank (the top-k experts only)
    expert_active_params: float  # the routed experts' part of active_params
    moe_layers: int  # decoder layers with routed experts
    kv_bytes_per_token: float  # KV bytes one token of context holds on one rank, all full-attention layers
    window_kv: tuple[tuple[int, float], ...]  # (window, bytes per token on one rank) of sliding-window layers
    attn_width: float  # heads x head_dim per rank summed over attention layers: attention FLOPs per context token
    compute: str  # dtype the GEMMs run at: bf16, fp8, fp4
    weight_note: str
    # activation bytes the elementwise kernels between the GEMMs move (SiluAndMul reads gate and up, writes their
    # product: vllm/model_executor/layers/activation.py), per token through the dense MLPs, and per (token,
    # expert) pair through the routed experts (with the pair's hidden state gathered in, its output written and
    # read back by the weighted sum: fused_moe / moe_sum in vllm/model_executor/layers/fused_moe), on one rank
    act_bytes_token: float = 0.0
    act_bytes_pair: float = 0.0
    # weights stored narrower than the 16 bits their GEMMs compute at, so each GEMM dequantizes them in its inner
    # loop (weight-only W4A16 / W8A16 kernels: Marlin, AWQ, GPTQ; FP8 on a GPU without FP8 tensor cores; MXFP4
    # experts): the dense layers' GEMMs, and the routed experts'
    dequant_dense: bool = False
    dequant_experts: bool = False
    # one routed expert's intermediate width on one rank: moe_intermediate_size / tp, whole with expert parallel
    # (the N of its gate/up GEMM and the K of its down GEMM in the fused-MoE kernel)
    expert_width: float = 0.0
    # the lm_head's parameters on one rank (vocab-parallel over tp), part of active_params: vLLM multiplies it only
    # for the rows it samples, one per scheduled request (gpu_model_runner: hidden_states[logits_indices] into
    # compute_logits), not for every prompt token of a prefill (speed.model.step_time counts a step's prefills
    # as one request)
    head_params: float = 0.0

    def kv_read_bytes(self, ctx: float) -> float:
        """KV bytes one decode token reads at a context of `ctx` tokens (sliding windows read their window)."""
        return self.kv_bytes_per_token * ctx + sum(b * min(ctx, w) for w, b in self.window_kv)

    def experts_touched(self, tokens: float) -> float:
        """Expected fraction of a layer's routed experts some token of a batch of `tokens` is routed to (uniform
        routing): the active experts only at batch 1, all of them at large batches."""
        if not self.num_experts or not self.top_k:
            return 0.0
        return 1.0 - (1.0 - min(1.0, self.top_k / self.num_experts)) ** max(tokens, 1.0)


def kv_dtype_bytes(model: ModelSpec, kv_cache_dtype: str | None) -> float:
    """Bytes per K (or V) element: `auto` is the checkpoint's declared KV dtype, else its model dtype."""
    name = (kv_cache_dtype or "auto").lower()
    if name == "auto":
        name = model.quant.kv_cache_dtype or MODEL_DTYPE_KV.get(model.dtype, "bfloat16")
    d = KV_DTYPES.get(name)
    return d.element_bits / 8 if d else float(DTYPE_BYTES.get(name, 2))


def geometry(model: ModelSpec, *, tp: int = 1, ep_size: int = 1, weight_dtype: str | None = None,
             kv_cache_dtype: str | None = None, gpu_has_fp8: bool = True) -> Geometry:
    """The step geometry on one GPU. `ep_size` > 1 spreads the routed experts over that many GPUs (expert
    parallel: tp x dp) instead of slicing each over tp; `weight_dtype` overrides the checkpoint's width."""
    c = model.text_config
    p = count_params(model)
    dt = DTYPE_BYTES.get(model.dtype, 2)
    method, bits = quant_method_bits(model, None)
    expert_params = float(sum(p.per_layer_experts))
    linear_params = float(sum(p.per_layer_linear)) - expert_params
    other = float(sum(p.per_layer_other))
    head = float(p.lm_head or p.embedding)  # the lm_head GEMM reads the (tied) embedding matrix every step
    if weight_dtype:
        w = OVERRIDE_BYTES.get(weight_dtype.lower()) or QUANT_BITS.get(weight_dtype.lower(), 16.0) / 8
        lin_b = exp_b = w
        method = weight_dtype.lower()
        note = f"weights {weight_dtype} ({w:.2f} B/param, set)"
    else:
        exp_b = expert_bytes_per_param(model, None, None)
        lin_b = dt if method == "mxfp4" else (bits / 8 if bits else dt)  # MXFP4 leaves attention in 16 bits
        note = f"weights {method or model.dtype} ({lin_b:.2f} B/param dense, {exp_b:.2f} experts)"
    e, k = num_experts(c), experts_per_token(c)
    dense_bytes = (linear_params * lin_b + other * dt + head * dt) / tp
    ep = max(ep_size, tp)
    expert_bytes = expert_params * exp_b / ep
    routed = (expert_params * k / e if e else expert_params) / (ep_size if e and ep_size > tp else tp)
    active = (linear_params + head) / tp + routed  # EP: a rank multiplies its own experts' share of the tokens
    kvb = kv_dtype_bytes(model, kv_cache_dtype)
    full, windows, width = 0.0, {}, 0.0
    heads = max(1, model.num_attention_heads // tp)
    for layer in model.layers:
        if layer.kind == "mamba" or not layer.head_size:
            continue
        if layer.head_size_v == 0 and model.is_mla:  # one latent per token, every rank holds it whole
            b = layer.head_size * kvb
            width += model.num_attention_heads / tp * layer.head_size
        else:
            kv_heads = max(1, math.ceil(layer.num_kv_heads / tp))
            b = kv_heads * (layer.head_size + (layer.head_size_v or layer.head_size)) * kvb
            width += heads * layer.head_size
        if layer.window:
            windows[layer.window] = windows.get(layer.window, 0.0) + b
        else:
            full += b
    moe_layers = sum(moe_layer(c, i) for i in range(model.num_hidden_layers)) if e else 0
    inter = float(c.get("intermediate_size") or 0)
    moe_inter = float(c.get("moe_intermediate_size") or inter)
    act_token = 3 * inter / tp * 2 * (model.num_hidden_layers - moe_layers)
    # with expert parallelism a rank holds whole experts
    expert_width = moe_inter / (1 if ep_size > 1 else tp) if e else 0.0
    act_pair = (3 * expert_width + 3 * model.hidden_size) * 2 * moe_layers
    m = (method or "").lower()
    compute = "fp8" if (m in _FP8_COMPUTE and gpu_has_fp8) else ("fp4" if m in _FP4_COMPUTE else "bf16")
    narrow = compute == "bf16"  # a GEMM at the 16-bit rate over weights of fewer bytes dequantizes them
    return Geometry(layers=model.num_hidden_layers, hidden=model.hidden_size, dense_bytes=dense_bytes,
                    expert_bytes=expert_bytes, num_experts=e, top_k=k, active_params=active,
                    expert_active_params=routed,
                    moe_layers=moe_layers,
                    kv_bytes_per_token=full, window_kv=tuple(sorted(windows.items())), attn_width=width,
                    compute=compute, weight_note=note, act_bytes_token=act_token, act_bytes_pair=act_pair,
                    dequant_dense=narrow and lin_b < dt, dequant_experts=narrow and bool(e) and exp_b < dt,
                    expert_width=expert_width, head_params=head / tp)
