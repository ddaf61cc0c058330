"""The error band of a prediction: how far vLLM's available KV memory may fall from it.

The widths are data (profiles/error_bands.yaml, written by benchmarks/error_band.py from the dev
logs' residuals) keyed by era of vLLM's accounting and architecture class; a calibration file from
the same model, GPU and release narrows the band to CALIBRATED_BYTES. The verdict: 'refused' when
vLLM refuses even at the optimistic end, 'at-risk' when it refuses somewhere inside, else 'fits'.
"""

from __future__ import annotations

from functools import lru_cache

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
