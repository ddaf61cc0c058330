"""KServe ServingRuntime templates bound to the InferenceServices of the same input (KServe's own runtime
selection and container merge), and the runtime-template-unbound finding when none uses them."""

import pytest
from click.testing import CliRunner

from configurator.cli.main import cli
from configurator.lint.config import LintConfig, Settings
from configurator.lint.engine import Options, evaluate
from configurator.lint.find import extract_all
from configurator.lint.load import parse_text
from tests.conftest import ROOT

DATA = ROOT / "tests" / "lint" / "data"


def runtime(name="vllm-rt", kind="ServingRuntime", namespace=None, formats="[{name: vLLM, autoSelect: true}]",
            args="[--port=8080, --model=/mnt/models, '--served-model-name={{.Name}}', --max-model-len=8192]",
            extra="") -> str:
    ns = f", namespace: {namespace}" if namespace else ""
    return (f"apiVersion: serving.kserve.io/v1alpha1\nkind: {kind}\nmetadata: {{name: {name}{ns}}}\n"
            f"spec:\n  supportedModelFormats: {formats}\n{extra}  containers:\n"
            f"    - name: kserve-container\n      image: vllm/vllm-openai:v0.11.0\n"
            f"      command: [python3, -m, vllm.entrypoints.openai.api_server]\n      args: {args}\n")


def isvc(name="chat", model="{modelFormat: {name: vLLM}, storageUri: 'hf://Qwen/Qwen3-8B'}", namespace=None,
         annotations="") -> str:
    ns = f", namespace: {namespace}" if namespace else ""
    ann = f", annotations: {annotations}" if annotations else ""
    return (f"apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {{name: {name}{ns}{ann}}}\n"
            f"spec:\n  predictor:\n    model: {model}\n")


def run(*docs: str):
    parsed, problems = parse_text("---\n".join(docs), "m.yaml")
    assert problems == []
    return extract_all(parsed)


def test_bound_by_model_format_takes_the_model_from_storage_uri_and_merges_args():
    model = ("{modelFormat: {name: vLLM}, storageUri: 'hf://Qwen/Qwen3-8B', args: [--max-model-len=4096], "
             "resources: {limits: {nvidia.com/gpu: 2}}}")
    servers, nu = run(runtime(), isvc(model=model))
    [s] = servers
    assert (s.kind, s.name, s.container) == ("InferenceService", "chat", "kserve-container")
    assert s.flags["model"] == "Qwen/Qwen3-8B"
    assert s.flags["max_model_len"] == 4096  # the InferenceService's args come after the runtime's: last wins
    assert s.repeated["max_model_len"][0].line == 10  # the runtime's own, in its args line
    assert s.served_names == ["chat"]  # {{.Name}} is the InferenceService's name
    assert s.gpu_count == 2 and s.image == "vllm/vllm-openai:v0.11.0"
    assert nu == []  # the runtime is used: neither a server of its own nor a finding


def test_input_order_does_not_matter():
    servers, nu = run(isvc(), runtime())
    assert [s.flags["model"] for s in servers] == ["Qwen/Qwen3-8B"] and nu == []


@pytest.mark.parametrize(("runtimes", "model", "want"), [
    # runtime: names it, even when its format is not auto-selected
    ([runtime("a", formats="[{name: vLLM, autoSelect: false}]"), runtime("b")],
     "{modelFormat: {name: vLLM}, runtime: a, storageUri: 'hf://org/m'}", "a"),
    # a cluster runtime by name when no namespaced one has it
    ([runtime("c", kind="ClusterServingRuntime")], "{modelFormat: {name: custom}, runtime: c, storageUri: 'hf://o/m'}",
     "c"),
    # auto-selection: the highest priority of the format wins
    ([runtime("low", formats="[{name: vLLM, autoSelect: true, priority: 1}]"),
      runtime("high", formats="[{name: vLLM, autoSelect: true, priority: 2}]")],
     "{modelFormat: {name: vLLM}, storageUri: 'hf://org/m'}", "high"),
    # namespaced runtimes before cluster ones
    ([runtime("cl", kind="ClusterServingRuntime"), runtime("ns")],
     "{modelFormat: {name: vLLM}, storageUri: 'hf://org/m'}", "ns"),
    # a disabled runtime, or a format version the runtime does not list, is not selected
    ([runtime("rt-off", extra="  disabled: true\n"), runtime("rt-on")],
     "{modelFormat: {name: vLLM}, storageUri: 'hf://o/m'}", "rt-on"),
    ([runtime("v1", formats="[{name: vLLM, version: '1', autoSelect: true}]"),
      runtime("v2", formats="[{name: vLLM, version: '2', autoSelect: true}]")],
     "{modelFormat: {name: vLLM, version: '2'}, storageUri: 'hf://o/m'}", "v2"),
])
def test_runtime_selection_follows_kserve(runtimes, model, want):
    parsed, _ = parse_text("---\n".join([*runtimes, isvc(model=model)]), "m.yaml")
    from configurator.lint.extract import Inputs
    from configurator.lint.formats._kserve_binding import bindings

    inputs = Inputs.of(parsed)
    [b] = bindings(inputs).values()
    assert b.runtime.value["metadata"]["name"] == want


def test_other_namespace_and_unselected_formats_do_not_bind():
    servers, nu = run(runtime(namespace="a"), isvc(namespace="b", model="{modelFormat: {name: pytorch}, "
                                                                     "runtime: vllm-rt, storageUri: 'hf://o/m'}"))
    assert servers == []
    assert [(n.kind, n.rule) for n in nu if n.kind == "ServingRuntime"] == [("ServingRuntime",
                                                                             "runtime-template-unbound")]


