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
    block_size              -> max_position_embeddings (only where the entry sets it)
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

Second source: the `torchtune` wheel (`pip download torchtune==0.6.1 --no-deps`), files
`torchtune/models/qwen2/_model_builders.py` and `torchtune/models/qwen2_5/_model_builders.py`: one
builder function per size whose docstring names the Hub page it was written from and whose body is
`return qwen2(<literal keyword arguments>)`. The file is parsed (not imported: it needs torch); only
builders with exactly one cited Hub id and all-literal arguments are taken. Field map (qwen2() argument
-> config.json key; `architectures` Qwen2ForCausalLM / `model_type` qwen2 from the component builder):

    num_layers -> num_hidden_layers       embed_dim -> hidden_size
    num_heads -> num_attention_heads      num_kv_heads -> num_key_value_heads
    vocab_size -> vocab_size              intermediate_dim -> intermediate_size
    max_seq_len -> max_position_embeddings
    norm_eps -> rms_norm_eps              rope_base -> rope_theta
    tie_word_embeddings -> tie_word_embeddings (qwen2()'s default False where the builder omits it)
    attn_dropout -> attention_dropout

Third source (not a wheel): transformers' own Gemma 3 conversion script, which builds the config that
`save_pretrained` writes as each Hub checkpoint's config.json:
github:huggingface/transformers/src/transformers/models/gemma3/convert_gemma3_weights.py
@c1a83acdb3fd77f2e897215d94a5ceaf05c885f1 (read through the code index, id 2209642381). Its `_VARIANTS`
dict holds `Gemma3Config(text_config=Gemma3TextConfig(<kwargs>), vision_config=_VISION_CONFIG)` per
size. The file is parsed with `ast` (constants and `*`, `//`, `+` of constants only) and the keyword
arguments are written as they are (they already are config.json keys); keys the script leaves to the
class defaults stay absent, and the reader applies the same transformers defaults
(`TRANSFORMERS_DEFAULTS['gemma3_text']`). Text-only variants (270m, 1b) are saved by the script as
Gemma3ForCausalLM, the others as Gemma3ForConditionalGeneration; `architectures` / `model_type` follow.

Usage:
    python scripts/import_pypi_configs.py WHEEL --list          # Hub ids in the table
    python scripts/import_pypi_configs.py WHEEL ORG/NAME ...   # converted configs (JSON)
    python scripts/import_pypi_configs.py WHEEL --compare      # converted vs the real configs we hold
(WHEEL is litgpt-*.whl, or litgpt's config.py, or torchtune-*.whl, or convert_gemma3_weights.py;
the name picks the field map; GEMMA3_HUB_IDS names the Hub ids of each Gemma 3 variant.)
"""

from __future__ import annotations

import contextlib
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
        "intermediate_size": c.intermediate_size,
    }
    # Geometry defaults are litgpt's statement of the architecture (its model loads the real weights
    # with them); block_size is not checked by loading weights, so its class default (4096) is not
    # taken as the model's context: emitted only where the entry sets it.
    if "block_size" in entry:
        out["max_position_embeddings"] = c.block_size
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


TORCHTUNE_FILES = ("torchtune/models/qwen2/_model_builders.py", "torchtune/models/qwen2_5/_model_builders.py")
TORCHTUNE_QWEN2_MAP = {
    "num_layers": "num_hidden_layers", "embed_dim": "hidden_size", "num_heads": "num_attention_heads",
    "num_kv_heads": "num_key_value_heads", "vocab_size": "vocab_size", "intermediate_dim": "intermediate_size",
    "max_seq_len": "max_position_embeddings", "norm_eps": "rms_norm_eps", "rope_base": "rope_theta",
    "tie_word_embeddings": "tie_word_embeddings", "attn_dropout": "attention_dropout",
}


def load_torchtune_qwen2(wheel: str) -> dict[str, tuple[str, str, dict]]:
    """{hub_id: (path::builder, cited url, config)} for torchtune's literal qwen2() builders."""
    import ast
    import re

    out: dict[str, tuple[str, str, dict]] = {}
    with zipfile.ZipFile(wheel) as zf:
        for path in TORCHTUNE_FILES:
            tree = ast.parse(zf.read(path).decode("utf-8"))
            for fn in tree.body:
                if not isinstance(fn, ast.FunctionDef):
                    continue
                urls = re.findall(r"https://huggingface.co/([\w.-]+/[\w.-]+)", ast.get_docstring(fn) or "")
                rets = [n for n in fn.body if isinstance(n, ast.Return)]
                if len(set(urls)) != 1 or not rets or not isinstance(rets[0].value, ast.Call):
                    continue
                call = rets[0].value
                if ast.unparse(call.func) != "qwen2":
                    continue
                try:
                    kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
                except ValueError:
                    continue  # an argument that is not a literal: skip the builder
                unknown = set(kw) - set(TORCHTUNE_QWEN2_MAP)
                if unknown:
                    raise ValueError(f"{path}::{fn.name}: no field map for {sorted(unknown)}")
                cfg: dict = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}
                cfg.update({TORCHTUNE_QWEN2_MAP[k]: v for k, v in kw.items()})
                cfg.setdefault("tie_word_embeddings", False)  # qwen2()'s own default
                out[urls[0]] = (f"{path}::{fn.name}", f"https://huggingface.co/{urls[0]}", cfg)
    return out


