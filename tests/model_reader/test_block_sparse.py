"""MiniMax-M3: block-sparse layers keep a bf16 index key per token beside their GQA K/V.

vLLM 0.33.0 vllm/models/minimax_m3/nvidia/model.py (sparse_attention_freq selects the layers;
MiniMaxM3SparseAttention's own cache is a FullAttentionSpec) and common/indexer.py
(MiniMaxM3IndexerCache: MLAAttentionSpec, one sparse_index_dim key, indexer_kv_dtype bf16 by default).
"""

from configurator.estimate import EstimateRequest, estimate
from tests.model_reader._fixtures import fixture, kinds, kv_bytes_per_token, spec

M3 = "MiniMaxAI__MiniMax-M3"


def test_minimax_m3_index_keys_on_sparse_layers():
    freq = fixture(M3)["config"]["sparse_attention_config"]["sparse_attention_freq"]
    m = spec(M3)
    assert kinds(m) == {"full": 60, "mla": sum(1 for f in freq if f)}
    # 60 x 4 KV heads x (128 + 128) x 2 B + 57 x 128 x 2 B = 122,880 + 14,592 (was 122,880)
    assert kv_bytes_per_token(m) == 137_472


def test_minimax_m3_index_keys_stay_bf16_under_fp8_kv():
    m = spec(M3)
    r = estimate(EstimateRequest(model=m, gpu="h100", vllm_version="0.33.0",
                                 flags={"max_model_len": 8192, "kv_cache_memory_bytes": 20 << 30,
                                        "kv_cache_dtype": "fp8"}))
    assert r.kv_cache.bytes_per_token == 60 * 4 * 256 + 57 * 128 * 2  # 61,440 + 14,592
