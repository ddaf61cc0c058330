"""Derive the available-KV error band from held-out combinations, and check its coverage honestly.

The residuals are benchmarks/accuracy.py's leave-one-combination-out ones: every record (dev, dev2 and
the found records' train split; never the test split) that the tool runs and that logs its available
KV, predicted with the overhead coefficients refit without every record sharing its combination of
stratum keys (configurator/estimate/band.py: layout class, weight format, release era or 'assumed',
features, GPU class) - logged "Available KV cache memory". Every residual is therefore the error on a
combination the fit never saw.

The band (profiles/error_bands.yaml, read by `estimate` through band.band_for), one rule, the level fixed
beforehand (QUANTILE = the coverage target), so that nothing in it is tuned on the residuals it is scored on:
- unseen: the QUANTILE order statistic (the smallest value holding that share) of all the residuals: the
  spread unseen combinations show; a key value (layout=mla, era=assumed, ...) that no record holds takes
  it, one that fewer than MIN_STRATUM records hold takes it or its records' widest residual if wider;
- strata: a width per key value of MIN_STRATUM records or more: the QUANTILE order statistic of its records'
  residuals; an estimate's width is the widest of its keys' widths (band.width_for);
- what a width must hold of a residual (_need): all of it, except where the estimate's band already reaches
  down to no KV (a KV layout the estimate names as not modelled, estimate/features.py unmodelled_layout):
  there an over-prediction is inside whatever the width;
- unit: every width is kept in GiB and as a fraction of vLLM's budget (util x total); the unit says how an
  estimate applies them to validated key values: GiB, the fraction, or 'max' (the wider of the two),
  whichever holds more residuals when each combination is scored against the table built without it; on a
  tie, the one whose worst stratum (a key value of MIN_STRATUM records or more) holds more, then the narrower;
- a key value fewer than MIN_STRATUM records hold (or none) takes the wider of its two widths whatever the
  unit (configurator/estimate/band.py width_for): a GiB spread from small cards is not carried to a large one.

Held-out coverage, the figure the target is about: each combination scored against the table built without
any of its records, the unit chosen again without them (nested: neither the widths nor the unit see the
combination they are scored on). The shipped table's coverage of its own residuals is printed beside it, but
it is in-sample and decides nothing.

Usage: python benchmarks/error_band.py [--check]   (exit 1 when the band's held-out coverage is under
COVERAGE_TARGET in a stratum of MIN_STRATUM records or more, or over all records)
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import accuracy

from configurator.estimate.band import STRATUM_KEYS, WIDTH_UNITS, combination, width_for
from configurator.estimate.features import unmodelled_layout
from configurator.units import GiB

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "profiles" / "error_bands.yaml"
QUANTILE = 0.9  # the band holds this share of the held-out residuals
COVERAGE_TARGET = 0.9
MIN_STRATUM = 5  # a key value with this many records gets its own width
UNITS = (*WIDTH_UNITS, "max")  # how a table combines its two widths: one of them, or the wider


def residuals(ev: dict | None = None, split: str = "fit") -> list[dict]:
    """Held-out residuals (bytes) of every record run with a logged KV: split 'fit' (dev, dev2, found
    train: leave-one-combination-out) or 'test' (the found test split, predicted by the fit on all others).
    'open': the estimate's band reaches down to no KV (a KV layout it names as not modelled)."""
    ev = ev or accuracy.evaluate()
    out = []
    for r in ev["rows"]:
        c = r["case"]
        if r.get("cv_kv") is None or (c.split == "test") != (split == "test"):
            continue
        out.append({"id": c.id, "keys": c.keys, "combination": combination(c.keys), "budget": r["budget"],
                    "residual": r["cv_kv"] - c.logged_kv, "above": int(r.get("cv_above") or 0),
                    "open": unmodelled_layout(c.model, c.flags) is not None})
    return out


def _q(xs: list[float], q: float = QUANTILE) -> float:
    """The smallest value that holds a share q of xs (order statistic ceil(q n))."""
    xs = sorted(xs)
    return xs[max(math.ceil(q * len(xs)) - 1, 0)] if xs else 0.0


