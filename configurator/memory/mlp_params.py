"""MLP and mixture-of-experts shapes from a (text) config: gates, routed and shared experts, latents."""

from __future__ import annotations


def mlp_gated(c: dict) -> bool:
    """Whether the MLPs (and the experts) have a gate: gate_up_proj + down_proj, three h x intermediate
    matrices, rather than up_proj + down_proj (relu2, gelu)."""
    act = str(c.get("mlp_hidden_act") or c.get("hidden_act") or c.get("activation_function")
              or c.get("hidden_activation") or "silu")
    return act not in ("gelu", "gelu_new", "relu", "relu2", "gelu_fast", "gelu_pytorch_tanh") or \
        str(c.get("model_type", "")).startswith(("gemma", "phi3"))


def mlp_params(h: int, inter: int, c: dict) -> int:
    """One dense MLP of width `inter`: gate_up_proj + down_proj, or up_proj + down_proj without a gate."""
    return (3 if mlp_gated(c) else 2) * h * inter


def num_experts(c: dict) -> int:
    """Routed experts per MoE layer from a (text) config; 0 for a dense model."""
    experts = c.get("num_experts") or c.get("n_routed_experts") or c.get("num_local_experts") or 0
    if isinstance(experts, list):
        experts = experts[0]
    return int(experts or 0)


def experts_per_token(c: dict) -> int:
    """Routed experts each token goes to (top-k) from a (text) config; 0 for a dense model."""
    return int(c.get("num_experts_per_tok") or c.get("top_k_experts") or c.get("moe_topk") or 0)


def expert_intermediate(c: dict) -> int:
    """One routed expert's intermediate width from a (text) config (the dense width when it names none)."""
    return int(c.get("moe_intermediate_size") or c.get("expert_intermediate_size") or c.get("intermediate_size") or 0)


def expert_hidden(c: dict, h: int) -> int:
    """The width the routed experts work at: a latent MoE projects the hidden state down first
    (nemotron_h moe_latent_size: vllm==0.33.0 model_executor/models/nemotron_h.py NemotronHMoE builds the
    FusedMoE at moe_hidden_size = moe_latent_size, between fc1_latent_proj / fc2_latent_proj; Kimi-K3
    routed_expert_hidden_size: vllm/models/kimi_k3/nvidia/model.py, routed_expert_down_proj / _up_proj), else
    the hidden size."""
    return int(c.get("moe_latent_size") or c.get("routed_expert_hidden_size") or h)


def latent_params(c: dict, h: int) -> int:
    """A latent MoE's two projections, hidden -> latent -> hidden (ReplicatedLinear: whole on every rank)."""
    lat = expert_hidden(c, h)
    return 2 * h * lat if lat != h else 0


def routed_params(c: dict, h: int) -> tuple[int, int]:
    """(routed experts' weights, router gate) of one MoE layer: gate/up/down, or up/down for experts
    without a gate (nemotron_h's relu2: FusedMoE(activation=activation_without_mul(mlp_hidden_act)))."""
    experts = num_experts(c)
    if not experts:
        return 0, 0
    inter = expert_intermediate(c)
    return experts * (3 if mlp_gated(c) else 2) * expert_hidden(c, h) * inter, h * experts


def moe_layer(c: dict, i: int) -> bool:
    """Whether decoder layer i of an MoE model has routed experts. Llama 4 interleaves them: vllm==0.11.0
    model_executor/models/llama4.py Llama4DecoderLayer builds Llama4MoE where
    `interleave_moe_layer_step > 0 and (layer_idx + 1) % interleave_moe_layer_step == 0`, else a dense
    LlamaMLP of intermediate_size_mlp (Maverick: step 2, 24 of 48 layers; Scout: step 1, all 48). Others:
    first_k_dense_replace dense layers, then every moe_layer_freq-th."""
    step = c.get("interleave_moe_layer_step")
    if isinstance(step, int) and not isinstance(step, bool):
        return step > 0 and (i + 1) % step == 0
    flags = c.get("moe_layer_freq")
    if isinstance(flags, list):  # one flag a layer (MiniMax-M3: vllm/models/minimax_m3/nvidia/model.py,
        return i < len(flags) and flags[i] != 0  # 0.33.0: `moe_layer_freq[layer_id] != 0`)
    first_dense = int(c.get("first_k_dense_replace") or 0)
    freq = int(flags or 1) if isinstance(flags, int) and not isinstance(flags, bool) else 1
    return i >= first_dense and (i - first_dense) % max(freq, 1) == 0


def moe_params(c: dict, h: int) -> int:
    """One MoE layer: routed experts, router, shared experts (at the full hidden size) and a latent MoE's
    projections."""
    routed, router = routed_params(c, h)
    if not routed:
        return 0
    return routed + router + mlp_params(h, shared_expert_intermediate(c), c) + latent_params(c, h)


def shared_expert_intermediate(c: dict) -> int:
    """The shared experts' total intermediate width in one MoE layer (0 without any): Qwen's
    shared_expert_intermediate_size; nemotron_h's moe_shared_expert_intermediate_size x n_shared_experts
    (NemotronHMoE, vllm==0.33.0); Llama 4's one shared expert of intermediate_size (Llama4MoE, vllm==0.11.0
    llama4.py); else n_shared_experts x moe_intermediate_size (DeepSeek, Kimi)."""
    shared = 1 if str(c.get("model_type", "")).startswith("llama4") else \
        int(c.get("n_shared_experts") or c.get("num_shared_experts") or 0)
    return int(c.get("shared_expert_intermediate_size") or 0) or \
        int(c.get("moe_shared_expert_intermediate_size") or 0) * shared or shared * expert_intermediate(c)
