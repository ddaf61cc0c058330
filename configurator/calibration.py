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


def write_calibration(cal: Calibration, path: Path, *, force: bool = False, inputs: tuple[str, ...] = ()) -> None:
    """Write YAML (or JSON for *.json) with safe_io.write_output: an existing file is refused unless forced,
    and one of `inputs` (the log it came from) always."""
    from configurator.safe_io import write_output

    data = cal.model_dump(mode="json")
    text = json.dumps(data, indent=2) + "\n" if path.suffix == ".json" else \
        "# vllm-configurator calibration (schemas/calibration.schema.json)\n" + yaml.safe_dump(data, sort_keys=False)
    write_output(path, text, force=force, inputs=inputs)


def read_calibration(path: str | Path) -> Calibration:
    p = Path(path)
    from configurator.safe_io import MAX_SMALL_FILE_BYTES, check_depth, read_text_file

    # bounded: never a FIFO or device, at most MAX_SMALL_FILE_BYTES (configurator/safe_io.py)
    raw = read_text_file(p, cap=MAX_SMALL_FILE_BYTES, what=f"{p}: calibration file")
    try:
        data = json.loads(raw) if p.suffix == ".json" else yaml.safe_load(raw)
    except (json.JSONDecodeError, yaml.YAMLError, RecursionError):
        raise InputError(f"{p}: calibration file is not valid {'JSON' if p.suffix == '.json' else 'YAML'}") from None
    check_depth(data, f"{p}: calibration file")
    try:
        return Calibration.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise InputError(f"{p}: not a calibration file ({loc}: {first['msg']})") from None


def requested_bytes(total: int, util: float, rounding: str) -> int:
    return math.ceil(total * util) if rounding == "ceil" else int(total * util)


class CalibrationReport(BaseModel):
    """What `calibrate` found: the calibration, measured vs predicted, and the check of the file."""

    calibration: Calibration
    rows: list[tuple[str, int | None, int | None]] = Field(description="(item, measured bytes, predicted bytes)")
    logged_kv_bytes: int
    predicted_kv_bytes: int | None = Field(description="null when the release is not modelled (V0)")
    calibrated_kv_bytes: int | None = Field(description="estimate --calibration for the same flags; null when the "
                                                        "release is not modelled")
    logged_tokens: int | None = None
    calibrated_tokens: int | None = None
    gpu_note: str | None = Field(None, description="how the GPU was named: the catalog GPU whose CUDA total "
                                                   "the log printed")
    not_predicted: str | None = Field(None, description="why there is no prediction to compare (V0 release)")
    vllm_version_source: str = Field("", description="where the release came from: --vllm-version, the log's "
                                                     "version line, its source-line tags, or assumed")
    warnings: list[str] = Field(default_factory=list)

    def as_dict(self) -> dict:
        return self.model_dump(mode="json")

    def render_text(self, path: str) -> str:
        from configurator.units import GiB

        def g(b: int | None) -> str:
            return "" if b is None else f"{b / GiB:.2f} GiB"

        c = self.calibration
        lines = [f"{c.model}, {c.gpu}, vLLM {c.vllm_version} (from {c.source})"]
        if self.gpu_note:
            lines.append(self.gpu_note)
        if self.vllm_version_source and self.vllm_version_source != RELEASE_PRINTED:
            lines.append(f"vLLM {c.vllm_version}: {self.vllm_version_source}")
        lines += ["", f"{'':<36} {'vLLM measured':>14} {'predicted':>12}"]
        for label, measured, predicted in self.rows:
            lines.append(f"{label:<36} {g(measured):>14} {g(predicted):>12}")
        lines.append("")
        if self.not_predicted:
            lines.append(f"not predicted: {self.not_predicted}")
        if self.predicted_kv_bytes is not None:
            err = (self.predicted_kv_bytes - self.logged_kv_bytes) / GiB
            lines.append(f"prediction error on the available KV memory: {err:+.2f} GiB")
        if self.calibrated_kv_bytes is not None:
            lines.append(f"with the calibration: {g(self.calibrated_kv_bytes)} "
                         f"({(self.calibrated_kv_bytes - self.logged_kv_bytes) / GiB:+.3f} GiB vs the log)")
        if self.logged_tokens and self.calibrated_tokens:
            lines.append(f"GPU KV cache size: logged {self.logged_tokens:,} tokens, "
                         f"calibrated {self.calibrated_tokens:,}")
        if self.not_predicted:
            lines.append(f"wrote {path}: the measured figures only; `estimate` models releases 0.8 and later, "
                         f"so it cannot apply this file")
        else:
            lines.append(f"wrote {path}: use it with `vllm-configurator estimate --calibration {path} ...`")
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


