"""Issue 30, fail closed: an exception while evaluating a server is an `internal-error` error finding (one
line naming its cause) that fails `check` and is denied by the webhook, never an info that lets the server pass."""

from __future__ import annotations

import json

import pytest
import yaml

from configurator.admission.review import review
from configurator.lint import engine
from configurator.lint.engine import Options, evaluate
from configurator.lint.load import parse_text

# must be refused as written: Qwen3-8B's weights leave no KV memory at half an L4
REFUSED = ["--model", "Qwen/Qwen3-8B", "--gpu-memory-utilization", "0.5"]
DEEP = "[" * 5000 + "]" * 5000
HOSTILE = [
    ["--limit-mm-per-prompt", '{"image": 1e400}'],  # OverflowError
    ["--speculative-config", DEEP],  # RecursionError
    ["--eplb-config", DEEP],
]


def pod(args: list[str], annotations: dict | None = None) -> str:
    meta = json.dumps({"name": "p", **({"annotations": annotations} if annotations else {})})
    return f"""apiVersion: v1
kind: Pod
metadata: {meta}
spec:
  nodeSelector: {{nvidia.com/gpu.product: NVIDIA-L4}}
  containers:
    - name: vllm
      image: vllm/vllm-openai:v0.11.0
      command: ["vllm", "serve"]
      args: {json.dumps(args)}
      resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""


def _admission(text: str) -> dict:
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u", "operation": "CREATE", "object": yaml.safe_load(text)}}
    return review(body, Options())["response"]


def _evaluate(text: str):
    docs, problems = parse_text(text, "pod.yaml")
    return evaluate(docs, problems, Options())


def test_the_base_pod_is_refused():
    assert _admission(pod(REFUSED))["allowed"] is False
    assert _evaluate(pod(REFUSED)).worst() == "error"


@pytest.mark.parametrize("extra", HOSTILE, ids=["inf", "deep-speculative", "deep-eplb"])
def test_hostile_value_keeps_a_refused_pod_refused(extra, run_cli, tmp_path):
    text = pod([*REFUSED, *extra])
    resp = _admission(text)
    assert resp["allowed"] is False, resp
    f = tmp_path / "pod.yaml"
    f.write_text(text)
    res = run_cli("check", str(f))
    assert res.exit_code == 1, res.stdout
    report = _evaluate(text)
    assert report.worst() == "error"
    assert not any(x.rule == "not-understood" and "internal error" in x.message for x in report.findings)


def test_any_exception_in_evaluation_is_an_error_that_denies(monkeypatch, run_cli, tmp_path):
    """Whatever raises (here the estimate itself, on a pod that fits), the server fails closed."""
    ok = pod(["--model", "Qwen/Qwen3-0.6B", "--max-model-len", "4096"])
    assert _admission(ok)["allowed"] is True and _evaluate(ok).worst() != "error"

    def boom(*a, **k):
        raise ZeroDivisionError("a fault\nwith a second line")
    monkeypatch.setattr(engine, "_estimate_once", boom)
    report = _evaluate(ok)
    [f] = [x for x in report.findings if x.rule == "internal-error"]
    assert f.severity == "error" and "ZeroDivisionError: a fault with a second line" in f.message
    assert "\n" not in f.message
    # the summary agrees with the findings: one server found, none checked, none "not understood"
    assert (report.summary.servers_found, report.summary.servers_checked, report.summary.not_understood,
            report.summary.errors) == (1, 0, 0, 1)
    resp = _admission(ok)
    assert resp["allowed"] is False and "internal-error" in resp["status"]["message"]
    f_ = tmp_path / "ok.yaml"
    f_.write_text(ok)
    assert run_cli("check", str(f_)).exit_code == 1


def test_an_annotation_cannot_silence_an_internal_error(monkeypatch):
    # a fault while evaluating (the hostile flag values themselves are now refused as invalid-flag before any
    # evaluation: tests/lint/test_shell_args.py), on a pod whose annotations try to silence everything
    def boom(*a, **k):
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(engine, "_estimate_once", boom)
    text = pod(REFUSED, {"vllm-configurator.io/ignore-all": "trust me",
                         "ignore-check.vllm-configurator.io/internal-error": "trust me"})
    report = _evaluate(text)
    assert [f.rule for f in report.findings if f.severity == "error"] == ["internal-error"]
    assert _admission(text)["allowed"] is False


def test_a_failing_extraction_is_an_error_for_its_file_only(monkeypatch):
    """An exception while reading a file's servers: that file gets internal-error, the others are checked."""
    real = engine.extract_all

    def flaky(docs, release=None):
        if any(d.file == "bad.yaml" for d in docs):
            raise RecursionError("deep")
        return real(docs, release)
    monkeypatch.setattr(engine, "extract_all", flaky)
    d1, p1 = parse_text(pod(REFUSED), "good.yaml")
    d2, p2 = parse_text(pod(["--model", "Qwen/Qwen3-0.6B"]), "bad.yaml")
    report = evaluate(d1 + d2, p1 + p2, Options())
    by_file = {(f.file, f.rule) for f in report.findings if f.severity == "error"}
    assert ("bad.yaml", "internal-error") in by_file
    assert any(file == "good.yaml" and rule != "internal-error" for file, rule in by_file)


