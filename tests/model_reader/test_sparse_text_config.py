"""A multimodal config whose text_config names only a few keys takes the text model class's defaults.

transformers' LlavaNextConfig builds CONFIG_MAPPING[text_config['model_type']](**text_config), so the
absent geometry is MistralConfig's defaults (transformers==5.24.0,
transformers/models/mistral/configuration_mistral.py: hidden 4096, 32 layers, 32 heads, 8 KV heads,
head_dim = hidden / heads); an explicit null sliding_window overrides the class's 4096. vLLM reads
the same object (hf_text_config).
"""

from tests.model_reader._fixtures import kinds, kv_bytes_per_token, spec

LLAVA = "llava-hf__llava-v1.6-mistral-7b-hf"


def test_llava_next_mistral_takes_mistral_defaults():
    m = spec(LLAVA)  # raised before: "lacks the geometry key(s) num_hidden_layers, num_attention_heads, hidden_size"
    assert (m.num_hidden_layers, m.hidden_size, m.num_attention_heads, m.num_kv_heads, m.head_dim) == \
        (32, 4096, 32, 8, 128)
    assert kinds(m) == {"full": 32}  # sliding_window: null in the file
    assert kv_bytes_per_token(m) == 32 * 8 * (128 + 128) * 2  # 131,072 B
    assert m.intermediate_size == 14336 and m.vocab_size == 32064
    assert any("took transformers' mistral defaults" in n for n in m.notes)
