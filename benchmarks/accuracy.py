"""Accuracy of the available-KV prediction on the dev log set, next to the naive baseline.

For every record whose model and GPU the tool knows, predict with the record's flags (no
--kv-cache-memory-bytes: the full profile model) and compare with what vLLM logged: weights
("Model loading took"), "Available KV cache memory", tokens, and the start / refuse verdict.
The naive baseline is `util x total - weights` (same weights as the tool's prediction).

Usage: python benchmarks/accuracy.py [LOGS.jsonl] [--out benchmarks/accuracy.md]
       [--unknown-version 0.19.0]
Records that print no vLLM version are evaluated as --unknown-version (their logged numbers
subtract no CUDA-graph estimate, as releases before 0.20 do).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

from configurator.errors import ConfiguratorError
from configurator.estimate import EstimateRequest, estimate
from configurator.units import GiB

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kv_reproduction import DEFAULT_LOGS, gpu_for, model_for


def _flags(r: dict) -> dict:
    f: dict = {}
    for key in ("gpu_memory_utilization", "max_model_len", "max_num_seqs", "max_num_batched_tokens",
                "tensor_parallel_size", "pipeline_parallel_size", "block_size"):
        if r.get(key):
            f[key] = r[key]
    if r.get("enforce_eager"):
        f["enforce_eager"] = True
    q = str(r.get("quantization") or "").split(" ")[0].lower()
    if q:
        f["quantization"] = q
    kvd = str(r.get("kv_cache_dtype") or "")
    if kvd.startswith("fp8"):
        f["kv_cache_dtype"] = kvd.split()[0]
    if r.get("enable_prefix_caching") is not None:
        f["enable_prefix_caching"] = bool(r["enable_prefix_caching"])
    return f


def evaluate(path: Path, unknown_version: str) -> tuple[list[dict], list[dict]]:
    rows, skipped = [], []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r.get("engine") != "V1":
            skipped.append({"id": r["id"], "reason": "V0 engine (not modelled)"})
            continue
        m = re.match(r"\d+\.\d+(\.\d+)*", str(r.get("vllm_version") or ""))
        version = m.group(0) if m else unknown_version
        try:
            model, used = model_for(r)
            gpu = gpu_for(r)
            res = estimate(EstimateRequest(model=model, vllm_version=version, flags=_flags(r), **gpu))
        except (LookupError, ConfiguratorError) as e:
            skipped.append({"id": r["id"], "reason": str(e)[:120]})
            continue
        mem = res.memory
        naive = mem.requested_bytes - mem.weights_bytes
        logged_kv = r.get("available_kv_cache_gib")
        refused = str(r.get("status", "")).startswith("error")
        rows.append({
            "id": r["id"], "version": res.vllm_version + ("*" if not m else ""), "model": used, "gpu": res.gpu.name,
            "requested": mem.requested_bytes, "weights": mem.weights_bytes,
            "logged_weights": r["model_loading_gib"] * GiB if r.get("model_loading_gib") else None,
            "kv": mem.kv_cache_bytes, "naive": naive,
            "logged_kv": logged_kv * GiB if logged_kv is not None else None,
            "tokens": res.kv_cache.tokens, "logged_tokens": r.get("kv_cache_tokens"),
            "fits": res.fits, "logged_fits": not refused, "status": r.get("status"),
            "quantized": bool(r.get("quantization")) or "awq" in used.lower(),
            "error": res.errors[0] if res.errors else "", "logged_error": r.get("error_text") or "",
        })
    return rows, skipped


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summary(rows: list[dict]) -> dict:
    kv_rows = [r for r in rows if r["logged_kv"] is not None]
    err = [abs(r["kv"] - r["logged_kv"]) / GiB for r in kv_rows]
    nerr = [abs(r["naive"] - r["logged_kv"]) / GiB for r in kv_rows]
    perr = [abs(r["kv"] - r["logged_kv"]) / r["requested"] * 100 for r in kv_rows]
    pnerr = [abs(r["naive"] - r["logged_kv"]) / r["requested"] * 100 for r in kv_rows]
    w = [abs(r["weights"] - r["logged_weights"]) / r["logged_weights"] * 100 for r in rows
         if r["logged_weights"] and not r["quantized"]]
    verdict = [r["fits"] == r["logged_fits"] for r in rows]
    return {"n_kv": len(kv_rows), "median": statistics.median(err) if err else float("nan"),
            "p90": _pct(err, 0.9), "naive_median": statistics.median(nerr) if nerr else float("nan"),
            "naive_p90": _pct(nerr, 0.9), "pct_median": statistics.median(perr) if perr else float("nan"),
            "pct_p90": _pct(perr, 0.9), "naive_pct_median": statistics.median(pnerr) if pnerr else float("nan"),
            "naive_pct_p90": _pct(pnerr, 0.9), "weights_max_pct": max(w) if w else float("nan"),
            "n_weights": len(w), "verdicts": f"{sum(verdict)} / {len(verdict)}"}


def _g(b: float | None) -> str:
    return "" if b is None else f"{b / GiB:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs="?", type=Path, default=DEFAULT_LOGS)
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("accuracy.md"))
    ap.add_argument("--unknown-version", default="0.19.0")
    a = ap.parse_args(argv)
    rows, skipped = evaluate(a.logs, a.unknown_version)
    s = summary(rows)
    out = ["# Prediction accuracy on the dev log set", "",
           "`python benchmarks/accuracy.py` predicts each record from its flags alone and compares with what "
           "vLLM logged. Baseline: the naive `util x total - weights` (same weights). Versions marked * were "
           f"not printed in the log and are evaluated as {a.unknown_version}.", "",
           "## Summary", "",
           "| | this tool | naive baseline |", "|---|---|---|",
           f"| available KV, median abs error | {s['median']:.2f} GiB ({s['pct_median']:.1f}% of budget) | "
           f"{s['naive_median']:.2f} GiB ({s['naive_pct_median']:.1f}%) |",
           f"| available KV, 90th percentile | {s['p90']:.2f} GiB ({s['pct_p90']:.1f}%) | "
           f"{s['naive_p90']:.2f} GiB ({s['naive_pct_p90']:.1f}%) |",
           f"| records with a logged KV size | {s['n_kv']} | {s['n_kv']} |",
           f"| weights vs 'Model loading took' (unquantized, worst) | {s['weights_max_pct']:.1f}% over "
           f"{s['n_weights']} records | |",
           f"| start / refuse verdicts matching vLLM | {s['verdicts']} | |", "",
           "## Records", "",
           "| record | vLLM | model | GPU | weights pred / logged GiB | KV pred / naive / logged GiB | tokens pred / "
           "logged | verdict pred / logged |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['id']} | {r['version']} | {r['model']} | {r['gpu']} | {_g(r['weights'])} / "
                   f"{_g(r['logged_weights'])} | {_g(r['kv'])} / {_g(r['naive'])} / {_g(r['logged_kv'])} | "
                   f"{r['tokens']:,} / {r['logged_tokens'] or ''} | {'start' if r['fits'] else 'refuse'} / "
                   f"{'start' if r['logged_fits'] else r['status']} |")
    out += ["", "## Not evaluated", "", "| record | reason |", "|---|---|"]
    out += [f"| {k['id']} | {k['reason']} |" for k in skipped]
    a.out.write_text("\n".join(out) + "\n")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
