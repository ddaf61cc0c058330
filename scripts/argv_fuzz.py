"""Random argv through every command (not in CI): exit codes seen, tracebacks, slowest case.

    python scripts/argv_fuzz.py [--cases 10000] [--seed 0] [--known-bad]

Uses the generator of tests/test_argv_fuzz.py, in-process through click's CliRunner. Exits 1
when any case ends in a traceback, an exit code other than 0 / 1 / 2, or takes 5 s or more.
--known-bad also feeds the stdin texts that still break code owned elsewhere.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_argv_fuzz import random_argv, run_one  # noqa: E402

LIMIT_S = 5.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--known-bad", action="store_true")
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="argv-fuzz-"))
    codes: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failures: list[tuple[int, list[str], str]] = []
    slowest = (0.0, [])
    start = time.perf_counter()
    for i in range(a.cases):
        rng = random.Random(a.seed * 1_000_003 + i)
        args, stdin = random_argv(rng, tmp, known_bad=a.known_bad)
        t0 = time.perf_counter()
        res = run_one(args, stdin, tmp)
        dt = time.perf_counter() - t0
        slowest = max(slowest, (dt, args), key=lambda x: x[0])
        codes[args[0]][res.exit_code] += 1
        exc = res.exception
        if (exc is not None and not isinstance(exc, SystemExit)) or res.exit_code not in (0, 1, 2) \
                or "Traceback" in res.output:
            failures.append((i, args, f"{type(exc).__name__}: {str(exc)[:120]}"))
    total = time.perf_counter() - start
    print(f"{a.cases} cases in {total:.1f} s")
    for cmd in sorted(codes):
        print(f"  {cmd:<10} " + ", ".join(f"exit {c}: {n}" for c, n in sorted(codes[cmd].items())))
    print(f"tracebacks / bad exit codes: {len(failures)}")
    for i, args, what in failures[:20]:
        print(f"  case {i}: {args[:12]} -> {what}")
    print(f"slowest case: {slowest[0]:.2f} s: {slowest[1][:12]}")
    return 1 if failures or slowest[0] >= LIMIT_S else 0


if __name__ == "__main__":
    sys.exit(main())