def load_litgpt(path: str) -> dict[str, tuple[str, str, dict]]:
    """{hub_id: (entry name, cited url or '', config)} for every entry of litgpt's table."""
    configs, config_cls = load_litgpt_configs(path)
    p = Path(path)
    text = zipfile.ZipFile(p).read(SOURCE_PATH).decode("utf-8") if p.suffix == ".whl" else p.read_text("utf-8")
    urls = cited_config_urls(text)
    out: dict[str, tuple[str, str, dict]] = {}
    for e in configs:
        hid = hub_id(e)
        cited = next((u for t, u in urls.items() if _template_matches(t, hid)), "")
        if not cited and hid.endswith("-it"):  # litgpt appends -it to each Gemma entry after the fact
            cited = next((u for t, u in urls.items() if t == hid.removesuffix("-it")), "")
        try:
            out[hid] = (e["name"], cited, convert(e, config_cls))
        except ValueError:
            continue  # an architecture the field map does not cover (GPT-NeoX, Phi, ...): left out
    return out


def _template_matches(template: str, hid: str) -> bool:
    import re

    return re.fullmatch(re.escape(template).replace(r"\{\}", ".*"), hid) is not None


def _literal(node, names: dict):
    """ast.literal_eval plus names bound earlier in the file and +, *, // of constants."""
    import ast

    if isinstance(node, ast.Name):
        return names[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult | ast.FloorDiv):
        a, b = _literal(node.left, names), _literal(node.right, names)
        return a + b if isinstance(node.op, ast.Add) else a * b if isinstance(node.op, ast.Mult) else a // b
    if isinstance(node, ast.Dict):
        return {_literal(k, names): _literal(v, names) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.Tuple):
        return tuple(_literal(e, names) for e in node.elts)
    if isinstance(node, ast.List):
        return [_literal(e, names) for e in node.elts]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args:
        return {"__class__": node.func.id, **{k.arg: _literal(k.value, names) for k in node.keywords}}
    return ast.literal_eval(node)


# The script converts a size's pretrained and instruction-tuned checkpoints with the same variant (its
# docstring converts `gemma3_4b_pt_orbax`; --include_chat_template is 'for instruction tuned models').
GEMMA3_HUB_IDS = {
    "gemma3_270m": ("google/gemma-3-270m", "google/gemma-3-270m-it"),
    "gemma3_1b": ("google/gemma-3-1b-pt", "google/gemma-3-1b-it"),
    "gemma3_4b": ("google/gemma-3-4b-pt", "google/gemma-3-4b-it"),
    "gemma3_12b": ("google/gemma-3-12b-pt", "google/gemma-3-12b-it"),
    "gemma3_27b": ("google/gemma-3-27b-pt", "google/gemma-3-27b-it"),
}


