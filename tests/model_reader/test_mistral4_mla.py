"""Mistral Small 4's text_config (model_type mistral4) is read as MLA, as vLLM serves the checkpoint.

vllm==0.25.0 has no mistral4 model type; with --config-format auto a repository with consolidated*.safetensors and
params.json loads in the Mistral format (transformers_utils/config.py get_config), whose adapt_config_dict turns an
MoE with shared experts into model_type deepseek_v3 (transformers_utils/configs/mistral.py): MLA, one latent of
kv_lora_rank + qk_rope_head_dim per token and layer.

The text_config keys below are those a test quotes from
https://huggingface.co/mistralai/Mistral-Small-4-119B-2603/raw/main/config.json (code index file id 61389900461,
MISTRAL_SMALL_4); the outer mistral3 wrapper is how that checkpoint nests them (index id 57156778864).
"""

from configurator.model.hf_config import read_model_spec
from tests.model_reader._fixtures import kinds, kv_bytes_per_token

TEXT = {"model_type": "mistral4", "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 32,
        "head_dim": 128, "hidden_size": 4096, "kv_lora_rank": 256, "qk_rope_head_dim": 64, "qk_nope_head_dim": 64,
        "v_head_dim": 128, "sliding_window": None}
CONFIG = {"model_type": "mistral3", "architectures": ["Mistral3ForConditionalGeneration"], "text_config": TEXT}


def test_mistral4_text_config_is_mla():
    m = read_model_spec(CONFIG, name="mistralai/Mistral-Small-4-119B-2603")
    assert m.model_type == "mistral4" and m.is_mla
    assert kinds(m) == {"mla": 36}
    # one 256 + 64 latent per layer: 36 x 320 x 2 B = 23,040 B per token (1,048,576 tokens: 22.5 GiB), not
    # 32 heads x 128 x (K + V) per layer (589,824 B) as an uncompressed reading of the LoRA keys would give
    assert kv_bytes_per_token(m) == TEXT["num_hidden_layers"] * (TEXT["kv_lora_rank"] + TEXT["qk_rope_head_dim"]) * 2


def test_a_non_mla_type_with_the_same_keys_stays_uncompressed():
    # the MLA reading is keyed on the model type (is_deepseek_mla), not on the presence of kv_lora_rank
    m = read_model_spec({**TEXT, "model_type": "minicpm3"}, name="x")
    assert not m.is_mla
    assert kv_bytes_per_token(m) == 36 * 32 * (64 + 64) * 2 * 2
