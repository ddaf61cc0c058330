"""Seeded structure-aware fuzz of the check pipeline, in-process: mutated manifests from tests/manifests (hostile
values, deletions, wrapping) through load -> extract -> evaluate, and through `review`'s evaluation. No exception
may escape, no server may fail internally, and every file that mentions vLLM is reported (a server or a finding)."""

from __future__ import annotations

import copy
import datetime
import json
import random

import pytest
import yaml

from configurator.lint.engine import Options, _may_deploy, evaluate
from configurator.lint.load import parse_text
from tests.conftest import ROOT

CASES = 2500
HOSTILE = [None, [], {}, "", 0, -1, 2**63, 10**30, 10**400, 1e308, float("inf"), float("nan"), True, "x" * 300,
           "nan", "inf", "-1", "1e308", "99999999999999999999999", "{{ .Values.x }}", "$(FOO)", "vllm serve",
           "--max-model-len", "auto", "\u202e", datetime.date(2001, 12, 14), [None], [[]], [{}], {"a": None}, {1: 2},
           ["vllm", "serve", None], ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "1e308"],
           ["sh", "-c", "vllm serve x --max-model-len '"], "Qwen/Qwen3-8B", "NVIDIA-H100-80GB-HBM3", 3.5, "1Gi",
           "/bin/sh", "two", [2], "2001-12-14", {"a": 1}]


def _seeds() -> list[dict]:
    out = []
    for p in sorted((ROOT / "tests" / "manifests").glob("*.yaml")):
        out += [d for d in yaml.safe_load_all(p.read_text()) if isinstance(d, dict)]
    return out


def _paths(node, prefix=()):
    stack = [(node, prefix)]
    while stack:
        v, p = stack.pop()
        yield p
        if isinstance(v, dict):
            stack += [(c, (*p, k)) for k, c in v.items()]
        elif isinstance(v, list):
            stack += [(c, (*p, i)) for i, c in enumerate(v)]


def _mutate(rng: random.Random, doc: dict) -> dict:
    d = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        ps = [p for p in _paths(d) if p]
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


def _text(d: dict) -> str:
    try:
        return yaml.dump(d, allow_unicode=True)
    except (ValueError, OverflowError, yaml.YAMLError):
        return json.dumps(d, default=str)


@pytest.mark.parametrize("seed", [1, 2])
def test_mutated_manifests_never_escape_and_are_always_reported(seed):
    rng = random.Random(seed)
    seeds = _seeds()
    unreported, internal = [], []
    for i in range(CASES // 2):
        text = _text(_mutate(rng, rng.choice(seeds)))
        name = f"m{i:05d}.yaml"
        docs, problems = parse_text(text, name)
        report = evaluate(docs, problems, Options())  # an exception here fails the test with its traceback
        # a file that names vLLM is never passed in silence, unless it cannot deploy it (issue 26: a Service, a
        # ConfigMap of settings, a kind-less document with no vLLM command, image or engine arguments)
        if "vllm" in text.lower() and any(_may_deploy(d.data, False) for d in docs) and not report.servers \
                and not report.findings:
            unreported.append(text)
        internal += [f.message for f in report.findings if "internal error" in f.message]
    assert not unreported, unreported[:3]
    assert not internal, internal[:3]


def test_review_path_never_escapes():
    """`review` / the webhook evaluate one object as `check` does (configurator/admission/review.py)."""
    from configurator.admission.review import verdict_for

    rng = random.Random(3)
    seeds = _seeds()
    for _ in range(300):
        obj = yaml.safe_load(_text(_mutate(rng, rng.choice(seeds))))
        if isinstance(obj, dict) and isinstance(obj.get("metadata", {}), dict | None):
            verdict_for(obj, Options())
