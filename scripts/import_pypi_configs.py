"""Convert litgpt's per-model architecture table into Hugging Face config.json form, by a fixed field map.

Source: the `litgpt` wheel from PyPI (`pip download litgpt==0.5.13 --no-deps`), file `litgpt/config.py`:
a list of `dict(name=..., hf_config=dict(org=..., name=...), n_layer=..., ...)` entries, one per Hub id
(entries with a `{}` in the name are expanded by the module itself, e.g. base and `-Instruct`).
The module is executed on its own (it needs only `yaml` and `typing_extensions`, not torch), and each
entry is instantiated as litgpt's own `Config`, so that the values litgpt derives in `__post_init__`
(head_size = n_embd // n_head, n_query_groups = n_head, padded_vocab_size, the per-layer
sliding-window indices) are litgpt's, not ours.

Field map (litgpt `Config` attribute -> config.json key); nothing else is emitted:

    n_layer                 -> num_hidden_layers
    n_embd                  -> hidden_size
    n_head                  -> num_attention_heads
    n_query_groups          -> num_key_value_heads
    head_size               -> head_dim
    padded_vocab_size       -> vocab_size (the embedding's row count; litgpt's vocab_size is the
                               tokenizer's, padded_vocab_size is the checkpoint's matrix)
    block_size              -> max_position_embeddings
    intermediate_size       -> intermediate_size
    moe_intermediate_size   -> moe_intermediate_size
    n_expert                -> num_experts (Qwen MoE) / num_local_experts (Mixtral)
    n_expert_per_token      -> num_experts_per_tok
    norm_eps                -> rms_norm_eps   (only where the entry sets it, not litgpt's default)
    rope_base               -> rope_theta     (only where the entry sets it, not litgpt's default)
    rope_local_base_freq    -> rope_local_base_freq
    rope_adjustments        -> rope_scaling: llama3 keys (factor, low_freq_factor, high_freq_factor,
                               original_max_seq_len -> original_max_position_embeddings) with
                               rope_type "llama3"; a lone `factor` with rope_type "linear" (litgpt's
                               model.py applies exactly these two schemes)
    sliding_window_size     -> sliding_window (null when litgpt has none, so that a class default
                               such as MistralConfig's 4096 is not taken in its place)
    sliding_window_indices  -> layer_types ("sliding_attention" for 1, "full_attention" for 0), emitted
                               only when the layers are not all alike
    attn_bias               -> attention_bias
    attention_scores_scalar -> query_pre_attn_scalar
    attention_logit_softcapping -> attn_logit_softcapping
    final_logit_softcapping -> final_logit_softcapping

`architectures` / `model_type` are read off litgpt's structural fields (mlp_class_name, norm_qk,
attn_bias, post_attention_norm), and for the LLaMA-shaped dense models the publisher org picks the
name `mistral` or `llama` (vLLM runs both with the same Llama implementation, so the memory is the same).

Not in litgpt's data, so not emitted: `torch_dtype` (the reader then assumes bfloat16, vLLM's 'auto'
for a config without one), `tie_word_embeddings` (litgpt ties at checkpoint-conversion time, not in its
config), vision towers of multimodal checkpoints (litgpt models the text decoder only).

Usage:
    python scripts/import_pypi_configs.py WHEEL_OR_CONFIG_PY --list          # Hub ids in the table
    python scripts/import_pypi_configs.py WHEEL_OR_CONFIG_PY ORG/NAME ...   # converted configs (JSON)
"""

from __future__ import annotations

import json
import sys
import types
import typing
import zipfile
from pathlib import Path

SOURCE_PATH = "litgpt/config.py"


def load_litgpt_configs(path: str) -> tuple[list[dict], type]:
    """Execute litgpt/config.py (from the wheel or an unpacked copy); return (configs, Config)."""
    p = Path(path)
    if p.suffix == ".whl":
        with zipfile.ZipFile(p) as zf:
            text = zf.read(SOURCE_PATH).decode("utf-8")
    else:
        text = p.read_text(encoding="utf-8")
    for dep in ("yaml", "typing_extensions"):  # used only by Config.from_file / for typing.Self
        try:
            __import__(dep)
        except ImportError:
            stub = types.ModuleType(dep)
            stub.Self = getattr(typing, "Self", None)
            sys.modules[dep] = stub
    mod = types.ModuleType("litgpt_config")
    sys.modules["litgpt_config"] = mod  # dataclasses look the module up by name
    mod.__dict__["__name__"] = "litgpt_config"
    exec(compile(text, SOURCE_PATH, "exec"), mod.__dict__)
    return mod.configs, mod.Config


def hub_id(entry: dict) -> str:
    return f"{entry['hf_config']['org']}/{entry['hf_config']['name']}"


