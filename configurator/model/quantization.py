"""The weights' quantization and the KV-cache dtype a checkpoint's config.json / hf_quant_config.json declare."""

from __future__ import annotations

from typing import Any

from configurator.model.spec import Quantization


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
