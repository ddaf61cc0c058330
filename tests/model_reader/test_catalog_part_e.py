"""Catalog part E (profiles/models/catalog/families-e.json): each entry loads through the reader, its per-token
KV matches the config's own geometry, and the Gemma 4 E-models' weights count what vLLM builds.

Gemma 4 E2B / E4B (vllm==0.25.0 vllm/model_executor/models/gemma4.py):
- Gemma4Attention: the last num_kv_shared_layers layers pass kv_sharing_target_layer_name (the last earlier
  layer of the same layer type), so they register no KV cache of their own; full-attention layers use
  global_head_dim (and num_global_key_value_heads only with attention_k_eq_v);
- Gemma4Model: embed_tokens_per_layer, a VocabParallelEmbedding of vocab_size_per_layer_input x
  (num_hidden_layers x hidden_size_per_layer_input), and per_layer_model_projection; each decoder layer a
  per_layer_input_gate and per_layer_projection; every layer (shared or not) its own qkv_proj / o_proj, and
  with use_double_wide_mlp the shared layers' MLP is 2 x intermediate_size wide.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from configurator.memory.weights import count_params, per_layer_input_params, weight_bytes
from configurator.model.hf_config import read_model_spec, text_config_of
from tests.conftest import load_benchmark, repo_data
from tests.model_reader._fixtures import kinds, kv_bytes_per_token

PART = Path(__file__).resolve().parents[2] / "profiles" / "models" / "catalog" / "families-e.json"
ENTRIES = json.loads(PART.read_text())["models"]
ATTENDING = {"full_attention", "sliding_attention", "attention"}


def _spec(entry: dict):
    return read_model_spec(entry["config"], name=entry["hf_id"], hf_id=entry["hf_id"])


def _expected_kv_bf16(config: dict) -> int:
    """Bytes per token at bf16 from the config's keys alone: the attending layers below the KV-shared
    tail, K and V of kv_heads x head_dim each (global_head_dim on Gemma 4's full-attention layers)."""
    t = text_config_of(config)
    n = t["num_hidden_layers"]
    heads = t["num_attention_heads"]
    kv = t.get("num_key_value_heads") or heads
    hd = t.get("head_dim") or t["hidden_size"] // heads
    types = t.get("layer_types")
    if types is None:  # Qwen3.5-style hybrids name every k-th layer full attention
        k = t.get("full_attention_interval") or 1
        types = ["full_attention" if (i + 1) % k == 0 else "linear_attention" for i in range(n)]
    owners = n - int(t.get("num_kv_shared_layers") or 0)
    total = 0
    for t_i in types[:owners]:
        if t_i not in ATTENDING:
            continue
        if t_i == "full_attention" and t.get("global_head_dim"):
            g_kv = (t.get("num_global_key_value_heads") or kv) if t.get("attention_k_eq_v") else kv
            total += 2 * g_kv * t["global_head_dim"] * 2
        else:
            total += 2 * kv * hd * 2
    return total


def test_part_e_is_not_empty_and_every_entry_records_its_source():
    assert len(ENTRIES) >= 5
    for e in ENTRIES:
        assert len(e["config_source"]) > 100, e["hf_id"]
        assert "/" in e["hf_id"] and e["config"], e["hf_id"]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["hf_id"])
def test_entry_loads_and_its_kv_matches_the_configs_geometry(entry):
    m = _spec(entry)
    assert m.layers and m.num_hidden_layers > 0
    assert kv_bytes_per_token(m) == _expected_kv_bf16(entry["config"])


def _entry(hf_id: str) -> dict:
    return next(e for e in ENTRIES if e["hf_id"] == hf_id)


@pytest.mark.parametrize(("hf_id", "owners", "full_owners"), [
    ("google/gemma-4-E2B-it", 15, 3),  # 35 layers - 20 shared; full at 4, 9, 14
    ("google/gemma-4-E4B-it", 24, 4),  # 42 layers - 18 shared; full at 5, 11, 17, 23
])
def test_gemma4_kv_shared_layers_hold_no_cache(hf_id, owners, full_owners):
    m = _spec(_entry(hf_id))
    t = m.text_config
    assert len(m.layers) == owners == t["num_hidden_layers"] - t["num_kv_shared_layers"]
    assert max(g.index for g in m.layers) == owners - 1
    full = [g for g in m.layers if g.kind == "full"]
    assert len(full) == full_owners
    assert {g.head_size for g in full} == {t["global_head_dim"]}
    assert {g.head_size for g in m.layers if g.kind == "sliding"} == {t["head_dim"]}
    assert {g.window for g in m.layers if g.kind == "sliding"} == {t["sliding_window"]}


