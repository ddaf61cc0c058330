"""Resolve `--model` to a ModelSpec, in this order:

1. `--model-config NAME=PATH` (or `models:` in .vllm-configurator.yaml, through `check`): the name is
   replaced by the config file, model folder or catalog id it maps to;
2. a local config.json or model folder that exists (a path that does not exist but whose last part is a
   catalog model's name, `/models/Qwen3-8B`, takes that model's geometry with a warning);
3. the offline catalog (built-in profiles and catalog parts, configurator.model.catalog);
4. the Hugging Face cache, then the Hub (configurator.model.hub), for a Hub id at `--revision`;
5. a quantized or fine-tuned derivative of a catalog model (configurator.model.derivatives), with a
   warning naming the base;
6. otherwise: unknown, with the nearest catalog names.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from configurator.errors import InputError, NotFoundError
from configurator.model import catalog
from configurator.model.catalog import Entry, read_json
from configurator.model.hf_config import read_model_spec
from configurator.model.spec import ModelSpec


@dataclass(frozen=True)
class Resolution:
    """A resolved model, how it was found, where its config came from, and what to tell the user."""

    spec: ModelSpec
    how: str  # local | catalog | hf-cache | hub | derivative | model-config | path-name
    config_source: str
    warnings: tuple[str, ...] = ()


def load_profile(path: Path | Entry) -> ModelSpec:
    """A built-in profile file's (or a catalog entry's) ModelSpec."""
    return entry_spec(path) if isinstance(path, Entry) else catalog.load_profile(path)


def entry_spec(entry: Entry) -> ModelSpec:
    """A catalog entry's ModelSpec; a derived entry's says so wherever it is used."""
    spec, note = entry.spec(), entry.derived_note
    return _inferred(spec, note) if note else spec


def _inferred(spec: ModelSpec, how: str) -> ModelSpec:
    """The spec, saying how its geometry was inferred rather than read: in its notes (estimate) and `inferred`
    (check's model-inferred)."""
    return dataclasses.replace(spec, notes=(*spec.notes, how), inferred=how)


def _on_derived(entry: Entry) -> str:
    """What a warning about a model taken from a catalog entry adds when that entry is itself derived."""
    return f" ({entry.hf_id}'s catalog config is itself derived, not its published config.json)" if entry.derived \
        else ""


def _find_profile_file(name: str) -> Entry | None:
    """The catalog entry for a name (load it with load_profile)."""
    return catalog.find(name)


def load_local(path: Path) -> ModelSpec:
    """A config.json file, or a model folder holding one (plus hf_quant_config.json and the
    safetensors index, whose metadata.total_size gives the exact weight bytes)."""
    folder = path if path.is_dir() else path.parent
    cfg_path = path / "config.json" if path.is_dir() else path
    if not cfg_path.is_file():
        raise InputError(f"{path}: no config.json there")
    config = read_json(cfg_path, "config.json")
    hq = None
    for cand in (folder / "hf_quant_config.json", cfg_path.with_name(cfg_path.stem + ".hf_quant_config.json")):
        if cand.exists() and cand != cfg_path:  # a FIFO or device there is refused by read_json, not skipped
            hq = read_json(cand, "hf_quant_config.json")
            break
    weights = None
    source = None
    index = folder / "model.safetensors.index.json"
    if path.is_dir() and index.exists():
        total = (read_json(index, "safetensors index").get("metadata") or {}).get("total_size")
        if isinstance(total, int):
            weights, source = total, f"{index.name} metadata.total_size"
    return read_model_spec(config, name=str(path), hf_quant_config=hq, weights_bytes=weights,
                           weights_source=source)


# A Hub id written as a URL: hf://org/name, https://huggingface.co/org/name(/tree/main)
_HUB_URL = re.compile(r"^(?:hf://|https?://(?:www\.)?huggingface\.co/)([^/\s]+/[^/\s]+?)(?:/.*)?/?$")

# A Hugging Face repository id: owner/name of letters, digits, '-', '_', '.' (the Hub's own rule)
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def hub_offline() -> bool:
    """HF_HUB_OFFLINE, read as huggingface_hub reads it (1 / ON / YES / TRUE)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def parse_model_configs(values: tuple[str, ...] | list[str], model: str | None = None) -> dict[str, str]:
    """`--model-config NAME=PATH` values -> {NAME: PATH}; a bare PATH stands for `model` (the one --model).
    PATH is a config.json, a model folder, or a catalog id."""
    out: dict[str, str] = {}
    for v in values:
        name, sep, target = v.partition("=")
        if not sep:
            if not model:
                raise InputError(f"--model-config {v}: write NAME=PATH (which model this config is for)")
            name, target = model, v
        if not name.strip() or not target.strip():
            raise InputError(f"--model-config {v}: write NAME=PATH, both non-empty")
        out[name.strip()] = target.strip()
    return out


def resolve(name: str, *, allow_hub: bool = True, revision: str | None = None,
            model_configs: Mapping[str, str] | None = None) -> Resolution:
    """--model NAME -> Resolution (see the module docstring for the order). Raises InputError / NotFoundError."""
    if not name or not name.strip():
        raise InputError("--model is empty")
    name = name.strip()
    if model_configs and name in model_configs:
        target = model_configs[name]
        inner = resolve(target, allow_hub=allow_hub, revision=revision)
        note = f"--model-config maps {name} to {target}"
        # the served name stays the model's name (what `vllm serve` is given), the config is the target's
        spec = dataclasses.replace(inner.spec, name=name, hf_id=None, notes=(*inner.spec.notes, note))
        return Resolution(spec, "model-config", inner.config_source or target, inner.warnings)
    hub_url = _HUB_URL.match(name)
    if hub_url:  # hf://org/name (KServe's storageUri), https://huggingface.co/org/name
        name = hub_url.group(1)
    p = Path(name).expanduser()
    if p.exists():
        return Resolution(load_local(p), "local", str(p))
    if name.endswith(".json") or name.startswith(("/", "./", "../", "~")):
        named = _named_by_path(name)
        if named is not None:
            return named
        raise InputError(f"{name}: no such file or folder (a path inside a container or a served name? map it "
                         f"with --model-config {name}=CONFIG_OR_ID, or `models:` in .vllm-configurator.yaml)")
    entry = catalog.find(name)
    if entry is not None:
        ignored = (f"--revision {revision} is not read: {entry.hf_id} is in the offline catalog "
                   f"({entry.config_source}); pass --model-config to use another revision's config",) \
            if revision else ()
        spec = entry_spec(entry)
        return Resolution(spec, "catalog", entry.config_source, (*ignored, *filter(None, (spec.inferred,))))
    hub_error: InputError | None = None
    if _HUB_ID.match(name):
        from configurator.model import hub

        try:
            got = hub.read(name, revision=revision, network=allow_hub and not hub_offline())
        except hub.GatedError as e:
            hub_error = InputError(str(e))
            got = None
        except hub.HubError as e:
            hub_error = NotFoundError("model", name, catalog.nearest(name), hint=str(e))
            got = None
        if got is not None:
            spec = read_model_spec(got.config, name=name, hf_quant_config=got.hf_quant_config,
                                   weights_bytes=got.weights_bytes, weights_source=got.weights_source, hf_id=name)
            return Resolution(spec, got.how, got.config_source)
    from configurator.model.derivatives import resolve_derivative

    derived = resolve_derivative(name)
    if derived is not None:
        base, quant_config, warning = derived
        warning += _on_derived(base)
        spec = _inferred(read_model_spec(_derived_config(base, quant_config), name=name, hf_id=name,
                                         hf_quant_config=None if quant_config else base.hf_quant_config), warning)
        return Resolution(spec, "derivative", f"{base.hf_id}: {base.config_source}", (warning,))
    if hub_error is not None:
        raise hub_error
    hint = "not in the offline catalog (`vllm-configurator models`); a Hugging Face id, a path to config.json, " \
           "or --model-config NAME=PATH"
    if _HUB_ID.match(name) and not allow_hub:
        hint = "not in the offline catalog or the Hugging Face cache; pass --model-config NAME=PATH"
    elif _HUB_ID.match(name) and hub_offline():
        hint = "not in the offline catalog or the Hugging Face cache, and HF_HUB_OFFLINE is set"
    raise NotFoundError("model", name, catalog.nearest(name), hint=hint)


def _derived_config(base: Entry, quant_config: dict | None) -> dict:
    """The base's config with the quantization a derivative's name implies in place of the base's own (a
    name that implies none keeps the base's: a republished copy, a fine-tune)."""
    if not quant_config:
        return base.config
    config = {k: v for k, v in base.config.items() if k != "quantization_config"}
    if isinstance(config.get("text_config"), dict):
        config["text_config"] = {k: v for k, v in config["text_config"].items() if k != "quantization_config"}
    config["quantization_config"] = quant_config
    return config


def _named_by_path(path: str) -> Resolution | None:
    """A path that is not here but whose last part names a catalog model (`/models/Qwen3-8B`, a volume
    mounted under the model's name): that model, with a warning. None when the last part names none."""
    last = path.rstrip("/").rsplit("/", 1)[-1]
    if not last or last.endswith(".json") or last in (".", "..", "~"):
        return None
    entry = catalog.find(last)
    config, hq, weights, wsource = (entry.config, entry.hf_quant_config, entry.weights_bytes,
                                    entry.weights_source) if entry is not None else ({}, None, None, None)
    what = "its geometry is used"
    if entry is None:
        from configurator.model.derivatives import resolve_derivative

        derived = resolve_derivative(last)
        if derived is None:
            return None
        entry, qc, inferred = derived
        config = _derived_config(entry, qc)
        hq = None if qc else entry.hf_quant_config
        what = inferred.split("; pass", 1)[0]
    warning = (f"{path} is not on this machine; its last part names {entry.hf_id}: {what} "
               f"(pass --model-config {path}=CONFIG to be exact){_on_derived(entry)}")
    spec = _inferred(read_model_spec(config, name=path, hf_quant_config=hq, weights_bytes=weights,
                                     weights_source=wsource), warning)
    return Resolution(spec, "path-name", entry.config_source, (warning,))


def resolve_model(name: str, *, allow_hub: bool = True, revision: str | None = None,
                  model_configs: Mapping[str, str] | None = None) -> ModelSpec:
    """--model NAME -> ModelSpec (warnings, such as a derivative's, are among its notes)."""
    return resolve(name, allow_hub=allow_hub, revision=revision, model_configs=model_configs).spec
