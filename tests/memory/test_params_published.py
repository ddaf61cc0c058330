"""Parameter counts as read from the config against the totals the model's publishers (or the Hub's
safetensors box of an unquantized copy) state. vLLM builds the same shapes, so a count far off means
weights far off: Llama 4 Maverick counted 779B (every layer MoE, no shared expert) and refused to fit
on 8 x H200; Qwen2-VL-7B counted 12.8B (its vision blocks read hidden_size wide).

Published figures are rounded as printed (8.29B, 73.4B, 109B), so the tolerance is half a unit of the
last printed digit plus 0.2% for tensors vLLM does not build (rotary buffers, MTP layers)."""

from __future__ import annotations

import pytest

from configurator.memory.weights import count_params
from configurator.model import catalog

PUBLISHED = [
    # id, published total (B), digits after the point as printed, source
    ("Qwen/Qwen2-VL-2B-Instruct", 2.21, 2, "https://huggingface.co/mlx-community/Qwen2-VL-2B-bf16 (bf16 copy of "
     "Qwen2-VL-2B, same shapes): 2.21B params"),
    ("Qwen/Qwen2-VL-7B-Instruct", 8.29, 2, "https://huggingface.co/mlx-community/Qwen2-VL-7B-Instruct-bf16: 8.29B"),
    ("Qwen/Qwen2.5-VL-72B-Instruct", 73.4, 1, "https://huggingface.co/mlx-community/Qwen2.5-VL-72B-Instruct-bf16 "
     "and https://huggingface.co/mukulp/Qwen2.5-VL-72B-Instruct-bf16: 73.4B"),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 109, 0, "https://huggingface.co/docs/transformers/model_doc/llama4: "
     "'two flavors: 109B, and 402B parameters'"),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", 402, 0, "same page: 402B"),
    # nemotron_h experts without a gate (relu2), shared expert of moe_shared_expert_intermediate_size: 46.2B before
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 31.6, 1, "https://huggingface.co/basecompute/"
     "NVIDIA-Nemotron-3-Nano-30B-A3B: 'A 31.6B-parameter hybrid ...', bf16 as published 63.2 GB"),
    # cohere / cohere2 tie the LM head to the embeddings (the class default; vLLM's commandr.py has no lm_head)
    ("CohereForAI/aya-23-8B", 8.028, 3, "https://huggingface.co/datasets/open-llm-leaderboard/requests/blame/"
     "2f43a71b7cd6fb9b96df3716b277652458443c47/CohereForAI/aya-23-8B_eval_request_False_float16_Original.json: "
     "params 8.028"),
    ("CohereLabs/c4ai-command-r7b-12-2024", 8.03, 2, "https://huggingface.co/mlx-community/"
     "c4ai-command-r7b-12-2024-bf16: 8.03B"),
    # tied by Phi3SmallConfig's inherited default; tied per copies of the published config (catalog part C)
    ("microsoft/Phi-3-small-8k-instruct", 7.392, 3, "https://huggingface.co/datasets/open-llm-leaderboard/requests/"
     "blame/b0f5592d0d0d846920d8964c43c053998d0fea95/microsoft/Phi-3-small-8k-instruct_eval_request_False_bfloat16_"
     "Original.json: params 7.392"),
    ("Qwen/Qwen2.5-Math-1.5B", 1.54, 2, "https://huggingface.co/mlx-community/Qwen2.5-Math-1.5B-bf16: 1.54B"),
    # lightning-attention layers: qkv, output gate and out projections of heads x head_dim (12B short before)
    ("MiniMaxAI/MiniMax-M1-80k", 456, 0, "https://huggingface.co/models?other=minimax_m1: 456B"),
    # its moe_layer_freq is a per-layer list (one dense layer first): 315.8B when read as every layer MoE
    ("XiaomiMiMo/MiMo-V2-Flash", 310, 0, "https://huggingface.co/collections/XiaomiMiMo/mimo-v2-flash: 310B"),
]


