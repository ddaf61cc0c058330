"""Timing helpers shared by the benchmarks: the median wall time of a fresh process or a call."""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable


def median_call(fn: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def median_process(cmd: list[str], runs: int) -> float:
    """Median seconds of `cmd` run as a fresh process, output discarded."""
    return median_call(lambda: subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                              check=False), runs)


def tool_command() -> list[str]:
    """How to run the CLI as a user would: the installed script, else the module."""
    import shutil
    import sys

    exe = shutil.which("vllm-configurator")
    return [exe] if exe else [sys.executable, "-m", "configurator.cli.main"]
