"""Every artifact `plan` emits passes `check` with no error or warning; a broken chart value is found
at its line."""

import json

import pytest

from tests.emit_support import PLANS, plan_for


@pytest.mark.parametrize("name", sorted(PLANS))
@pytest.mark.parametrize("emit", ["helm", "manifest", "production-stack"])
def test_emitted_artifacts_pass_check(run_cli, tmp_path, name, emit):
    p = plan_for(name)
    args = ["plan", "--model", p.model, "--gpu", PLANS[name]["gpu"], "--workload", "chat",
            "--concurrency", str(PLANS[name]["workload"].concurrency), "--emit", emit, "-o", str(tmp_path / "out.yaml")]
    for key, flag in (("gpus", "--gpus"), ("tensor_parallel_size", "-tp"), ("pipeline_parallel_size", "-pp"),
                      ("quantization", "-q")):
        if PLANS[name].get(key):
            args += [flag, str(PLANS[name][key])]
    res = run_cli(*args)
    if emit == "production-stack" and p.gpus > 8:
        assert res.exit_code == 2  # production-stack spans nodes through raySpec, which is not emitted
        return
    assert res.exit_code == 0, res.stderr
    report = json.loads(run_cli("check", str(tmp_path / "out.yaml"), "--format", "json").stdout)
    assert report["servers"] and all(s["verdict"] == "fits" for s in report["servers"]), report["servers"]
    assert [f for f in report["findings"] if f["severity"] != "info"] == []


def test_a_chart_value_that_does_not_fit_is_found_at_its_line(run_cli, tmp_path):
    out = tmp_path / "values.yaml"
    run_cli("plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4", "--concurrency", "8",
            "--emit", "helm", "-o", str(out))
    text = out.read_text()
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line.strip().startswith("maxModelLen:"))
    lines[i] = "  maxModelLen: 131072"
    i2 = next(n for n, line in enumerate(lines) if line.strip().startswith("kvCacheDtype:"))
    lines[i2] = "  kvCacheDtype: auto"
    out.write_text("\n".join(lines) + "\n")
    report = json.loads(run_cli("check", str(out), "--format", "json").stdout)
    hit = next(f for f in report["findings"] if f["rule"] == "kv-cache-too-small")
    assert hit["line"] == i + 1
