"""Derive the available-KV error band from the dev logs' residuals, and check its coverage honestly.

For every dev / dev2 record the tool can run (benchmarks/accuracy.py's evaluation), the residual is
predicted - logged "Available KV cache memory". Records are grouped by era of vLLM's accounting and
architecture class; the band of a cell is the 95th percentile of over-prediction (pessimistic side)
and of under-prediction (optimistic side), with a floor. Coverage is leave-one-group-out: each model
family's records are checked against a band built without that family. Writes profiles/error_bands.yaml
(the table `estimate` reads) unless --check.

Usage: python benchmarks/error_band.py [--check]   (exit 1 when LOGO coverage is under 80%)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import accuracy
import kv_reproduction

from configurator.estimate.band import FLOOR_BYTES, architecture_class, era_of
from configurator.units import GiB

ROOT = Path(__file__).resolve().parents[1]
LOGS = [ROOT.parent / "shared" / "data" / f"vllm-startup-logs.{n}.jsonl" for n in ("dev", "dev2")]
OUT = ROOT / "profiles" / "error_bands.yaml"
OUTLIER_BYTES = 10 * GiB
QUANTILE = 0.95  # of over- and under-prediction; 0.9 covered 75% of held-out families


def _safe_model_for(r):
    try:
        return _orig(r)
    except LookupError:
        raise
    except Exception as e:  # a record whose model string no resolver accepts
        raise LookupError(f"model not resolvable: {e}"[:120]) from None


_orig = kv_reproduction.model_for
accuracy.model_for = _safe_model_for


def _family(model: str) -> str:
    base = model.split("/")[-1].lower()  # Qwen2.5-7B-Instruct-AWQ -> qwen2.5; gpt-oss-20b -> gpt-oss
    return re.sub(r"-?\d+(\.\d+)?[bm](-.*)?$", "", base.split(" ")[0]) or base


def residuals() -> list[dict]:
    out = []
    for path in LOGS:
        records = {json.loads(line)["id"]: json.loads(line) for line in path.read_text().splitlines() if line.strip()}
        rows, _ = accuracy.evaluate(path, "0.19.0")
        for r in rows:
            if r["logged_kv"] is None:
                continue
            spec, _ = kv_reproduction.model_for(records[r["id"]])
            if abs(r["kv"] - r["logged_kv"]) > OUTLIER_BYTES:
                print(f"  left out {r['id']}: off by {(r['kv'] - r['logged_kv']) / GiB:+.1f} GiB "
                      f"(a layout or feature the model does not cover, not noise)")
                continue
            out.append({"id": r["id"], "era": era_of(r["version"].rstrip("*")), "class": architecture_class(spec),
                        "family": _family(r["model"]), "residual": r["kv"] - r["logged_kv"]})
    return out


def _q(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return 0.0
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def band(rows: list[dict]) -> tuple[int, int]:
    """(pessimistic, optimistic) widths in bytes: QUANTILE of over- and of under-prediction, floored."""
    over = [max(r["residual"], 0) for r in rows]
    under = [max(-r["residual"], 0) for r in rows]
    return max(int(_q(over, QUANTILE)), FLOOR_BYTES), max(int(_q(under, QUANTILE)), FLOOR_BYTES)


def table(rows: list[dict]) -> dict:
    cells: dict = {}
    for r in rows:
        cells.setdefault((r["era"], r["class"]), []).append(r)
    out = {"all": dict(zip(("below_gib", "above_gib"), (round(x / GiB, 2) for x in band(rows)), strict=True))
           | {"records": len(rows)}}
    for (era, cls), rs in sorted(cells.items()):
        if len(rs) >= 3:  # fewer records than that: the era/all row applies
            lo, hi = band(rs)
            out[f"{era}/{cls}"] = {"below_gib": round(lo / GiB, 2), "above_gib": round(hi / GiB, 2),
                                   "records": len(rs)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="print coverage only; do not write the table")
    a = ap.parse_args(argv)
    rows = residuals()
    covered = 0
    for fam in sorted({r["family"] for r in rows}):
        held = [r for r in rows if r["family"] == fam]
        lo, hi = band([r for r in rows if r["family"] != fam])
        covered += sum(-hi <= r["residual"] <= lo for r in held)
    cov = covered / len(rows)
    print(f"{len(rows)} records, {len({r['family'] for r in rows})} model families; "
          f"leave-one-family-out coverage of the band: {cov:.0%}")
    t = table(rows)
    for k, v in t.items():
        print(f"  {k:<28} -{v['below_gib']:.2f} / +{v['above_gib']:.2f} GiB over {v['records']} records")
    if not a.check:
        OUT.write_text("# Available-KV error band: written by `python benchmarks/error_band.py` from the residuals\n"
                       "# (predicted - logged 'Available KV cache memory') of ../shared/data/vllm-startup-logs\n"
                       "# dev + dev2. below_gib: how far vLLM's figure fell below the prediction (95th pct);\n"
                       "# above_gib: how far above. Keys: era/architecture class; 'all' when a cell has < 3.\n"
                       + yaml.safe_dump({"bands": t}, sort_keys=False))
        print(f"wrote {OUT.relative_to(ROOT)}")
    return 0 if cov >= 0.8 else 1


if __name__ == "__main__":
    sys.exit(main())
