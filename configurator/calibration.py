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


class CalibrationReport(BaseModel):
    """What `calibrate` found: the calibration, measured vs predicted, and the check of the file."""

    calibration: Calibration
    rows: list[tuple[str, int | None, int | None]] = Field(description="(item, measured bytes, predicted bytes)")
    logged_kv_bytes: int
    predicted_kv_bytes: int
    calibrated_kv_bytes: int = Field(description="estimate --calibration for the same flags")
    logged_tokens: int | None = None
    calibrated_tokens: int | None = None
    warnings: list[str] = Field(default_factory=list)

    def as_dict(self) -> dict:
        return self.model_dump(mode="json")

    def render_text(self, path: str) -> str:
        from configurator.units import GiB

        def g(b: int | None) -> str:
            return "" if b is None else f"{b / GiB:.2f} GiB"

        c = self.calibration
        lines = [f"{c.model}, {c.gpu}, vLLM {c.vllm_version} (from {c.source})", "",
                 f"{'':<30} {'vLLM measured':>14} {'predicted':>12}"]
        for label, measured, predicted in self.rows:
            lines.append(f"{label:<30} {g(measured):>14} {g(predicted):>12}")
        err = (self.predicted_kv_bytes - self.logged_kv_bytes) / GiB
        lines += ["", f"prediction error on the available KV memory: {err:+.2f} GiB",
                  f"with the calibration: {g(self.calibrated_kv_bytes)} "
                  f"({(self.calibrated_kv_bytes - self.logged_kv_bytes) / GiB:+.3f} GiB vs the log)"]
        if self.logged_tokens and self.calibrated_tokens:
            lines.append(f"GPU KV cache size: logged {self.logged_tokens:,} tokens, "
                         f"calibrated {self.calibrated_tokens:,}")
        lines += [f"wrote {path}: use it with `vllm-configurator estimate --calibration {path} ...`"]
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def calibrate_from_log(log, *, source: str, model: str | None = None, gpu: str | None = None,
                       gpu_memory: str | None = None, vllm_version: str | None = None,
                       flags: dict | None = None) -> CalibrationReport:
    """Turn a parsed start-up log into a Calibration, and check that it reproduces the log."""
    from configurator.estimate import EstimateRequest, estimate
    from configurator.model.resolve import resolve_model
    from configurator.vllm.flags import BY_DEST, convert
    from configurator.vllm.versions import behaviour

    warnings: list[str] = []
    name = model or log.model
    if not name:
        raise InputError("the log does not name the model; pass --model")
    try:
        spec = resolve_model(name)
    except InputError as e:
        raise InputError(f"{e}; pass --model with a profile, Hugging Face id or config.json") from None
    version = vllm_version or log.vllm_version
    if not version:
        warnings.append("the log does not print the vLLM version: assuming the newest modelled release")
    b = behaviour(version or "latest")
    if log.available_kv_bytes is None:
        raise InputError(f"{source}: no 'Available KV cache memory' (or V0 KV size) line: nothing to calibrate")
    f: dict = {}
    for k, v in (log.non_default_args or {}).items():
        if k in BY_DEST and k != "model" and v is not None:
            try:
                f[k] = convert(BY_DEST[k], v)
            except InputError:
                continue
    for k in ("max_model_len", "tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization",
              "kv_cache_dtype", "quantization", "enforce_eager", "block_size"):
        v = getattr(log, k, None)
        if v is not None and k not in f:
            f[k] = v
    if log.requested_util is not None:
        f.setdefault("gpu_memory_utilization", log.requested_util)
    f.update(flags or {})
    if not gpu and not gpu_memory:
        if not log.total_memory_bytes:
            raise InputError("the log does not show the GPU's total memory; pass --gpu or --gpu-memory")
        gpu_memory = f"{log.total_memory_bytes}B"
    pred = estimate(EstimateRequest(model=spec, gpu=gpu, gpu_memory=gpu_memory, vllm_version=b.version, flags=f))
    pm = pred.memory
    total = log.total_memory_bytes or pm.total_bytes
    util = float(pred.flags["gpu_memory_utilization"])
    requested = log.requested_bytes or requested_bytes(total, util, b.requested_rounding)
    weights = log.model_loading_bytes or log.weights_usage_bytes
    if weights is None:
        weights = pm.weights_bytes
        warnings.append("the log shows no 'Model loading took' line: the predicted weights are kept")
    available = log.available_kv_bytes
    graphs = log.cudagraph_estimate_bytes if b.cudagraph_estimate else None
    measured = MeasuredMemory(total_bytes=total, requested_bytes=requested, weights_bytes=weights,
                              activation_bytes=log.peak_activation_bytes, non_torch_bytes=log.non_torch_bytes,
                              cudagraph_bytes=graphs, overhead_bytes=requested - weights - available,
                              available_kv_bytes=available, kv_tokens=log.kv_tokens,
                              max_concurrency=log.max_concurrency)
    predicted_overhead = pm.activation_bytes + pm.non_torch_bytes + pm.cudagraph_bytes + pm.other_bytes
    cal = Calibration(model=spec.hf_id or spec.name, gpu=pred.gpu.name, vllm_version=b.version,
                      flags={k: v for k, v in pred.flags.items() if v is not None},
                      measured=measured, predicted_overhead_bytes=predicted_overhead, source=source)
    check = estimate(EstimateRequest(model=spec, gpu=gpu, gpu_memory=gpu_memory, vllm_version=b.version,
                                     flags=f, calibration=cal))
    rows = [("total (CUDA)", total, pm.total_bytes), ("requested (util x total)", requested, pm.requested_bytes),
            ("weights", weights, pm.weights_bytes), ("activation peak", log.peak_activation_bytes, pm.activation_bytes),
            ("non-torch", log.non_torch_bytes, pm.non_torch_bytes), ("CUDA graphs", graphs, pm.cudagraph_bytes),
            ("all non-KV overhead", measured.overhead_bytes, predicted_overhead),
            ("available KV cache", available, pm.kv_cache_bytes)]
    return CalibrationReport(calibration=cal, rows=rows, logged_kv_bytes=available,
                             predicted_kv_bytes=pm.kv_cache_bytes, calibrated_kv_bytes=check.memory.kv_cache_bytes,
                             logged_tokens=log.kv_tokens, calibrated_tokens=check.kv_cache.tokens,
                             warnings=warnings + check.warnings)
