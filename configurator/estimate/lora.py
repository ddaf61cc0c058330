"""--enable-lora and its options: the adapter slots vLLM preallocates and the LoRA kernels' buffers."""


from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from configurator.errors import InputError
from configurator.estimate.option_values import int_flag, truthy, version_key
from configurator.estimate.parallel import eplb_redundant
from configurator.memory.features import (
    Linear,
    LoraSettings,
    MoEExperts,
    MoEParallel,
    linear_lora_bytes,
    local_experts,
    lora_activation_bytes,
    moe_lora_bytes,
)
from configurator.memory.kv_dtype import DTYPE_BYTES
from configurator.memory.weights import (
    expert_hidden,
    expert_intermediate,
    experts_per_token,
    mlp_gated,
    moe_layer,
    num_experts,
    shared_expert_intermediate,
)
from configurator.model.spec import ModelSpec
from configurator.units import cdiv
from configurator.vllm.memory_options import LORA_EXTRA_VOCAB

# vllm/config/lora.py MaxLoRARanks (0.25.0, 0.33.0): the ranks --max-lora-rank accepts
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
# Expert LoRA (vllm/lora/layers/fused_moe.py, FusedMoEWithLoRA): absent from the 0.11.0 wheel, present in
# 0.15.0, 0.20.0, 0.25.0 and 0.33.0 (the releases read); earlier releases wrap only the linear layers.
MOE_LORA_SINCE = "0.15.0"
# Models whose experts are stored fused (SupportsLoRA.is_3d_moe_weight = True) get FusedMoE3DWithLoRA:
# model_executor/models/gpt_oss.py, interns1_pro.py, qwen3_5.py, qwen3_vl_moe.py (0.25.0), and
# qwen3_omni_moe_thinker.py (0.33.0). vLLM's own class names, not model names.
MOE_3D_ARCHITECTURES = frozenset({
    "GptOssForCausalLM", "InternS1ProForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration", "Qwen3OmniMoeThinkerForConditionalGeneration",
})
# lora_extra_vocab_size (default 256): extra token rows per adapter in the embedding and lm_head slots,
# config/lora.py and lora/layers/vocal_parallel_embedding.py in 0.11.0; gone in 0.15.0.
EXTRA_VOCAB_UNTIL = "0.15.0"
# Classes that declare embedding_modules {embed_tokens, lm_head} (model_executor/models/*.py, 0.33.0): their
# token embedding (VocabParallelEmbeddingWithLoRA) and lm_head (LogitsProcessorWithLoRA) get slots too.
EMBEDDING_LORA_ARCHITECTURES = frozenset({
    "ApertusForCausalLM", "DeciLMForCausalLM", "Exaone4ForCausalLM", "ExaoneForCausalLM", "ExaoneMoeForCausalLM",
    "FalconH1ForCausalLM", "GraniteForCausalLM", "GraniteMoeForCausalLM", "GraniteMoeHybridForCausalLM",
    "GraniteMoeSharedForCausalLM", "HyperCLOVAXForCausalLM", "JambaForCausalLM", "Lfm2ForCausalLM",
    "Lfm2MoeForCausalLM", "LlamaForCausalLM", "MiniCPMForCausalLM", "MixtralForCausalLM", "NemotronForCausalLM",
    "NemotronHForCausalLM", "PhiMoEForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "SolarForCausalLM",
})


@dataclass(frozen=True)
class LoraPlan:
    """--enable-lora resolved: the slot settings and the bytes they take on the tightest rank."""

    settings: LoraSettings
    max_cpu_loras: int
    weights_bytes: int  # adapter slots, allocated while loading (inside "Model loading took")
    activation_bytes: int  # LoRA kernel buffers in the profiling forward pass
    parts: tuple[tuple[str, int], ...]  # (module family, bytes) for the explanation


def is_moe_layer(c: dict, i: int) -> bool:
    """Whether decoder layer i has routed experts (the same layer walk as the weights count)."""
    if not num_experts(c):
        return False
    pattern = c.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return i < len(pattern) and pattern[i] == "E"
    return moe_layer(c, i)


