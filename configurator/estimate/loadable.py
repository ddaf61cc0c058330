"""What vLLM refuses before any memory figure matters: an architecture the release no longer serves, a
model only its V0 engine ran, and a block-quantized checkpoint whose per-rank shard is not a whole number
of quantization blocks. `resolve_inputs` turns these into errors / a V0 reason; `plan` skips the layouts
that would not load.
"""

from __future__ import annotations

from typing import Any

from configurator.memory.features import MoEParallel, local_experts
from configurator.memory.weights import expert_intermediate, moe_layer, num_experts, shared_expert_intermediate
from configurator.model.hf_config import REMOVED_ARCHITECTURES, V0_ONLY_ARCHITECTURES
from configurator.model.spec import ModelSpec
from configurator.vllm.versions import _key

# vLLM 0.11.0 removed its V0 engine (vllm/engine/llm_engine.py became the V1 one); until then a model class
# marked SupportsV0Only made EngineArgs._is_v1_supported_oracle fall back to V0
# (vllm==0.10.1.1 engine/arg_utils.py: `if not model_config.is_v1_compatible: _raise_or_fallback(...)`)
V0_REMOVED_IN = "0.11.0"


def _truthy(v: Any) -> bool:
    return v is True or str(v).lower() in ("1", "true", "yes")


def removed_architecture(model: ModelSpec, version: str) -> str | None:
    """vLLM's refusal of an architecture the release no longer serves, or None.

    vllm/model_executor/models/registry.py _raise_for_unsupported (0.11.0 and 0.33.0 alike): an architecture
    absent from the registry but listed in _PREVIOUSLY_SUPPORTED_MODELS raises this ValueError while the
    engine config is built, before any weight loads. The table's value is the last release that served it."""
    if not model.architectures:
        return None
    for arch in model.architectures:
        last = REMOVED_ARCHITECTURES.get(arch)
        if last is None or _key(version) <= _key(last):
            return None  # a listed architecture the release still serves (or an unknown one): vLLM goes on
    arch = model.architectures[0]
    return (f"Model architecture {arch} was supported in vLLM until v{REMOVED_ARCHITECTURES[arch]}, and is not "
            f"supported anymore. Please use an older version of vLLM if you want to use this model architecture.")


def v0_only(model: ModelSpec, version: str) -> str | None:
    """Why this release runs the model on its V0 engine (not modelled), or None."""
    arch = next((a for a in model.architectures if a in V0_ONLY_ARCHITECTURES), None)
    if arch is None or _key(version) >= _key(V0_REMOVED_IN):
        return None
    return (f"vLLM {version} logs '{list(model.architectures)} is not supported by the V1 Engine. Falling back to "
            f"V0.' ({arch} is SupportsV0Only; engine/arg_utils.py _is_v1_supported_oracle); V0 is not modelled")


def block_size(model: ModelSpec) -> tuple[int, int] | None:
    """(block_n, block_k) of a block-quantized FP8 checkpoint (quantization_config.weight_block_size)."""
    qc = model.full_config.get("quantization_config") or model.text_config.get("quantization_config") or {}
    if not isinstance(qc, dict) or str(qc.get("quant_method") or "").lower() != "fp8":
        return None
    bs = qc.get("weight_block_size")
    if not (isinstance(bs, list) and len(bs) == 2 and all(isinstance(x, int) and x > 0 for x in bs)):
        return None
    return bs[0], bs[1]


def _has_dense_mlp(model: ModelSpec) -> bool:
    c = model.text_config
    if not num_experts(c):
        return True
    if c.get("mlp_only_layers"):
        return True
    return any(not moe_layer(c, i) for i in range(model.num_hidden_layers))


def block_shape_refusal(model: ModelSpec, flags: dict[str, Any], tp: int) -> str | None:
    """vLLM's refusal when a per-rank shard of a block-quantized FP8 checkpoint is not a whole number of
    blocks, or None.

    Fused MoE: Fp8MoEMethod.create_weights (vllm==0.11.0 model_executor/layers/quantization/fp8.py lines
    496-519; vllm==0.33.0 quantization/utils/fp8_utils.py validate_fp8_moe_block_shape) raises when the
    experts' intermediate_size_per_partition % block_n, or (TP > 1) % block_k. That size is
    moe_intermediate_size split over the MoE's tp_size: TP x DP x PCP without --enable-expert-parallel,
    1 with it (FusedMoEParallelConfig.make). Linears: validate_fp8_block_shape (fp8_utils.py, 0.11.0 lines
    750-782): a column-parallel shard (gate/up) % block_n, a row-parallel one (down) % block_k.
    Qwen3-235B-A22B-FP8 at TP 8: 1,536 / 8 = 192, not a multiple of 128."""
    bs = block_size(model)
    if bs is None:
        return None
    bn, bk = bs
    c = model.text_config
    n = num_experts(c)
    if n:
        moe = MoEParallel(tp=tp, dp=int(flags.get("data_parallel_size") or 1),
                          pcp=int(flags.get("prefill_context_parallel_size") or 1),
                          expert_parallel=_truthy(flags.get("enable_expert_parallel", False)))
        _, split = local_experts(n, moe)
        inter = expert_intermediate(c)
        if inter % split == 0:
            part = inter // split
            if part % bn:
                return (f"The output_size of gate's and up's weight = {part} is not divisible by weight "
                        f"quantization block_n = {bn}.")
            if tp > 1 and part % bk:
                return (f"The input_size of down's weight = {part} is not divisible by weight quantization "
                        f"block_k = {bk}.")
    # the dense and shared-expert MLPs, as validate_fp8_block_shape sees them: the merged column-parallel gate/up
    # output partitions, TP split (both checked) or not (TP 1: all but the last), and the row-parallel down
    # projection's input split over TP
    merged: list[tuple[list[int], bool]] = []  # (per-rank output partitions, is_tp_split)
    rows: list[int] = []
    shared = shared_expert_intermediate(c) if n else 0
    for inter in ([model.intermediate_size] if _has_dense_mlp(model) else []) + ([shared] if shared else []):
        if inter % tp == 0:
            merged.append(([inter // tp, inter // tp], tp > 1))
            rows.append(inter)
    # the attention projections are left out: models build them their own ways (MiMo-V2's fused q/k/v chunks, a
    # v_head_dim beside head_dim, MLA's low-rank projections, checkpoints that leave attention unquantized)
    for parts, split in merged:
        for w in parts if split else parts[:-1]:
            if w % bn:
                return f"Weight output_partition_size = {w} is not divisible by weight quantization block_n = {bn}."
    for w in rows:
        if tp > 1 and w % tp == 0 and (w // tp) % bk:
            return (f"Weight input_size_per_partition = {w // tp} is not divisible by weight quantization "
                    f"block_k = {bk}.")
    return None
