"""MiniCPM3: q/kv-LoRA attention that caches full K and V of qk_nope + qk_rope per head (not an MLA latent).

vLLM 0.33.0 model_executor/models/minicpm3.py::MiniCPM3Attention builds
Attention(num_heads, qk_head_dim = qk_nope_head_dim + qk_rope_head_dim, num_kv_heads=num_heads) and pads
V to qk_head_dim; minicpm3 is not an is_deepseek_mla model type.
"""

from tests.model_reader._fixtures import kinds, kv_bytes_per_token, spec


def test_minicpm3_head_size_is_96_not_64():
    m = spec("openbmb__MiniCPM3-4B")
    assert not m.is_mla and m.head_dim == 96 and m.num_kv_heads == 40
    assert kinds(m) == {"full": 62}
    assert {(g.head_size, g.head_size_v) for g in m.layers} == {(96, 96)}
    # 62 x 40 x (96 + 96) x 2 B = 952,320 B (hidden / heads = 64 gave 634,880)
    assert kv_bytes_per_token(m) == 952_320
