"""Random argv through every command (not in CI): exit codes seen, tracebacks, slowest case.

    python scripts/argv_fuzz.py [--cases 10000] [--seed 0] [--known-bad]
    python scripts/argv_fuzz.py --hostile-flags [--commands estimate,plan,review] [--cases 10000] [--seed N]

Uses the generator of tests/test_argv_fuzz.py, in-process through click's CliRunner. Exits 1
when any case ends in a traceback, an exit code other than 0 / 1 / 2, or takes 5 s or more.
--known-bad also feeds the stdin texts that still break code owned elsewhere. --hostile-flags runs --cases
hostile values of vLLM options through each of --commands instead (issue 30): besides the above, a review of a
pod that must be denied as written is a failure when a hostile value appended makes it allowed. --seed (default:
$FUZZ_SEED, else 0) picks the cases; the same seed gives the same cases.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_argv_fuzz import hostile_flag_case, random_argv, run_one  # noqa: E402

LIMIT_S = 5.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_SEED", "0") or 0))
    ap.add_argument("--known-bad", action="store_true")
    ap.add_argument("--hostile-flags", action="store_true")
    ap.add_argument("--commands", default="estimate,plan,review")
    a = ap.parse_args(argv)
    if a.hostile_flags:
        return hostile(a)
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
        if (exc is not None and not isinstance(exc, SystemExit)) or res.exit_code not in (0, 1, 2, 3) \
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


def hostile(a: argparse.Namespace) -> int:
    """--cases hostile option values through each command: exit codes, tracebacks, must-deny objects allowed."""
    tmp = Path(tempfile.mkdtemp(prefix="argv-fuzz-"))
    bad = 0
    for command in a.commands.split(","):
        codes: collections.Counter = collections.Counter()
        failures: list[tuple[int, list[str], str]] = []
        slowest = 0.0
        start = time.perf_counter()
        for i in range(a.cases):
            rng = random.Random(a.seed * 1_000_003 + i)
            args, stdin, must_deny = hostile_flag_case(rng, command)
            t0 = time.perf_counter()
            res = run_one(args, stdin, tmp)
            slowest = max(slowest, time.perf_counter() - t0)
            codes[res.exit_code] += 1
            exc = res.exception
            if (exc is not None and not isinstance(exc, SystemExit)) or res.exit_code not in (0, 1, 2, 3) \
                    or "Traceback" in res.output:
                failures.append((i, args, f"{type(exc).__name__}: {str(exc)[:120]}"))
            elif must_deny and (res.exit_code != 1 or '"allowed": false' not in res.output):
                failures.append((i, args, "a must-deny pod was allowed"))
        print(f"{command}: {a.cases} cases in {time.perf_counter() - start:.1f} s (seed {a.seed}); "
              + ", ".join(f"exit {c}: {n}" for c, n in sorted(codes.items()))
              + f"; failures: {len(failures)}; slowest {slowest:.2f} s")
        for i, args, what in failures[:10]:
            print(f"  case {i}: {[x[:60] for x in args[-6:]]} -> {what}")
        bad += len(failures) + (slowest >= LIMIT_S)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
