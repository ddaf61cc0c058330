"""`review`: AdmissionReviews or manifests on stdin (multi-document YAML too), the webhook's answer."""

import copy
import json
import random

import pytest
import yaml
from click.testing import CliRunner

from configurator.cli.main import cli
from tests.conftest import ROOT

CORPUS = ROOT / "tests" / "manifests"


def _review(stdin, *args):
    res = CliRunner().invoke(cli, ["review", *args], input=stdin, catch_exceptions=False)
    return res


def _text(name):
    return (CORPUS / name).read_text()


def test_multi_document_yaml_reviews_each_object():
    stdin = _text("docs-example-too-long.yaml") + "\n---\n" + _text("docs-example-ok.yaml")
    res = _review(stdin)
    out = json.loads(res.stdout)
    objects = [d for d in yaml.safe_load_all(stdin) if d]
    assert isinstance(out, list) and len(out) == len(objects)
    assert [o["response"]["uid"] for o in out] == [f"manifest-{i}" for i in range(1, len(out) + 1)]
    allowed = [o["response"]["allowed"] for o in out]
    assert False in allowed and True in allowed
    assert res.exit_code == 1


def test_plan_emit_manifest_output_is_reviewed(run_cli):
    plan = run_cli("plan", "--model", "Qwen/Qwen3-0.6B", "--gpu", "l4", "--emit", "manifest")
    assert plan.stdout.count("\n---") >= 1
    res = _review(plan.stdout)
    out = json.loads(res.stdout)
    assert isinstance(out, list) and all(o["response"]["allowed"] for o in out) and res.exit_code == 0


def test_single_object_and_admission_review():
    res = _review(_text("docs-example-ok.yaml"))
    assert json.loads(res.stdout)["response"]["uid"] == "manifest" and res.exit_code == 0
    obj = next(d for d in yaml.safe_load_all(_text("over-limit.yaml")) if d)
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "x1", "operation": "CREATE", "object": obj}}
    res = _review(json.dumps(body))
    assert json.loads(res.stdout)["response"]["allowed"] is False and res.exit_code == 1
    res = _review(json.dumps(body), "--on-error", "warn")
    assert json.loads(res.stdout)["response"]["allowed"] is True and res.exit_code == 0


@pytest.mark.parametrize("stdin, says", [
    ("", "neither"), ("a: &a [*a]\n", "alias"), ("a: " + "[" * 1000 + "]" * 1000, "standard input"),
    ("- 1\n- 2\n", "document 1"), ("x: [\n", "not valid YAML"), ("\x00\x01", "binary"),
    ('{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}', "uid"),
])
def test_bad_input_is_one_line_and_exit_2(stdin, says):
    res = _review(stdin)
    assert res.exit_code == 2 and says in res.output and "Traceback" not in res.output


def test_an_object_that_cannot_be_checked_is_denied_unless_told_otherwise():
    pod = "kind: Pod\nmetadata: true\nspec: {containers: [{name: v, image: vllm/vllm-openai}]}\n"
    res = _review(pod)
    assert res.exit_code == 1 and json.loads(res.stdout)["response"]["status"]["code"] == 400
    res = _review(pod, "--on-failure", "allow-with-warning")
    assert res.exit_code == 0 and "not applied" in json.loads(res.stdout)["response"]["warnings"][0]


HOSTILE = [None, [], {}, "", 0, -1, 10**30, 1e308, float("inf"), float("nan"), True, "x" * 300, "auto",
           [None], [{}], {"a": None}, ["vllm", "serve", None], "/bin/sh", "$(FOO)", "--max-model-len"]


def _mutate(rng, doc):
    d = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        node, path = d, []
        while isinstance(node, (dict, list)) and node and rng.random() < 0.8:
            key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
            path.append((node, key))
            node = node[key]
        if path:
            parent, key = path[-1]
            parent[key] = copy.deepcopy(rng.choice(HOSTILE))
    return d


def test_seeded_fuzz_never_tracebacks():
    rng = random.Random(20261201)
    seeds = [d for p in sorted(CORPUS.glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]
    runner = CliRunner()
    for _ in range(600):
        text = yaml.safe_dump(_mutate(rng, rng.choice(seeds)))
        res = runner.invoke(cli, ["review"], input=text)
        assert res.exception is None or isinstance(res.exception, SystemExit), (text, res.exception)
        assert res.exit_code in (0, 1, 2), text