def _up(x: float) -> float:
    """Rounded up to 4 decimals, so that the record at the quantile stays inside the band."""
    return math.ceil(x * 1e4) / 1e4


def _scale(r: dict, unit: str) -> float:
    return GiB if unit == "gib" else r["budget"]


def _need(r: dict, unit: str) -> float:
    """The half-width (in `unit`) that holds this residual (held when low <= logged <= high): |residual|; an
    under-prediction less how far the band's high end already reaches above the prediction for the install's
    profiling sampler (r['above'], 0.9.0-0.11.0: FlashInfer's where it is installed); 0 for an over-prediction
    where the estimate's band reaches down to no KV anyway (r['open'])."""
    if r["residual"] > 0:
        return 0.0 if r.get("open") else r["residual"] / _scale(r, unit)
    return max(0, -r["residual"] - int(r.get("above") or 0)) / _scale(r, unit)


def _kvs(r: dict) -> list[str]:
    return [f"{k}={r['keys'][k]}" for k in STRATUM_KEYS]


def _widths(rows: list[dict], unit: str, unseen: float, level: float = QUANTILE) -> dict[str, float]:
    """A width per key value: the QUANTILE of its records' needs (_need) where MIN_STRATUM records or more hold
    it; else the unseen spread, or its own records' widest need if wider."""
    members: dict[str, list[float]] = {}
    for r in rows:
        for x in _kvs(r):
            members.setdefault(x, []).append(_need(r, unit))
    return {x: _q(v, level) if len(v) >= MIN_STRATUM else max([unseen, *v]) for x, v in members.items()}


def build(rows: list[dict], unit: str, level: float = QUANTILE) -> dict:
    """The band table from these residuals: the unseen spread and a width per key value (_widths), each in
    both width units (GiB and a share of vLLM's budget), `unit` saying how an estimate combines them (one of
    them, or 'max': the wider); how many records hold each key value and each combination. `level`: QUANTILE,
    another only for the sensitivity rows (levels)."""
    unseen = {u: _up(_q([_need(r, u) for r in rows], level)) for u in WIDTH_UNITS}
    widths = {u: _widths(rows, u, unseen[u], level) for u in WIDTH_UNITS}
    names = sorted(widths["gib"])
    seen = {x: sum(x in _kvs(r) for r in rows) for x in names}
    combos: dict = {}
    for r in rows:
        combos[r["combination"]] = combos.get(r["combination"], 0) + 1
    return {"unit": unit, "unseen": {**unseen, "records": len(rows), "quantile": level},
            "min_stratum": MIN_STRATUM,
            "strata": {x: {**{u: _up(widths[u][x]) for u in WIDTH_UNITS}, "records": seen[x]} for x in names},
            "seen": seen, "combinations": dict(sorted(combos.items()))}


def unseen_phrase(doc: dict) -> str:
    """The unseen-combination width as the estimate applies it (a key value no log validates takes the wider of
    its two widths, configurator/estimate/band.py width_for)."""
    u = doc["unseen"]
    return (f"+-{u['gib']:.2f} GiB or +-{u['budget_fraction'] * 100:.1f}% of vLLM's budget (util x total), "
            "whichever is wider")


def half_width(doc: dict, r: dict) -> int:
    """The band's half-width (bytes) the table gives this residual's record."""
    return width_for(doc, r["keys"], r["budget"])[0]


def covered(doc: dict, r: dict) -> bool:
    return _need(r, "gib") * GiB <= half_width(doc, r)


def held_out(rows: list[dict], unit: str, level: float = QUANTILE) -> dict[str, bool]:
    """Each record scored against the table (in `unit`) built without every record of its combination."""
    out = {}
    for c in sorted({r["combination"] for r in rows}):
        doc = build([r for r in rows if r["combination"] != c], unit, level)
        out |= {r["id"]: covered(doc, r) for r in rows if r["combination"] == c}
    return out


