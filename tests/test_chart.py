"""charts/vllm with the real helm: lint, the schema's refusals, the template's own checks, and the
objects rendered for planned deployments: valid for Kubernetes, carrying exactly the planned flags,
and equal to what `plan --emit manifest` writes."""

from __future__ import annotations

import math

import pytest
import yaml

from configurator.emit.helm import DeployOptions, chart_values, helm_values, shape, startup_budget
from configurator.emit.manifest import render
from configurator.emit.values_model import ChartValues, render_chart_files
from tests.emit_support import (
    CHART,
    MULTI_NODE,
    PLANS,
    assert_args_carry_plan,
    helm,
    helm_template,
    plan_for,
    tools,
    validate_object,
    vllm_containers,
)

HELM_ONLY_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by")


@pytest.fixture(scope="module", autouse=True)
def _tools():
    return tools()  # installs helm and kubectl once, or fails the module loudly


def _write(tmp_path, values, name="values.yaml"):
    f = tmp_path / name
    f.write_text(yaml.safe_dump(values, sort_keys=False))
    return str(f)


def test_the_tools_are_real_binaries():
    assert helm("version", "--short").stdout.startswith("v")
    import subprocess

    run = subprocess.run([tools().kubectl, "version", "--client"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "Client Version" in run.stdout


def test_helm_lint_passes():
    run = helm("lint", "--strict", str(CHART))
    assert "0 chart(s) failed" in run.stdout


def test_generated_chart_files_are_up_to_date():
    """values.schema.json, values.yaml, templates/_flags.tpl and the README table come from
    configurator/emit/values_model.py: run `python scripts/gen_chart_schema.py` after changing it."""
    for rel, text in render_chart_files((CHART / "README.md").read_text()).items():
        assert (CHART / rel).read_text() == text, f"charts/vllm/{rel} drifted: run python scripts/gen_chart_schema.py"


def test_values_yaml_holds_the_models_defaults():
    assert yaml.safe_load((CHART / "values.yaml").read_text()) == ChartValues().model_dump()


@pytest.mark.parametrize("name", PLANS)
def test_planned_values_render_valid_objects_with_exactly_the_planned_flags(name, tmp_path):
    p = plan_for(name)
    values = helm_values(p)
    helm("lint", "--strict", str(CHART), "-f", _write(tmp_path, values))
    objects = helm_template(values, "serve", tmp_path)
    for obj in objects:
        validate_object(obj)
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == (["LeaderWorkerSet", "Service"] if name in MULTI_NODE else ["Deployment", "Service"])
    (server,) = vllm_containers(objects)
    assert_args_carry_plan(server, p)
    lay = shape(p.gpus, DeployOptions().gpus_per_node)
    assert lay.nodes * lay.gpus_per_pod == p.gpus
    budget = startup_budget(p)
    for obj in objects:
        if obj["kind"] == "Service":
            continue
        spec = obj["spec"]
        templates = [spec["template"]] if "template" in spec else [
            spec["leaderWorkerTemplate"]["leaderTemplate"], spec["leaderWorkerTemplate"]["workerTemplate"]]
        if "leaderWorkerTemplate" in spec:
            assert spec["leaderWorkerTemplate"]["size"] == lay.nodes
        for t in templates:
            (c,) = t["spec"]["containers"]
            res = c["resources"]
            gpu = chart_values(p).gpu
            assert res["requests"][gpu.resource] == res["limits"][gpu.resource] == str(lay.gpus_per_pod)
            shm = next(v for v in t["spec"]["volumes"] if v["name"] == "shm")
            assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": f"{2 * lay.gpus_per_pod}Gi"}
            if gpu.products:
                assert (t["spec"].get("nodeSelector") or t["spec"]["affinity"]["nodeAffinity"])
            if "args" in c:
                probe = c["startupProbe"]
                assert probe["httpGet"]["path"] == "/health"
                assert probe["failureThreshold"] * probe["periodSeconds"] >= budget.total_s
                assert probe["failureThreshold"] == max(30, math.ceil(budget.total_s / probe["periodSeconds"]))


def _strip_helm(obj):
    """A rendered object less the labels only Helm sets (the manifest emitter writes its own)."""
    if isinstance(obj, dict):
        return {k: _strip_helm(v) for k, v in obj.items()
                if k not in HELM_ONLY_LABELS}
    if isinstance(obj, list):
        return [_strip_helm(v) for v in obj]
    return obj


def _same_objects(values: ChartValues, release: str, tmp_path) -> None:
    full = values.model_dump()
    from_helm = sorted((_strip_helm(o) for o in helm_template(full, release, tmp_path)), key=lambda o: o["kind"])
    from_python = sorted((_strip_helm(o) for o in render(values, release)), key=lambda o: o["kind"])
    assert from_helm == from_python


@pytest.mark.parametrize("name", PLANS)
def test_the_manifest_emitter_writes_what_the_chart_renders(name, tmp_path):
    _same_objects(chart_values(plan_for(name), DeployOptions(cache_pvc=name in ("h100-tp4", "405b-2-nodes"))),
                  "twin", tmp_path)


VARIANTS = {
    "user-selector-and-extras": dict(
        nodeSelector={"pool": "gpu"}, extraArgs=["--enable-auto-tool-choice", "--tool-call-parser", "hermes"],
        env=[{"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"}], imagePullSecrets=[{"name": "regcred"}],
        podLabels={"team": "ml"}, podSecurityContext={"fsGroup": 2000},
        securityContext={"runAsNonRoot": True, "runAsUser": 2000, "runAsGroup": 0}, fullnameOverride="custom-name"),
    "typed-extras": dict(model={"name": "Qwen/Qwen3-8B", "servedModelName": "qwen", "trustRemoteCode": True},
                         vllm={"maxModelLen": "auto", "enablePrefixCaching": False, "enforceEager": True,
                               "enableChunkedPrefill": True, "kvCacheMemoryBytes": 25_000_000_000,
                               "cpuOffloadGb": 4.5, "gpuMemoryUtilization": 0.85}),
    "several-products-existing-claim": dict(
        gpu={"products": ["NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB"]}, affinity={"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": []}},
        modelCache={"persistence": {"enabled": True, "existingClaim": "models"}}, shm={"enabled": False},
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}, tolerations=[]),
    "no-token-storage-class": dict(hfToken={"secretName": ""}, modelCache={"persistence": {
        "enabled": True, "storageClass": "fast", "accessModes": ["ReadWriteMany"], "size": "200Gi"}}),
}