# A log prints the CUDA total with two decimals (V0 "total_gpu_memory (23.58GiB)", V1 "Free memory on device
# (17.06/22.04 GiB)"): +-0.005 GiB of rounding, and the catalog's totals come from such logs. 0.006 GiB keeps
# the closest catalog pairs apart (L4 22.040 / A10G 22.058 / A10 22.069 GiB; GH200 95.000 / H20 95.005 is
# ambiguous and stays `custom` with a warning).
GPU_TOTAL_TOLERANCE_BYTES = int(0.006 * (1 << 30))
RELEASE_PRINTED = "the log's version line"
V0_STAND_IN = "0.7.3"  # the last V0-default release: stands for a V0 log that prints no version (not predicted)


def _model_and_release(log, model: str | None, vllm_version: str | None, warnings: list[str]):
    """The model spec, the release behaviour a log is read as (--model / --vllm-version override the log's),
    the release's label when the log names none (a V0 log without its banner), and where the release came from.
    A log that prints no version is read as the newest release its source-line tags fit (linetags)."""
    from configurator.model.resolve import resolve_model
    from configurator.vllm.linetags import describe, releases_from_tags
    from configurator.vllm.versions import behaviour

    name = model or log.model
    if not name:
        raise InputError("the log does not name the model; pass --model")
    try:
        spec = resolve_model(name)
    except InputError as e:
        raise InputError(f"{e}; pass --model with a profile, Hugging Face id or config.json") from None
    version = vllm_version or log.vllm_version
    source = "--vllm-version" if vllm_version else RELEASE_PRINTED
    label = None
    # the tag table covers the modelled releases (0.8+) only: it cannot tell a V0 log's release before 0.8
    candidates = [] if version or log.engine == "V0" else releases_from_tags(log.line_tags)
    if candidates:
        version, source = candidates[-1], f"release from the log's source-line tags: {describe(candidates)}"
    elif not version and log.engine == "V0":
        # a V0 log without a banner (its author cut it): a release before 0.8, not the newest one
        warnings.append("the log is the V0 engine's and does not print the vLLM version: read as a release "
                        "before 0.8 (not predicted); pass --vllm-version to name it")
        version, label, source = V0_STAND_IN, "V0 (version not logged)", "V0 stand-in (version not logged)"
    elif not version:
        warnings.append("the log does not print the vLLM version: assuming the newest modelled release")
        source = "assumed: the newest modelled release"
    return spec, behaviour(version or "latest"), label, source


def _logged_kv(log, source: str) -> tuple[int | None, str | None]:
    """The KV pool the log states ('Available KV cache memory', else 'Current kv cache memory in use'), and where
    it was read when not from the first; (None, None) when only '# GPU blocks' tells it. Raises InputError when
    nothing does."""
    available = log.available_kv_bytes
    kv_source = None
    if available is None and log.kv_in_use_bytes is not None:
        # "Free memory on device ... Current kv cache memory in use is D GiB": D is the pool vLLM sized
        # (self.available_kv_cache_memory_bytes, vllm/v1/worker/gpu_worker.py, 0.19+)
        available, kv_source = log.kv_in_use_bytes, "'Current kv cache memory in use'"
    if available is None and not log.num_gpu_blocks:
        raise InputError(f"{source}: no 'Available KV cache memory', V0 KV size ('kv_cache_size=', 'reserved for "
                         f"KV Cache'), 'Current kv cache memory in use' or '# GPU blocks' line: nothing to calibrate")
    return available, kv_source


def _log_flags(log, flags: dict | None) -> dict:
    """The flags the run used: its non-default args vLLM printed (those a flag takes), the fields the log shows,
    then the caller's (`--` after the log) over them."""
    from configurator.vllm.flags import BY_DEST, convert

    f: dict = {}
    for k, v in (log.non_default_args or {}).items():
        if k in BY_DEST and k != "model" and v is not None:
            try:
                if isinstance(v, dict | list) and BY_DEST[k].type == "str":
                    v = json.dumps(v)  # a JSON option vLLM printed as the dict it parsed ({'image': 0})
                f[k] = convert(BY_DEST[k], v)
            except (InputError, TypeError, ValueError):  # a value no flag takes (a set, bytes): not carried over
                continue
    for k in ("max_model_len", "tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization",
              "kv_cache_dtype", "quantization", "enforce_eager", "block_size"):
        v = getattr(log, k, None)
        if v is not None and k not in f:
            f[k] = v
    if log.requested_util is not None:
        f.setdefault("gpu_memory_utilization", log.requested_util)
    f.update(flags or {})
    return f