def key_groups(rows: list[dict]) -> list[tuple[str, list[dict]]]:
    """The records of each key value (layout=..., era=..., ...), in key and value order."""
    return [(f"{k}={v}", [r for r in rows if str(r["keys"][k]) == v])
            for k in STRATUM_KEYS for v in sorted({str(r["keys"][k]) for r in rows})]


def worst_stratum(rows: list[dict], held: dict[str, bool]) -> float:
    """The lowest held-out coverage of a key value that MIN_STRATUM records or more hold (1.0 when none does)."""
    return min((sum(held[r["id"]] for r in g) / len(g) for _, g in key_groups(rows) if len(g) >= MIN_STRATUM),
               default=1.0)


def choose(rows: list[dict]) -> tuple[str, dict]:
    """The unit with the higher held-out coverage; on a tie, the one whose worst stratum holds more (a band
    must be honest in each kind of deployment, not only on average), then the narrower median band; and each
    unit's coverage."""
    held = {u: held_out(rows, u) for u in UNITS}
    cov = {u: sum(held[u].values()) / len(rows) if rows else 0.0 for u in UNITS}
    worst = {u: worst_stratum(rows, held[u]) for u in UNITS}
    med = {u: statistics.median(half_width(build(rows, u), r) for r in rows) if rows else 0 for u in UNITS}
    return max(UNITS, key=lambda u: (cov[u], worst[u], -med[u])), cov


def fold_table(rows: list[dict]) -> dict:
    """The table as error_band.py builds it from these residuals: the unit chosen (choose), then build."""
    return build(rows, choose(rows)[0])


def nested(rows: list[dict]) -> tuple[dict[str, bool], dict[str, dict]]:
    """Held-out coverage with nothing chosen on the record scored: each combination against fold_table of the
    residuals of every other combination (the unit chosen again without it). Returns (record id -> covered,
    combination -> its table)."""
    held, docs = {}, {}
    for c in sorted({r["combination"] for r in rows}):
        docs[c] = fold_table([r for r in rows if r["combination"] != c])
        held |= {r["id"]: covered(docs[c], r) for r in rows if r["combination"] == c}
    return held, docs


def strata_table(rows: list[dict], doc: dict, held: dict[str, bool]) -> list[dict]:
    """Per stratum (every key value, then every combination of >= MIN_STRATUM records): n, median and p90
    |residual| GiB, coverage of the shipped band (in-sample), held-out coverage (nested)."""
    out = []
    groups = key_groups(rows)
    groups += [(f"combination {c}", [r for r in rows if r["combination"] == c])
               for c in sorted({r["combination"] for r in rows})]
    for name, sub in groups:
        if name.startswith("combination") and len(sub) < MIN_STRATUM:
            continue
        a = [abs(r["residual"]) / GiB for r in sub]
        out.append({"stratum": name, "n": len(sub), "median": statistics.median(a), "p90": accuracy._pct(a, 0.9),
                    "coverage": sum(covered(doc, r) for r in sub) / len(sub),
                    "held_out": sum(held[r["id"]] for r in sub) / len(sub),
                    "misses": sorted(r["id"] for r in sub if not held[r["id"]])})
    return out


SENSITIVITY_LEVELS = (0.8, 0.9, 0.95, 0.975, 1.0)


def levels(rows: list[dict], unit: str) -> list[dict]:
    """What another level would give (a sensitivity table; the band is built at QUANTILE, fixed beforehand):
    per level, held-out coverage over all records, the strata of >= MIN_STRATUM records held out under
    COVERAGE_TARGET, and the median half-width (GiB) of the table built on all records at that level."""
    out = []
    for level in SENSITIVITY_LEVELS:
        held = held_out(rows, unit, level)
        doc = build(rows, unit, level)
        under = [s["stratum"] for s in strata_table(rows, doc, held)
                 if s["n"] >= MIN_STRATUM and s["held_out"] < COVERAGE_TARGET]
        out.append({"level": level, "held_out": sum(held.values()) / len(rows) if rows else 0.0, "under": under,
                    "median_width": statistics.median(half_width(doc, r) / GiB for r in rows) if rows else 0.0})
    return out


