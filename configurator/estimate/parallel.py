"""Data, prefill-context and expert parallelism: how the routed experts land on one GPU, and the gathered tokens."""


from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from configurator.errors import InputError
from configurator.estimate.option_values import int_flag, json_object, truthy
from configurator.memory.features import MoEParallel, dp_moe_gather_bytes, expert_share, local_experts
from configurator.memory.kv_dtype import DTYPE_BYTES
from configurator.memory.weights import (
    count_params,
    expert_bytes_per_param,
    expert_intermediate,
    experts_per_token,
    num_experts,
    weight_bytes,
)
from configurator.model.spec import ModelSpec
from configurator.units import human_bytes
from configurator.vllm.versions import behaviour


@dataclass(frozen=True)
class ParallelPlan:
    """-dp / -pcp / --enable-expert-parallel / EPLB resolved for one GPU (fused_moe/config.py, 0.33.0)."""

    moe: MoEParallel
    num_experts: int  # routed experts per MoE layer (0: a dense model)
    local_experts: int  # experts on the most loaded GPU
    split: int  # how many ways each expert's intermediate size is split
    tp_expert_bytes: int  # the routed experts' bytes per GPU under plain TP (what the weights count assumed)
    weights_delta: int  # what DP / EP changes in 'Model loading took' (negative: fewer expert bytes)
    warning: str | None = None
    activation_bytes: int = 0  # the MoE layers' gathered tokens in the profiling run (DP x PCP > 1)
    gathered_tokens: int = 0

    def line(self) -> str:
        m = self.moe
        head = (f"data parallel {m.dp} (each DP rank is its own engine with its own KV pool, sized per GPU as "
                f"for one engine; {m.tp * m.pcp * m.dp} GPUs in all)") if m.dp > 1 else f"TP {m.tp}"
        if m.pcp > 1:
            head += f", prefill context parallel {m.pcp}"
        if not self.num_experts:
            return head + (": a dense model, the weights are as without DP" if m.dp > 1 else
                           ": a dense model, --enable-expert-parallel changes nothing")
        if m.use_ep:
            red = f" + {m.redundant_experts} redundant (EPLB)" if m.redundant_experts else ""
            how = (f"expert parallel over {m.devices} GPUs: {self.num_experts}{red} experts -> {self.local_experts} "
                   f"whole experts per GPU (expert_map_manager.py determine_expert_map)")
        else:
            how = (f"the MoE layers shard every expert over tp x dp = {m.devices} GPUs (fused_moe/config.py "
                   f"flatten_tp_across_dp_and_pcp), intermediate size / {self.split}")
        out = (f"{head}; {how}: routed-expert weights {human_bytes(self.tp_expert_bytes)} under TP {m.tp} -> "
               f"{human_bytes(self.tp_expert_bytes + self.weights_delta)} per GPU, counted in 'Model loading took'")
        if self.activation_bytes:
            out += (f"; the MoE layers all-gather every DP rank's tokens before the experts (all2all.py, the default "
                    f"backend), so the profiling run's experts see {self.gathered_tokens:,} tokens: "
                    f"+{human_bytes(self.activation_bytes)} of activation peak (gathered hidden states and fused-MoE "
                    f"workspaces; memory/features.py dp_moe_gather_bytes)")
        return out


def eplb_redundant(flags: dict[str, Any]) -> int:
    raw = flags.get("eplb_config")
    if raw in (None, "", "{}"):
        return 0
    d = json_object(raw, "--eplb-config")
    try:
        return max(int(d.get("num_redundant_experts") or 0), 0)
    except (TypeError, ValueError):
        raise InputError(f"--eplb-config: num_redundant_experts must be an integer, got "
                         f"{d.get('num_redundant_experts')!r}") from None


