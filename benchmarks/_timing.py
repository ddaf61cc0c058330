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
import sys
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

    exe = shutil.which("vllm-configurator")
    return [exe] if exe else [sys.executable, "-m", "configurator.cli.main"]


# The machine's speed, measured in the same run: a fresh interpreter importing a fixed set of standard-library
# modules (unmarshalling their bytecode and running their module code: the kind of work a cold start is). On a
# shared virtual machine CPU seconds grow with the host's load too: this project's 2-core machine ran the same
# `python -c pass` in 10-12 ms CPU one hour and 16-17 ms the next, and a cold start 245-350 ms within minutes,
# every figure with it. Timed in alternation with the measured command (gauge, command, gauge, command, ...), the
# median of the per-pair ratios moved 2.9-3.0 where the command's own median moved 245-309 ms (5 rounds of 11).
# A target in CPU seconds is then decided on that ratio times the gauge's CPU on the reference machine, and the
# raw figures are printed beside it.
GAUGE_CMD = [sys.executable, "-c", "import json, email.message, argparse, dataclasses, typing, decimal, logging, "
             "pathlib, inspect, ast, ipaddress, zipfile, tarfile, csv, socket, urllib.request"]
# the gauge's CPU seconds on the reference machine: the 2-core one issue 29 set its targets on, at the speed of its
# figures there ("0.30 s of CPU, 26x `python -c pass`": `python -c pass` at 11.5 ms). Measured 2026-12-06 on that
# machine in alternation with `python -c pass`: gauge / pass 6.9-7.4 (medians of 21 pairs, 4 rounds), so
# 11.5 ms x 7.1
GAUGE_REFERENCE_CPU_S = 0.082


@dataclass(frozen=True)
class Speed:
    cpu_s: float  # the gauge's median CPU seconds now
    reference_s: float = GAUGE_REFERENCE_CPU_S

    @property
    def factor(self) -> float:
        """How much slower than the reference this machine runs now (< 1: faster)."""
        return self.cpu_s / self.reference_s


def machine_speed(runs: int) -> Speed:
    return Speed(time_process(GAUGE_CMD, runs).cpu_s)


def time_process_at_reference(cmd: list[str], runs: int, **expect) -> tuple[Timing, Speed, float]:
    """`cmd` timed as time_process does, in alternation with the speed gauge: (its Timing, the gauge's Speed, its
    CPU seconds at the reference machine's speed: the median of the per-pair CPU ratios x the gauge's reference)."""
    gauge, timed, ratios = [], [], []
    for _ in range(runs):
        g = time_process(GAUGE_CMD, 1).cpu_s
        t = time_process(cmd, 1, **expect)
        gauge.append(g)
        timed.append(t)
        ratios.append(t.cpu_s / max(g, 1e-9))
    timing = Timing(statistics.median(t.wall_s for t in timed), statistics.median(t.cpu_s for t in timed))
    return timing, Speed(statistics.median(gauge)), statistics.median(ratios) * GAUGE_REFERENCE_CPU_S