def _merge(base, patch):
    """Helm's merge of user values over the chart's: maps merge key by key, anything else replaces."""
    if isinstance(base, dict) and isinstance(patch, dict):
        return {**base, **{k: _merge(base.get(k), v) for k, v in patch.items()}}
    return patch


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_python_twin_matches_the_chart_for_every_feature(variant, tmp_path):
    values = ChartValues.model_validate(_merge(chart_values(plan_for("l4-1gpu")).model_dump(), VARIANTS[variant]))
    _same_objects(values, "variant", tmp_path)
    for obj in render(values, "variant"):
        validate_object(obj)


def test_negatable_and_plain_booleans_render_once(tmp_path):
    values = chart_values(plan_for("l4-1gpu")).model_dump()
    values["vllm"].update(enablePrefixCaching=False, enforceEager=True, disableHybridKvCacheManager=False)
    (c,) = vllm_containers(helm_template(values, "b", tmp_path))
    assert "--no-enable-prefix-caching" in c["args"] and "--enforce-eager" in c["args"]
    assert not any("hybrid" in a for a in c["args"])  # false on a flag with no --no- form: vLLM's default


def test_large_integers_render_exactly(tmp_path):
    values = chart_values(plan_for("l4-1gpu")).model_dump()
    values["vllm"].update(kvCacheMemoryBytes=123_456_789_012, maxModelLen=1_048_576)
    (c,) = vllm_containers(helm_template(values, "big", tmp_path))
    assert c["args"][c["args"].index("--kv-cache-memory-bytes") + 1] == "123456789012"
    assert c["args"][c["args"].index("--max-model-len") + 1] == "1048576"


