"""Full-attention layers with an output gate (Qwen3-Next / Qwen3.5 family): the q projection also yields the
gate, so it is twice as wide (vllm==0.25.0 model_executor/models/qwen3_next.py Qwen3NextAttention:
QKVParallelLinear(hidden, head_dim, total_num_heads * (1 + attn_output_gate), total_num_kv_heads), reading
getattr(config, "attn_output_gate", True); qwen3_5.py builds the same attention)."""

from __future__ import annotations

from configurator.memory.weights import attn_output_gate, count_params, weight_bytes
from configurator.model.hf_config import read_model_spec
from configurator.model.resolve import resolve_model


def _qwen35(gate: bool | None, model_type: str = "qwen3_5_text") -> dict:
    """A small Qwen3.5-shaped hybrid: 8 layers, every 4th full attention."""
    t = {"model_type": model_type, "architectures": ["Qwen3_5ForCausalLM"], "hidden_size": 512,
         "num_hidden_layers": 8, "full_attention_interval": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
         "head_dim": 128, "intermediate_size": 1024, "vocab_size": 4096, "max_position_embeddings": 4096,
         "linear_num_key_heads": 4, "linear_num_value_heads": 8, "linear_key_head_dim": 64,
         "linear_value_head_dim": 64, "linear_conv_kernel_dim": 4, "partial_rotary_factor": 0.25,
         "rope_theta": 1e7, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    if gate is not None:
        t["attn_output_gate"] = gate
    return t


def _full_layers(m) -> list[int]:
    return [g.index for g in m.layers if g.kind == "full"]


def test_the_gate_doubles_the_q_projection_of_full_attention_layers_only():
    gated = read_model_spec(_qwen35(True), name="t/gated", hf_id="t/gated")
    plain = read_model_spec(_qwen35(False), name="t/plain", hf_id="t/plain")
    assert attn_output_gate(gated) and not attn_output_gate(plain)
    full = _full_layers(gated)
    assert full == [3, 7]
    pg, pp = count_params(gated), count_params(plain)
    q_width = 8 * 128  # heads x head_dim: the gate adds one more hidden x q_width block per full layer
    for i in range(8):
        extra = 512 * q_width if i in full else 0
        assert pg.per_layer_attention[i] - pp.per_layer_attention[i] == extra
        assert pg.per_layer_linear[i] - pp.per_layer_linear[i] == extra
    # and the gated projection is what vLLM shapes: (2 x heads + 2 x kv_heads) x head_dim outputs, o_proj back
    kv = 2 * 2 * 128
    qkv_o = 512 * (2 * q_width + kv) + q_width * 512
    assert pg.per_layer_attention[3] == qkv_o
    assert weight_bytes(gated, tp=1, pp=1).per_rank_bytes - weight_bytes(plain, tp=1, pp=1).per_rank_bytes \
        == 2 * 512 * q_width * 2


def test_qwen3_next_is_gated_without_the_key_and_other_models_are_not():
    nxt = read_model_spec(_qwen35(None, "qwen3_next") | {"architectures": ["Qwen3NextForCausalLM"]},
                          name="t/next", hf_id="t/next")
    assert attn_output_gate(nxt)
    assert not attn_output_gate(resolve_model("Qwen/Qwen3-8B", allow_hub=False))


def test_qwen3_6_27b_counts_its_gate():
    # the built-in profile: 16 full-attention layers of 24 heads x 256 at hidden 5,120 -> 0.50B more parameters
    m = resolve_model("Qwen/Qwen3.6-27B", allow_hub=False)
    assert attn_output_gate(m)
    t = m.text_config
    p = count_params(m)
    plain = count_params(read_model_spec(dict(m.full_config, text_config=dict(t, attn_output_gate=False)),
                                         name="t/plain27", hf_id="t/plain27"))
    assert p.total - plain.total == len(_full_layers(m)) * t["hidden_size"] * t["num_attention_heads"] * t["head_dim"]
    assert len(_full_layers(m)) == t["num_hidden_layers"] // t["full_attention_interval"]
