"""One verdict on a fuzzed set too: objects of tests/manifests mutated by scripts/fuzz_check.py's mutator
(hostile values at random paths) get from the webhook's `assess` what `check`'s evaluation says of them:
never an object `check` errors on that the webhook allows. FUZZ_SEED (printed by CI, unset: 0) picks the
mutations, so CI tries new ones each run and a failure replays with the same seed."""

from __future__ import annotations

import copy
import importlib.util
import os
import random

import pytest
import yaml

from configurator.admission.review import assess
from configurator.lint.engine import Options, evaluate
from configurator.lint.render import load_paths
from tests.conftest import ROOT

SEED = int(os.environ.get("FUZZ_SEED", "0") or 0)
CASES = 300


def _mutator():
    spec = importlib.util.spec_from_file_location("fuzz_check", ROOT / "scripts" / "fuzz_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.mutate


def _seeds() -> list[dict]:
    out = []
    for p in sorted((ROOT / "tests" / "manifests").glob("*.yaml")):
        try:
            docs = yaml.safe_load_all(p.read_text())
            out += [d for d in docs if isinstance(d, dict) and isinstance(d.get("kind"), str)]
        except yaml.YAMLError:
            continue
    return out


def _cases() -> list[dict]:
    rng, mutate, seeds = random.Random(SEED * 7919 + 1), _mutator(), _seeds()
    assert seeds, "no seed objects in tests/manifests"
    out = []
    for _ in range(CASES):
        d = mutate(rng, rng.choice(seeds))
        if isinstance(d, dict) and isinstance(d.get("kind"), str):
            out.append(d)
    return out


@pytest.mark.parametrize("chunk", range(3))
def test_no_fuzzed_object_that_check_errors_on_is_allowed_by_the_webhook(chunk, tmp_path):
    cases = _cases()[chunk::3]
    assert cases
    disagree = []
    for i, obj in enumerate(cases):
        f = tmp_path / f"fuzz-{i}.yaml"
        try:
            f.write_text(yaml.safe_dump(obj, allow_unicode=True))
        except yaml.YAMLError:
            continue  # not writable as YAML (the mutator's odd keys): nothing a user could commit
        docs, problems = load_paths([str(f)])
        report = evaluate(docs, problems, Options())
        errors = sorted({f.rule for f in report.findings if f.severity == "error"})
        # the API server never admits a `kind: List`: kubectl sends its items one by one, and so does this
        items = obj.get("items") if obj.get("kind") == "List" and isinstance(obj.get("items"), list) else [obj]
        if not all(isinstance(o, dict) and isinstance(o.get("kind"), str) for o in items):
            continue  # an item without a kind: kubectl refuses the List, nothing reaches admission
        verdicts = [assess(copy.deepcopy(o), Options()) for o in items]
        if errors and all(v.allowed for v in verdicts):
            disagree.append((i, errors, [v.message for v in verdicts]))
    assert disagree == [], f"FUZZ_SEED={SEED}: check errors, the webhook allows: {disagree[:5]}"