def _mlp(h: int, inter: int, gated: bool) -> list[Linear]:
    """gate_up_proj (MergedColumnParallelLinear, 2 slices) or up_proj, then down_proj (row)."""
    return [Linear(h, (inter, inter) if gated else (inter,), "column"), Linear(inter, (h,), "row")]


def lora_modules(model: ModelSpec, layers: range, moe_lora: bool, tp: int, ep: int = 1,
                 moe: MoEParallel | None = None) -> dict[str, list]:
    """The LoRA-wrapped modules of the given decoder layers, by family: attention / mixer, dense MLP,
    MoE router and shared experts (linear), MoE routed experts, embeddings. Only the language model:
    vision / audio towers get LoRA only with enable_tower_connector_lora (off by default). `ep` > 1 (expert
    parallelism over tp x dp ranks): each rank holds E / ep whole experts (fused_moe.py local_num_experts; the
    MoE tp_size collapses to 1, so the intermediate size is not split). `moe` (the DP / PCP / EP layout, which
    FusedMoEWithLoRA takes from the base layer's moe_parallel_config, lora/layers/fused_moe.py 0.33.0) overrides
    `ep`: without EP the expert intermediate size is split over tp x pcp x dp."""
    c, h = model.text_config, model.hidden_size
    heads = model.num_attention_heads
    gated = mlp_gated(c)
    by_index: dict[int, list] = {}
    for g in model.layers:
        by_index.setdefault(g.index, []).append(g)
    fam: dict[str, list] = {"attention": [], "mlp": [], "experts": [], "embeddings": []}
    experts = num_experts(c)
    moe_inter = expert_intermediate(c) or model.intermediate_size
    eh = expert_hidden(c, h)  # a latent MoE's experts work at the latent width
    shared_inter = shared_expert_intermediate(c)
    for i in layers:
        for g in by_index.get(i, [])[:1]:
            if g.kind == "mamba" and g.mamba is not None:
                m = g.mamba
                if m.variant == "gdn":
                    qk, v = m.num_k_heads * m.k_head_dim, m.num_heads * m.head_dim
                    # qwen3_5.py packed_modules_mapping (0.33.0): in_proj_qkvz = [in_proj_qkv, in_proj_z],
                    # in_proj_ba = [in_proj_b, in_proj_a], then out_proj
                    fam["attention"] += [Linear(h, (2 * qk + v, v), "column"), Linear(h, (m.num_heads,) * 2, "column"),
                                         Linear(v, (h,), "row")]
                elif m.variant in ("mamba1", "mamba2"):
                    inner = m.intermediate_size
                    fam["attention"] += [Linear(h, (inner, inner), "column"), Linear(inner, (h,), "row")]
            elif model.is_mla:
                rope = int(c.get("qk_rope_head_dim") or 64)
                nope = int(c.get("qk_nope_head_dim") or 128)
                vd = int(c.get("v_head_dim") or 128)
                kv_rank = int(c.get("kv_lora_rank") or 512)
                q_rank = int(c.get("q_lora_rank") or 0)
                mods = [Linear(h, (kv_rank + rope,), "replicated"),
                        Linear(kv_rank, (heads * (nope + vd),), "column"), Linear(heads * vd, (h,), "row")]
                mods += [Linear(h, (q_rank,), "replicated"), Linear(q_rank, (heads * (nope + rope),), "column")] \
                    if q_rank else [Linear(h, (heads * (nope + rope),), "column")]
                fam["attention"] += mods
            else:
                kv = max(g.num_kv_heads, tp)  # fewer KV heads than TP ranks: one (replicated) head per rank
                hv = g.head_size_v or g.head_size
                fam["attention"] += [Linear(h, (heads * g.head_size, kv * g.head_size, kv * hv), "column"),
                                     Linear(heads * hv, (h,), "row")]
        if experts and is_moe_layer(c, i):
            fam["mlp"].append(Linear(h, (experts,), "replicated"))  # the router gate
            if shared_inter:
                fam["mlp"] += _mlp(h, shared_inter, gated)
            if c.get("enable_moe_block") or str(c.get("model_type", "")).startswith("gemma4"):
                fam["mlp"] += _mlp(h, model.intermediate_size, gated)  # Gemma 4: a dense MLP beside the experts
            if moe_lora:
                if moe is not None:
                    n_local, split = local_experts(experts, moe)
                    fam["experts"].append(MoEExperts(n_local, eh, cdiv(moe_inter, split), gated))
                else:
                    fam["experts"].append(MoEExperts(cdiv(experts, ep), eh, moe_inter, gated) if ep > 1
                                          else MoEExperts(experts, eh, cdiv(moe_inter, tp), gated))
        else:
            fam["mlp"] += _mlp(h, model.intermediate_size, gated)
    return fam


