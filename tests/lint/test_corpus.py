"""The manifest corpus: each file passes or fails exactly as its `# expect:` line says."""

import re

import pytest

from configurator.lint.engine import Options, evaluate
from configurator.lint.load import load
from configurator.lint.rules import REGISTRY
from tests.conftest import ROOT

CORPUS = ROOT / "tests" / "manifests"
FILES = sorted(CORPUS.glob("*.yaml"))


def _expectations(path):
    head = path.read_text().splitlines()[:3]
    expect = next(line for line in head if line.startswith("# expect:")).split(":", 1)[1].strip()
    args = next((line.split(":", 1)[1].split() for line in head if line.startswith("# args:")), [])
    wanted = set() if expect == "clean" else {tuple(x.strip().split("@")) for x in expect.split(",")}
    return wanted, args


def _run(path, args):
    opts = Options(workload=args[args.index("--workload") + 1] if "--workload" in args else None)
    docs, problems = load([str(path)])
    return evaluate(docs, problems, opts)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_corpus_file(path):
    wanted, args = _expectations(path)
    report = _run(path, args)
    got = {(f.rule, str(f.line)) for f in report.findings}
    assert got == wanted, "\n".join(f"{f.severity} {f.rule}@{f.line}: {f.message}" for f in report.findings)


def test_every_rule_has_a_failing_and_a_passing_case():
    failing = set()
    for path in FILES:
        wanted, _ = _expectations(path)
        failing |= {rule for rule, _line in wanted}
    from tests.lint import test_rules

    failing |= test_rules.FAILING
    # rules whose failing case needs another module's output, each with its own test in test_rules.py:
    # parse-error (test_check_cli.py's bad files), unknown-flag (flags.parse_args' unknown options),
    # not-understood (extract_all's objects), memory-at-risk (estimate's at-risk verdict),
    # template-not-rendered (lint/render.py's notes: tests/lint/test_rules.py and the formats' render tests),
    # runtime-template-unbound (the KServe format's runtime templates: tests/lint/test_kserve_binding.py),
    # read-by-server (a file read by another file's server: tests/lint/test_read_by_server.py),
    # internal-error (an exception while evaluating: tests/test_fail_closed.py raises one on purpose),
    # accelerator-not-modelled, value-assumed, context-below-workload (a TPU pod, a compose ${VAR:-default}, a
    # --workload long-context: test_discovery.py), gpu-choice-refused (a node affinity allowing two GPU types:
    # test_rules.py's test_a_refusal_only_on_the_smallest_allowed_gpu_is_a_warning_and_on_all_an_error),
    # config-unbound (a ConfigMap of engine arguments no server reads: tests/lint/test_config_unbound.py)
    failing |= {"gpu-choice-refused", "parse-error", "unknown-flag", "not-understood", "memory-at-risk",
                "template-not-rendered", "runtime-template-unbound", "read-by-server", "internal-error",
                "accelerator-not-modelled", "value-assumed", "context-below-workload", "config-unbound"}
    assert set(REGISTRY) <= failing, set(REGISTRY) - failing
    assert any(_expectations(p)[0] == set() for p in FILES)  # and clean files pass every rule
    assert test_rules.FAILING <= test_rules.PASSING  # each failing case there has a passing neighbour


def test_rules_doc_is_generated():
    from configurator.lint.docs import render_rules_doc

    assert (ROOT / "docs" / "rules.md").read_text() == render_rules_doc(), "run python scripts/gen_rules_doc.py"
    for rid, r in REGISTRY.items():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rid) and r.description and r.remediation