WRONG = {
    "a word for a number": ({"vllm": {"gpuMemoryUtilization": "high"}},
                            "at '/vllm/gpuMemoryUtilization': got string, want number"),
    "an unknown key": ({"bogus": 1}, "additional properties 'bogus' not allowed"),
    "an unknown vLLM setting": ({"vllm": {"maxModelLenn": 4096}}, "additional properties 'maxModelLenn' not allowed"),
    "utilization above 1": ({"vllm": {"gpuMemoryUtilization": 1.5}}, "/vllm/gpuMemoryUtilization"),
    "an unknown KV dtype": ({"vllm": {"kvCacheDtype": "fp9"}}, "/vllm/kvCacheDtype"),
    "zero nodes": ({"nodes": 0}, "at '/nodes'"),
    "GPU count as text": ({"gpusPerNode": "four"}, "at '/gpusPerNode': got string, want integer"),
}


@pytest.mark.parametrize("case", WRONG)
def test_wrong_values_fail_lint_and_template_with_the_schemas_message(case, tmp_path):
    values, message = WRONG[case]
    f = _write(tmp_path, {"model": {"name": "Qwen/Qwen3-8B"}, **values})
    for cmd in (["lint", str(CHART), "-f", f], ["template", "x", str(CHART), "-f", f]):
        run = helm(*cmd, check=False)
        assert run.returncode != 0, f"helm {cmd[0]} accepted {values}"
        assert message in run.stdout + run.stderr, run.stdout + run.stderr


TEMPLATE_CHECKS = {
    "no model": ({"model": {"name": ""}}, "model.name is required"),
    "GPUs and parallelism disagree": ({"gpusPerNode": 2}, "nodes x gpusPerNode request 2 GPUs, but vLLM uses "
                                                          "tensorParallelSize x pipelineParallelSize x "
                                                          "dataParallelSize = 1"),
    "a typed flag in extraArgs": ({"extraArgs": ["--max_model_len=4096"]},
                                  "extraArgs: --max_model_len=4096 is the value vllm.maxModelLen"),
    "a negated typed flag": ({"extraArgs": ["--no-enable-prefix-caching"]}, "is the value vllm.enablePrefixCaching"),
    "a short spelling": ({"extraArgs": ["-tp", "2"]}, "extraArgs: -tp is the value vllm.tensorParallelSize"),
    "the port": ({"extraArgs": ["--port", "9000"]}, "extraArgs: --port is the value port"),
    "the served name": ({"extraArgs": ["--served-model-name", "x"]}, "is the value model.servedModelName"),
    "GPUs in resources": ({"resources": {"limits": {"nvidia.com/gpu": 2}}},
                          "resources.limits.nvidia.com/gpu: the GPU count comes from gpusPerNode"),
}


@pytest.mark.parametrize("case", TEMPLATE_CHECKS)
def test_the_template_refuses_what_the_schema_cannot_express(case, tmp_path):
    values, message = TEMPLATE_CHECKS[case]
    f = _write(tmp_path, {"model": {"name": "Qwen/Qwen3-8B"}, **values})
    run = helm("template", "x", str(CHART), "-f", f, check=False)
    assert run.returncode != 0 and message in run.stderr, run.stderr


def test_notes_show_the_command_and_the_budget(tmp_path):
    p = plan_for("h100-tp4")
    run = helm("install", "notes", str(CHART), "-f", _write(tmp_path, helm_values(p)), "--dry-run=client")
    notes = run.stdout.split("NOTES:", 1)[1]
    assert "vllm serve meta-llama/Llama-3.3-70B-Instruct --gpu-memory-utilization 0.9" in notes
    assert f"Start-up budget: {startup_budget(p).failure_threshold * 10} s" in notes