def _arch(c, org: str) -> tuple[str, str]:
    mlp = c.mlp_class_name
    if mlp == "GemmaMLP":
        if c.norm_qk:
            return "Gemma3ForCausalLM", "gemma3_text"
        if c.post_attention_norm:
            return "Gemma2ForCausalLM", "gemma2"
        return "GemmaForCausalLM", "gemma"
    if mlp == "LLaMAMoE":
        if c.norm_qk:
            return "Qwen3MoeForCausalLM", "qwen3_moe"
        return "MixtralForCausalLM", "mixtral"
    if mlp == "LLaMAMLP":
        if c.norm_qk:
            return "Qwen3ForCausalLM", "qwen3"
        if c.attn_bias:
            return "Qwen2ForCausalLM", "qwen2"
        if org == "mistralai":
            return "MistralForCausalLM", "mistral"
        return "LlamaForCausalLM", "llama"
    raise ValueError(f"no field map for mlp_class_name {mlp!r}")


def convert(entry: dict, Config: type) -> dict:
    """One litgpt entry -> a config.json dict, by the field map in the module docstring."""
    c = Config(**entry)
    arch, model_type = _arch(c, entry["hf_config"]["org"])
    out: dict = {
        "architectures": [arch],
        "model_type": model_type,
        "num_hidden_layers": c.n_layer,
        "hidden_size": c.n_embd,
        "num_attention_heads": c.n_head,
        "num_key_value_heads": c.n_query_groups,
        "head_dim": c.head_size,
        "vocab_size": c.padded_vocab_size,
        "max_position_embeddings": c.block_size,
        "intermediate_size": c.intermediate_size,
    }
    # not memory-relevant; emitted only where the entry sets them (litgpt's class defaults, 1e-5 and
    # 10000, are not each model's value: Gemma's eps is 1e-6)
    if "norm_eps" in entry:
        out["rms_norm_eps"] = c.norm_eps
    if "rope_base" in entry:
        out["rope_theta"] = c.rope_base
    if c.n_expert:
        out["num_local_experts" if model_type == "mixtral" else "num_experts"] = c.n_expert
        out["num_experts_per_tok"] = c.n_expert_per_token
    if c.moe_intermediate_size is not None:
        out["moe_intermediate_size"] = c.moe_intermediate_size
    if c.rope_local_base_freq is not None:
        out["rope_local_base_freq"] = c.rope_local_base_freq
    ra = c.rope_adjustments
    if ra:
        if "low_freq_factor" in ra or "high_freq_factor" in ra:
            out["rope_scaling"] = {"factor": ra["factor"], "low_freq_factor": ra["low_freq_factor"],
                                   "high_freq_factor": ra["high_freq_factor"],
                                   "original_max_position_embeddings": ra["original_max_seq_len"],
                                   "rope_type": "llama3"}
        elif set(ra) == {"factor"}:
            out["rope_scaling"] = {"factor": ra["factor"], "rope_type": "linear"}
        else:
            raise ValueError(f"{hub_id(entry)}: rope_adjustments {ra} has no field map")
    out["sliding_window"] = c.sliding_window_size  # None -> null: no window (not a class default)
    if c.sliding_window_size is not None:
        idx = list(c.sliding_window_indices)
        if len(set(idx)) > 1:
            out["layer_types"] = ["sliding_attention" if i else "full_attention" for i in idx]
    if c.attn_bias:
        out["attention_bias"] = True
    if c.attention_scores_scalar is not None:
        out["query_pre_attn_scalar"] = c.attention_scores_scalar
    if c.attention_logit_softcapping is not None:
        out["attn_logit_softcapping"] = c.attention_logit_softcapping
    if c.final_logit_softcapping is not None:
        out["final_logit_softcapping"] = c.final_logit_softcapping
    return out


def cited_config_urls(text: str) -> dict[str, str]:
    """litgpt's comment above each entry: the Hub config.json it was written from, keyed by the
    entry's hf_config template (`org/name`, `{}` unexpanded)."""
    import re

    out: dict[str, str] = {}
    for m in re.finditer(r'hf_config=dict\(org="([^"]+)", name="([^"]+)"\)', text):
        before = text[max(0, m.start() - 400):m.start()]
        start = before.rfind("dict(\n")
        urls = [u for u in re.finditer(r"# (https://huggingface.co/\S+/config.json)", before) if u.start() < start]
        if urls:
            out[f"{m.group(1)}/{m.group(2)}"] = urls[-1].group(1)
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    configs, Config = load_litgpt_configs(argv[0])
    by_id = {hub_id(e): e for e in configs}
    if argv[1] == "--list":
        print("\n".join(sorted(by_id)))
        return 0
    missing = [i for i in argv[1:] if i not in by_id]
    if missing:
        print(f"not in litgpt's table: {', '.join(missing)}", file=sys.stderr)
        return 1
    print(json.dumps({i: {"litgpt_name": by_id[i]["name"], "config": convert(by_id[i], Config)}
                      for i in argv[1:]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
