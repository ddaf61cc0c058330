"""GPU peak figures for the speed model: profiles/gpu_speed.yaml, keyed by catalog GPU name.

Each figure is a vendor datasheet's (the file cites one URL per GPU): memory bandwidth, dense tensor throughput
per dtype, and the GPU-to-GPU link. A GPU the file lacks has no speed estimate (None), never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from configurator.resources import load_yaml


@dataclass(frozen=True)
class GPUSpeed:
    """Peak figures of one GPU (one MIG slice is not modelled: its share of the GPU is not in the datasheet)."""

    name: str
    arch: str
    hbm_gbs: float  # GB/s (1e9 bytes/s)
    tflops: dict[str, float]  # dense TFLOPS by compute dtype: bf16, fp16, fp8, fp4, int8
    link_kind: str  # nvlink, nvlink-bridge, pcie, infinity-fabric
    link_gbs: float  # GB/s per GPU, one direction
    source: str

    def peak_tflops(self, compute: str) -> float:
        """Dense TFLOPS for a compute dtype, falling back to the widest dtype the part has (fp8 -> bf16 -> fp16)."""
        for d in {"fp4": ("fp4", "fp8", "bf16", "fp16"), "fp8": ("fp8", "bf16", "fp16"),
                  "int8": ("int8", "fp8", "bf16", "fp16")}.get(compute, ("bf16", "fp16")):
            if self.tflops.get(d):
                return self.tflops[d]
        return 0.0

    @property
    def nvlink(self) -> bool:
        return self.link_kind != "pcie"


@lru_cache(maxsize=1)
def _table() -> dict[str, dict]:
    return load_yaml("profiles", "gpu_speed.yaml") or {}  # the prebuilt index, else PyYAML's C loader


def gpu_speed(name: str) -> GPUSpeed | None:
    """The peak figures of a catalog GPU (its `name`, e.g. 'h100-80gb'); None when the file has none. A MIG slice
    ('a100-80gb:3g.40gb') has none: its bandwidth share is not a datasheet figure."""
    d = _table().get(name)
    if not d or ":" in name:
        return None
    tf = {k[:-7] if k.endswith("_tflops") else k[:-5]: float(v) for k, v in d.items()
          if k.endswith(("_tflops", "_tops")) and v}
    link = d.get("link") or {}
    return GPUSpeed(name=name, arch=str(d.get("arch", "")), hbm_gbs=float(d["hbm_gbs"]), tflops=tf,
                    link_kind=str(link.get("kind", "pcie")), link_gbs=float(link.get("gbs", 32)),
                    source=str(d.get("source", "")))


def known_gpus() -> tuple[str, ...]:
    return tuple(sorted(_table()))