def test_unbound_template_is_its_own_finding_not_an_unknown_model():
    servers, nu = run(runtime())
    assert servers == []
    [n] = nu
    assert n.rule == "runtime-template-unbound" and n.kind == "ServingRuntime" and "/mnt/models" in n.reason
    assert n.loc.line == 10  # the --model flag of the runtime (its args line)
    report = evaluate(*parse_text(runtime(), "m.yaml"), Options())
    assert [(f.rule, f.severity) for f in report.findings] == [("runtime-template-unbound", "info")]
    assert report.summary.not_understood == 0 and report.servers == []


def test_a_runtime_naming_a_real_model_is_still_checked_alone():
    servers, nu = run(runtime(args="[--model, Qwen/Qwen3-8B]"))
    assert [s.flags["model"] for s in servers] == ["Qwen/Qwen3-8B"] and nu == []


def test_storage_location_maps_through_the_config_and_the_annotation():
    pvc = "{modelFormat: {name: vLLM}, storageUri: 'pvc://models/qwen3-8b', resources: {limits: {nvidia.com/gpu: 1}}}"
    docs, _ = parse_text("---\n".join([runtime(), isvc(model=pvc)]), "m.yaml")
    report = evaluate(docs, [], Options(gpu="h100-80gb"))
    [f] = [f for f in report.findings if f.rule == "unknown-model"]
    assert "pvc://models/qwen3-8b" in f.message and "models:" in f.message
    settings = Settings(LintConfig(models={"pvc://models/qwen3-8b": "Qwen/Qwen3-8B"}))
    report = evaluate(docs, [], Options(gpu="h100-80gb", settings=settings))
    assert [s.verdict for s in report.servers] != ["not-checked"]
    assert not [f for f in report.findings if f.rule == "unknown-model"]
    docs, _ = parse_text("---\n".join([runtime(), isvc(model=pvc, annotations="{vllm-configurator.io/model: "
                                                                            "Qwen/Qwen3-8B}")]), "m.yaml")
    report = evaluate(docs, [], Options(gpu="h100-80gb"))
    assert report.servers[0].verdict != "not-checked"


def test_custom_predictor_storage_uri_env_is_the_model():
    text = ("apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: x}\nspec:\n"
            "  predictor:\n    containers:\n      - name: kserve-container\n        image: kserve/vllmserver:latest\n"
            "        command: [python3, -m, vllm.entrypoints.api_server]\n        args: [--model, /mnt/models]\n"
            "        env: [{name: STORAGE_URI, value: 'hf://Qwen/Qwen3-8B'}]\n")
    [s], _ = run(text)
    assert s.flags["model"] == "Qwen/Qwen3-8B"


def _findings(*names: str) -> tuple[set, int]:
    import json

    res = CliRunner().invoke(cli, ["check", *(str(DATA / n) for n in names), "--format", "json"])
    report = json.loads(res.stdout)
    return {(f["rule"], f["file"].rsplit("/", 1)[-1], f["line"]) for f in report["findings"]}, res.exit_code


@pytest.mark.parametrize("name", ["kserve-runtime-template.yaml", "kserve-runtime-bound.yaml"])
def test_check_reports_each_file_as_its_expect_line_says(name):
    got, code = _findings(name)
    head = (DATA / name).read_text().splitlines()[0].split(":", 1)[1].strip()
    want = set() if head == "clean" else {(r.split("@")[0], name, int(r.split("@")[1])) for r in head.split(",")}
    assert got == want and code == 0


def test_bound_server_is_checked_with_the_runtimes_flags_and_the_services_model_and_gpu():
    import json

    res = CliRunner().invoke(cli, ["check", str(DATA / "kserve-runtime-bound.yaml"), "--format", "json"])
    [s] = json.loads(res.stdout)["servers"]
    assert (s["object"]["kind"], s["model"], s["gpu"], s["gpu_count"], s["vllm_version"]) == (
        "InferenceService", "Qwen/Qwen3-8B", "l4", 1, "0.11.0")
    assert s["flags"]["max_model_len"] == 16384 and s["flags"]["max_num_seqs"] == 64  # runtime's, service's
    assert s["verdict"] == "fits"


def test_runtime_in_another_file_binds_and_its_file_is_not_silent():
    # both runtimes auto-select vLLM at no priority: KServe's tie-break by name picks vllm-cuda-runtime (the
    # template file's, 16384 tokens: one request fits the central prediction but not the band's low end, a
    # warning), and the other file's runtime is then used by none
    got, code = _findings("kserve-runtime-template.yaml", "kserve-runtime-bound.yaml")
    assert {(r, f) for r, f, _ in got} == {("runtime-template-unbound", "kserve-runtime-bound.yaml"),
                                          ("release-unknown", "kserve-runtime-bound.yaml"),
                                          ("memory-at-risk", "kserve-runtime-template.yaml")}
    # no not-understood on the template's file: its runtime was read through the other file's InferenceService,
    # whose finding (memory-at-risk) is reported at the runtime's lines there
    assert code == 0


def test_unbound_template_is_in_sarif_rules_and_results():
    import json

    res = CliRunner().invoke(cli, ["check", str(DATA / "kserve-runtime-template.yaml"), "--format", "sarif"])
    run = json.loads(res.stdout)["runs"][0]
    assert "runtime-template-unbound" in {r["id"] for r in run["tool"]["driver"]["rules"]}
    [result] = run["results"]
    assert result["ruleId"] == "runtime-template-unbound" and result["level"] == "note"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 21
