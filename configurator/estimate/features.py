"""Stage 2a, features: which optional engine features apply, and the memory each adds (with its line).

Resolves --enable-lora and its options into the LoRA adapter slots vLLM preallocates (counted in
"Model loading took", like the weights) and the LoRA kernels' buffers in the profiling run. The
arithmetic lives in configurator/memory/features.py; this stage reads the model description and the
release, and says in words what it added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from configurator.errors import InputError
from configurator.memory.features import (
    Linear,
    LoraSettings,
    MoEExperts,
    linear_lora_bytes,
    lora_activation_bytes,
    moe_lora_bytes,
)
from configurator.memory.kv_dtype import DTYPE_BYTES
from configurator.model.spec import ModelSpec
from configurator.units import cdiv, human_bytes

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


@dataclass(frozen=True)
class FeatureMemory:
    """What the optional features add, per GPU on the tightest rank, and how it is explained."""

    lora: LoraPlan | None = None

    @property
    def weights_bytes(self) -> int:
        return self.lora.weights_bytes if self.lora else 0

    @property
    def activation_bytes(self) -> int:
        return self.lora.activation_bytes if self.lora else 0

    def lines(self) -> list[str]:
        """One line per modelled feature, for the derivation."""
        out = []
        if self.lora:
            s = self.lora.settings
            parts = ", ".join(f"{name} {human_bytes(b)}" for name, b in self.lora.parts if b)
            out.append(f"LoRA buffers: {s.max_loras} adapters x rank {s.max_lora_rank} x {s.dtype_bytes} B "
                       f"preallocated on every LoRA-capable layer ({parts}) = "
                       f"{human_bytes(self.lora.weights_bytes)} per GPU, "
                       f"counted in 'Model loading took'; the profiling run's LoRA kernel buffers add "
                       f"{human_bytes(self.lora.activation_bytes)}; --max-cpu-loras {self.lora.max_cpu_loras} "
                       f"is host memory only")
        return out


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".")[:3] if x.isdigit())


def _truthy(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    return v is not None and str(v).strip().lower() in ("1", "true", "yes", "on", "")


def _int(f: dict[str, Any], key: str, default: int) -> int:
    v = f.get(key)
    if v is None:
        return default
    try:
        return int(v)
    except (TypeError, ValueError):
        raise InputError(f"--{key.replace('_', '-')}: expected an integer, got {v!r}") from None


def is_moe_layer(c: dict, i: int) -> bool:
    """Whether decoder layer i has routed experts (the same layer walk as the weights count)."""
    experts = c.get("num_experts") or c.get("n_routed_experts") or c.get("num_local_experts")
    if not experts:
        return False
    pattern = c.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return i < len(pattern) and pattern[i] == "E"
    first_dense = int(c.get("first_k_dense_replace") or 0)
    freq = c.get("moe_layer_freq") if isinstance(c.get("moe_layer_freq"), int) else 1
    return i >= first_dense and (i - first_dense) % max(int(freq or 1), 1) == 0


def _gated(c: dict) -> bool:
    act = str(c.get("mlp_hidden_act") or c.get("hidden_act") or c.get("hidden_activation") or "silu")
    return act not in ("gelu", "gelu_new", "relu", "relu2", "gelu_fast", "gelu_pytorch_tanh") or \
        str(c.get("model_type", "")).startswith(("gemma", "phi3"))


def _mlp(h: int, inter: int, gated: bool) -> list[Linear]:
    """gate_up_proj (MergedColumnParallelLinear, 2 slices) or up_proj, then down_proj (row)."""
    return [Linear(h, (inter, inter) if gated else (inter,), "column"), Linear(inter, (h,), "row")]


def lora_modules(model: ModelSpec, layers: range, moe_lora: bool, tp: int) -> dict[str, list]:
    """The LoRA-wrapped modules of the given decoder layers, by family: attention / mixer, dense MLP,
    MoE router and shared experts (linear), MoE routed experts, embeddings. Only the language model:
    vision / audio towers get LoRA only with enable_tower_connector_lora (off by default)."""
    c, h = model.text_config, model.hidden_size
    heads = model.num_attention_heads
    gated = _gated(c)
    by_index: dict[int, list] = {}
    for g in model.layers:
        by_index.setdefault(g.index, []).append(g)
    fam: dict[str, list] = {"attention": [], "mlp": [], "experts": [], "embeddings": []}
    experts = c.get("num_experts") or c.get("n_routed_experts") or c.get("num_local_experts") or 0
    experts = int(experts[0] if isinstance(experts, list) else experts)
    moe_inter = int(c.get("moe_intermediate_size") or c.get("expert_intermediate_size") or model.intermediate_size)
    shared_inter = int(c.get("shared_expert_intermediate_size") or 0) or \
        int(c.get("n_shared_experts") or c.get("num_shared_experts") or 0) * moe_inter
    for i in layers:
        for g in by_index.get(i, [])[:1]:
            if g.kind == "mamba" and g.mamba is not None:
                m = g.mamba
                if m.variant == "gdn":
                    qk, v = m.num_k_heads * m.k_head_dim, m.num_heads * m.head_dim
                    fam["attention"] += [Linear(h, (qk, qk, v, v), "column"), Linear(h, (m.num_heads,) * 2, "column"),
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
                fam["experts"].append(MoEExperts(experts, h, cdiv(moe_inter, tp), gated))
        else:
            fam["mlp"] += _mlp(h, model.intermediate_size, gated)
    return fam


def plan_lora(model: ModelSpec, flags: dict[str, Any], *, version: str, dtype: str, tp: int, layers: range,
              num_tokens: int) -> LoraPlan | None:
    """--enable-lora and its options -> the adapter slots' bytes on one rank (None without --enable-lora)."""
    if not _truthy(flags.get("enable_lora", False)):
        return None
    rank = _int(flags, "max_lora_rank", 16)
    if rank not in LORA_RANKS:
        raise InputError(f"--max-lora-rank {rank} is not one of {', '.join(map(str, LORA_RANKS))}")
    loras = _int(flags, "max_loras", 1)
    if loras < 1:
        raise InputError(f"--max-loras must be at least 1, got {loras}")
    cpu = _int(flags, "max_cpu_loras", loras)
    if cpu < loras:
        raise InputError(f"max_cpu_loras ({cpu}) must be >= max_loras ({loras}).")
    ld = str(flags.get("lora_dtype") or "auto").lower()
    if ld not in ("auto", "float16", "bfloat16", "half", "bf16", "fp16"):
        raise InputError(f"--lora-dtype must be auto, float16 or bfloat16, got {ld}")
    dtype_bytes = DTYPE_BYTES.get(dtype, 2) if ld == "auto" else 2
    c = model.text_config
    is_moe = bool(c.get("num_experts") or c.get("n_routed_experts") or c.get("num_local_experts"))
    moe_lora = is_moe and _key(version) >= _key(MOE_LORA_SINCE)
    s = LoraSettings(max_loras=loras, max_lora_rank=rank, dtype_bytes=dtype_bytes,
                     fully_sharded=_truthy(flags.get("fully_sharded_loras", False)), tp=tp, moe_lora=moe_lora,
                     moe_3d=any(a in MOE_3D_ARCHITECTURES for a in model.architectures))
    fam = lora_modules(model, layers, moe_lora, tp)
    if any(a in EMBEDDING_LORA_ARCHITECTURES for a in model.architectures):
        # VocabParallelEmbeddingWithLoRA (vocab x rank + H x rank) and LogitsProcessorWithLoRA (rank x H + vocab x rank)
        fam["embeddings"] = [Linear(model.vocab_size, (h := model.hidden_size,), "replicated"),
                             Linear(h, (model.vocab_size,), "replicated")]
    parts = tuple((name, sum(moe_lora_bytes(m, s) if isinstance(m, MoEExperts) else linear_lora_bytes(m, s)
                             for m in mods)) for name, mods in fam.items())
    total = sum(b for _, b in parts)
    top_k = int(c.get("num_experts_per_tok") or c.get("top_k_experts") or c.get("moe_topk") or 0)
    act = lora_activation_bytes(num_tokens, s, top_k, DTYPE_BYTES.get(dtype, 2))
    return LoraPlan(settings=s, max_cpu_loras=cpu, weights_bytes=total, activation_bytes=act, parts=parts)


def plan_features(model: ModelSpec, flags: dict[str, Any], *, version: str, dtype: str, tp: int, layers: range,
                  num_tokens: int) -> FeatureMemory:
    """Every modelled feature for one rank holding `layers`."""
    return FeatureMemory(lora=plan_lora(model, flags, version=version, dtype=dtype, tp=tp, layers=layers,
                                        num_tokens=num_tokens))
