"""`--kv-cache-dtype` values and the bytes each stores per head and token.

Source: vllm/config/cache.py (CacheDType), vllm/utils/torch_utils.py (STR_DTYPE_TO_TORCH_DTYPE),
and the backends' `customize_spec` for the packed formats (vLLM 0.33).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KVDtype:
    """How one K (or V) vector of `head_size` elements is stored."""

    name: str
    element_bits: int  # 16, 8 or 4
    scale_bytes_per_head: int = 0  # inline per-token-head scales (the *_per_token_head formats)
    block_scale_every: int = 0  # an fp8 scale byte per this many elements (nvfp4: 16)
    mla_token_bytes: int | None = None  # packed sparse-MLA layouts: bytes per token per layer
    is_fp8: bool = False

    def head_bytes(self, head_size: int) -> int:
        """Bytes of one head's K (or V) for one token. e.g. fp16, 128 -> 256 B; nvfp4, 128 -> 72 B."""
        data = head_size * self.element_bits // 8
        scales = head_size // self.block_scale_every if self.block_scale_every else 0
        return data + scales + self.scale_bytes_per_head


KV_DTYPES: dict[str, KVDtype] = {d.name: d for d in (
    KVDtype("float16", 16),
    KVDtype("bfloat16", 16),
    KVDtype("float32", 32),
    KVDtype("fp8", 8, is_fp8=True),  # = fp8_e4m3 on CUDA and ROCm
    KVDtype("fp8_e4m3", 8, is_fp8=True),
    KVDtype("fp8_e5m2", 8, is_fp8=True),
    KVDtype("fp8_inc", 8, is_fp8=True),  # Intel Gaudi
    # FlashMLA sparse layout: 512 fp8 NoPE + 4 fp32 scales + 64 bf16 RoPE = 656 B per token
    KVDtype("fp8_ds_mla", 8, mla_token_bytes=656, is_fp8=True),
    KVDtype("nvfp4_ds_mla", 4, mla_token_bytes=352),
    # FlashInfer NVFP4: e2m1 data + an fp8 block scale per 16 elements (0.5625 B per element)
    KVDtype("nvfp4", 4, block_scale_every=16),
    KVDtype("nvfp4_4over6", 4, block_scale_every=16),
    # Triton per-token-head quantization: an inline fp32 scale per head and token, for K and for V
    KVDtype("int8_per_token_head", 8, scale_bytes_per_head=4),
    KVDtype("fp8_per_token_head", 8, scale_bytes_per_head=4, is_fp8=True),
    KVDtype("int4_per_token_head", 4, scale_bytes_per_head=4),
)}

# Bytes of one element by dtype name, with the spellings vLLM and configs use (weights, Mamba states).
DTYPE_BYTES = {"float32": 4, "fp32": 4, "float": 4, "float16": 2, "fp16": 2, "half": 2, "bfloat16": 2, "bf16": 2,
               "fp8": 1, "float8_e4m3fn": 1}

# Checkpoint model dtype -> what `auto` stores.
MODEL_DTYPE_KV = {"bfloat16": "bfloat16", "float16": "float16", "float32": "bfloat16"}
