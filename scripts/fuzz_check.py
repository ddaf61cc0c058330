#!/usr/bin/env python3
"""Black-box structure-aware fuzz of `check` and `review`, seeded from a folder of manifests.

Usage: fuzz_check.py VC SEEDS_DIR N [SEED]   (SEEDS_DIR: any folder of manifests, e.g. tests/manifests)
Writes N mutated manifests into a temporary folder, runs `check --format json` once over the folder (it
must finish with exit 0 or 1, print JSON, no traceback, and mention every file in a server or a finding),
then `review` on a sample of 100 of them through stdin (exit 0/1/2, no traceback, within 10 s each).
Prints one summary line: tracebacks, aborted runs, unreported files, hangs. Exit 0 when all are zero.

CI (.ci/run) runs it with a new seed each run (FUZZ_SEED, printed): 300 mutated manifests of tests/manifests.
"""
import contextlib
import copy
import datetime
import glob
import json
import os
import random
import subprocess
import sys
import tempfile

import yaml

HOSTILE = [None, [], {}, "", 0, -1, 2**63, 10**30, 10**400, 1e308, float("inf"), float("nan"), True, "x" * 300,
           "nan", "inf", "-1", "1e308", "99999999999999999999999", "{{ .Values.x }}", "$(FOO)", "vllm serve",
           "--max-model-len", "auto", "\u202e", datetime.date(2001, 12, 14), [None], [[]], [{}], {"a": None}, {1: 2},
           ["vllm", "serve", None], ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "1e308"],
           ["sh", "-c", "vllm serve x --max-model-len '"], "Qwen/Qwen3-8B", "NVIDIA-H100-80GB-HBM3", 3.5, "1Gi",
           "/bin/sh", "two", [2], "2001-12-14", {"a": 1}]


def paths(node, prefix=()):
    """Every path in a document, without recursion (a mutated document can be deep)."""
    stack = [(node, prefix)]
    while stack:
        v, p = stack.pop()
        yield p
        if isinstance(v, dict):
            stack += [(c, (*p, k)) for k, c in v.items()]
        elif isinstance(v, list):
            stack += [(c, (*p, i)) for i, c in enumerate(v)]


def mutate(rng, doc):
    d = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        ps = [p for p in paths(d) if p]
        if not ps:
            break
        p = rng.choice(ps)
        cur = d
        for k in p[:-1]:
            cur = cur[k]
        r = rng.random()
        if r < 0.7:
            cur[p[-1]] = copy.deepcopy(rng.choice(HOSTILE))
        elif r < 0.85 and isinstance(cur, dict):
            del cur[p[-1]]
        else:
            cur[p[-1]] = [cur[p[-1]]] if rng.random() < 0.5 else {"x": cur[p[-1]]}
    return d


def dump(d) -> str:
    """The mutated document as YAML, else as JSON (a value YAML cannot write)."""
    try:
        return yaml.dump(d, allow_unicode=True)
    except (ValueError, OverflowError, yaml.YAMLError):
        return json.dumps(d, default=str)


def _may_deploy(text: str) -> bool:
    """Whether a document of the file could deploy vLLM, by the project's rule (found beside this script)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from configurator.lint.engine import _may_deploy as may_deploy

    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return True  # not YAML as written: check must say so
    return any(may_deploy(d, False) for d in docs if d is not None) if docs else False


def main():
    vc, seeds_dir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 7)
    seeds = []
    for p in sorted(glob.glob(os.path.join(seeds_dir, "*.yaml"))):
        with open(p) as fh, contextlib.suppress(yaml.YAMLError):
            seeds += [d for d in yaml.safe_load_all(fh) if isinstance(d, dict)]
    tmp = tempfile.mkdtemp(prefix="fuzz-")
    files = []
    for i in range(n):
        d = mutate(rng, rng.choice(seeds))
        path = os.path.join(tmp, f"m{i:05d}.yaml")
        text = dump(d)
        with open(path, "w") as fh:
            fh.write(text)
        files.append(path)
    tracebacks = aborted = unreported = hangs = 0
    try:
        p = subprocess.run([vc, "check", "--format", "json", tmp], capture_output=True, text=True, timeout=600,
                           env={**os.environ, "HF_HUB_OFFLINE": "1"})
        if "Traceback" in p.stderr:
            tracebacks += 1
        if p.returncode not in (0, 1):
            aborted += 1
        try:
            rep = json.loads(p.stdout)
            named = (rep.get("servers") or []) + (rep.get("findings") or [])
            seen = {os.path.basename(str(x.get("file"))) for x in named}
            # a file with no vLLM server in it may rightly have nothing to say; count only files that name vLLM
            # and could deploy it (issue 26: a Service, a ConfigMap no server reads or a document without a kind
            # that holds no vLLM command, image or engine arguments only names it; the project's own rule,
            # configurator.lint.engine._may_deploy, as tests/lint/test_fuzz.py applies it)
            for f in files:
                with open(f) as fh:
                    text = fh.read()
                if os.path.basename(f) not in seen and "vllm" in text.lower() and _may_deploy(text):
                    unreported += 1
        except json.JSONDecodeError:
            aborted += 1
    except subprocess.TimeoutExpired:
        hangs += 1
    r_tb = r_bad = 0
    for f in rng.sample(files, min(100, len(files))):
        try:
            with open(f) as fh:
                p = subprocess.run([vc, "review"], stdin=fh, capture_output=True, text=True, timeout=10,
                                   env={**os.environ, "HF_HUB_OFFLINE": "1"})
            r_tb += "Traceback" in p.stderr
            r_bad += p.returncode not in (0, 1, 2)
        except subprocess.TimeoutExpired:
            hangs += 1
    print(f"fuzz {n} manifests: check tracebacks {tracebacks}, aborted {aborted}, unreported files "
          f"{unreported}; review (100) tracebacks {r_tb}, bad exits {r_bad}; hangs {hangs}")
    sys.exit(0 if tracebacks + aborted + unreported + r_tb + r_bad + hangs == 0 else 1)


if __name__ == "__main__":
    main()
