"""Cold-start time of `vllm-configurator estimate`, next to `python -c pass` (the floor).

Usage: python benchmarks/cold_start.py [--runs 15]
Each run is a fresh process; prints the median and the ratio to the baseline measured in the
same run.
"""

from __future__ import annotations

import argparse
import sys

from _timing import median_process as _time
from _timing import tool_command


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    tool = tool_command()
    base = _time([sys.executable, "-c", "pass"], a.runs)
    cases = {
        "estimate (text)": [*tool, "estimate", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "a100-80gb"],
        "estimate (json)": [*tool, "estimate", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "a100-80gb",
                            "--format", "json"],
        "estimate hybrid": [*tool, "estimate", "--model", "Qwen/Qwen3.6-27B-FP8", "--gpu", "h100-nvl",
                            "--kv-cache-dtype", "fp8", "--max-model-len", "131072"],
    }
    print(f"baseline python -c pass: {base * 1000:.0f} ms (median of {a.runs})")
    for name, cmd in cases.items():
        t = _time(cmd, a.runs)
        print(f"{name:<18} {t * 1000:6.0f} ms  = {t / base:4.1f}x baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
