"""One model lookup for a name written in a manifest, shared by `check`, `review`, the webhook and `audit`.

A manifest is written by whoever creates the object, so the name it gives never makes the tool open a
file the manifest names: `/models/x` or `../../etc/x` is a path inside the container. What is read:
the operator's `--model-config` / `model_config_dirs` folders (only under names shaped like a Hugging
Face id, never climbing out of the folder), the offline catalog, the local Hugging Face cache (by id,
never the network) and the catalog's derivatives (configurator.model.resolve, with `allow_hub=False`).
Only a name the operator's own config maps (`models:` in .vllm-configurator.yaml, `local_ok`) may be a
local path.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from configurator.errors import ConfiguratorError, InputError, NotFoundError
from configurator.model.resolve import _find_profile_file, load_local, load_profile, resolve_model
from configurator.model.spec import ModelSpec

# a Hugging Face id: "name" or "org/name", each part of letters, digits, '-', '_' and '.', no '..'
HF_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
MODEL_ANNOTATION = "vllm-configurator.io/model"


def _id_like(name: str) -> bool:
    return bool(HF_ID.match(name)) and ".." not in name


def in_dirs(name: str, dirs: tuple[str, ...]) -> ModelSpec | None:
    """The config of `name` in the operator's folders (`org__name.json`, `org/name/config.json`, or the last
    part's folder for a path such as `/models/Qwen3-8B`); None when none has it. Names that are not shaped
    like a Hugging Face id are never joined to a folder (no `..`, no absolute path replacing the folder)."""
    if not dirs:
        return None
    last = name.rstrip("/").rsplit("/", 1)[-1]
    for d in dirs:
        base = Path(d)
        cands = [base / (name.replace("/", "__") + ".json"), base / name / "config.json"] if _id_like(name) else []
        if _id_like(last):
            cands.append(base / last / "config.json")
        for cand in cands:
            if cand.is_file():
                return load_local(cand)
    return None


def catalog_resolver(dirs: tuple[str, ...]):
    """name -> ModelSpec from the operator's folders and the built-in catalog only (no cache, no derivative),
    without reading any path a pod names. Kept for callers that want the catalog alone."""

    @lru_cache(maxsize=256)
    def resolve(name: str) -> ModelSpec:
        if not _id_like(name):
            raise InputError("not a Hugging Face id; the webhook reads no local path named in a pod spec "
                             "(state the model's config with --model-config on `check`, or add it to the "
                             "webhook's model_config_dirs)")
        spec = in_dirs(name, dirs)
        if spec is not None:
            return spec
        prof = _find_profile_file(name)
        if prof is None:
            raise NotFoundError("model", name, hint="not in the built-in catalog or the configured folders")
        return load_profile(prof)

    return resolve


def _on_this_machine(name: str) -> bool:
    """Whether a name from a manifest happens to name a file or folder where the tool runs."""
    try:
        return Path(name).expanduser().exists()
    except (OSError, ValueError):  # a name too long for a path, a NUL
        return False


def manifest_model(name: str, dirs: tuple[str, ...] = (),
                   local_ok: bool = False) -> tuple[ModelSpec | None, str | None]:
    """(ModelSpec, None), or (None, why) for a model name read from a manifest (see the module docstring).
    Not cached here: the folders and the Hugging Face cache may change; callers cache per run."""
    try:
        spec = in_dirs(name, dirs)
        if spec is not None:
            return spec, None
        if not local_ok and "://" in name:  # pvc://, s3://, gs:// (KServe storageUri): a location, not a model
            return None, (f"model '{name}' is a storage location, which names no model offline; map it with "
                          f"`models: {{\"{name}\": <model id or config.json>}}` in .vllm-configurator.yaml, the "
                          f"{MODEL_ANNOTATION} annotation, or --model-config '{name}=PATH'")
        if not local_ok and _on_this_machine(name):
            try:  # the catalog alone: a Hub-shaped id that is also a folder here still finds its profile
                return catalog_resolver(())(name), None
            except (ConfiguratorError, OSError, ValueError):
                return None, (f"model '{name}' cannot be resolved offline: a path inside the container is not read "
                              f"from this machine; map it with `models: {{{name}: <model id or config.json>}}` in "
                              f".vllm-configurator.yaml, the {MODEL_ANNOTATION} annotation, or --model-config")
        return resolve_model(name, allow_hub=False), None
    except (ConfiguratorError, OSError, ValueError) as e:  # ValueError: a local file that is not JSON
        return None, f"model '{name}' cannot be resolved offline: {e}"