def load_transformers_gemma3(path: str) -> dict[str, tuple[str, str, dict]]:
    """{hub_id: (variant, '', config.json form)} from convert_gemma3_weights.py's _VARIANTS."""
    import ast

    names: dict = {}
    for node in ast.parse(Path(path).read_text("utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
            if target.startswith("_VARIANT") or target in ("_VISION_CONFIG", "_TEXT_ONLY_VARIANTS"):
                names[target] = _literal(node.value, names)
    out: dict[str, tuple[str, str, dict]] = {}
    for variant, cfg in names["_VARIANTS"].items():
        text = {k: v for k, v in cfg["text_config"].items() if k != "__class__"}
        if variant in names["_TEXT_ONLY_VARIANTS"]:
            if text.get("use_bidirectional_attention"):
                continue  # EmbeddingGemma: an encoder, not served for generation
            conf = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", **text}
        else:
            conf = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
                    "text_config": {"model_type": "gemma3_text", **text},
                    "vision_config": {"model_type": "siglip_vision_model", **cfg["vision_config"]}}
        for hid in GEMMA3_HUB_IDS[variant]:
            out[hid] = (variant, "", conf)
    return out


# Hub ids per Gemma 4 variant: the script converts the instruction-tuned checkpoints (its docstring:
# gemma_e2b_it_orbax -> --variant gemma-4-e2b; chat templates from the gemma-4-E4B-it / gemma-4-31B-it
# repos); the pretrained checkpoint of a size has the same architecture and is listed as an alias.
GEMMA4_HUB_IDS = {
    "gemma-4-e2b": "google/gemma-4-E2B-it",
    "gemma-4-e4b": "google/gemma-4-E4B-it",
    "gemma-4-31b": "google/gemma-4-31B-it",
    "gemma-4-26b-a4b": "google/gemma-4-26B-A4B-it",
}


def class_defaults(wheel: str, member: str) -> dict[str, dict]:
    """{class name: {field: default}} for the literal class-level defaults of a configuration module in
    a transformers wheel (dataclass-style configs, transformers 5.x), plus each class's model_type."""
    import ast

    with zipfile.ZipFile(wheel) as zf:
        tree = ast.parse(zf.read(member).decode("utf-8"))
    out: dict[str, dict] = {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        fields: dict = {}
        for node in cls.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                with contextlib.suppress(ValueError):
                    fields[node.target.id] = ast.literal_eval(node.value)
            elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                  and node.targets[0].id == "model_type"):
                fields["model_type"] = ast.literal_eval(node.value)
        out[cls.name] = fields
    return out


def _module_constants(path: str) -> dict:
    import ast

    names: dict = {}
    for node in ast.parse(Path(path).read_text("utf-8")).body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and node.value is not None:
            with contextlib.suppress(ValueError, KeyError, TypeError):  # not a constant: not needed
                names[target.id] = _literal(node.value, names)
    return names


def _with_defaults(call: dict | None, defaults: dict[str, dict]) -> dict | None:
    """A `Class(**kwargs)` read by _literal -> the class's literal defaults overlaid by the kwargs."""
    if call is None:
        return None
    fields = dict(defaults.get(call["__class__"], {}))
    fields.update({k: v for k, v in call.items() if k != "__class__"})
    for k, v in fields.items():  # RopeParameters(...) and similar typed dicts: plain dicts
        if isinstance(v, dict):
            fields[k] = {kk: ({x: y for x, y in vv.items() if x != "__class__"} if isinstance(vv, dict) else vv)
                         for kk, vv in v.items() if kk != "__class__"}
    return fields


def load_transformers_gemma4(path: str, defaults_wheel: str) -> dict[str, tuple[str, str, dict]]:
    """{hub_id: (variant, '', config.json form)}: convert_gemma4_weights.py's _VARIANTS, each Gemma4*Config
    call completed with that class's defaults from the transformers wheel (what save_pretrained writes)."""
    names = _module_constants(path)
    defaults = class_defaults(defaults_wheel, "transformers/models/gemma4/configuration_gemma4.py")
    out: dict[str, tuple[str, str, dict]] = {}
    for variant, top in names["_VARIANTS"].items():
        conf = _with_defaults({k: v for k, v in top.items() if not k.endswith("_config")}, defaults) or {}
        conf["architectures"] = ["Gemma4ForConditionalGeneration"]
        for key in ("text_config", "vision_config", "audio_config"):
            conf[key] = _with_defaults(top.get(key), defaults)
        out[GEMMA4_HUB_IDS[variant]] = (variant, "", conf)
    return out


def load_source(path: str, defaults_wheel: str | None = None) -> dict[str, tuple[str, str, dict]]:
    name = Path(path).name
    if name.startswith("convert_gemma4"):
        if not defaults_wheel:
            raise SystemExit("convert_gemma4_weights.py needs --defaults transformers-5.5.0-py3-none-any.whl")
        return load_transformers_gemma4(path, defaults_wheel)
    if name.startswith("torchtune"):
        return load_torchtune_qwen2(path)
    if name.startswith("convert_gemma3"):
        return load_transformers_gemma3(path)
    return load_litgpt(path)


COMPARED = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads", "num_kv_heads",
            "head_dim", "vocab_size", "tie_word_embeddings", "dtype")