def analyse(ev: dict) -> dict:
    rows = residuals(ev)
    unit, cov = choose(rows)
    doc = build(rows, unit)
    held, docs = nested(rows)
    test = residuals(ev, "test")
    widths = [half_width(doc, r) / GiB for r in rows]
    return {"rows": rows, "unit": unit, "unit_coverage": cov, "doc": doc, "held": held, "fold_docs": docs,
            "strata": strata_table(rows, doc, held),
            "coverage": sum(covered(doc, r) for r in rows) / len(rows) if rows else 0.0,
            "held_out": sum(held.values()) / len(rows) if rows else 0.0,
            "median_width": statistics.median(widths) if widths else 0.0, "levels": levels(rows, unit),
            "test": test, "test_coverage": sum(covered(doc, r) for r in test) / len(test) if test else None}


def missed(a: dict) -> list[str]:
    """Held-out coverage under COVERAGE_TARGET: a stratum of MIN_STRATUM records or more, or all records."""
    bad = [f"{s['stratum']}: {s['held_out']:.0%} of {s['n']} held out (missed: {' '.join(s['misses'])})"
           for s in a["strata"] if s["n"] >= MIN_STRATUM and s["held_out"] < COVERAGE_TARGET]
    if a["held_out"] < COVERAGE_TARGET:
        bad.append(f"held-out coverage {a['held_out']:.0%}")
    return bad


HEADER = """\
# Available-KV error band: written by `python benchmarks/error_band.py` from the leave-one-combination-out
# residuals (predicted - logged 'Available KV cache memory') of benchmarks/accuracy.py on data/logs dev, dev2
# and the found records' train split (never the test split). A combination = layout class | weight format |
# release era ('assumed' when the log tells none) | features | GPU class (configurator/estimate/band.py).
# unseen.width: the 90% order statistic of every residual (each predicted by a fit that never saw its
# combination); strata: the same per key value with >= 5 records (a rarer key value: unseen, or its records'
# widest if wider); an estimate's half-width is the widest of its keys' widths. An over-prediction where the
# estimate's band already reaches down to no KV (a KV layout it names as not modelled) needs no width.
# Every width in gib and budget_fraction (x util x total); unit: how validated key values apply them (gib,
# budget_fraction or max, the wider), whichever held more residuals with each combination scored against the
# table built without it; a key value of fewer than min_stratum records takes the wider of its two whatever
# the unit. combinations / seen: how many logs back each.
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="print coverage only; do not write the table")
    args = ap.parse_args(argv)
    a = analyse(accuracy.evaluate())
    doc = a["doc"]
    print(f"{len(a['rows'])} records, {len(doc['combinations'])} combinations; leave-one-combination-out residuals")
    print("held-out coverage by unit: " + ", ".join(f"{u} {c:.0%}" for u, c in a["unit_coverage"].items())
          + f"; chosen: {a['unit']}")
    print(f"unseen width {unseen_phrase(doc)}; median half-width {a['median_width']:.2f} GiB; "
          f"coverage {a['coverage']:.0%} (shipped table, in-sample), {a['held_out']:.0%} (held out, nested)")
    for s in a["strata"]:
        print(f"  {s['stratum']:<60} n={s['n']:<3} median {s['median']:.2f} p90 {s['p90']:.2f} GiB "
              f"coverage {s['coverage']:.0%} held-out {s['held_out']:.0%}")
    for x in a["levels"]:
        print(f"  at level {x['level']:g}: held out {x['held_out']:.0%}, {len(x['under'])} strata under "
              f"{COVERAGE_TARGET:.0%} {' '.join(x['under'])}, median half-width {x['median_width']:.2f} GiB")
    if a["test"]:
        print(f"test split: {len(a['test'])} records, band coverage {a['test_coverage']:.0%}")
    if not args.check:
        OUT.write_text(HEADER + yaml.safe_dump(doc, sort_keys=False))
        print(f"wrote {OUT.relative_to(ROOT)}")
    bad = missed(a)
    for b in bad:
        print(f"TARGET MISSED: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