def plan_lora(model: ModelSpec, flags: dict[str, Any], *, version: str, dtype: str, tp: int, layers: range,
              num_tokens: int) -> LoraPlan | None:
    """--enable-lora and its options -> the adapter slots' bytes on one rank (None without --enable-lora)."""
    if not truthy(flags.get("enable_lora", False)):
        return None
    rank = int_flag(flags, "max_lora_rank", 16)
    if rank not in LORA_RANKS:
        raise InputError(f"--max-lora-rank {rank} is not one of {', '.join(map(str, LORA_RANKS))}")
    loras = int_flag(flags, "max_loras", 1)
    if loras < 1:
        raise InputError(f"--max-loras must be at least 1, got {loras}")
    cpu = int_flag(flags, "max_cpu_loras", loras)
    if cpu < loras:
        raise InputError(f"max_cpu_loras ({cpu}) must be >= max_loras ({loras}).")
    ld = str(flags.get("lora_dtype") or "auto").lower()
    if ld not in ("auto", "float16", "bfloat16", "half", "bf16", "fp16"):
        raise InputError(f"--lora-dtype must be auto, float16 or bfloat16, got {ld}")
    dtype_bytes = DTYPE_BYTES.get(dtype, 2) if ld == "auto" else 2
    c = model.text_config
    is_moe = bool(num_experts(c))
    moe_lora = is_moe and version_key(version) >= version_key(MOE_LORA_SINCE)
    s = LoraSettings(max_loras=loras, max_lora_rank=rank, dtype_bytes=dtype_bytes,
                     fully_sharded=truthy(flags.get("fully_sharded_loras", False)), tp=tp, moe_lora=moe_lora,
                     moe_3d=any(a in MOE_3D_ARCHITECTURES for a in model.architectures))
    moe = MoEParallel(tp=tp, dp=int_flag(flags, "data_parallel_size", 1),
                      pcp=int_flag(flags, "prefill_context_parallel_size", 1),
                      expert_parallel=truthy(flags.get("enable_expert_parallel", False)),
                      redundant_experts=eplb_redundant(flags) if truthy(flags.get("enable_eplb", False)) else 0)
    fam = lora_modules(model, layers, moe_lora, tp, moe=moe)
    if any(a in EMBEDDING_LORA_ARCHITECTURES for a in model.architectures):
        # VocabParallelEmbeddingWithLoRA (vocab x rank + H x rank) and LogitsProcessorWithLoRA (rank x H + vocab x rank)
        extra = LORA_EXTRA_VOCAB if version_key(version) < version_key(EXTRA_VOCAB_UNTIL) else 0
        fam["embeddings"] = [Linear(model.vocab_size + extra, (h := model.hidden_size,), "replicated"),
                             Linear(h, (model.vocab_size,), "replicated")]

    parts = tuple((name, sum(moe_lora_bytes(m, s) if isinstance(m, MoEExperts) else linear_lora_bytes(m, s)
                             for m in mods)) for name, mods in fam.items())
    if any(a in EMBEDDING_LORA_ARCHITECTURES for a in model.architectures) and \
            version_key(version) < version_key(EXTRA_VOCAB_UNTIL):
        # embeddings_tensors (max_loras, extra vocab, H) in the model dtype, in the embedding and the lm_head slots
        parts += (("extra vocab", 2 * loras * LORA_EXTRA_VOCAB * model.hidden_size * DTYPE_BYTES.get(dtype, 2)),)
    total = sum(b for _, b in parts)
    top_k = experts_per_token(c)
    act = lora_activation_bytes(num_tokens, s, top_k, DTYPE_BYTES.get(dtype, 2))
    return LoraPlan(settings=s, max_cpu_loras=cpu, weights_bytes=total, activation_bytes=act, parts=parts)