def compare(table: dict[str, tuple[str, str, dict]]) -> int:
    """Check the field map: convert every id that already has a real config in profiles/models/
    (built-in profiles and catalog entries not themselves converted) and print where the two differ
    in what the reader takes from them (geometry, per-layer attention kind and window, context)."""
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    from configurator.model.hf_config import read_model_spec

    real: dict[str, dict] = {}
    for f in sorted((root / "profiles" / "models").glob("*.json")):
        d = json.loads(f.read_text("utf-8"))
        if "config" in d:  # derived profiles carry only config_overrides
            real[d["hf_id"]] = d["config"]
    for f in sorted((root / "profiles" / "models" / "catalog").glob("*.json")):
        for m in json.loads(f.read_text("utf-8"))["models"]:
            if not str(m.get("config_source", "")).startswith("converted"):
                real[m["hf_id"]] = m["config"]
    # an instruction-tuned id is also checked against its pretrained sibling's real config, where only
    # that one is held (same architecture: Gemma 3 / 4 convert both with one variant)
    pairs = sorted((hid, hid if hid in real else hid.removesuffix("-it")) for hid in table
                   if hid in real or hid.removesuffix("-it") in real)
    for hid, ref in pairs:
        a = read_model_spec(table[hid][2], name=hid)
        b = read_model_spec(real[ref], name=ref)
        diff = {k: (getattr(a, k), getattr(b, k)) for k in COMPARED if getattr(a, k) != getattr(b, k)}
        la = [(g.kind, g.num_kv_heads, g.head_size, g.window) for g in a.layers]
        lb = [(g.kind, g.num_kv_heads, g.head_size, g.window) for g in b.layers]
        if la != lb:
            diff["layers"] = "differ"
        key = "max_position_embeddings"
        ma, mb = dict(a.max_len_keys).get(key), dict(b.max_len_keys).get(key)
        if ma != mb:
            diff[key] = (ma, mb)
        print(hid, "converted vs real" + ("" if ref == hid else f" {ref}") + ":", diff or "same")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    defaults = None
    if argv[1] == "--defaults":
        defaults, argv = argv[2], [argv[0], *argv[3:]]
    table = load_source(argv[0], defaults)
    if argv[1] == "--compare":
        return compare(table)
    if argv[1] == "--list":
        print("\n".join(sorted(table)))
        return 0
    missing = [i for i in argv[1:] if i not in table]
    if missing:
        print(f"not in the source's table: {', '.join(missing)}", file=sys.stderr)
        return 1
    print(json.dumps({i: {"entry": table[i][0], "cites": table[i][1], "config": table[i][2]}
                      for i in argv[1:]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
