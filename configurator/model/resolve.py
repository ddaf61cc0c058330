"""Resolve `--model` to a ModelSpec: a local config.json or model folder, a built-in profile
(profiles/models/), the local Hugging Face cache, or the Hub (through huggingface_hub)."""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
from functools import lru_cache
from pathlib import Path

from configurator.errors import ConfigError, InputError, NotFoundError
from configurator.model.hf_config import read_model_spec
from configurator.model.spec import ModelSpec
from configurator.resources import data_path


def _read_json(path: Path, what: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: malformed or truncated {what} (line {e.lineno}: {e.msg})") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read {what} ({e.strerror})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: {what} must be a JSON object")
    return data


def _profile_dir() -> Path:
    return data_path("profiles", "models")


@lru_cache(maxsize=1)
def _profile_files() -> dict[str, Path]:
    """lower-case 'org/name' -> profile file (from the file name alone: no parsing)."""
    return {p.stem.replace("__", "/").lower(): p for p in sorted(_profile_dir().glob("*.json"))}


@lru_cache(maxsize=1)
def _alias_index() -> dict[str, Path]:
    idx: dict[str, Path] = {}
    for key, p in _profile_files().items():
        idx.setdefault(key.split("/", 1)[-1], p)
        for a in _read_json(p, "model profile").get("aliases", []):
            idx.setdefault(str(a).lower(), p)
    return idx


def profile_names() -> list[str]:
    """Every built-in model's Hugging Face id and aliases."""
    names = []
    for p in _profile_files().values():
        d = _read_json(p, "model profile")
        names.append(d["hf_id"])
        names += d.get("aliases", [])
    return names


def load_profile(path: Path) -> ModelSpec:
    d = _read_json(path, "model profile")
    config = d.get("config")
    if d.get("derived_from"):
        base = _read_json(_find_profile_file(d["derived_from"]) or path, "model profile")["config"]
        config = _merge(base, d.get("config_overrides") or {})
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: profile has no config")
    return read_model_spec(config, name=d["hf_id"], hf_quant_config=d.get("hf_quant_config"),
                           weights_bytes=d.get("weights_bytes"), weights_source=d.get("weights_source"),
                           hf_id=d["hf_id"])


def _merge(base: dict, over: dict) -> dict:
    """Top-level keys of a derived profile replace the base's; a nested text_config is merged."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if k == "text_config" and isinstance(out.get(k), dict) else v
    return {k: v for k, v in out.items() if v != "__delete__"}


def _find_profile_file(name: str) -> Path | None:
    key = name.strip().lower()
    files = _profile_files()
    if key in files:
        return files[key]
    return _alias_index().get(key)


def load_local(path: Path, hf_id: str | None = None) -> ModelSpec:
    """A config.json file, or a model folder holding one (plus hf_quant_config.json and the
    safetensors index, whose metadata.total_size gives the exact weight bytes). `hf_id`: the
    repository id a Hugging Face cache snapshot was found under (named by it, not by its path)."""
    folder = path if path.is_dir() else path.parent
    cfg_path = path / "config.json" if path.is_dir() else path
    if not cfg_path.is_file():
        raise InputError(f"{path}: no config.json there")
    config = _read_json(cfg_path, "config.json")
    hq = None
    for cand in (folder / "hf_quant_config.json", cfg_path.with_name(cfg_path.stem + ".hf_quant_config.json")):
        if cand.is_file() and cand != cfg_path:
            hq = _read_json(cand, "hf_quant_config.json")
            break
    weights = None
    source = None
    index = folder / "model.safetensors.index.json"
    if path.is_dir() and index.is_file():
        total = (_read_json(index, "safetensors index").get("metadata") or {}).get("total_size")
        if isinstance(total, int):
            weights, source = total, f"{index.name} metadata.total_size"
    return read_model_spec(config, name=hf_id or str(path), hf_quant_config=hq, weights_bytes=weights,
                           weights_source=source, hf_id=hf_id)


def _from_hf_cache(repo_id: str) -> Path | None:
    """config.json of repo_id in the local Hugging Face cache, if downloaded before."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        home = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME", Path.home() / ".cache"
                                                                         / "huggingface")) / "hub")
        snaps = home / f"models--{repo_id.replace('/', '--')}" / "snapshots"
        found = sorted(snaps.glob("*/config.json"), key=lambda p: p.stat().st_mtime) if snaps.is_dir() else []
        return found[-1].parent if found else None
    try:
        hit = try_to_load_from_cache(repo_id, "config.json")
    except ValueError:  # HFValidationError: not a repository id the Hub client accepts
        return None
    return Path(hit).parent if isinstance(hit, str) else None


def _from_hub(repo_id: str) -> Path:
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    except ImportError:
        raise NotFoundError("model", repo_id, _near(repo_id),
                            hint="not built in and not in the Hugging Face cache; "
                                 "`pip install huggingface_hub` to fetch configs from the Hub") from None
    import logging
    import socket
    from urllib.parse import urlparse

    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:  # fail fast offline instead of huggingface_hub's retries with back-off
        socket.create_connection((host, 443), timeout=3).close()
    except OSError:
        raise NotFoundError("model", repo_id, _near(repo_id),
                            hint="not built in, not cached, and the Hugging Face Hub is unreachable") from None
    try:
        cfg = hf_hub_download(repo_id, "config.json")
    except LocalEntryNotFoundError:
        raise NotFoundError("model", repo_id, _near(repo_id),
                            hint="not built in, not cached, and the Hugging Face Hub is unreachable") from None
    except (HfHubHTTPError, OSError, ValueError) as e:
        raise NotFoundError("model", repo_id, _near(repo_id), hint=f"Hub: {str(e).splitlines()[0]}") from None
    folder = Path(cfg).parent
    for extra in ("hf_quant_config.json", "model.safetensors.index.json"):
        with contextlib.suppress(Exception):
            hf_hub_download(repo_id, extra)
    return folder


# A Hugging Face repository id: owner/name of letters, digits, '-', '_', '.' (the Hub's own rule)
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def _near(name: str) -> list[str]:
    names = profile_names()
    lower = {n.lower(): n for n in names}
    hits = difflib.get_close_matches(name.lower(), list(lower), n=3, cutoff=0.4)
    return [lower[h] for h in hits]


def resolve_model(name: str, *, allow_hub: bool = True) -> ModelSpec:
    """--model NAME -> ModelSpec (local path, built-in profile, HF cache, then the Hub)."""
    if not name or not name.strip():
        raise InputError("--model is empty")
    p = Path(name).expanduser()
    if p.exists():
        return load_local(p)
    if name.endswith(".json") or name.startswith(("/", "./", "../", "~")):
        raise InputError(f"{name}: no such file or folder")
    prof = _find_profile_file(name)
    if prof is not None:
        return load_profile(prof)
    if _HUB_ID.match(name):
        cached = _from_hf_cache(name)
        if cached is not None:
            return load_local(cached, hf_id=name)
        if allow_hub and os.environ.get("HF_HUB_OFFLINE") not in ("1", "true", "True"):
            return load_local(_from_hub(name), hf_id=name)
    raise NotFoundError("model", name, _near(name),
                        hint="a built-in profile, a Hugging Face id, or a path to config.json")
