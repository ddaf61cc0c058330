"""Grouping per-layer specs into KV-cache groups, as vllm/v1/core/kv_cache_planning.py does.

All groups share one pool of blocks; a block is a slab of `group_size` layer pages, so
`bytes_per_block = group_size x page` (uniform models: every layer x page).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from configurator.memory.kv_specs import (
    AttentionSpec,
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    MambaSpec,
    RequestLimits,
    SlidingWindowSpec,
)
from configurator.units import cdiv


@dataclass(frozen=True)
class KVCacheGroup:
    """One block table: layers that share a spec; `num_padding` empty slots fill the slab."""

    spec: KVCacheSpec  # the representative spec the scheduler uses
    layer_ids: tuple[int, ...]  # positions in the model's layer list
    member_specs: tuple[KVCacheSpec, ...]  # one per layer (they differ only for uniform-type groups)
    num_padding: int = 0

    def blocks_per_request(self, limits: RequestLimits) -> int:
        return self.spec.blocks_per_request(limits)


@dataclass(frozen=True)
class KVCacheLayout:
    """The groups of one model and how many bytes one block takes across them."""

    groups: tuple[KVCacheGroup, ...]
    group_size: int  # layer slots per group (uniform-page path); layers for a single group
    uniform_type: bool = False  # one group of same-type specs of different shapes
    hybrid_manager_disabled: bool = False

    @property
    def page_size_bytes(self) -> int:
        return self.groups[0].spec.page_size_bytes if self.groups else 0

    def bytes_per_block(self, layer_ids: frozenset[int] | None = None) -> int:
        """Bytes of one block on a worker holding `layer_ids` (all layers when None).

        vLLM: max over groups of the sum of that worker's member pages. Uniform full attention,
        Llama-2-7B fp16: 32 layers x 262,144 B = 8 MiB per 16-token block.
        """
        memo = self._bytes_per_block_memo
        if layer_ids not in memo:
            memo[layer_ids] = max((sum(s.page_size_bytes for lid, s in zip(g.layer_ids, g.member_specs, strict=False)
                                       if layer_ids is None or lid in layer_ids) for g in self.groups), default=0)
        return memo[layer_ids]

    @cached_property
    def _bytes_per_block_memo(self) -> dict[frozenset[int] | None, int]:
        """bytes_per_block per worker layer set: the layout is frozen, and the fit check and the length search
        ask the same question many times per estimate (a 2,000-manifest `check`: 4,620 sums over every layer)."""
        return {}

    def blocks_per_request(self, limits: RequestLimits) -> int:
        """Blocks one request of max_model_len takes across all groups (vLLM 0.27+)."""
        if self.uniform_type:
            return max(s.blocks_per_request(limits) for s in self.groups[0].member_specs)
        return sum(g.blocks_per_request(limits) for g in self.groups)

    def max_memory_usage_bytes(self, limits: RequestLimits, layer_ids: frozenset[int] | None = None) -> int:
        """Sum over a worker's layers (all when None) of each layer's own max_memory_usage_bytes
        (the 0.10-0.13 fit check, run per worker on that worker's layers)."""
        return sum(s.max_memory_usage_bytes(limits) for g in self.groups
                   for lid, s in zip(g.layer_ids, g.member_specs, strict=False)
                   if layer_ids is None or lid in layer_ids)


def build_layout(specs: list[KVCacheSpec], *, hybrid_manager: bool = True, pad_ratio: float = 1.5) -> KVCacheLayout:
    """vLLM's get_kv_cache_groups for the default (layer-outermost) layout.

    `pad_ratio`: buckets pad up to the largest when it is under pad_ratio x the smallest (1.5 from
    0.19, 1.25 in 0.12-0.17; 0 before 0.12: the smallest bucket's size, no padding rule)."""
    if not specs:
        return KVCacheLayout(groups=(), group_size=0)
    disabled = False
    if not hybrid_manager and any(isinstance(s, SlidingWindowSpec | ChunkedLocalAttentionSpec)
                                  for s in specs):
        # unify_hybrid_kv_cache_specs: every sliding / chunked layer pays full-length KV
        specs = [_as_full(s) for s in specs]
        disabled = True
    ids = tuple(range(len(specs)))
    if len(set(specs)) == 1:
        return KVCacheLayout((KVCacheGroup(specs[0], ids, tuple(specs)),), len(specs),
                             hybrid_manager_disabled=disabled)
    if _uniform_type(specs):
        return KVCacheLayout((KVCacheGroup(specs[0], ids, tuple(specs)),), len(specs),
                             uniform_type=True, hybrid_manager_disabled=disabled)
    specs = unify_page_size(specs)
    buckets: dict[KVCacheSpec, list[int]] = {}
    for i, s in enumerate(specs):
        buckets.setdefault(s, []).append(i)
    sizes = [len(v) for v in buckets.values()]
    group_size = min(sizes)
    if max(sizes) < min(sizes) * pad_ratio:
        group_size = max(sizes)  # pad 12 sliding + 13 full to 13 + 13 rather than split
    groups: list[KVCacheGroup] = []
    for spec, layer_ids in buckets.items():
        num_groups = cdiv(len(layer_ids), group_size)
        for i in range(num_groups):
            members = tuple(layer_ids[i::num_groups])
            groups.append(KVCacheGroup(spec, members, tuple(specs[m] for m in members),
                                       num_padding=group_size - len(members)))
    return KVCacheLayout(tuple(groups), group_size, hybrid_manager_disabled=disabled)


def _as_full(spec: KVCacheSpec) -> KVCacheSpec:
    if isinstance(spec, SlidingWindowSpec | ChunkedLocalAttentionSpec):
        return FullAttentionSpec(spec.block_size, spec.num_kv_heads, spec.head_size,
                                 spec.head_size_v, spec.dtype, spec.page_size_padded)
    return spec


def _uniform_type(specs: list[KVCacheSpec]) -> bool:
    """UniformTypeKVCacheSpecs.from_specs: all layers need the same token slots per request."""
    first = specs[0]
    if isinstance(first, MambaSpec):
        return False
    if any(type(s) is not type(first) for s in specs):
        return False
    if any(s.block_size != first.block_size for s in specs):
        return False
    if isinstance(first, SlidingWindowSpec):
        return len({s.sliding_window for s in specs}) == 1  # type: ignore[union-attr]
    if isinstance(first, ChunkedLocalAttentionSpec):
        return len({s.attention_chunk_size for s in specs}) == 1  # type: ignore[union-attr]
    return True


def unify_page_size(specs: list[KVCacheSpec]) -> list[KVCacheSpec]:
    """unify_kv_cache_spec_page_size: make every page as large as the largest one.

    A smaller attention page that divides the largest gets a proportionally larger block size
    (Gemma 4: the 16-token global page of half the bytes becomes a 32-token page); Mamba pages
    and non-dividing pages are padded.
    """
    largest = max(s.page_size_bytes for s in specs)
    out: list[KVCacheSpec] = []
    for s in specs:
        page = s.page_size_bytes
        if page == largest:
            out.append(s)
        elif isinstance(s, AttentionSpec) and largest % page == 0 and s.page_size_padded is None:
            out.append(s.with_block_size(s.block_size * (largest // page)))
        else:
            out.append(replace(s, page_size_padded=largest))
    return out
