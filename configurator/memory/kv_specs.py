"""Per-layer KV-cache specs: small frozen values mirroring vllm/v1/kv_cache_interface.py.

A spec says how many bytes one block (of `block_size` tokens) of one layer takes (`page_size_bytes`)
and how many blocks one request of the longest allowed length needs (`blocks_per_request`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from configurator.memory.kv_dtype import KVDtype
from configurator.units import cdiv


@dataclass(frozen=True)
class RequestLimits:
    """The scheduler limits that bound one request's blocks (primitives, not an engine config).

    `max_in_flight_tokens` is vLLM's VllmConfig.max_in_flight_tokens: tokens a request may have
    scheduled beyond its window (max_num_batched_tokens, times the concurrent batches from 0.27).
    `mamba_blocks_per_request`: 1 + speculative tokens (mamba_cache_mode 'none'), or
    2 + speculative + checkpoint blocks ('align', with prefix caching).
    """

    max_model_len: int
    max_in_flight_tokens: int
    mamba_blocks_per_request: int = 1

    def with_len(self, max_model_len: int) -> RequestLimits:
        return replace(self, max_model_len=max_model_len)


@dataclass(frozen=True)
class AttentionSpec:
    """vLLM AttentionSpec: page = block_size x kv_heads x (head_size + head_size_v) x dtype bytes."""

    block_size: int
    num_kv_heads: int
    head_size: int
    head_size_v: int
    dtype: KVDtype
    page_size_padded: int | None = None

    @cached_property  # frozen; a model's specs are shared by its estimates (memory/per_model.py), asked per block
    def real_page_size_bytes(self) -> int:
        # Llama-2-7B, fp16, bs 16: 16 x 32 x (256 B + 256 B) = 262,144 B per layer per block.
        return self.block_size * self.num_kv_heads * (
            self.dtype.head_bytes(self.head_size) + self.dtype.head_bytes(self.head_size_v))

    @property
    def page_size_bytes(self) -> int:
        return self.page_size_padded or self.real_page_size_bytes

    @property
    def bytes_per_token(self) -> int:
        """What one more token of context costs in this layer (unpadded)."""
        return self.real_page_size_bytes // self.block_size

    @property
    def type_name(self) -> str:
        return type(self).__name__

    def blocks_per_request(self, limits: RequestLimits) -> int:
        return cdiv(limits.max_model_len, self.block_size)

    def max_memory_usage_bytes(self, limits: RequestLimits) -> int:
        return self.blocks_per_request(limits) * self.page_size_bytes

    def with_block_size(self, block_size: int) -> AttentionSpec:
        return replace(self, block_size=block_size)


@dataclass(frozen=True)
class FullAttentionSpec(AttentionSpec):
    """FullAttentionSpec: K and V for every token; a request holds cdiv(max_model_len, block_size) blocks.

    Llama-2-7B: 2 x 32 heads x 128 x 2 B = 16,384 B per token per layer; x 32 layers = 524,288 B.
    """


@dataclass(frozen=True)
class SlidingWindowSpec(AttentionSpec):
    """SlidingWindowSpec: only the window is kept; a request holds
    cdiv(min(window - 1 + in_flight, max_model_len), block_size) + 1 blocks.

    gpt-oss (window 128, bs 16, in-flight 16,384, L 131,072): cdiv(16,511, 16) + 1 = 1,033 blocks
    instead of 8,192.
    """

    sliding_window: int = 0

    def blocks_per_request(self, limits: RequestLimits) -> int:
        tokens = min(self.sliding_window - 1 + limits.max_in_flight_tokens, limits.max_model_len)
        return cdiv(tokens, self.block_size) + 1


@dataclass(frozen=True)
class ChunkedLocalAttentionSpec(AttentionSpec):
    """ChunkedLocalAttentionSpec (Llama 4): cdiv(min(chunk + in_flight, max_model_len), block_size)."""

    attention_chunk_size: int = 0

    def blocks_per_request(self, limits: RequestLimits) -> int:
        tokens = min(self.attention_chunk_size + limits.max_in_flight_tokens, limits.max_model_len)
        return cdiv(tokens, self.block_size)


@dataclass(frozen=True)
class MLAAttentionSpec(AttentionSpec):
    """MLAAttentionSpec: one latent of kv_lora_rank + qk_rope_head_dim per token, no V, no TP split.

    DeepSeek-V3: (512 + 64) x 2 B = 1,152 B per token per layer; x 61 layers = 70,272 B (bf16).
    `fp8_ds_mla` packs a token into 656 B. `token_bytes` overrides the element size (DSA indexer).
    """

    token_bytes: int | None = None

    @property
    def real_page_size_bytes(self) -> int:
        if self.token_bytes is not None:
            return self.block_size * self.token_bytes
        if self.dtype.mla_token_bytes is not None:
            return self.block_size * self.dtype.mla_token_bytes
        return self.block_size * self.dtype.head_bytes(self.head_size)


@dataclass(frozen=True)
class MambaSpec:
    """MambaSpec: a fixed recurrent state per sequence (conv state + SSM / delta-rule state).

    Qwen3.6-27B Gated DeltaNet layer, TP 1: conv 3 x 10,240 x 2 B = 61,440 B, SSM 48 x 128 x 128
    x 2 B = 1,572,864 B -> 1,634,304 B per layer per sequence, whatever the length.
    """

    block_size: int
    conv_elements: int
    ssm_elements: int
    conv_bytes: int
    ssm_bytes: int
    page_size_padded: int | None = None

    @property
    def real_page_size_bytes(self) -> int:
        return self.conv_elements * self.conv_bytes + self.ssm_elements * self.ssm_bytes

    @property
    def page_size_bytes(self) -> int:
        return self.page_size_padded or self.real_page_size_bytes

    @property
    def bytes_per_token(self) -> int:
        return 0

    @property
    def type_name(self) -> str:
        return "MambaSpec"

    def blocks_per_request(self, limits: RequestLimits) -> int:
        return limits.mamba_blocks_per_request

    def max_memory_usage_bytes(self, limits: RequestLimits) -> int:
        return self.blocks_per_request(limits) * self.page_size_bytes

    def with_block_size(self, block_size: int) -> MambaSpec:
        return replace(self, block_size=block_size)


KVCacheSpec = AttentionSpec | MambaSpec
