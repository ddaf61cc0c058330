"""Derive the available-KV error band from cross-validated residuals, and check its coverage honestly.

The residuals are benchmarks/accuracy.py's leave-one-group-out ones: for every dev / dev2 record the
tool runs that logs its available KV (the headline records, whatever release each is evaluated as:
printed, dated, stated or the tool's default), predicted (with the overhead coefficients refit without
the record's group: model family x source) - logged "Available KV cache memory". With a few dozen
records in a handful of groups, per-cell quantiles do not hold on held-out groups, so the band is one
symmetric row: the 90th percentile of the absolute residuals, floored. Not 1.645 x the RMS: one record
that misses by ~12 GiB for a reason no coefficient stands for (a unified-memory GB10, whose host
allocations vLLM counts) would triple an RMS band for every prediction. Coverage is leave-one-group-out:
each group's residuals against the band built from the other groups. Writes profiles/error_bands.yaml
(the table `estimate` reads) unless --check.

Usage: python benchmarks/error_band.py [--check]   (exit 1 when the held-out coverage is under 80%)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import accuracy

from configurator.estimate.band import FLOOR_BYTES, GPU_KINDS, architecture_class, era_of, gpu_kind
from configurator.hardware.catalog import find_gpu
from configurator.units import GiB

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "profiles" / "error_bands.yaml"
QUANTILE = 0.9  # the band holds this share of the absolute cross-validated residuals
COVERAGE_TARGET = 0.8


def residuals(ev: dict | None = None) -> list[dict]:
    """Cross-validated residuals (bytes) of every record run with a logged KV size."""
    ev = ev or accuracy.evaluate()
    out = []
    for r in ev["rows"]:
        c = r["case"]
        if r.get("cv_kv") is None:
            continue
        out.append({"id": c.id, "era": era_of(r["version"]), "class": architecture_class(c.model),
                    "gpu_kind": gpu_kind(find_gpu(c.gpu["gpu"])) if "gpu" in c.gpu else "",
                    "group": c.group, "residual": r["cv_kv"] - c.logged_kv})
    return out


def band(rows: list[dict]) -> tuple[int, int]:
    """(below, above) widths in bytes: the QUANTILE of the absolute residuals on both sides, floored."""
    if not rows:
        return FLOOR_BYTES, FLOOR_BYTES
    w = max(int(accuracy._pct([abs(r["residual"]) for r in rows], QUANTILE)), FLOOR_BYTES)
    return w, w


def table(rows: list[dict]) -> dict:
    lo, hi = band(rows)
    return {"all": {"below_gib": round(lo / GiB, 2), "above_gib": round(hi / GiB, 2), "records": len(rows)}}


def gpu_classes(rows: list[dict]) -> dict:
    """Records behind the band by GPU class (estimate/band.py GPU_KINDS; a GPU given by its memory has none):
    a class with 0 gets the widened band of an unvalidated class."""
    return {k: sum(r["gpu_kind"] == k for r in rows) for k in GPU_KINDS}


def coverage(rows: list[dict]) -> float:
    """Share of records inside the band built without their own group."""
    covered = 0
    for g in sorted({r["group"] for r in rows}):
        held = [r for r in rows if r["group"] == g]
        lo, hi = band([r for r in rows if r["group"] != g])
        covered += sum(-hi <= r["residual"] <= lo for r in held)
    return covered / len(rows) if rows else 0.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="print coverage only; do not write the table")
    a = ap.parse_args(argv)
    rows = residuals()
    cov = coverage(rows)
    print(f"{len(rows)} records, {len({r['group'] for r in rows})} groups; cross-validated residuals; "
          f"leave-one-group-out coverage of the band: {cov:.0%}")
    t = table(rows)
    for k, v in t.items():
        print(f"  {k:<28} -{v['below_gib']:.2f} / +{v['above_gib']:.2f} GiB over {v['records']} records")
    if not a.check:
        OUT.write_text("# Available-KV error band: written by `python benchmarks/error_band.py` from the\n"
                       "# leave-one-group-out cross-validated residuals (predicted - logged 'Available KV cache\n"
                       "# memory') of benchmarks/accuracy.py on data/logs/vllm-startup-logs dev + dev2,\n"
                       "# every record it runs that logs its available KV. below_gib: how far vLLM's figure\n"
                       "# may fall below the prediction; above_gib: how far above. Both are the\n"
                       f"# {QUANTILE:.0%} quantile of the absolute residuals; one 'all' row: too few records\n"
                       "# per era / architecture cell. gpu_classes: the records by GPU class; a class\n"
                       "# with none gets the widened band of estimate/band.py UNSEEN_CLASS_FRACTION.\n"
                       + yaml.safe_dump({"bands": t, "gpu_classes": gpu_classes(rows)}, sort_keys=False))
        print(f"wrote {OUT.relative_to(ROOT)}")
    return 0 if cov >= COVERAGE_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