@pytest.mark.parametrize(("hf_id", "published", "digits", "source"), PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_count_matches_the_published_total(hf_id, published, digits, source):
    entry = catalog.find(hf_id)
    assert entry is not None, hf_id
    got = count_params(entry.spec()).total / 1e9
    tolerance = 0.5 * 10 ** -digits + 0.002 * published
    assert abs(got - published) <= tolerance, f"{hf_id}: {got:.3f}B counted, {published}B published ({source})"


def test_qwen2_5_vl_vision_blocks_are_gated():
    """Qwen2_5_VisionMLP is gate_up_proj + down_proj (vllm 0.11.0 qwen2_5_vl.py): three h x intermediate
    matrices per block, not two (the 3B and 7B share the tower: 32 blocks of 1280 x 3420)."""
    for hf_id in ("Qwen/Qwen2.5-VL-3B-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct"):
        spec = catalog.find(hf_id).spec()
        v = spec.full_config["vision_config"]
        pc = count_params(spec)
        mlp = 32 * 3 * v["hidden_size"] * v["intermediate_size"]
        assert pc.vision > mlp, hf_id


def test_llama4_interleaves_experts_and_has_a_shared_expert():
    """Maverick (interleave_moe_layer_step 2): routed experts in layers 1, 3, ..., 47, a dense MLP of
    intermediate_size_mlp in the others; each MoE layer adds one shared expert of intermediate_size."""
    spec = catalog.find("meta-llama/Llama-4-Maverick-17B-128E-Instruct").spec()
    c = spec.text_config
    pc = count_params(spec)
    moe_layers = [i for i, e in enumerate(pc.per_layer_experts) if e]
    assert moe_layers == list(range(1, c["num_hidden_layers"], 2))
    h = c["hidden_size"]
    dense = pc.per_layer_linear[0] - pc.per_layer_attention[0]
    assert dense == 3 * h * c["intermediate_size_mlp"]
    moe = pc.per_layer_linear[1] - pc.per_layer_attention[1]
    assert moe == (c["num_local_experts"] + 1) * 3 * h * c["intermediate_size"] + h * c["num_local_experts"]


def test_a_latent_moe_counts_its_experts_at_the_latent_width():
    """Nemotron 3 Super (moe_latent_size 1024) and Kimi-K3 (routed_expert_hidden_size 3584) route through a
    narrower width; counted at the hidden size they came to 684B and 5.47T. What the publishers state
    includes blocks vLLM does not load by default (Super's MTP layer, ~3B) or the tower: 124B
    (https://huggingface.co/Prismtek/collections) and 2.8T (https://huggingface.co/moonshotai), so the count
    must land a few per cent below."""
    for hf_id, published in (("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", 124), ("moonshotai/Kimi-K3", 2800)):
        got = count_params(catalog.find(hf_id).spec()).total / 1e9
        assert 0.95 * published < got < published, (hf_id, got)


def test_a_per_layer_moe_flag_list_is_read():
    """MiniMax-M3's moe_layer_freq is one flag a layer ([0, 0, 0, 1, ...]: three dense layers); NVIDIA's NVFP4
    copy has no first_k_dense_replace, so the list alone must give the base model's count."""
    base = count_params(catalog.find("MiniMaxAI/MiniMax-M3").spec())
    copy = count_params(catalog.find("nvidia/MiniMax-M3-NVFP4").spec())
    assert [bool(e) for e in copy.per_layer_experts] == [bool(e) for e in base.per_layer_experts]
    assert sum(1 for e in copy.per_layer_experts if e) == 57


def test_voxtral_counts_its_whisper_encoder():
    """Voxtral-Mini-3B-2507: the text model (4.01B) plus a 32-layer Whisper encoder and its adapter (0.66B);
    the Hub's bf16 MLX copy prints a rounded "5B" (https://huggingface.co/mlx-community/Voxtral-Mini-3B-2507-bf16),
    so only the range is checked: the encoder must be there, and nothing else added."""
    pc = count_params(catalog.find("mistralai/Voxtral-Mini-3B-2507").spec())
    assert 0.6e9 < pc.audio < 0.7e9 and 4.5 <= pc.total / 1e9 < 5.5


def test_a_tower_the_count_cannot_read_is_a_not_modelled_warning(run_cli):
    """Phi-4-multimodal declares its image and audio towers in embd_layer / audio_processor, whose shapes the
    count does not read: the estimate must say the weights are short by them, not pass in silence."""
    import json

    res = run_cli("estimate", "--model", "microsoft/Phi-4-multimodal-instruct", "--gpu", "l4", "--format", "json")
    warnings = json.loads(res.stdout)["warnings"]
    assert any("image tower (its shapes are under embd_layer.image_embd_layer" in w and w.startswith("not-modelled:")
               for w in warnings)
    assert any("audio tower (its shapes are under audio_processor" in w for w in warnings)
    res = run_cli("estimate", "--model", "Qwen/Qwen2.5-VL-7B-Instruct", "--gpu", "l4", "--format", "json")
    assert not any("weights leave out" in w for w in json.loads(res.stdout)["warnings"])


def test_phi3_vision_counts_its_clip_tower():
    """Phi-3.5-vision's CLIP tower is named by img_processor, not a vision_config (3.82B without it). The
    published 4.15B (https://raw.githubusercontent.com/jakemanger/whatmodel/main/pages/model/
    phi-3-5-vision-instruct.md) counts the checkpoint's 24 CLIP layers; vLLM builds 23 (layer_idx -2), so the
    count plus one CLIP layer (4 x 1024^2 + 2 x 1024 x 4096 + biases and norms) must round to it."""
    pc = count_params(catalog.find("microsoft/Phi-3.5-vision-instruct").spec())
    clip_layer = 4 * 1024 * 1024 + 2 * 1024 * 4096 + 4 * 1024 + 4096 + 1024 + 4 * 1024
    assert round((pc.total + clip_layer) / 1e9, 2) == 4.15


def test_language_model_only_is_every_modality_at_zero(estimate_json):
    """--language-model-only (vLLM 0.33 MultiModalConfig: the limit of every modality is 0) must read like
    --limit-mm-per-prompt with 0 for each: the towers are not built and nothing is profiled for them."""
    base = ("--model", "google/gemma-4-E4B-it", "--gpu", "l4")
    _, plain = estimate_json(*base)
    _, lmo = estimate_json(*base, "--language-model-only")
    _, zero = estimate_json(*base, "--limit-mm-per-prompt", '{"image": 0, "video": 0, "audio": 0}')
    assert lmo["vllm_log"] == zero["vllm_log"] and lmo["vllm_log"] != plain["vllm_log"]
