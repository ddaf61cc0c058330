"""The error band of a prediction: how far vLLM's available KV memory may fall from it.

The widths are data (profiles/error_bands.yaml, written by benchmarks/error_band.py from the logs'
leave-one-combination-out residuals). Every estimate has stratum keys (`stratum_keys`): the KV layout
class, the weight format, the release era (or 'assumed' when no release was named), the features
(speculative decoding, LoRA, encoder towers, DP / EP, CPU offload) and the GPU class. `band_for` looks the
keys up: the width is the spread held-out combinations show (a combination no log covers), widened to
the spread of every stratum the estimate belongs to that holds enough records; its phrase says whether
logs of this exact combination exist ("validated by N logs of this kind") or not ("no log of this kind:
band widened to ..."). A GPU-class widening (or any other) can be applied on top of the returned Band.
A calibration file from the same model, GPU and release narrows the band to CALIBRATED_BYTES. The
verdict: 'refused' when vLLM refuses even at the optimistic end, 'at-risk' when it refuses somewhere
inside, else 'fits'.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

from configurator.model.spec import ModelSpec
from configurator.resources import load_yaml
from configurator.units import GiB, MiB
from configurator.vllm.versions import _key

FLOOR_BYTES = 128 * MiB  # no band narrower than the rounding of vLLM's own log lines and allocator slack
CALIBRATED_BYTES = 128 * MiB  # a calibration from the same model / GPU / release: measured, not predicted
STRATUM_KEYS = ("layout", "weights", "era", "features", "gpu_class")
ASSUMED_ERA = "assumed"  # no release named (or printed by the log): evaluated at an assumed one


def era_of(version: str) -> str:
    """Accounting eras: weights + peak (<= 0.19, no graph estimate), + graph estimate (0.20-0.26),
    free-memory drop (0.27+)."""
    v = _key(version)
    if v >= (0, 27):
        return "consumed"
    if v >= (0, 20):
        return "weights_peak_graphs"
    return "weights_peak"


def architecture_class(model: ModelSpec) -> str:
    tc = model.text_config
    if model.has_mamba:
        return "hybrid"
    if tc.get("num_experts") or tc.get("n_routed_experts") or tc.get("num_local_experts"):
        return "moe"
    if model.is_mla:
        return "mla"
    return "dense"


def layout_class(model: ModelSpec) -> str:
    """The KV layout: hybrid linear (recurrent + attention), compressed (a config that compresses the
    cached tokens, DeepSeek-V4), MLA, sliding (sliding-window or chunked layers beside full ones), GQA (fewer
    KV heads than query heads), full (multi-head)."""
    kinds = {layer.kind for layer in model.layers}
    if model.has_mamba:
        return "hybrid-linear"
    if any(str(k).startswith("compress") for k in model.text_config):
        return "compressed"
    if model.is_mla or "mla" in kinds:
        return "mla"
    if kinds & {"sliding", "chunked"}:
        return "sliding"
    if 0 < model.num_kv_heads < model.num_attention_heads:
        return "gqa"
    return "full"


def weight_format(model: ModelSpec, flags: dict | None = None) -> str:
    """The weights' format: 16-bit, fp8 (8-bit: FP8 block / channel, INT8), mxfp4, nvfp4, int4 (AWQ, GPTQ,
    compressed-tensors W4A16, AutoRound), or another method's name."""
    q = model.quant
    online = str((flags or {}).get("quantization") or "").lower()
    method = str(q.method or online or "").lower()
    bits = q.weight_bits
    if not method:
        return "16-bit"
    if "mxfp4" in method:
        return "mxfp4"
    if "fp4" in method or (method.startswith("modelopt") and bits is not None and bits < 6):
        return "nvfp4"
    if "fp8" in method or (bits is not None and 6 <= bits < 12):
        return "fp8"
    if bits is not None and bits < 6:
        return "int4"
    if method in ("awq", "gptq", "awq_marlin", "gptq_marlin", "auto-round", "autoround"):
        return "int4"
    return method


def features_of(model: ModelSpec, flags: dict) -> str:
    """The memory-changing features an estimate uses, '+'-joined (sorted), or 'none'."""
    f = []
    if flags.get("speculative_config"):
        f.append("speculative")
    if flags.get("enable_lora"):
        f.append("lora")
    if model.is_multimodal:
        f.append("encoder")
    if int(flags.get("data_parallel_size") or 1) > 1 or flags.get("enable_expert_parallel"):
        f.append("dp-ep")
    if float(flags.get("cpu_offload_gb") or 0) > 0:
        f.append("cpu-offload")
    return "+".join(sorted(f)) or "none"


def gpu_class_of(gpu) -> str:
    """The GPU class: rocm (AMD), integrated (shares the host's memory), the catalog's class
    (datacenter / workstation / desktop), else unknown (a GPU given by its memory only)."""
    if str(getattr(gpu, "vendor", "nvidia")).lower() not in ("nvidia", ""):
        return "rocm" if str(gpu.vendor).lower() == "amd" else str(gpu.vendor).lower()
    if getattr(gpu, "integrated", False):
        return "integrated"
    return getattr(gpu, "gpu_class", "") or "unknown"


def release_assumed(requested: str | None) -> bool:
    """No release named (or 'latest', the CLI's default): the estimate runs at an assumed release, so its band
    is the one of records whose release was not printed (era 'assumed')."""
    return str(requested or "latest").strip().lower() in ("latest", "")


