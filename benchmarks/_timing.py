"""Timing helpers shared by the benchmarks: the median wall and CPU time of a fresh process or a call.

Targets are checked on CPU time (user + system seconds of the process, or of the call): on a machine
shared with other jobs the wall time grows with the queue for the cores, the CPU time barely does. Both
are printed. A fresh process must also exit as expected and print what it should: a crash is fast, and
must not pass for speed.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    wall_s: float  # median wall-clock seconds
    cpu_s: float  # median CPU seconds (user + system)


def median_call(fn: Callable[[], object], runs: int) -> float:
    """Median wall seconds of fn() (kept for callers that want only that)."""
    return time_call(fn, runs).wall_s


def time_call(fn: Callable[[], object], runs: int) -> Timing:
    walls, cpus = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return Timing(statistics.median(walls), statistics.median(cpus))


class BenchmarkFailure(Exception):
    """The measured thing did not do its job (a crash, a wrong exit code, missing output)."""


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def time_process(cmd: list[str], runs: int, *, expect_code: int = 0, expect_out: str | None = None,
                 stdin: str | None = None) -> Timing:
    """Median wall and CPU seconds of `cmd` as a fresh process. Every run must exit with expect_code and
    print expect_out on stdout (when given); otherwise BenchmarkFailure with the process's own words."""
    walls, cpus = [], []
    for _ in range(runs):
        c0, t0 = _children_cpu(), time.perf_counter()
        res = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=False)
        walls.append(time.perf_counter() - t0)
        cpus.append(_children_cpu() - c0)
        if res.returncode != expect_code or (expect_out is not None and expect_out not in res.stdout):
            tail = (res.stderr or res.stdout).strip().splitlines()[-3:]
            raise BenchmarkFailure(f"{' '.join(cmd[-6:])}: exit {res.returncode} (expected {expect_code})"
                                   + (f", {expect_out!r} not in its output" if expect_out is not None
                                      and expect_out not in res.stdout else "") + (": " + " | ".join(tail) if tail
                                                                                  else ""))
    return Timing(statistics.median(walls), statistics.median(cpus))


def median_process(cmd: list[str], runs: int) -> float:
    """Median wall seconds of `cmd` run as a fresh process, output discarded (its exit code is the caller's
    to check: prefer time_process, which checks it)."""
    return median_call(lambda: subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                              check=False), runs)


def tool_command() -> list[str]:
    """How to run the CLI as a user would: the installed script, else the module."""
    import shutil
    import sys

    exe = shutil.which("vllm-configurator")
    return [exe] if exe else [sys.executable, "-m", "configurator.cli.main"]
