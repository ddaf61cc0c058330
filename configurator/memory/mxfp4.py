"""MXFP4 routed experts on the GPU: which kernel vLLM picks, its padding, and the bytes it holds."""

from __future__ import annotations

from configurator.model.spec import ModelSpec
from configurator.units import cdiv
from configurator.vllm.versions import _key


def mxfp4_experts(model: ModelSpec, method: str | None) -> bool:
    """The routed experts load through Mxfp4MoEMethod: an MXFP4 checkpoint, or an FP8 one whose config says
    expert_dtype 'fp4' (vllm/models/deepseek_v4/quant_config.py DeepseekV4FP8Config.get_quant_method, 0.25.0:
    FP8 block-scaled linears, Mxfp4MoEMethod for RoutedExperts unless moe_quant_algo is NVFP4)."""
    if method == "mxfp4":
        return True
    c = model.text_config
    qc = model.full_config.get("quantization_config") or c.get("quantization_config") or {}
    algo = str(qc.get("moe_quant_algo") or "").upper() if isinstance(qc, dict) else ""
    return method in ("fp8", "deepseek_v4_fp8") and str(c.get("expert_dtype") or
                                                         model.full_config.get("expert_dtype") or "") == "fp4" \
        and algo != "NVFP4"


MXFP4_BLOCK = 32  # elements per e8m0 scale


# the first release whose MXFP4 MoE backend comes from fused_moe/oracle/mxfp4.py (select_mxfp4_moe_backend);
# before it, quantization/mxfp4.py get_mxfp4_backend chooses
MXFP4_ORACLE_SINCE = "0.19.0"


# the first release whose wheel carries triton_kernels (vllm/third_party/triton_kernels, which
# utils/import_utils.py has_triton_kernels accepts) and requires flashinfer-python (Requires-Dist, not an extra):
# present in the 0.12.0, 0.13.0 and 0.15.0 wheels, absent from 0.11.0's and 0.11.2's
MXFP4_KERNELS_IN_WHEEL_SINCE = "0.12.0"


# flashinfer-python: an extra of the 0.11.0 wheel, a requirement of 0.11.2's (0.11.1 not read)
FLASHINFER_IN_WHEEL_SINCE = "0.11.2"


def mxfp4_backend_alignment(capability: int, version: str = "") -> tuple[int, int]:
    """(hidden, intermediate) alignment of the MXFP4 MoE kernel vLLM picks on a GPU, for a release.

    Before MXFP4_ORACLE_SINCE (vllm==0.11.0 model_executor/layers/quantization/mxfp4.py lines 59-107,
    get_mxfp4_backend): FlashInfer only when it is installed (the wheel's `flashinfer` extra; on SM90 also only
    with VLLM_USE_FLASHINFER_MOE_MXFP4_BF16), else Triton only with the optional `triton_kernels` package, which
    the wheel does not require (its Requires-Dist names torch==2.8.0 and no triton_kernels), else Marlin: a
    plain `pip install vllm` runs Marlin on every CUDA GPU (0.11.2: the same, except FlashInfer, now required,
    on SM100: (256, 256)). Mxfp4MoEMethod.create_weights (lines 189-205) pads
    Marlin's hidden size to 256 and the per-rank intermediate to 128 ("n % 256 == 0 and k % 128 == 0").
    gpt-oss-120b on one H100: hidden 2,880 -> 3,072, intermediate 2,880 -> 2,944, 'Model loading took 65.97
    GiB' (vLLM issue #23278, Marlin; data/notes/vllm-memory-notes.md), not the 60.8 GiB of the raw shapes.

    From MXFP4_KERNELS_IN_WHEEL_SINCE to the oracle (vllm==0.12.0 / 0.15.0 quantization/mxfp4.py
    get_mxfp4_backend): FlashInfer MXFP4 BF16 on the SM100 family (256, 256), Triton on (9,0) <= cc < (11,0)
    (intermediate to 64), else Marlin (256, 128).

    From MXFP4_ORACLE_SINCE:
    vllm/model_executor/layers/fused_moe/oracle/mxfp4.py (0.19.0; same rule in 0.24.0 / 0.25.1):
    select_mxfp4_moe_backend tries FLASHINFER_TRTLLM (SM100 family) > TRITON ((9,0) <= cc < (11,0))
    > FLASHINFER_CUTLASS (SM90/100/110/120) > MARLIN (cc >= 7.5); mxfp4_round_up_hidden_size_and_
    intermediate_size pads TRTLLM to (256, 256), CUTLASS to (128, 128), MARLIN to (256, 128) and the
    Triton path's intermediate to 64. gpt-oss-20b on an A100 (Marlin): hidden 2,880 -> 3,072,
    intermediate 2,880 -> 2,944: the experts take 11.07 GB instead of 10.15 GB."""
    if version and _key(version) < _key(MXFP4_KERNELS_IN_WHEEL_SINCE):
        # FlashInfer MXFP4 BF16 on SM100 once the wheel requires FlashInfer (0.11.2), else Marlin
        return (256, 256) if capability == 100 and _key(version) >= _key(FLASHINFER_IN_WHEEL_SINCE) else (256, 128)
    if version and _key(version) < _key(MXFP4_ORACLE_SINCE) and capability >= 110:
        return 256, 128  # Marlin: no CUTLASS MXFP4 path before the oracle, Triton only below (11, 0)
    if 100 <= capability < 110:
        return 256, 256
    if 90 <= capability < 110:
        return 1, 64
    if capability >= 110:
        return 128, 128
    return 256, 128


