"""How close the speed model (configurator/speed) comes to published vLLM benchmarks (data/benchmarks).

    python benchmarks/speed_accuracy.py [--write-calibration]

1. Each point's KV cache size comes from the project's own estimate (its model, GPU, layout and flags), its
   geometry from resolve_model / count_params; nothing is keyed on a model name.
2. The Params figures in GRID (efficiencies, fixed costs, the experts' width and expert-parallel imbalance
   terms; eta_wq is not in it: held at its default 1.0) are fitted on the train split (the median absolute
   log error of output throughput and TPOT per GPU class, coordinate search on a grid from the STARTS; the best
   in-sample result).
3. Leave-one-source-out cross-validation on the train split: each source's points predicted by figures fitted
   without that source (the folds are fitted in --jobs processes; closed loads replay vLLM's scheduler once,
   configurator/speed/schedule.py, before the workers fork).
   The claim: median |error| <= 20% for output throughput and for TPOT in each GPU class
   with at least 5 such points. The test split (sources whose sha256(url) starts 0-4) is predicted with the
   figures fitted on the whole train split and reported apart; it is not part of the claim's fit.
4. Writes benchmarks/speed_accuracy.md; --write-calibration also rewrites profiles/speed_calibration.yaml (the
   fitted figures and the bands: the cross-validated log errors' 10th-90th percentiles). Exit 1 when the claim
   is missed, 2 when the data cannot be read.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from configurator.estimate.pipeline import estimate  # noqa: E402
from configurator.estimate.result import EstimateRequest  # noqa: E402
from configurator.model.resolve import resolve_model  # noqa: E402
from configurator.speed.geometry import Geometry, geometry  # noqa: E402
from configurator.speed.hardware import GPUSpeed, gpu_speed  # noqa: E402
from configurator.speed.model import Layout, Params, Workload, predict  # noqa: E402
from configurator.speed.schedule import kv_groups  # noqa: E402

DATA = ROOT / "data" / "benchmarks" / "vllm-bench-points.jsonl"
REPORT = ROOT / "benchmarks" / "speed_accuracy.md"
CALIBRATION = ROOT / "profiles" / "speed_calibration.yaml"
CLAIM = 0.20
MIN_CLASS = 5
GRID = {"eta_bw": [0.35 + 0.05 * i for i in range(13)], "eta_f": [0.15 + 0.05 * i for i in range(15)],
        "t0": [0.0005 * i for i in range(1, 17)], "t_seq": [0.0, 2e-6, 5e-6, 10e-6],
        "eta_moe": [0.2, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8, 1.0],
        "eta_f_ampere": [0.15 + 0.05 * i for i in range(15)],
        "t_layer": [0.0, 5e-6, 10e-6, 20e-6, 30e-6, 50e-6],
        "t_moe_layer": [0.0, 10e-6, 25e-6, 50e-6, 75e-6, 100e-6, 150e-6, 200e-6],
        "t_eager_layer": [0.0, 25e-6, 50e-6, 100e-6, 150e-6, 200e-6, 300e-6, 400e-6],
        "moe_w_half": [128.0, 256.0, 512.0, 1024.0],
        "ep_imbalance": [0.0, 0.25, 0.5, 1.0, 1.5, 2.0]}


@dataclass
class Case:
    point: dict
    geo: Geometry
    gpu: GPUSpeed
    layout: Layout
    workload: Workload
    max_num_seqs: int
    mnbt: int
    kv_tokens: float | None
    groups: tuple[int, ...] = (0,)

    @property
    def measured(self) -> dict[str, float | None]:
        p = self.point
        return {"output_tok_s": p["output_throughput"],
                "tpot_ms": p["median_tpot_ms"] or p["mean_tpot_ms"] or p["median_itl_ms"],
                "ttft_ms": p["median_ttft_ms"] or p["mean_ttft_ms"]}


def _flag(cmd: str | None, name: str) -> str | None:
    m = re.search(r"(?:^|\s)" + re.escape(name) + r"[ =](\S+)", cmd or "")
    return m.group(1) if m else None


def build_case(p: dict) -> Case | None:
    gpu = gpu_speed(p["gpu"])
    if gpu is None:
        return None
    model = resolve_model(p["model"], allow_hub=False)
    flags = {"tensor_parallel_size": p["tp"], "pipeline_parallel_size": p["pp"], "data_parallel_size": p["dp"],
             "kv_cache_dtype": p["kv_cache_dtype"] or "auto", "enable_expert_parallel": p["ep"]}
    for key in ("max_num_seqs", "max_num_batched_tokens", "max_model_len"):
        if p[key]:
            flags[key] = p[key]
    util = _flag(p["serve_command"], "--gpu-memory-utilization")
    if util:
        flags["gpu_memory_utilization"] = float(util)
    if p["weight_dtype"] == "int4":
        flags["quantization"] = "gptq"
    req = EstimateRequest(model=model, gpu=p["gpu"], vllm_version=p["vllm_version"], flags=flags)
    est = estimate(req)
    ef = est.flags
    kv_tokens = float(est.kv_cache.tokens) if est.kv_cache and est.kv_cache.tokens else None
    groups = kv_groups(est.kv_cache)
    if kv_tokens is None and est.kv_cache and est.kv_cache.bytes_per_token and (est.kv_cache_bytes_high or 0) > 0:
        # the estimate refuses a deployment the source ran: its KV cache lay between 0 and the band's high end;
        # the middle of that (the cache sizes the replayed scheduler admits and preempts by), in the tokens vLLM
        # logs: the pool's blocks over its groups (bytes_per_token counts one group's layers)
        kv_tokens = est.kv_cache_bytes_high / 2 / est.kv_cache.bytes_per_token / len(groups)
    lay = Layout(tp=p["tp"], pp=p["pp"], dp=p["dp"], ep=p["ep"])
    geo = geometry(model, tp=p["tp"], ep_size=p["tp"] * p["dp"] if p["ep"] else 1, weight_dtype=p["weight_dtype"],
                   kv_cache_dtype=p["kv_cache_dtype"], gpu_has_fp8=bool(gpu.tflops.get("fp8")))
    wl = Workload(input_len=p["input_len"], output_len=p["output_len"], concurrency=p["max_concurrency"],
                  request_rate=p["request_rate"], num_prompts=p["num_prompts"],
                  variable_lengths=p["dataset"] == "sharegpt")  # ShareGPT's outputs vary; random ones are alike
    return Case(p, geo, gpu, lay, wl, int(ef.get("max_num_seqs") or 256), int(ef.get("max_num_batched_tokens") or 8192),
                kv_tokens, groups)


def run(case: Case, params: Params) -> dict[str, float]:
    pr = predict(case.geo, case.gpu, case.layout, case.workload, max_num_seqs=case.max_num_seqs,
                 max_num_batched_tokens=case.mnbt, kv_tokens=case.kv_tokens, params=params, kv_groups=case.groups)
    return {"output_tok_s": pr.output_tok_s, "tpot_ms": pr.tpot_ms, "ttft_ms": pr.ttft_ms}


def log_errors(cases: list[Case], params: Params, metrics=("output_tok_s", "tpot_ms")) -> list[float]:
    return [e for errs in class_errors(cases, params, metrics).values() for e in errs]


def class_errors(cases: list[Case], params: Params, metrics=("output_tok_s", "tpot_ms")) -> dict[tuple, list[float]]:
    """Absolute log errors by (GPU class, metric)."""
    out: dict[tuple, list[float]] = defaultdict(list)
    for c in cases:
        pred = run(c, params)
        for m in metrics:
            v = c.measured[m]
            if v:
                out[(c.gpu.arch, m)].append(abs(math.log(pred[m] / v)))
    return out


STARTS = ({"eta_bw": 0.75, "eta_f": 0.4, "eta_f_ampere": 0.6, "t0": 0.001, "t_seq": 1e-5, "eta_moe": 0.4,
           "t_layer": 5e-6, "t_moe_layer": 75e-6, "t_eager_layer": 0.0, "moe_w_half": 128.0,
           "ep_imbalance": 0.0},
          {"eta_bw": 0.8, "eta_f": 0.55, "eta_f_ampere": 0.7, "t0": 0.0015, "t_seq": 1e-5, "eta_moe": 0.5,
           "t_layer": 0.0, "t_moe_layer": 50e-6, "t_eager_layer": 0.0, "moe_w_half": 256.0,
           "ep_imbalance": 1.0},)


def fit(cases: list[Case]) -> Params:
    """Coordinate search over GRID from the starting point(s) in STARTS. The score is what the claim judges, the median
    absolute log error of throughput and TPOT in each GPU class, averaged over the classes, plus half the mean
    error over all points (the medians alone are flat between points, which stalls a coordinate search)."""
    def score(d: dict) -> tuple[float, float]:
        by = class_errors(cases, Params(**d))
        if not by:
            return (0.0, 0.0)
        flat = [e for errs in by.values() for e in errs]
        return (statistics.fmean(statistics.median(v) for v in by.values()) + 0.5 * statistics.fmean(flat),
                statistics.fmean(flat))

    results = []
    for start in STARTS:
        cur = dict(start)
        best = score(cur)
        for _ in range(4):
            changed = False
            for k, values in GRID.items():
                for v in values:
                    trial = {**cur, k: v}
                    s = score(trial)
                    if s < best:
                        best, cur, changed = s, trial, True
            if not changed:
                break
        results.append((best, cur))
    return with_t_first(cases, Params(**min(results, key=lambda r: r[0])[1]))


def with_t_first(cases: list[Case], params: Params) -> Params:
    """`params` with t_first: the median of measured - predicted TTFT over the runs at a client concurrency or a
    request rate (where TTFT is a request's own path, not the queue of a burst), 0 when there are none."""
    gaps = [c.measured["ttft_ms"] / 1e3 - run(c, params)["ttft_ms"] / 1e3 for c in cases
            if c.measured["ttft_ms"] and (c.point["max_concurrency"] or c.point["request_rate"])]
    t_first = max(0.0, statistics.median(gaps)) if gaps else 0.0
    return replace(params, t_first=round(t_first, 4))


_FOLDS: list[list[Case]] = []


def _fit_fold(i: int) -> Params:  # a worker forked with _FOLDS set: fit fold i (0: the whole train split)
    return fit(_FOLDS[i])


def rel_err(pred: float, meas: float) -> float:
    return pred / meas - 1.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-calibration", action="store_true")
    ap.add_argument("--jobs", type=int, default=2, help="folds fitted in parallel (processes)")
    args = ap.parse_args(argv)
    try:
        points = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError) as e:
        print(f"speed_accuracy: cannot read {DATA}: {e}", file=sys.stderr)
        return 2
    cases, skipped = [], []
    for p in points:
        c = build_case(p)
        (cases if c else skipped).append(c or p)
    train = [c for c in cases if c.point["split"] == "train"]
    test = [c for c in cases if c.point["split"] == "test"]
    by_source: dict[str, list[Case]] = defaultdict(list)
    for c in train:
        by_source[c.point["source_url"]].append(c)
    # leave one source out
    cv_rows = []
    global _FOLDS
    for c in cases:  # replay every point's schedule once here, so that the forked workers share it
        run(c, Params())
    _FOLDS = [train, *([c for c in train if c.point["source_url"] != src] for src in by_source)]
    with ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=get_context("fork")) as pool:
        full, *fold_params = pool.map(_fit_fold, range(len(_FOLDS)))
    for params, held in zip(fold_params, by_source.values(), strict=True):
        for c in held:
            cv_rows.append((c, run(c, params)))
    test_rows = [(c, run(c, full)) for c in test]

    def table(rows, title):
        lines = [f"### {title}", "", "| GPU class | metric | points | median abs error | 90th pct | median signed |",
                 "| --- | --- | ---: | ---: | ---: | ---: |"]
        verdicts = []
        classes = [*sorted({c.gpu.arch for c, _ in rows}), "all"]
        for cls in classes:
            for m in ("output_tok_s", "tpot_ms", "ttft_ms"):
                errs = [rel_err(pred[m], c.measured[m]) for c, pred in rows
                        if c.measured[m] and (cls == "all" or c.gpu.arch == cls)]
                if not errs:
                    continue
                a = sorted(abs(e) for e in errs)
                med, p90 = statistics.median(a), a[min(len(a) - 1, int(0.9 * len(a)))]
                lines.append(f"| {cls} | {m} | {len(a)} | {med:.1%} | {p90:.1%} | {statistics.median(errs):+.1%} |")
                if m != "ttft_ms" and cls != "all":
                    verdicts.append((cls, m, len(a), med))
            errs = [rel_err(pred["ttft_ms"], c.measured["ttft_ms"]) for c, pred in rows if c.measured["ttft_ms"]
                    and (c.point["max_concurrency"] or c.point["request_rate"]) and (cls == "all" or c.gpu.arch == cls)]
            if errs:
                a = sorted(abs(e) for e in errs)
                lines.append(f"| {cls} | ttft_ms (concurrency / rate runs) | {len(a)} | {statistics.median(a):.1%} | "
                             f"{a[min(len(a) - 1, int(0.9 * len(a)))]:.1%} | {statistics.median(errs):+.1%} |")
        return lines, verdicts

    cv_lines, cv_verdicts = table(cv_rows, "Leave-one-source-out cross-validation (train split)")
    test_lines, _ = table(test_rows, "Test split (figures fitted on the whole train split)")
    missed = [(cls, m, n, med) for cls, m, n, med in cv_verdicts if n >= MIN_CLASS and med > CLAIM]
    judged = [(cls, m, n, med) for cls, m, n, med in cv_verdicts if n >= MIN_CLASS]
    # bands: the cross-validated log errors' 10th and 90th percentiles, per metric
    bands = {}
    for m in ("output_tok_s", "tpot_ms", "ttft_ms"):
        r = sorted(math.log(c.measured[m] / pred[m]) for c, pred in cv_rows if c.measured[m])
        lo, hi = r[int(0.1 * (len(r) - 1))], r[int(0.9 * (len(r) - 1))]
        bands[m] = {"low": round(math.exp(min(lo, 0.0)), 3), "high": round(math.exp(max(hi, 0.0)), 3)}

    out = ["# Speed model accuracy", "",
           "Generated by `python benchmarks/speed_accuracy.py`; the data is data/benchmarks/vllm-bench-points.jsonl "
           f"({len(points)} points from {len({p['source_url'] for p in points})} sources; {len(skipped)} on GPUs "
           "without datasheet figures skipped).", "",
           f"Fitted on the whole train split ({len(train)} points): eta_bw = {full.eta_bw:.2f} (achieved fraction of "
           f"peak memory bandwidth), eta_f = {full.eta_f:.2f} (of dense tensor FLOPs; {full.eta_f_ampere:.2f} on "
           "Ampere; routed experts x "
           f"{full.eta_moe:.2f} x w / (w + {full.moe_w_half:.0f}) for an expert w wide on a rank, the most loaded "
           f"expert-parallel rank x {1 + full.ep_imbalance:.2f}; GEMMs that dequantize weight-only checkpoints x "
           f"{full.eta_wq:.2f}), "
           f"t0 = {full.t0 * 1e3:.1f} ms per step, t_seq = {full.t_seq * 1e6:.0f} us per running "
           f"sequence, t_layer = {full.t_layer * 1e6:.0f} us per layer (+{full.t_moe_layer * 1e6:.0f} us per MoE "
           f"layer; +{full.t_eager_layer * 1e6:.0f} us per layer in a step larger than a captured CUDA graph); "
           f"t_first = {full.t_first * 1e3:.0f} ms per request in its TTFT (the serving path outside the GPU's "
           "steps, the median TTFT residual of the runs at a client concurrency or rate).", "",
           f"Claim: median |error| <= {CLAIM:.0%} for output throughput and TPOT in every GPU class with at least "
           f"{MIN_CLASS} points, cross-validated leaving each source out. "
           + ("**Met.**" if not missed else "**Missed**: " + ", ".join(f"{c} {m} {v:.1%}" for c, m, _, v in missed)),
           "", *cv_lines, "", *test_lines, "",
           "Expectation on published results not in this set: about the cross-validated figures for the "
           "architectures and loads the set holds, at concurrency-limited loads; 30-100% off on kinds it lacks or "
           "under-samples: MLA attention (DeepSeek), MoE models whose experts see many more or fewer tokens a step "
           "than the set's (gpt-oss-20b's 32 experts on A100 in the test split), expert parallelism (its rank "
           "imbalance is fitted on one model's four runs), dense bursts on Hopper, and GPU classes with few points "
           "(Ada, Blackwell), where the 90th percentile column is the better guide; the test split above is such "
           "a set. TTFT is reported but not claimed: at rate inf it is mostly queueing, which depends on the "
           "client more than on the GPU.", "",
           "## Points (cross-validated predictions; test split with the full fit)", "",
           "| split | source | model | GPU | layout | workload | tok/s meas / pred | TPOT ms meas / pred |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c, pred in cv_rows + test_rows:
        p, me = c.point, c.measured

        def pair(m, fmt, me=me, pred=pred):
            return (fmt.format(me[m]) if me[m] else "-") + " / " + fmt.format(pred[m])
        lay = f"TP{p['tp']}" + (f" PP{p['pp']}" if p["pp"] > 1 else "") + (" EP" if p["ep"] else "")
        load = f"c={p['max_concurrency']}" if p["max_concurrency"] else f"rate={p['request_rate'] or 'inf'}"
        wl = f"{p['input_len']:.0f}/{p['output_len']:.0f} {load} n={p['num_prompts']}"
        src = p["source_url"].split("/")[-2] + "/" + p["source_url"].split("/")[-1]
        out.append(f"| {p['split']} | {src} | {p['model']} | {p['gpu_count']}x {p['gpu']} | {lay} | {wl} | "
                   f"{pair('output_tok_s', '{:.0f}')} | {pair('tpot_ms', '{:.1f}')} |")
    REPORT.write_text("\n".join(out) + "\n", encoding="utf-8")
    print("\n".join(out[:out.index("## Points (cross-validated predictions; test split with the full fit)")]))
    if args.write_calibration:
        CALIBRATION.write_text(
            "# Written by benchmarks/speed_accuracy.py --write-calibration: the speed model's efficiency figures\n"
            "# fitted on the train split of data/benchmarks, and its bands (cross-validated log errors' 10th-90th\n"
            "# percentiles, as multipliers of the prediction).\n"
            "params: {" + ", ".join(f"{k}: {v:.6g}" for k, v in vars(full).items()) + "}\n"
            "bands:\n" + "".join(f"  {m}: {{low: {b['low']}, high: {b['high']}}}\n" for m, b in bands.items()),
            encoding="utf-8")
        print(f"wrote {CALIBRATION.relative_to(ROOT)}")
    if not judged:
        print("speed_accuracy: no GPU class has enough points to judge the claim", file=sys.stderr)
        return 1
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