def stratum_keys(model: ModelSpec, version: str, flags: dict, gpu, release_assumed: bool = False) -> dict:
    """The keys a band rests on (STRATUM_KEYS)."""
    return {"layout": layout_class(model), "weights": weight_format(model, flags),
            "era": ASSUMED_ERA if release_assumed else era_of(version), "features": features_of(model, flags),
            "gpu_class": gpu_class_of(gpu)}


def combination(keys: dict) -> str:
    return "|".join(str(keys[k]) for k in STRATUM_KEYS)


@dataclass(frozen=True)
class Band:
    """How far the available KV may fall below / rise above the prediction (bytes), and what it rests on."""

    below: int
    above: int
    basis: str  # "validated by N logs of this kind ..." | "no log of this kind: band widened to ..."
    logs: int = 0  # logs of this exact combination in the table


@lru_cache(maxsize=1)
def _doc() -> dict:
    try:
        return dict(load_yaml("profiles", "error_bands.yaml") or {})
    except FileNotFoundError:  # pragma: no cover - the table ships with the package
        return {}


_OVERRIDE: list[dict] = []  # a table in force instead of the shipped one (benchmarks: the held-out tables)


@contextmanager
def table(doc: dict):
    """Estimates inside this block use the band table `doc` instead of profiles/error_bands.yaml (the accuracy
    benchmark's verdicts with the table built without the record's own combination)."""
    _OVERRIDE.append(doc)
    try:
        yield doc
    finally:
        _OVERRIDE.pop()


def _current() -> dict:
    return _OVERRIDE[-1] if _OVERRIDE else _doc()


def _table() -> dict:
    return dict(_current().get("bands") or {})


WIDTH_UNITS = ("gib", "budget_fraction")  # a table holds every width in both; `unit` says how they combine


def _bytes(entry: dict, unit: str, budget_bytes: int) -> int:
    """A width entry ({gib, budget_fraction}) in bytes under the table's unit: GiB, a share of vLLM's budget
    (util x total), or 'max', the wider of the two."""
    g, f = float(entry["gib"]) * GiB, float(entry["budget_fraction"]) * budget_bytes
    return int(g if unit == "gib" else f if unit == "budget_fraction" else max(g, f))


def width_for(doc: dict, keys: dict, budget_bytes: int) -> tuple[int, list[str]]:
    """The band's half-width in bytes for these keys under the table `doc`: the widest width of its key
    values, and the keys that set it. A key value that fewer than min_stratum logs hold (or none: the
    unseen-combination spread) is not validated, so it takes the wider of its GiB and budget-share widths
    whatever the table's unit: a spread measured in GiB on small cards is not carried to a 192 GB one as it
    stands, nor a share of a large budget to a small one."""
    unit = doc.get("unit", "gib")
    least = int(doc.get("min_stratum", 5))
    unseen = doc["unseen"]
    per = {}
    for k in STRATUM_KEYS:
        x = f"{k}={keys.get(k)}"
        entry = (doc.get("strata") or {}).get(x)
        rare = entry is None or int(entry.get("records", 0)) < least
        per[x] = _bytes(entry or unseen, "max" if rare else unit, budget_bytes)
    top = max(per.values())
    return max(top, FLOOR_BYTES), [x for x, w in per.items() if w == top]


def band_for(keys: dict, budget_bytes: int) -> Band:
    """The band of an estimate with these stratum keys and vLLM budget (util x total, bytes), with the phrase
    saying what it rests on."""
    doc = _current()
    if not doc.get("unseen"):
        return Band(FLOOR_BYTES, FLOOR_BYTES, "no error table: the floor only")
    w, by = width_for(doc, keys, budget_bytes)
    n = int((doc.get("combinations") or {}).get(combination(keys), 0))
    least = int(doc.get("min_stratum", 5))
    seen = doc.get("seen") or {}
    rare = [f"{k}={keys.get(k)} ({int(seen.get(f'{k}={keys.get(k)}', 0))})" for k in STRATUM_KEYS
            if int(seen.get(f"{k}={keys.get(k)}", 0)) < least]
    held = f"the held-out error of {', '.join(by)}"
    logs = f"{n} log{'s' if n != 1 else ''}"
    if rare:
        basis = (f"{f'validated by {logs} of this kind, but' if n else 'no log of this kind:'} band widened to "
                 f"+-{w / GiB:.2f} GiB because fewer than {least} logs hold {', '.join(rare)}: the spread "
                 "held-out combinations show")
    elif n:
        basis = f"validated by {logs} of this kind ({combination(keys)}); +-{w / GiB:.2f} GiB, {held}"
    else:
        basis = (f"no log of this kind ({combination(keys)}), but {least}+ logs hold each of its keys: "
                 f"+-{w / GiB:.2f} GiB, {held}")
    return Band(w, w, basis, n)


def band_bytes(version: str, model: ModelSpec, budget_bytes: int = 0) -> tuple[int, int, str]:
    """(below, above, basis) without the estimate's other keys (no features, an unknown GPU class), for callers
    that know only the release and the model; `budget_bytes` (util x total) scales a table in budget units."""
    b = band_for({"layout": layout_class(model), "weights": weight_format(model), "era": era_of(version),
                  "features": "none", "gpu_class": "unknown"}, budget_bytes)
    return b.below, b.above, b.basis