def _gpu_of_log(log, gpu: str | None, gpu_memory: str | None,
                warnings: list[str]) -> tuple[str | None, str | None, str | None]:
    """(gpu, gpu_memory, note): as given, else the catalog GPU whose CUDA total matches the logged one, else that
    total as a custom GPU. Raises InputError when neither is given nor logged."""
    if gpu or gpu_memory:
        return gpu, gpu_memory, None
    if not log.total_memory_bytes:
        raise InputError("the log does not show the GPU's total memory; pass --gpu or --gpu-memory")
    from configurator.hardware.catalog import match_cuda_total

    found, near = match_cuda_total(log.total_memory_bytes, GPU_TOTAL_TOLERANCE_BYTES)
    logged = f"{log.total_memory_bytes / (1 << 30):.2f} GiB"
    if found is not None:
        return found.name, gpu_memory, (f"GPU: {found.name} ({found.display_name}), the catalog GPU whose CUDA "
                                        f"total matches the logged {logged}; pass --gpu to name another")
    if len(near) > 1:
        warnings.append(f"the logged CUDA total {logged} matches {' and '.join(g.name for g in near)}: "
                        f"labelled custom; pass --gpu to name it")
    return gpu, f"{log.total_memory_bytes}B", None


def _measured(log, pred, b, f: dict, available: int | None, kv_source: str | None, source: str,
              warnings: list[str]) -> tuple[MeasuredMemory, int | None]:
    """What vLLM measured, the prediction filling what the log does not show (each such gap a warning), and the
    CUDA graphs captured after the KV pool was sized (shown, not kept). Raises InputError for impossible numbers."""
    pm = pred.memory
    total = log.total_memory_bytes or pm.total_bytes or pred.gpu.total_bytes  # the last: a release not predicted
    # a release the estimate does not model (below 0.8) resolves no flags: the run's own, else vLLM's default
    # 0.9 (EngineArgs.gpu_memory_utilization, vllm/engine/arg_utils.py, every release 0.6-0.33)
    util = float(pred.flags.get("gpu_memory_utilization") or f.get("gpu_memory_utilization") or 0.9)
    requested = log.requested_bytes or requested_bytes(total, util, b.requested_rounding)
    weights = log.model_loading_bytes or log.weights_usage_bytes
    if available is None:
        # only "# GPU blocks: N": the pool is at least N blocks of the model's page size
        per_block = pred.kv_cache.bytes_per_block if pred.kv_cache is not None else 0
        if not per_block:
            raise InputError(f"{source}: only '# GPU blocks: {log.num_gpu_blocks}' tells the KV pool, and the "
                             f"block size in bytes is not known for this release: nothing to calibrate")
        available = log.num_gpu_blocks * per_block
        kv_source = f"'# GPU blocks: {log.num_gpu_blocks:,}' x {per_block:,} B per block"
    if kv_source:
        warnings.append(f"available KV cache taken from {kv_source}")
    if weights is None and log.consumed_bytes is not None:
        # "Actual usage is C GiB for consumed memory (weights + non-torch)": the weights are C less the
        # non-torch memory, which that line does not split out (the prediction's is used)
        weights = max(log.consumed_bytes - pm.non_torch_bytes, 0)
        warnings.append("weights taken from the logged consumed memory (weights + non-torch) less the predicted "
                        "non-torch memory")
    if weights is None:
        weights = pm.weights_bytes
        warnings.append("the log shows no 'Model loading took' line: the predicted weights are kept")
    activation = log.peak_activation_bytes
    if activation is None and log.peak_torch_bytes is not None and (log.model_loading_bytes or log.weights_usage_bytes):
        # 0.6.4's peak_torch_memory is the torch peak with the weights in it (worker.py: peak_memory -
        # non_torch_allocations); the activation peak is what the profiling run added on top of them
        activation = max(log.peak_torch_bytes - (log.model_loading_bytes or log.weights_usage_bytes), 0)
    # CUDA graphs: what the release subtracts before sizing the pool (the estimate, 0.20+) is kept in the
    # calibration; graphs captured after the pool was sized (V0, V1 before 0.20) are shown, not kept
    graphs = (log.cudagraph_estimate_bytes or log.cudagraph_bytes) if b.cudagraph_estimate else None
    graphs_after = None if b.cudagraph_estimate else (log.graph_capture_bytes or log.cudagraph_bytes
                                                        or log.cudagraph_pool_bytes)
    if requested - weights - available < 0:  # more weights and KV cache than vLLM was allowed: not one run's log
        gib = 1 << 30
        raise InputError(f"{source}: the log's numbers are impossible: weights {weights / gib:.2f} GiB + available KV "
                         f"cache {available / gib:.2f} GiB exceed the {requested / gib:.2f} GiB vLLM may use "
                         f"(gpu_memory_utilization {util:g} x {total / gib:.2f} GiB): not calibrated (another GPU's "
                         "log, several runs mixed, or a different --gpu-memory-utilization: pass it after --)")
    return MeasuredMemory(total_bytes=total, requested_bytes=requested, weights_bytes=weights,
                          activation_bytes=activation, non_torch_bytes=log.non_torch_bytes,
                          cudagraph_bytes=graphs, overhead_bytes=requested - weights - available,
                          available_kv_bytes=available, kv_tokens=log.kv_tokens,
                          max_concurrency=log.max_concurrency), graphs_after