def plan_parallel(model: ModelSpec, flags: dict[str, Any], *, tp: int, dtype: str, layers: range,
                  base_weights_bytes: int = 0, num_tokens: int = 0, version: str = "") -> ParallelPlan | None:
    """-dp / -pcp / --enable-expert-parallel -> how the routed experts land on one GPU (None when none is set).

    Per GPU, a DP rank is a whole engine: attention, dense layers, embeddings and the KV pool are as for DP 1
    (vllm/v1/engine/core.py DPEngineCoreProc, one per rank). Only FusedMoE layers see the DP ranks:
    FusedMoEParallelConfig.make (model_executor/layers/fused_moe/config.py, 0.33.0) flattens TP x PCP x DP into
    the MoE's tp_size, and with --enable-expert-parallel makes that the ep_size with tp_size 1."""
    dp = int_flag(flags, "data_parallel_size", 1)
    pcp = int_flag(flags, "prefill_context_parallel_size", 1)
    ep = truthy(flags.get("enable_expert_parallel", False))
    eplb = truthy(flags.get("enable_eplb", False))
    redundant = eplb_redundant(flags)
    if dp <= 1 and pcp <= 1 and not ep and not eplb and not redundant:
        return None
    # config/parallel.py ParallelConfig.__post_init__ (0.33.0): EPLB needs EP; redundant experts need EPLB
    if eplb and not ep:
        raise InputError("enable_expert_parallel must be True to use EPLB.")
    if redundant and not eplb:
        raise InputError(f"num_redundant_experts is set to {redundant} but EPLB is not enabled. Either enable "
                         f"EPLB or unset num_redundant_experts.")
    moe = MoEParallel(tp=tp, dp=dp, pcp=pcp, expert_parallel=ep, redundant_experts=redundant if eplb else 0)
    c = model.text_config
    n = num_experts(c)
    if not n:
        return ParallelPlan(moe=moe, num_experts=0, local_experts=0, split=1, tp_expert_bytes=0, weights_delta=0)
    local, split = local_experts(n, moe)
    p = count_params(model)
    params = sum(p.per_layer_experts[i] for i in layers if i < len(p.per_layer_experts))
    per_param = expert_bytes_per_param(model, flags.get("quantization"), dtype)  # memory/weights.py's rule
    base = weight_bytes(model, tp=tp, pp=1, quantization=flags.get("quantization"), dtype=dtype)
    scale = 1.0
    if base.source == "checkpoint":
        # the checkpoint's size replaced the count: scale the experts' count the same way
        cfg = weight_bytes(replace(model, weights_bytes=None), tp=tp, pp=1, quantization=flags.get("quantization"),
                           dtype=dtype)
        scale = base.total_bytes / max(cfg.total_bytes, 1)
    tp_bytes = int(params * per_param * scale / max(tp, 1))
    new = int(params * per_param * scale * expert_share(n, moe))
    delta = new - tp_bytes
    if base_weights_bytes:
        delta = max(delta, -base_weights_bytes)
    warning = None
    act = 0
    ranks = dp * pcp
    if ranks > 1 and num_tokens and flags.get("all2all_backend") in (None, "", "naive", "allgather_reducescatter"):
        # the default dispatch all-gathers every DP rank's tokens before the experts: NaiveAll2AllManager (0.10.1),
        # AgRsAll2AllManager (allgather_reducescatter, 0.25.0 / 0.33.0), distributed/device_communicators/all2all.py
        top_k = experts_per_token(c)
        inter = expert_intermediate(c) or model.intermediate_size
        persistent = behaviour(version).moe_workspace_persistent if version else True
        act = dp_moe_gather_bytes(num_tokens, ranks, top_k=top_k, moe_intermediate_size=inter,
                                  hidden_size=model.hidden_size, moe_tp=1 if moe.use_ep else split,
                                  persistent_workspace=persistent, act_bytes=DTYPE_BYTES.get(dtype, 2))
    # another backend (DeepEP-style buffers) is named by unmodelled_flags (UNMODELLED_FEATURE_FLAGS)
    return ParallelPlan(moe=moe, num_experts=n, local_experts=local, split=split, tp_expert_bytes=tp_bytes,
                        weights_delta=delta, warning=warning, activation_bytes=act,
                        gathered_tokens=ranks * num_tokens if act else 0)
