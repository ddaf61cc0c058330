"""Parts of a multimodal Gemma 4 checkpoint that vLLM loads beside the text model (configurator/memory/weights.py):
the audio tower, the per-layer-type RoPE caches, the per-layer-embedding buffer, and towers left out by
--limit-mm-per-prompt; and the dev records' 'Model loading took' against the prediction."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from configurator.memory.weights import (
    audio_params,
    count_params,
    model_load_buffer_bytes,
    towers_skipped,
    weight_bytes,
)
from configurator.model.hf_config import read_model_spec
from configurator.units import GiB
from tests.conftest import load_benchmark, repo_data

PART_E = Path(__file__).resolve().parents[2] / "profiles" / "models" / "catalog" / "families-e.json"


def _catalog_config(hf_id: str) -> dict:
    return next(e["config"] for e in json.loads(PART_E.read_text())["models"] if e["hf_id"] == hf_id)


def _spec(config: dict, name: str = "test/gemma4"):
    return read_model_spec(config, name=name, hf_id=name)


def _audio_modules(a: dict, text_hidden: int) -> dict[str, tuple[int, ...]]:
    """Every parameter (and persistent buffer) of transformers' Gemma4AudioModel (transformers==5.12.1
    models/gemma4/modeling_gemma4.py) plus vLLM's embed_audio projection, by name and shape, written out
    module by module from the source."""
    h, heads, k = a["hidden_size"], a["num_attention_heads"], a["conv_kernel_size"]
    c0, c1 = a["subsampling_conv_channels"]
    out = a["output_proj_dims"]
    shapes: dict[str, tuple[int, ...]] = {
        "subsample_conv_projection.layer0.conv.weight": (c0, 1, 3, 3),
        "subsample_conv_projection.layer0.norm.weight": (c0,),
        "subsample_conv_projection.layer1.conv.weight": (c1, c0, 3, 3),
        "subsample_conv_projection.layer1.norm.weight": (c1,),
        "subsample_conv_projection.input_proj_linear.weight": (h, (c0 // 4) * c1),
        "output_proj.weight": (out, h),
        "output_proj.bias": (out,),
        "embed_audio.embedding_projection.weight": (text_hidden, out),
    }
    clipped = [("feed_forward1.ffw_layer_1", 4 * h, h), ("feed_forward1.ffw_layer_2", h, 4 * h),
               ("feed_forward2.ffw_layer_1", 4 * h, h), ("feed_forward2.ffw_layer_2", h, 4 * h),
               ("self_attn.q_proj", h, h), ("self_attn.k_proj", h, h), ("self_attn.v_proj", h, h),
               ("self_attn.post", h, h), ("lconv1d.linear_start", 2 * h, h), ("lconv1d.linear_end", h, h)]
    for i in range(a["num_hidden_layers"]):
        p = f"layers.{i}."
        for name, o, n in clipped:
            shapes[p + name + ".linear.weight"] = (o, n)
            if a.get("use_clipped_linears"):
                for b in ("input_min", "input_max", "output_min", "output_max"):
                    shapes[p + name + "." + b] = ()
        shapes[p + "self_attn.relative_k_proj.weight"] = (h, h)
        shapes[p + "self_attn.per_dim_scale"] = (h // heads,)
        shapes[p + "lconv1d.depthwise_conv1d.weight"] = (h, 1, k)
        for norm in ("feed_forward1.pre_layer_norm", "feed_forward1.post_layer_norm", "feed_forward2.pre_layer_norm",
                     "feed_forward2.post_layer_norm", "lconv1d.pre_layer_norm", "lconv1d.conv_norm",
                     "norm_pre_attn", "norm_post_attn", "norm_out"):
            shapes[p + norm + ".weight"] = (h,)
    return shapes


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def test_audio_tower_counts_every_module_of_the_source():
    config = _catalog_config("google/gemma-4-E4B-it")
    a = config["audio_config"]
    text_hidden = config["text_config"]["hidden_size"]
    expected = sum(_numel(s) for s in _audio_modules(a, text_hidden).values())
    assert audio_params(config, text_hidden) == expected
    # a smaller tower of the same structure: the count follows every size key
    small = dict(a, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, conv_kernel_size=3,
                 subsampling_conv_channels=[16, 8], output_proj_dims=96, use_clipped_linears=False)
    assert audio_params({"audio_config": small}, 128) == sum(_numel(s) for s in _audio_modules(small, 128).values())


def test_gemma4_e4b_loads_its_audio_tower_in_16_bit():
    config = _catalog_config("google/gemma-4-E4B-it")
    with_audio = _spec(config)
    without = _spec({k: v for k, v in config.items() if k != "audio_config"})
    p = count_params(with_audio)
    assert p.audio > 0 and count_params(without).audio == 0
    assert 0.25e9 < p.audio < 0.35e9  # a 12-layer 1,024-wide conformer and its 1,536 -> 2,560 projection
    assert p.total - count_params(without).total == p.audio
    # replicated: every TP rank holds the whole tower
    for tp in (1, 2):
        diff = weight_bytes(with_audio, tp=tp, pp=1).per_rank_bytes - weight_bytes(without, tp=tp, pp=1).per_rank_bytes
        assert diff == p.audio * 2


def test_no_audio_tower_without_a_gemma4_audio_config():
    assert audio_params({}, 2560) == 0
    assert audio_params({"audio_config": {"model_type": "whisper", "hidden_size": 1024, "num_hidden_layers": 12,
                                          "num_attention_heads": 8}}, 2560) == 0


def test_a_compressed_tensors_checkpoint_keeps_the_towers_in_16_bit_and_quantizes_the_text_linears():
    config = _catalog_config("google/gemma-4-E4B-it")
    bf16 = _spec(config)
    q = _spec(dict(config, quantization_config={
        "quant_method": "compressed-tensors",
        "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int", "group_size": 128}}}}))
    p = count_params(q)
    assert p.vision > 0 and p.audio > 0
    saved = weight_bytes(bf16, tp=1, pp=1).per_rank_bytes - weight_bytes(q, tp=1, pp=1).per_rank_bytes
    # only the decoder linears shrink (to 4 + 16/128 bits); towers, embeddings and norms keep 2 bytes
    assert saved == pytest.approx(sum(p.per_layer_linear) * (2 - 4.125 / 8), rel=1e-6)


def test_limiting_a_modality_to_zero_drops_its_tower():
    config = _catalog_config("google/gemma-4-E4B-it")
    m = _spec(config)
    p = count_params(m)
    full = weight_bytes(m, tp=1, pp=1).per_rank_bytes
    assert full - weight_bytes(m, tp=1, pp=1, modalities_off={"audio"}).per_rank_bytes == p.audio * 2
    # the vision tower serves image and video: both must be off
    assert weight_bytes(m, tp=1, pp=1, modalities_off={"image"}).per_rank_bytes == full
    assert full - weight_bytes(m, tp=1, pp=1, modalities_off={"image", "video"}).per_rank_bytes == p.vision * 2
    assert towers_skipped({"image", "video", "audio"}) == {"vision", "audio"}


def test_per_layer_type_rope_caches_are_counted_once_each():
    config = _catalog_config("google/gemma-4-E4B-it")
    t = config["text_config"]
    m = _spec(config)
    p = count_params(m)
    base = sum(p.per_layer_linear) * 2 + (p.embedding + p.vision + p.audio + sum(p.per_layer_other)) * 2
    # sliding layers: head_dim wide; full layers' proportional RoPE rotates the whole global_head_dim
    rope = t["max_position_embeddings"] * (t["head_dim"] + t["global_head_dim"]) * 2
    assert weight_bytes(m, tp=1, pp=1).per_rank_bytes == base + rope
    # a 'default' RoPE on the full layers rotates global_head_dim x partial_rotary_factor only
    params = dict(t["rope_parameters"], full_attention={"rope_type": "default", "rope_theta": 1e6,
                                                       "partial_rotary_factor": 0.25})
    m2 = _spec(dict(config, text_config=dict(t, rope_parameters=params)))
    rope2 = t["max_position_embeddings"] * (t["head_dim"] + t["global_head_dim"] // 4) * 2
    assert weight_bytes(m2, tp=1, pp=1).per_rank_bytes == base + rope2
    # the same parameters for both layer types and one head size: one cache
    same = {"sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
            "full_attention": {"rope_type": "default", "rope_theta": 1e4}}
    m3 = _spec(dict(config, text_config=dict(t, rope_parameters=same, global_head_dim=None)))
    p3 = count_params(m3)
    base3 = sum(p3.per_layer_linear) * 2 + (p3.embedding + p3.vision + p3.audio + sum(p3.per_layer_other)) * 2
    assert weight_bytes(m3, tp=1, pp=1).per_rank_bytes == base3 + t["max_position_embeddings"] * t["head_dim"] * 2


def test_the_per_layer_embedding_buffer_grows_with_the_batch_budget():
    config = _catalog_config("google/gemma-4-E4B-it")
    t = config["text_config"]
    m = _spec(config)
    assert model_load_buffer_bytes(m, 2048, 2) == 2048 * t["num_hidden_layers"] * t["hidden_size_per_layer_input"] * 2
    assert model_load_buffer_bytes(m, 0, 2) == 0
    a = weight_bytes(m, tp=1, pp=1, max_num_batched_tokens=2048).per_rank_bytes
    b = weight_bytes(m, tp=1, pp=1, max_num_batched_tokens=8192).per_rank_bytes
    assert b - a == model_load_buffer_bytes(m, 8192 - 2048, 2)
    # only the multimodal wrapper allocates it; a model without per-layer inputs has none
    text_only = replace(m, architectures=("Gemma4ForCausalLM",))
    assert model_load_buffer_bytes(text_only, 8192, 2) == 0


def test_every_dev_record_that_logs_model_loading_is_within_3_percent():
    """The prediction the tool makes for each record the accuracy harness runs (its own flags, release, GPU)
    against vLLM's 'Model loading took', quantized checkpoints included."""
    repo_data("logs", "vllm-startup-logs.dev.jsonl")
    acc = load_benchmark("accuracy")
    cases, _ = acc.cases()
    checked = []
    for c in cases:
        if not c.logged_weights:
            continue
        res = acc.run(c, c.release.version)
        err = (res.memory.weights_bytes - c.logged_weights) / c.logged_weights
        checked.append((c.id, round(err * 100, 2), round(res.memory.weights_bytes / GiB, 2)))
    assert len(checked) >= 20
    quantized = [c for c in cases if c.logged_weights and c.model.quant.method]
    assert quantized, "the set includes quantized checkpoints"
    bad = [x for x in checked if abs(x[1]) > 3.0]
    assert not bad, bad


def test_load_time_buffers_are_added_as_allocated_not_scaled_by_the_checkpoint_size():
    # the per-layer-input buffer is allocated at max_num_batched_tokens (gemma4_mm.py), not read from the
    # checkpoint: with a known checkpoint size the count is scaled to it, the buffer is not
    from dataclasses import replace

    from configurator.memory.weights import model_load_buffer_bytes, weight_bytes
    from configurator.model.resolve import resolve_model

    m = resolve_model("google/gemma-4-E4B-it")
    buf = model_load_buffer_bytes(m, 2048, 2)
    assert buf == 2048 * m.num_hidden_layers * int(m.text_config["hidden_size_per_layer_input"]) * 2
    for spec in (m, replace(m, weights_bytes=int(weight_bytes(m, tp=1, pp=1).per_rank_bytes * 0.55))):
        without = weight_bytes(spec, tp=1, pp=1).per_rank_bytes
        with_buf = weight_bytes(spec, tp=1, pp=1, max_num_batched_tokens=2048).per_rank_bytes
        assert with_buf - without == buf
