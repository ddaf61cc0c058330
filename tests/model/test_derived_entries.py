"""Derived catalog entries (no copy of the published config.json was found; config_source says which key came
from where) say so wherever they are used: a warning on estimate, `inferred` on the resolved model (check's
model-inferred), `"derived": true` in `models --format json`. A published copy says nothing of the kind."""

from __future__ import annotations

import json

from configurator.model import catalog
from configurator.model.resolve import resolve

DERIVED = "Qwen/Qwen2.5-VL-72B-Instruct"  # part G
PUBLISHED_COPY = "Qwen/Qwen2.5-VL-7B-Instruct"


def test_every_entry_whose_source_says_derived_is_flagged_and_no_other():
    # every derived entry so far also opens its config_source with "Derived entry:" / "Derived profile:", so
    # the flag and the text must agree entry by entry
    for e in catalog.entries():
        assert e.derived == e.config_source.startswith("Derived "), e.hf_id
        assert (e.derived_note is not None) == e.derived
    assert sum(e.derived for e in catalog.entries()) >= 3 and not catalog.find(PUBLISHED_COPY).derived


def test_the_72b_entry_is_derived_with_its_sources():
    e = catalog.find(DERIVED)
    assert e.derived and e.part == "families-g"
    for source in ("Qwen2.5-VL-72B-Instruct-AWQ/blob/666b8f5f61eebf73e8deff3e33a0f8934038d69f", "26201136591",
                   "mlx-community/Qwen2.5-VL-72B-Instruct-bf16"):
        assert source in e.config_source


def test_resolving_a_derived_entry_warns_and_marks_the_model():
    r = resolve(DERIVED)
    assert r.how == "catalog" and r.spec.inferred and "derived" in r.spec.inferred
    assert r.spec.inferred in r.warnings and "--model-config" in r.spec.inferred
    plain = resolve(PUBLISHED_COPY)
    assert plain.spec.inferred is None and not plain.warnings


def test_a_derivative_of_a_derived_entry_says_both():
    r = resolve("Qwen/Qwen2.5-VL-72B-Instruct-AWQ")
    assert r.how == "derivative"
    assert "geometry of Qwen/Qwen2.5-VL-72B-Instruct" in r.warnings[0] and "itself derived" in r.warnings[0]
    assert r.spec.quant.method == "awq"


def test_estimate_prints_the_warning(run_cli):
    res = run_cli("estimate", "--model", DERIVED, "--gpu", "h100-80gb", "--tensor-parallel-size", "4",
                  "--max-model-len", "32768")
    assert res.exit_code == 0
    assert "warning: Qwen/Qwen2.5-VL-72B-Instruct: the offline catalog's config is derived" in res.stderr


def test_models_json_shows_derived(run_cli):
    rows = {r["id"]: r for r in json.loads(run_cli("models", "qwen2.5-vl", "--format", "json").stdout)["models"]}
    assert rows[DERIVED]["derived"] is True and rows[PUBLISHED_COPY]["derived"] is False


def test_check_reports_model_inferred_for_a_derived_entry():
    from tests.lint.test_rules import ARGS_LINE, deployment, run

    report = run(deployment(["--model", DERIVED, "--tensor-parallel-size", "4", "--max-model-len", "32768"],
                            label="NVIDIA-H100-80GB-HBM3", gpus=4, shm="2Gi"))
    found = [f for f in report.findings if f.rule == "model-inferred"]
    assert len(found) == 1 and found[0].severity == "info" and "derived" in found[0].message
    assert found[0].line == ARGS_LINE  # at the --model flag


def test_models_text_marks_derived_entries(run_cli):
    out = run_cli("models", "qwen2.5-vl").stdout
    assert "Qwen/Qwen2.5-VL-72B-Instruct *" in out and "Qwen/Qwen2.5-VL-7B-Instruct *" not in out
    assert "* derived: no copy of the published config.json was found" in out
    assert "* derived" not in run_cli("models", "llama-2").stdout