@pytest.mark.parametrize("command", ["estimate", "check"])
def test_a_fault_outside_the_evaluation_is_one_line_and_never_exit_0(command, monkeypatch, run_cli, tmp_path):
    """Whatever raises in a command (here the estimate, or check's whole evaluation), the CLI says so in one line
    and exits 2: never a traceback, never the exit 0 of a clean run."""
    def boom(*a, **k):
        raise RecursionError("maximum recursion depth exceeded")
    if command == "estimate":
        import configurator.estimate as est

        monkeypatch.setattr(est, "estimate", boom)
        args = ["estimate", "--model", "Qwen/Qwen3-0.6B", "--gpu", "L4"]
    else:
        monkeypatch.setattr(engine, "evaluate", boom)
        f = tmp_path / "ok.yaml"
        f.write_text(pod(["--model", "Qwen/Qwen3-0.6B"]))
        args = ["check", str(f)]
    res = run_cli(*args)
    err = res.stderr.strip()
    assert res.exit_code == 2 and "internal error (RecursionError" in err and len(err.splitlines()) == 1, err


def test_hostile_values_on_every_option_never_admit_a_refused_pod():
    """The issue's sweep, in small: each option of 0.11.0 that takes a value, given hostile values (deep
    nesting, values no float holds, huge numbers), on a pod that must be refused: every review denies.
    (--model is left out: a garbage model is an unknown model, not a crash.)"""
    from tests.conftest import ROOT

    data = json.loads((ROOT / "profiles" / "vllm-args" / "options.json").read_text(encoding="utf-8"))
    release = set(data["releases"]["0.11.0"])
    flags = [o["opts"][0] for i, o in enumerate(data["options"]) if i in release and o.get("nargs") != 0
             and o["opts"][0].startswith("--") and o["opts"][0] != "--model"]
    assert len(flags) > 100
    values = ["1e400", DEEP, '{"a": ' * 2000 + "1" + "}" * 2000]
    base = yaml.safe_load(pod(REFUSED))
    allowed = []
    for flag in flags:
        for v in values:
            obj = json.loads(json.dumps(base))
            obj["spec"]["containers"][0]["args"] += [flag, v]
            body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "request": {"uid": "u", "operation": "CREATE", "object": obj}}
            if review(body, Options())["response"]["allowed"]:
                allowed.append((flag, v[:20]))
    assert allowed == []


@pytest.mark.parametrize("extra", [["-dp", "$((A * B))"], ["-dp", "{{ .Values.x }}"],
                                   ["--data-parallel-size-local", "${X:-1e400}"]],
                         ids=["arith", "template", "default"])
def test_an_unresolved_data_parallel_size_does_not_open_the_gate(extra, run_cli, tmp_path):
    """A data-parallel rank holds what one GPU holds: a size the file leaves to the environment still has the
    per-GPU budget checked, so appending one to a pod that must be refused keeps it refused."""
    text = pod([*REFUSED, *extra])
    assert _admission(text)["allowed"] is False
    f = tmp_path / "pod.yaml"
    f.write_text(text)
    assert run_cli("check", str(f)).exit_code == 1