def calibrate_from_log(log, *, source: str, model: str | None = None, gpu: str | None = None,
                       gpu_memory: str | None = None, vllm_version: str | None = None,
                       flags: dict | None = None) -> CalibrationReport:
    """Turn a parsed start-up log into a Calibration, and check that it reproduces the log."""
    from configurator.estimate import EstimateRequest, estimate

    warnings: list[str] = []
    spec, b, label, version_source = _model_and_release(log, model, vllm_version, warnings)
    available, kv_source = _logged_kv(log, source)
    f = _log_flags(log, flags)
    gpu, gpu_memory, gpu_note = _gpu_of_log(log, gpu, gpu_memory, warnings)
    pred = estimate(EstimateRequest(model=spec, gpu=gpu, gpu_memory=gpu_memory, vllm_version=b.version, flags=f))
    pm = pred.memory
    predicted = pred.not_modelled is None
    measured, graphs_after = _measured(log, pred, b, f, available, kv_source, source, warnings)
    predicted_overhead = pm.activation_bytes + pm.non_torch_bytes + pm.cudagraph_bytes + pm.other_bytes
    cal = Calibration(model=spec.hf_id or spec.name, gpu=pred.gpu.name, vllm_version=label or b.version,
                      flags={k: v for k, v in pred.flags.items() if v is not None},
                      measured=measured, predicted_overhead_bytes=predicted_overhead, source=source)
    check = estimate(EstimateRequest(model=spec, gpu=gpu, gpu_memory=gpu_memory, vllm_version=b.version,
                                     flags=f, calibration=cal)) if predicted else None

    def p(value: int) -> int | None:
        return value if predicted else None

    m = measured
    rows = [("total (CUDA)", m.total_bytes, p(pm.total_bytes)),
            ("requested (util x total)", m.requested_bytes, p(pm.requested_bytes)),
            ("weights", m.weights_bytes, pm.weights_bytes), ("activation peak", m.activation_bytes,
                                                             p(pm.activation_bytes)),
            ("non-torch", log.non_torch_bytes, p(pm.non_torch_bytes))]
    if graphs_after is not None:
        rows.append(("CUDA graphs (after the KV pool)", graphs_after, None))
    else:
        rows.append(("CUDA graphs", m.cudagraph_bytes, p(pm.cudagraph_bytes)))
    rows += [("all non-KV overhead", m.overhead_bytes, p(predicted_overhead)),
             ("available KV cache", m.available_kv_bytes, p(pm.kv_cache_bytes))]
    return CalibrationReport(calibration=cal, rows=rows, logged_kv_bytes=m.available_kv_bytes,
                             predicted_kv_bytes=p(pm.kv_cache_bytes),
                             calibrated_kv_bytes=check.memory.kv_cache_bytes if check else None,
                             logged_tokens=log.kv_tokens,
                             calibrated_tokens=check.kv_cache.tokens if check and check.kv_cache else None,
                             gpu_note=gpu_note, not_predicted=pred.not_modelled, vllm_version_source=version_source,
                             warnings=warnings + (check.warnings if check else []))
