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
from configurator.startup import progress_deadline_s
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


# ---- rollouts, optional objects and extension points -------------------------------------------

def _deployment(objects):
    (d,) = [o for o in objects if o["kind"] == "Deployment"]
    return d


def test_a_405b_rollout_gets_a_progress_deadline_above_its_start_up_budget(tmp_path):
    """Kubernetes' default progressDeadlineSeconds (600 s) marks a 405B rollout failed an hour before
    its pod can be ready: the chart derives the deadline from the same start-up model as the probes."""
    p = plan_for("405b-h200-1-node")
    budget = startup_budget(p)
    assert budget.total_s > 3600  # the point of the test: the default would fail it
    d = _deployment(helm_template(helm_values(p), "big", tmp_path))
    probe = d["spec"]["template"]["spec"]["containers"][0]["startupProbe"]
    deadline = d["spec"]["progressDeadlineSeconds"]
    assert deadline > probe["failureThreshold"] * probe["periodSeconds"] >= budget.total_s
    assert deadline == progress_deadline_s(budget.failure_threshold * budget.period_s)
    validate_object(d)


def test_without_a_plan_the_chart_derives_the_deadline_from_its_startup_probe(tmp_path):
    values = {"model": {"name": "Qwen/Qwen3-8B"}, "probes": {"startup": {"failureThreshold": 200}}}
    assert _deployment(helm_template(values, "d", tmp_path))["spec"]["progressDeadlineSeconds"] == \
        progress_deadline_s(200 * 10)
    values["progressDeadlineSeconds"] = 7200  # an explicit value wins
    assert _deployment(helm_template(values, "d", tmp_path))["spec"]["progressDeadlineSeconds"] == 7200


