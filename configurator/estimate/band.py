"""The error band of a prediction: how far vLLM's available KV memory may fall from it.

The widths are data (profiles/error_bands.yaml, written by benchmarks/error_band.py from the dev
logs' residuals) keyed by era of vLLM's accounting and architecture class; a calibration file from
the same model, GPU and release narrows the band to CALIBRATED_BYTES. The verdict: 'refused' when
vLLM refuses even at the optimistic end, 'at-risk' when it refuses somewhere inside, else 'fits'.
"""

from __future__ import annotations

from functools import lru_cache

from configurator.hardware.catalog import GPU
from configurator.model.spec import ModelSpec
from configurator.resources import load_yaml
from configurator.units import GiB, MiB
from configurator.vllm.versions import _key

FLOOR_BYTES = 128 * MiB  # no band narrower than the rounding of vLLM's own log lines and allocator slack
CALIBRATED_BYTES = 128 * MiB  # a calibration from the same model / GPU / release: measured, not predicted


def era_of(version: str) -> str:
    """Accounting eras: weights + peak (<= 0.19, no graph estimate), + graph estimate (0.20-0.26),
    free-memory drop (0.27+)."""
    v = _key(version)
    if v >= (0, 27):
        return "consumed"
    if v >= (0, 20):
        return "weights_peak_graphs"
    return "weights_peak"


# GPU classes: vLLM's memory accounting differs by platform (ROCm's allocator and mem_get_info, a consumer card's
# display and driver reserve, an integrated GPU's host memory counted as in use), so a band measured on one class
# says nothing about another.
GPU_KINDS = ("datacenter", "consumer", "integrated", "rocm")
# The band of a GPU class no dev log covers: this share of vLLM's budget (util x total), at least the dev logs'
# band. A stated rule, not a fit: issue 25 measured the available-KV error on 35 start-up logs of combinations the
# project had never seen at 6.0 GiB at the 90th percentile, mostly on 80 GiB-class cards (a ~72 GiB budget at
# 0.9): about 8% of the budget.
UNSEEN_CLASS_FRACTION = 0.08


def gpu_kind(gpu: GPU) -> str:
    """'rocm' (any non-NVIDIA GPU vLLM runs: AMD Instinct), 'integrated' (shares the host's memory),
    'datacenter', or 'consumer' (workstation and desktop cards); '' for a GPU known only by its memory."""
    if gpu.vendor != "nvidia":
        return "rocm"
    if gpu.integrated:
        return "integrated"
    if not gpu.gpu_class:
        return ""
    return "datacenter" if gpu.gpu_class == "datacenter" else "consumer"


def class_evidence(gpu: GPU) -> tuple[str, int | None]:
    """(the GPU's class, how many of the band's dev logs ran on that class); None when the table does not say
    (a GPU known only by its --gpu-memory: its class is unknown, the dev logs' band applies)."""
    kind = gpu_kind(gpu)
    counts = _classes()
    if not kind or not counts:
        return kind, None
    return kind, int(counts.get(kind, 0))


def widen_for_class(below: int, above: int, gpu: GPU, budget_bytes: int) -> tuple[int, int, str]:
    """The band for this GPU's class and what it rests on ('validated by N logs of this kind' or 'no log of
    this kind: band widened to +-X GiB because ...')."""
    kind, n = class_evidence(gpu)
    if n is None:
        return below, above, ("GPU class unknown (a GPU given by its memory): the dev logs' band, "
                              "whatever GPU class they ran on")
    if n > 0:
        return below, above, f"validated by {n} logs of this kind (GPU class {kind})"
    w = max(int(UNSEEN_CLASS_FRACTION * budget_bytes), below, above)
    name = {"rocm": "a ROCm GPU (not NVIDIA CUDA)", "integrated": "an integrated GPU", "consumer": "a consumer GPU",
            "datacenter": "a data-centre GPU"}[kind]
    return w, w, (f"no log of this kind: band widened to +-{w / GiB:.2f} GiB because no start-up log on "
                  f"{name} backs the memory model ({UNSEEN_CLASS_FRACTION:.0%} of vLLM's budget, "
                  f"estimate/band.py UNSEEN_CLASS_FRACTION)")


def architecture_class(model: ModelSpec) -> str:
    tc = model.text_config
    if model.has_mamba:
        return "hybrid"
    if tc.get("num_experts") or tc.get("n_routed_experts") or tc.get("num_local_experts"):
        return "moe"
    if model.is_mla:
        return "mla"
    return "dense"


@lru_cache(maxsize=1)
def _classes() -> dict:
    """Dev logs behind the band, by GPU class (error_bands.yaml gpu_classes; written by error_band.py)."""
    try:
        return dict(load_yaml("profiles", "error_bands.yaml").get("gpu_classes") or {})
    except FileNotFoundError:  # pragma: no cover - the table ships with the package
        return {}


@lru_cache(maxsize=1)
def _table() -> dict:
    try:
        return dict(load_yaml("profiles", "error_bands.yaml")["bands"])
    except FileNotFoundError:  # pragma: no cover - the table ships with the package
        return {}


def band_bytes(version: str, model: ModelSpec) -> tuple[int, int, str]:
    """(below, above, which row): how far the available KV may fall below / rise above the prediction."""
    t = _table()
    key = f"{era_of(version)}/{architecture_class(model)}"
    row = t.get(key) or t.get("all")
    if not row:
        return FLOOR_BYTES, FLOOR_BYTES, "floor"
    return (max(int(row["below_gib"] * GiB), FLOOR_BYTES), max(int(row["above_gib"] * GiB), FLOOR_BYTES),
            key if key in t else "all")