def test_gemma4_e2b_per_layer_inputs_and_shared_layers_count_in_the_weights():
    m = _spec(_entry("google/gemma-4-E2B-it"))
    t = m.text_config
    n, h, w = t["num_hidden_layers"], t["hidden_size"], t["hidden_size_per_layer_input"]
    extra = per_layer_input_params(m)
    assert extra is not None
    # the table (vocab padded to 64) and its model projection
    assert extra.embedding == t["vocab_size_per_layer_input"] * n * w + h * n * w
    p = count_params(m)
    assert p.embedding == t["vocab_size"] * h + extra.embedding
    # every layer has its projections: 28 sliding (head_dim 256) + 7 full (global_head_dim 512), 1 KV head
    heads, kv = t["num_attention_heads"], t["num_key_value_heads"]

    def attn(d: int) -> int:
        return h * heads * d + h * 2 * kv * d + heads * d * h

    assert sum(p.per_layer_attention) == 28 * attn(t["head_dim"]) + 7 * attn(t["global_head_dim"])
    # MLP: 15 layers of intermediate_size, the 20 shared ones twice as wide (use_double_wide_mlp)
    mlp = 3 * h * t["intermediate_size"]
    assert sum(p.per_layer_linear) - sum(p.per_layer_attention) == 15 * mlp + 20 * 2 * mlp
    # about 4.65B parameters in the text model (the 9.54 GiB checkpoint also holds the vision and audio
    # towers, which this config copy does not describe)
    assert 4.6e9 < p.total < 4.7e9
    assert p.vision == p.audio == 0
    # the weights are those parameters at bf16 plus two RoPE caches (rope_parameters keyed by layer type):
    # sliding layers' head_dim wide, full layers' global_head_dim wide (a 'proportional' RoPE rotates the
    # whole head: vllm==0.25.0 layers/rotary_embedding/gemma4_rope.py)
    rope = t["max_position_embeddings"] * (t["head_dim"] + t["global_head_dim"]) * 2
    assert weight_bytes(m, tp=1, pp=1).per_rank_bytes == p.total * 2 + rope


def test_per_layer_input_params_split_the_table_by_tp():
    m = _spec(_entry("google/gemma-4-E4B-it"))
    one, two = weight_bytes(m, tp=1, pp=1), weight_bytes(m, tp=2, pp=1)
    table = per_layer_input_params(m).embedding * 2
    # the vocab-parallel table halves with TP 2, so rank bytes drop by at least half the table
    assert one.per_rank_bytes - two.per_rank_bytes > table / 2


def test_non_gemma4_models_have_no_per_layer_inputs():
    for hf_id in ("Qwen/Qwen3.8-27B", "ibm-granite/granite-4.0-micro"):
        assert per_layer_input_params(_spec(_entry(hf_id))) is None


def test_granite_4_micro_is_dense_attention_despite_its_hybrid_config():
    # vllm==0.25.0 vllm/config/model.py ModelConfig.is_hybrid: a granitemoehybrid config whose layer_types are
    # all 'attention' is not hybrid: 40 full-attention layers, no Mamba state
    m = _spec(_entry("ibm-granite/granite-4.0-micro"))
    assert m.model_type == "granitemoehybrid"
    assert kinds(m) == {"full": 40}
    assert kv_bytes_per_token(m) == 40 * 2 * 8 * 64 * 2


def test_qwen38_is_a_gdn_hybrid_with_16_full_layers():
    m = _spec(_entry("Qwen/Qwen3.8-27B"))
    assert kinds(m) == {"mamba": 48, "full": 16}
    assert {g.mamba.variant for g in m.layers if g.kind == "mamba"} == {"gdn"}
    fp8 = _spec(_entry("Qwen/Qwen3.8-27B-FP8"))
    assert fp8.quant.method == "fp8" and kinds(fp8) == kinds(m)


def test_records_of_part_e_models_reproduce_their_logged_tokens():
    """Every dev / dev2 record that kv_reproduction can run on a part-E model lands within 1% (records are
    chosen by the model they resolve to, not by id)."""
    repo_data("logs", "vllm-startup-logs.dev.jsonl")
    repo_data("logs", "vllm-startup-logs.dev2.jsonl")
    kv_reproduction = load_benchmark("kv_reproduction")

    ids = {e["hf_id"] for e in ENTRIES} | {a for e in ENTRIES for a in e["aliases"]}
    done, _ = kv_reproduction.run()
    mine = [d for d in done if d["model"].split(" ")[0] in ids]
    assert mine, "no record runs on a part-E model"
    off = [(d["id"], round(d["tok_err"] * 100, 2)) for d in kv_reproduction.misses(mine)]
    assert not off, off
