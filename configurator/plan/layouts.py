"""The layouts `plan --gpus N` compares: replicas of an engine within a node, tensor x pipeline splits, and
data-parallel attention with expert parallelism for MoE models; an engine spans nodes only when no engine
within one node starts (docs/plan.md)."""

from __future__ import annotations

from configurator.errors import InputError
from configurator.estimate.loadable import block_shape_refusal
from configurator.memory.weights import num_experts
from configurator.model.spec import ModelSpec
from configurator.plan.search import Layout, PlanRequest, expert_parallel
from configurator.vllm.versions import _key

# `vllm serve --data-parallel-size N --enable-expert-parallel` (data-parallel attention, experts spread over
# the ranks, one API server in front) is the V1 engine's from 0.9.0 (vllm/v1/engine/core_client.py
# DPAsyncMPClient; docs/serving/data_parallel_deployment.md); earlier releases plan no DP + EP layout
DP_EP_SINCE = "0.9.0"


def divisors(n: int) -> list[int]:
    """The divisors of n in increasing order, by trial up to its square root (n <= MAX_GPUS)."""
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d * d != n:
                large.append(n // d)
        d += 1
    return small + large[::-1]


def splits_heads(model: ModelSpec, tp: int) -> bool:
    """vLLM's checks: tensor parallelism divides the attention heads, and the KV and recurrent-state
    heads it splits (KV heads fewer than tp are replicated instead)."""
    if model.num_attention_heads % tp:
        return False
    if any(g.kind in ("full", "sliding", "chunked") and g.num_kv_heads >= tp and g.num_kv_heads % tp
           for g in model.layers):
        return False
    return not any(g.mamba is not None and g.mamba.num_heads and g.mamba.num_heads % tp for g in model.layers)


def _splits(model: ModelSpec, g: int, node: int) -> list[tuple[int, int]]:
    """The tensor x pipeline splits of g GPUs vLLM accepts and loads: TP within a node first, then as few
    pipeline stages as the heads allow."""
    out = [(g // pp, pp) for pp in divisors(g) if pp <= model.num_hidden_layers and splits_heads(model, g // pp)]
    # a layout whose block-quantized shards vLLM refuses (even with --enable-expert-parallel) does not load
    loads = [o for o in out if expert_parallel(model, o[0]) or not block_shape_refusal(model, {}, o[0])]
    return sorted(loads or out, key=lambda o: (o[0] > node, o[1]))


def _dp_ep(model: ModelSpec, g: int, version: str) -> Layout | None:
    """Data-parallel attention over g ranks with the experts spread across them, for a MoE model, where the
    release serves it and the experts' shards load."""
    if g < 2 or num_experts(model.text_config) < g or _key(version) < _key(DP_EP_SINCE):
        return None
    if block_shape_refusal(model, {"data_parallel_size": g, "enable_expert_parallel": True}, 1):
        return None
    return Layout(tp=1, dp=g, ep=True)


def parallel_options(model: ModelSpec, req: PlanRequest, version: str) -> list[Layout]:
    """The layouts to compare, in preference order: engines within a node (each engine size: its TP x PP
    split, then DP + EP), wider engines before more replicas; then engines across nodes."""
    node = req.gpus_per_node
    if req.tensor_parallel_size or req.pipeline_parallel_size or not req.gpus:
        tp, pp = req.tensor_parallel_size or 1, req.pipeline_parallel_size or 1
        n = req.gpus or tp * pp
        return [Layout(tp, pp, replicas=n // (tp * pp) if n % (tp * pp) == 0 else 1)]
    within: list[Layout] = []
    across: list[Layout] = []
    for g in reversed(divisors(req.gpus)):
        reps = req.gpus // g
        splits = _splits(model, g, node)
        if g <= node:
            within += [Layout(tp, pp, replicas=reps) for tp, pp in splits[:1]]
            if (dp := _dp_ep(model, g, version)) is not None:
                within.append(Layout(dp.tp, dp.pp, dp.dp, reps, True))
        else:
            across += [Layout(tp, pp, replicas=reps) for tp, pp in splits]
    out = within + sorted(across, key=lambda o: (o.tp > node, o.pp, o.replicas))
    if not out:
        raise InputError(f"{req.gpus} GPUs cannot be split into tensor x pipeline parallelism for this model "
                         f"({model.num_attention_heads} attention heads, {model.num_hidden_layers} layers)")
    return out


def within_node(lay: Layout, node: int) -> bool:
    return lay.engine_gpus <= node
