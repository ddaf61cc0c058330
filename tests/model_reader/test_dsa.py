"""Sparse-attention (DSA) MLA: the latent plus an indexer key cache on the layers that run the indexer.

vLLM 0.33.0 vllm/models/deepseek_v32/attention.py: a layer with skip_topk (index_topk_pattern 'S',
else max(i - index_skip_topk_offset + 1, 0) % index_topk_freq != 0) builds no indexer, so no
DeepseekV32IndexerCache (128 uint8 + 4 B scale = 132 B per token). GLM-5.x configs may spell the
layers 'deepseek_sparse_attention' in layer_types (transformers' legacy name for indexed_attention).
"""

import json

from configurator.model.hf_config import read_model_spec
from tests.conftest import repo_data
from tests.model_reader._fixtures import kinds, kv_bytes_per_token, spec

LATENT = 78 * (512 + 64) * 2  # 89,856 B


def _indexers(m):
    return [g for g in m.layers if g.why == "DSA indexer key cache"]


def test_glm52_indexer_only_on_layers_that_run_topk():
    m = spec("zai-org__GLM-5.2")  # index_topk_freq 4, index_skip_topk_offset 3, no layer_types
    idx = sorted(g.index for g in _indexers(m))
    assert idx == [0, 1, 2, *range(6, 78, 4)]  # 21 layers, as the config's indexer_types 'full'
    assert kv_bytes_per_token(m) == LATENT + 21 * 132  # 92,628 B, not 100,152 (an indexer per layer)


def test_glm52_deepseek_sparse_attention_layer_types_read_as_mla():
    m = spec("nvidia__GLM-5.2-NVFP4")  # layer_types: 'deepseek_sparse_attention' x 78 (raised before)
    assert kinds(m) == {"mla": 78 + 21}
    assert kv_bytes_per_token(m) == LATENT + 21 * 132


def test_glm5_without_topk_freq_keeps_an_indexer_on_every_layer():
    path = repo_data("model-configs") / "zai-org__GLM-5.json"
    m = read_model_spec(json.loads(path.read_text()), name="zai-org/GLM-5")
    assert len(_indexers(m)) == 78
    assert kv_bytes_per_token(m) == LATENT + 78 * 132  # 100,152 B