EXTENSIONS = dict(
    serviceAccountName="vllm", runtimeClassName="nvidia", priorityClassName="inference",
    terminationGracePeriodSeconds=120, lifecycle={"preStop": {"sleep": {"seconds": 10}}},
    topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                "whenUnsatisfiable": "ScheduleAnyway",
                                "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "vllm"}}}],
    envFrom=[{"secretRef": {"name": "vllm-env"}}, {"configMapRef": {"name": "vllm-config", "optional": True}}],
    initContainers=[{"name": "prefetch", "image": "python:3.12-slim",
                     "command": ["sh", "-c", "pip install -q huggingface_hub && hf download $MODEL"],
                     "volumeMounts": [{"name": "model-cache", "mountPath": "/data/huggingface"}]}],
    extraContainers=[{"name": "exporter", "image": "busybox:1.36", "command": ["sleep", "infinity"]}],
    extraVolumes=[{"name": "templates", "configMap": {"name": "chat-templates"}}],
    extraVolumeMounts=[{"name": "templates", "mountPath": "/templates", "readOnly": True}],
    service={"annotations": {"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}},
    model={"revision": "0e9e39f249a16976918f6564b8830bc894c89659"},
)
OPTIONAL = {
    "budget-hpa-service-monitor-new-claim": dict(
        podDisruptionBudget={"enabled": True},
        autoscaling={"enabled": True, "maxReplicas": 4, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 600}}},
        metrics={"serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}}},
        modelCache={"persistence": {"enabled": True, "size": "40Gi", "storageClass": "fast"}}),
    "keda-pod-monitor-existing-claim-min-available": dict(
        podDisruptionBudget={"enabled": True, "minAvailable": "50%"},
        keda={"enabled": True, "minReplicaCount": 0, "maxReplicaCount": 3},
        metrics={"podMonitor": {"enabled": True, "interval": "30s"}},
        modelCache={"persistence": {"enabled": True, "existingClaim": "hf-cache"}}),
}
OPTIONAL_KINDS = {"PodDisruptionBudget", "HorizontalPodAutoscaler", "ScaledObject", "ServiceMonitor", "PodMonitor",
                  "PersistentVolumeClaim"}


def _check(objects) -> tuple[int, dict]:
    """`vllm-configurator check -` on rendered objects: exit code and JSON report."""
    import json

    from click.testing import CliRunner

    from configurator.cli.main import cli
    from configurator.emit.manifest import to_yaml

    res = CliRunner().invoke(cli, ["check", "-", "--format", "json"], input=to_yaml(*objects))
    return res.exit_code, json.loads(res.stdout)


@pytest.mark.parametrize("plan_name", ["l4-1gpu", "405b-2-nodes"])
@pytest.mark.parametrize("variant", OPTIONAL)
def test_every_optional_object_renders_validates_and_passes_check(variant, plan_name, tmp_path):
    """PDB, HPA, KEDA, ServiceMonitor, PodMonitor and the cache claim, with every extension point: helm
    lint --strict, Kubernetes 1.35 (and the KEDA / Prometheus-operator CRDs), the Python twin, check."""
    values = ChartValues.model_validate(_merge(_merge(chart_values(plan_for(plan_name)).model_dump(), EXTENSIONS),
                                               OPTIONAL[variant]))
    helm("lint", "--strict", str(CHART), "-f", _write(tmp_path, values.model_dump()))
    objects = helm_template(values.model_dump(), "opt", tmp_path)
    for obj in objects:
        validate_object(obj)
    kinds = {o["kind"] for o in objects}
    wanted = {k for k, on in (("PodDisruptionBudget", True), ("HorizontalPodAutoscaler", values.autoscaling.enabled),
                              ("ScaledObject", values.keda.enabled),
                              ("ServiceMonitor", values.metrics.serviceMonitor.enabled),
                              ("PodMonitor", values.metrics.podMonitor.enabled)) if on}
    if values.modelCache.persistence.enabled and not values.modelCache.persistence.existingClaim \
            and values.nodes == 1:
        wanted.add("PersistentVolumeClaim")
    assert kinds & OPTIONAL_KINDS == wanted
    workload = next(o for o in objects if o["kind"] in ("Deployment", "LeaderWorkerSet"))
    assert "replicas" not in workload["spec"]  # the autoscaler owns them
    for o in objects:
        if "scaleTargetRef" in o.get("spec", {}):
            ref = o["spec"]["scaleTargetRef"]
            assert (ref["kind"], ref["name"]) == (workload["kind"], workload["metadata"]["name"])
    (server,) = vllm_containers(objects)
    assert server["args"][server["args"].index("--revision") + 1] == EXTENSIONS["model"]["revision"]
    assert server["envFrom"] == EXTENSIONS["envFrom"] and server["lifecycle"] == EXTENSIONS["lifecycle"]
    assert {"name": "templates", "mountPath": "/templates", "readOnly": True} in server["volumeMounts"]
    _same_objects(values, "opt", tmp_path)
    code, report = _check(objects)
    assert code == 0 and not [f for f in report["findings"] if f["severity"] == "error"], report
    assert len(report["servers"]) == 1


def test_the_scaled_object_queries_vllms_queue_for_this_model_and_namespace(tmp_path):
    values = {"model": {"name": "Qwen/Qwen3-8B", "servedModelName": "qwen"}, "keda": {"enabled": True}}
    (so,) = [o for o in helm_template(values, "k", tmp_path, "--namespace", "llm") if o["kind"] == "ScaledObject"]
    (trigger,) = so["spec"]["triggers"]
    assert trigger["type"] == "prometheus"
    assert trigger["metadata"]["query"] == 'sum(vllm:num_requests_waiting{namespace="llm", model_name="qwen"})'
    assert render(ChartValues.model_validate(_merge(ChartValues().model_dump(), values)), "k",
                  namespace="llm")[-1]["spec"]["triggers"] == so["spec"]["triggers"]


OPTIONAL_REFUSALS = {
    "two autoscalers": ({"autoscaling": {"enabled": True}, "keda": {"enabled": True}},
                        "autoscaling.enabled and keda.enabled"),
    "HPA bounds": ({"autoscaling": {"enabled": True, "minReplicas": 3, "maxReplicas": 2}},
                   "autoscaling.minReplicas (3) is above autoscaling.maxReplicas (2)"),
    "KEDA bounds": ({"keda": {"enabled": True, "minReplicaCount": 5}},
                    "keda.minReplicaCount (5) is above keda.maxReplicaCount (2)"),
    "revision twice": ({"model": {"name": "m", "revision": "main"}, "extraArgs": ["--revision", "v2"]},
                       "extraArgs: --revision is the value model.revision"),
}


@pytest.mark.parametrize("case", OPTIONAL_REFUSALS)
def test_the_template_refuses_contradicting_optional_objects(case, tmp_path):
    values, message = OPTIONAL_REFUSALS[case]
    f = _write(tmp_path, _merge({"model": {"name": "Qwen/Qwen3-8B"}}, values))
    run = helm("template", "x", str(CHART), "-f", f, check=False)
    assert run.returncode != 0 and message in run.stderr, run.stderr


@pytest.mark.parametrize(("values", "where"), [
    ({"metrics": {"serviceMonitor": {"interval": "15 seconds"}}}, "/metrics/serviceMonitor/interval"),
    ({"podDisruptionBudget": {"maxUnavailable": "half"}}, "/podDisruptionBudget/maxUnavailable"),
    ({"terminationGracePeriodSeconds": -1}, "/terminationGracePeriodSeconds"),
    ({"progressDeadlineSeconds": 0}, "/progressDeadlineSeconds"),
    ({"keda": {"enabled": True, "bogus": 1}}, "additional properties 'bogus' not allowed"),
])
def test_the_schema_refuses_wrong_optional_values(values, where, tmp_path):
    run = helm("lint", str(CHART), "-f", _write(tmp_path, {"model": {"name": "m"}, **values}), check=False)
    assert run.returncode != 0 and where in run.stdout + run.stderr, run.stdout + run.stderr


def _cache_volume(objects) -> dict:
    pod = _deployment(objects)["spec"]["template"]["spec"]
    return next(v for v in pod["volumes"] if v["name"] == "model-cache")


def test_the_model_cache_is_a_size_limited_emptydir_or_a_claim(tmp_path):
    """Issue 27: the model cache never is an unbounded emptyDir. The chart's default limits it; the emitter
    sizes the limit from the checkpoint (1.25x, rounded up to 10 GiB, as it sizes a claim); with persistence the
    cache is the claim, and no emptyDir is rendered."""
    values = {"model": {"name": "Qwen/Qwen3-8B"}}
    assert _cache_volume(helm_template(values, "d", tmp_path)) == {"name": "model-cache",
                                                                   "emptyDir": {"sizeLimit": "100Gi"}}
    values["modelCache"] = {"sizeLimit": "40Gi"}
    assert _cache_volume(helm_template(values, "d", tmp_path))["emptyDir"] == {"sizeLimit": "40Gi"}
    values["modelCache"] = {"persistence": {"enabled": True, "size": "60Gi"}}
    objects = helm_template(values, "d", tmp_path)
    assert _cache_volume(objects) == {"name": "model-cache", "persistentVolumeClaim": {"claimName": "d-model-cache"}}
    claim = next(o for o in objects if o["kind"] == "PersistentVolumeClaim")
    assert claim["spec"]["resources"]["requests"]["storage"] == "60Gi"
    # the emitter: the limit from the checkpoint's download size, the same figure a claim would get
    plan = plan_for("h100-tp2")
    emitted = helm_values(plan)
    budget = startup_budget(plan)
    want = math.ceil(budget.download_bytes * 1.25 / (10 << 30)) * 10
    assert emitted["modelCache"]["sizeLimit"] == f"{want}Gi" and want >= 160  # a 70B checkpoint in bf16: 141 GB
    assert "persistence" not in emitted["modelCache"] or not emitted["modelCache"]["persistence"].get("enabled")
    assert _cache_volume(helm_template(emitted, "d", tmp_path))["emptyDir"] == {"sizeLimit": f"{want}Gi"}
    with_claim = helm_values(plan, DeployOptions(cache_pvc=True))
    assert with_claim["modelCache"]["persistence"]["size"] == f"{want}Gi"
    # the values say which: the schema documents both
    schema = (CHART / "values.schema.json").read_text()
    assert "sizeLimit" in schema and "evicts the pod" in schema
