"""Calibration from a real vLLM start-up log: what vLLM measured, kept so later predictions use it.

`calibrate()` turns a parsed log (configurator.vllm.logparse.StartupLog) plus the deployment's
identity into a `Calibration`; `apply_calibration()` gives `estimate` the measured weights and
overheads for the same model, GPU and release (scaled by the model's own ratios when the batch
flags differ). The file format is schemas/calibration.schema.json.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import yaml
from pydantic import BaseModel, Field, ValidationError

from configurator.errors import InputError

CALIBRATION_VERSION = 1


class MeasuredMemory(BaseModel):
    """Per-GPU bytes vLLM measured at start-up (None where the log does not say)."""

    total_bytes: int | None = Field(None, description="CUDA-visible total memory of the GPU")
    requested_bytes: int | None = Field(None, description="util x total, as vLLM computed it")
    weights_bytes: int | None = Field(None, description="'Model loading took'")
    activation_bytes: int | None = Field(None, description="peak activation of the profiling run")
    non_torch_bytes: int | None = None
    cudagraph_bytes: int | None = Field(None, description="CUDA-graph memory subtracted before the KV pool")
    overhead_bytes: int = Field(description="requested - weights - available KV: every non-KV, non-weight byte")
    available_kv_bytes: int = Field(description="'Available KV cache memory'")
    kv_tokens: int | None = None
    max_concurrency: float | None = None


class Calibration(BaseModel):
    """What one real start-up measured, for one model, GPU and vLLM release."""

    calibration_version: int = CALIBRATION_VERSION
    model: str
    gpu: str = Field(description="catalog name, or 'custom'")
    vllm_version: str
    flags: dict = Field(description="the engine arguments of the calibrated run (resolved)")
    measured: MeasuredMemory
    predicted_overhead_bytes: int = Field(description="the tool's own overhead prediction for the same flags")
    source: str = Field(description="the log file it came from")


def write_calibration(cal: Calibration, path: Path, *, force: bool = False) -> None:
    """Write YAML (or JSON for *.json); refuses to overwrite an existing file unless forced."""
    if path.exists() and not force:
        raise InputError(f"{path} exists; pass --force to replace it (nothing was written)")
    data = cal.model_dump(mode="json")
    text = json.dumps(data, indent=2) + "\n" if path.suffix == ".json" else \
        "# vllm-configurator calibration (schemas/calibration.schema.json)\n" + yaml.safe_dump(data, sort_keys=False)
    path.write_text(text, encoding="utf-8")


def read_calibration(path: str | Path) -> Calibration:
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"{p}: cannot read calibration file ({e.strerror})") from None
    try:
        data = json.loads(raw) if p.suffix == ".json" else yaml.safe_load(raw)
    except (json.JSONDecodeError, yaml.YAMLError):
        raise InputError(f"{p}: calibration file is not valid {'JSON' if p.suffix == '.json' else 'YAML'}") from None
    try:
        return Calibration.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise InputError(f"{p}: not a calibration file ({loc}: {first['msg']})") from None


def overhead_scale(predicted_now: int, predicted_then: int) -> float:
    """How much the overhead changes between the calibrated flags and the asked ones, by the model's
    own prediction (1.0 for the same flags)."""
    if predicted_then <= 0:
        return 1.0
    return predicted_now / predicted_then


def requested_bytes(total: int, util: float, rounding: str) -> int:
    return math.ceil(total * util) if rounding == "ceil" else int(total * util)
