"""Model lookup for the webhook and `review`: the built-in catalog and the operator's folders only.

A pod spec is written by whoever creates the object, so a model named there must never make the
webhook open a file: `--model /models/x` (or `../../etc/x`, or `org/name` relative to the working
folder) is not a path here, it is a name looked up in the catalog. Only the folders the operator
configured (`model_config_dirs`) are read, and only for names shaped like a Hugging Face id.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from configurator.errors import InputError, NotFoundError
from configurator.model.resolve import _find_profile_file, load_local, load_profile
from configurator.model.spec import ModelSpec

# a Hugging Face id: "name" or "org/name", each part of letters, digits, '-', '_' and '.', no '..'
_HF_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")


def catalog_resolver(dirs: tuple[str, ...]):
    """A resolver for `Options.model_resolver`: name -> ModelSpec, without reading any path a pod names."""

    @lru_cache(maxsize=256)
    def resolve(name: str) -> ModelSpec:
        if not _HF_ID.match(name) or ".." in name:
            raise InputError("not a Hugging Face id; the webhook reads no local path named in a pod spec "
                             "(state the model's config with --model-config on `check`, or add it to the "
                             "webhook's model_config_dirs)")
        for d in dirs:
            base = Path(d)
            for cand in (base / (name.replace("/", "__") + ".json"), base / name / "config.json",
                         base / name.rsplit("/", 1)[-1] / "config.json"):
                if cand.is_file():
                    return load_local(cand)
        prof = _find_profile_file(name)
        if prof is None:
            raise NotFoundError("model", name, hint="not in the built-in catalog or the configured folders")
        return load_profile(prof)

    return resolve
