"""Cold-start time of `vllm-configurator estimate`, next to `python -c pass` (the floor).

Usage: python benchmarks/cold_start.py [--runs 15] [--target-cpu-s 0.25]
Each run is a fresh process; prints the median wall and CPU time and the ratio to the baseline measured
in the same run. The package's bytecode is compiled first, as `pip install` does: under
PYTHONDONTWRITEBYTECODE (or in a read-only checkout) every run would otherwise time the compiler.

Target: every case within --target-cpu-s CPU seconds (default 0.25 s, issue 29) at the reference machine's
speed: CPU time is checked because a busy machine stretches wall time, and it is scaled by the machine's speed
measured beside each case (_timing.time_process_at_reference: each run paired with a fixed standard-library
import, the median of the pairs' CPU ratios times that import's CPU on the reference machine) because a shared
virtual machine's CPU seconds stretch with the host's load too. The raw CPU, the speed factor and the scaled CPU
are all printed; --raw decides on the raw CPU instead. Each case must also answer as it should (exit code, the
verdict on stdout): a crash or a changed verdict exits 1 before any figure counts. Exits 1 when a case misses
the target or fails.

Catalog cost (issue 11: loading the offline catalog must not slow the cold start by more than 10%): each
case also runs with the catalog parts (profiles/models/catalog/*.json) hidden, the tool as it was before
the catalog, and the two are timed in alternation (A, B, A, B, ...) so that load on a shared machine
hits both alike; the claim is the ratio of their median CPU times, <= --max-catalog-ratio (1.10).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile

from _timing import BenchmarkFailure, _children_cpu, time_process, time_process_at_reference, tool_command

# the CLI with the catalog parts hidden (an empty folder): every built-in profile still resolves
_NO_PARTS = ("import sys; from pathlib import Path; from configurator.model import catalog; "
             "empty = Path(sys.argv.pop(1)); catalog.catalog_dir = lambda: empty; "
             "from configurator.cli.main import main; "
             "sys.argv[0] = 'vllm-configurator'; main()")
_WITH_PARTS = ("import sys; sys.argv.pop(1); from configurator.cli.main import main; "
               "sys.argv[0] = 'vllm-configurator'; main()")


def catalog_ratio(args: list[str], code: int, runs: int) -> tuple[float, float]:
    """(median CPU s with the catalog parts, without them), timed in alternation, same launch path."""
    with tempfile.TemporaryDirectory() as empty:
        cpu: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(runs):
            for key, prog in (("with", _WITH_PARTS), ("without", _NO_PARTS)):
                c0 = _children_cpu()
                res = subprocess.run([sys.executable, "-c", prog, empty, *args], capture_output=True, text=True,
                                     check=False)
                cpu[key].append(_children_cpu() - c0)
                if res.returncode != code:
                    raise BenchmarkFailure(f"{key} the catalog parts: exit {res.returncode}: {res.stderr[-300:]}")
    return statistics.median(cpu["with"]), statistics.median(cpu["without"])

# (command after the tool, exit code, text its output must hold)
CASES = {
    "estimate (text)": (["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "a100-80gb"], 0,
                        "FITS: vLLM should start"),
    "estimate (json)": (["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "a100-80gb", "--format", "json"],
                        0, '"fits": true'),
    "estimate hybrid": (["estimate", "--model", "Qwen/Qwen3.6-27B-FP8", "--gpu", "h100-nvl", "--kv-cache-dtype", "fp8",
                         "--max-model-len", "131072", "--max-num-seqs", "64"], 0, "Gated DeltaNet"),
    "estimate refused": (["estimate", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4"], 1,
                         "REFUSED: vLLM would not start"),
    # a model of a catalog part (not a built-in profile): the parts are read (timed against the target only)
    "estimate catalog": (["estimate", "--model", "meta-llama/Llama-3.2-1B-Instruct", "--gpu", "l4"], 0,
                         "FITS: vLLM should start"),
}
PART_ONLY = {"estimate catalog"}  # cases that need the parts: no without-parts run to compare with


def compile_bytecode() -> None:
    """The package's .pyc files, written as `pip install` writes them (a user's cold start reads them)."""
    import compileall
    from pathlib import Path

    import configurator

    compileall.compile_dir(str(Path(configurator.__file__).parent), quiet=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--target-cpu-s", type=float, default=0.25)
    ap.add_argument("--max-catalog-ratio", type=float, default=1.10)
    ap.add_argument("--raw", action="store_true", help="decide on the raw CPU seconds, not scaled to the reference "
                    "machine's speed")
    a = ap.parse_args(argv)
    tool = tool_command()
    compile_bytecode()
    base = time_process([sys.executable, "-c", "pass"], a.runs)
    print(f"baseline python -c pass: {base.wall_s * 1000:.0f} ms wall, {base.cpu_s * 1000:.0f} ms CPU "
          f"(median of {a.runs})")
    failed = []
    for name, (args, code, text) in CASES.items():
        try:
            t, speed, at_ref = time_process_at_reference([*tool, *args], a.runs, expect_code=code, expect_out=text)
        except BenchmarkFailure as e:
            print(f"{name:<18} FAILED: {e}")
            failed.append(name)
            continue
        scaled = t.cpu_s if a.raw else at_ref
        miss = scaled > a.target_cpu_s
        print(f"{name:<18} {t.wall_s * 1000:6.0f} ms wall = {t.wall_s / base.wall_s:4.1f}x baseline, "
              f"{t.cpu_s * 1000:6.0f} ms CPU; machine {speed.factor:.2f}x the reference ({speed.cpu_s * 1000:.0f} / "
              f"{speed.reference_s * 1000:.0f} ms gauge): {at_ref * 1000:6.0f} ms CPU at the "
              f"reference speed (target < {a.target_cpu_s * 1000:.0f} ms{', decided on raw CPU' if a.raw else ''})"
              f"{'  MISSED' if miss else ''}")
        if miss:
            failed.append(name)
    print(f"catalog cost: CPU with the catalog parts / without them (median of {a.runs}, alternated; "
          f"claim <= {a.max_catalog_ratio:.2f})")
    for name, (args, code, _text) in CASES.items():
        if name in PART_ONLY:
            continue
        try:
            with_, without = catalog_ratio(args, code, a.runs)
        except BenchmarkFailure as e:
            print(f"{name:<18} FAILED: {e}")
            failed.append(f"{name} (catalog)")
            continue
        ratio = with_ / without
        miss = ratio > a.max_catalog_ratio
        print(f"{name:<18} {with_ * 1000:6.0f} ms / {without * 1000:6.0f} ms = {ratio:.3f}{'  MISSED' if miss else ''}")
        if miss:
            failed.append(f"{name} (catalog)")
    if failed:
        print("FAILED: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
