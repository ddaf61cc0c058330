"""Workloads: what a deployment must carry (profiles/workloads/*.yaml, schemas/workload.schema.json)."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from configurator.errors import InputError, NotFoundError
from configurator.resources import data_path


class Workload(BaseModel):
    """The traffic a deployment must serve; every field can be overridden on the command line."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="short name")
    description: str = ""
    max_context_tokens: int = Field(gt=0, description="the longest request (prompt + output) that must be served")
    prompt_tokens: int = Field(gt=0, description="typical prompt length")
    output_tokens: int = Field(gt=0, description="typical output length")
    concurrency: int = Field(gt=0, description="requests in flight at once that must fit without preemption")
    favour: Literal["concurrency", "context", "precision", "latency"] = Field(
        "concurrency", description="what to favour when several plans carry the workload")
    ttft_ms: float | None = Field(None, gt=0, description="time-to-first-token target (ms, the speed model's "
                                                           "prediction at the target concurrency); none: no target")
    tpot_ms: float | None = Field(None, gt=0, description="time-per-output-token target (ms); none: no target")
    queue: bool = Field(False, description="the concurrency is a queue, not a requirement: requests beyond what the "
                                           "KV pool holds wait in vLLM's queue (offline batch jobs)")

    @model_validator(mode="after")
    def _typical_fits_context(self) -> Workload:
        if self.prompt_tokens + self.output_tokens > self.max_context_tokens:
            raise ValueError(f"prompt_tokens + output_tokens ({self.prompt_tokens + self.output_tokens}) exceed "
                             f"max_context_tokens ({self.max_context_tokens})")
        return self

    @property
    def typical_tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens


def _folder() -> Path:
    return data_path("profiles", "workloads")


def builtin_workloads() -> list[str]:
    return sorted(p.stem for p in _folder().glob("*.yaml"))


def _validate(data: object, where: str) -> Workload:
    try:
        return Workload.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"]) or "workload"
        raise InputError(f"{where}: {loc}: {first['msg']}") from None


def load_workload(name_or_path: str) -> Workload:
    """A built-in workload by name, or a YAML/JSON workload file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml", ".json") or p.exists():
        from configurator.safe_io import MAX_SMALL_FILE_BYTES, check_depth, read_text_file

        # bounded: never a FIFO or device (/dev/zero), at most MAX_SMALL_FILE_BYTES (configurator/safe_io.py)
        text = read_text_file(p, cap=MAX_SMALL_FILE_BYTES, what=f"{p}: workload file")
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            raise InputError(f"{p}: workload file is not valid YAML") from None
        except RecursionError:
            raise InputError(f"{p}: workload file nested too deeply") from None
        check_depth(data, f"{p}: workload file")
        if isinstance(data, dict):
            data.setdefault("name", p.stem)
        return _validate(data, str(p))
    f = _folder() / f"{name_or_path}.yaml"
    if not f.is_file():
        near = difflib.get_close_matches(name_or_path, builtin_workloads(), n=3, cutoff=0.3)
        raise NotFoundError("workload", name_or_path, near or builtin_workloads(),
                            hint="or pass a workload file")
    return _validate(yaml.safe_load(f.read_text(encoding="utf-8")), str(f))


def override(w: Workload, **fields: int | float | str | bool | None) -> Workload:
    """Command-line overrides, validated like the file."""
    data = w.model_dump()
    data.update({k: v for k, v in fields.items() if v is not None})
    return _validate(data, "workload")