# the first release whose Triton MXFP4 path frees the checkpoint's block scales once swizzled (fused_moe/oracle/
# mxfp4.py TRITON_BACKENDS branch, 0.25.0: `del layer.w13_weight_scale`); 0.12.0-0.24.0 delete only the weights
MXFP4_TRITON_FREES_SCALES_SINCE = "0.25.0"


def _pad(x: int, m: int) -> int:
    return cdiv(x, m) * m


def mxfp4_expert_bytes(experts: tuple[int, int, int], tp: int, capability: int, bias: bool = True,
                       version: str = "") -> float:
    """One MoE layer's experts on one TP rank: uint8 e2m1 pairs + one uint8 e8m0 scale per 32
    (Mxfp4MoEMethod.create_weights: w13 [E, 2I, H/2], w2 [E, H, I/2], scales /32), on the padded
    shapes, plus the bf16 biases (w13_bias [E, 2I], w2_bias [E, H]); Marlin's repacking keeps the
    sizes (marlin_utils_fp4.prepare_moe_mxfp4_layer_for_marlin: scales back to e8m0).

    The Triton path on Hopper re-lays the experts out after loading (vllm==0.15.0 quantization/mxfp4.py lines
    745-784, utils/mxfp4_utils.py _swizzle_mxfp4; the same in the 0.19.0-0.24.0 oracle): the biases become
    float32; the weights are swizzled (triton_kernels HopperMXValueLayout: a [M, K] byte matrix padded to 16 x
    32, the originals deleted); the scales are swizzled into a new tensor (HopperMXScaleLayout, num_warps 8: M
    padded to 2 x 8 x 2 x 8 = 256, K to 2) while the checkpoint's scales stay registered on the layer until
    0.25.0 frees them. gpt-oss-120b on one H100: 60.78 GiB of raw shapes + 3.46 GiB of swizzled scales + 0.07
    GiB of float32 biases = 64.32 GiB, logged 'Model loading took 64.38 GiB' (Triton, vLLM issue #33155;
    data/notes/vllm-memory-notes.md). Without a release (version ''), only the padded shapes are counted."""
    n, h, inter = experts  # ParamCounts.experts: (num_experts, hidden, moe_intermediate)
    ah, ai = mxfp4_backend_alignment(capability, version)
    hp = cdiv(h, ah) * ah
    ip = cdiv(cdiv(inter, tp), ai) * ai
    elements = n * 3 * hp * ip
    raw_scales = n * 3 * hp * ip / MXFP4_BLOCK
    if version and (ah, ai) == (1, 64) and 90 <= capability < 100:  # Triton with Hopper layouts, for a release
        values = n * (_pad(2 * ip, 16) * _pad(hp // 2, 32) + _pad(hp, 16) * _pad(ip // 2, 32))
        swizzled = n * (_pad(2 * ip, 256) * _pad(cdiv(hp, MXFP4_BLOCK), 2)
                        + _pad(hp, 256) * _pad(cdiv(ip, MXFP4_BLOCK), 2))
        kept = raw_scales if version and _key(version) < _key(MXFP4_TRITON_FREES_SCALES_SINCE) else 0
        return values + swizzled + kept + (n * (2 * ip + hp) * 4 if bias else 0)
    return elements * 0.5 + raw_scales + (n * (2 * ip + hp) * 2 if bias else 0)
