"""Seeded structure-aware fuzz of the check pipeline, in-process: mutated manifests from tests/manifests (hostile
values, deletions, wrapping) through load -> extract -> evaluate, and through `review`'s evaluation. No exception
may escape, no server may fail internally, and every file that mentions vLLM is reported (a server or a finding)."""

from __future__ import annotations

import random

import pytest
import yaml

from configurator.lint.engine import Options, _may_deploy, evaluate
from configurator.lint.load import parse_text
from tests.conftest import ROOT

CASES = 2500


def _fuzz_check():
    """scripts/fuzz_check.py: its mutator and hostile values are the ones this test applies in-process."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fuzz_check", ROOT / "scripts" / "fuzz_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_FUZZ = _fuzz_check()
HOSTILE = _FUZZ.HOSTILE
_mutate, _text = _FUZZ.mutate, _FUZZ.dump


def _seeds() -> list[dict]:
    out = []
    for p in sorted((ROOT / "tests" / "manifests").glob("*.yaml")):
        out += [d for d in yaml.safe_load_all(p.read_text()) if isinstance(d, dict)]
    return out


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
