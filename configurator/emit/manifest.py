"""PlanResult -> plain Kubernetes objects (a Deployment and a Service, or a LeaderWorkerSet and a
Service), and the deterministic YAML every emitter is written with.

`render()` is the Python twin of charts/vllm/templates: the same chart values give the same objects
that `helm template` renders, less Helm's own labels (tests/test_chart.py renders both and compares).
Pure: objects are plain dicts; YAML only in `to_yaml()`.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import yaml

from configurator.emit.helm import DeployOptions, chart_values, default_name
from configurator.emit.values_model import CHART_NAME, ChartValues, flag_rows

if TYPE_CHECKING:
    from configurator.plan import PlanResult

MANAGED_BY = "vllm-configurator"


def manifests(plan: PlanResult, opts: DeployOptions | None = None) -> list[dict[str, Any]]:
    """The objects that run a plan, named opts.name or vllm-<model>."""
    opts = opts or DeployOptions()
    return render(chart_values(plan, opts), opts.name or default_name(plan.model))


# ---- the chart, in Python -----------------------------------------------------------------------

def go_text(value: Any) -> str:
    """A number as Helm's `toString` writes it (Go's %v): 0.9 -> '0.9', 4.0 -> '4', 1e6 -> '1e+06'."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    if value == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    exp10 = len(text) + int(exponent) - 1
    if exp10 < -4 or exp10 >= 6:  # Go's %g with the shortest precision switches at 1e-4 and 1e6
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{'-' if sign else ''}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    return f"{'-' if sign else ''}{Decimal(repr(abs(value))).normalize():f}"


def serve_args(values: ChartValues) -> list[str]:
    """The container args the chart renders: serve MODEL, one flag per set value, --port, extraArgs."""
    out = ["serve", values.model.name]
    for row in flag_rows():
        value = getattr(getattr(values, row["section"]), row["key"])
        if value is None:
            continue
        if row["type"] == "bool":
            if value:
                out.append(row["flag"])
            elif row["negatable"]:
                out.append("--no-" + row["flag"][2:])
            continue
        if row["type"] in ("int", "bytes") or (row["type"] == "len" and not isinstance(value, str)):
            text = str(int(value))
        else:
            text = go_text(value)
        out += [row["flag"], text]
    return [*out, "--port", str(values.port), *values.extraArgs]


def _trunc(text: str, n: int) -> str:
    """Helm's `trunc n | trimSuffix "-"`."""
    text = text[:n]
    return text[:-1] if text.endswith("-") else text


def _selector_labels(release: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": CHART_NAME, "app.kubernetes.io/instance": release}


def _labels(values: ChartValues, release: str) -> dict[str, str]:
    return {**_selector_labels(release), "app.kubernetes.io/version": _trunc(values.image.tag, 63),
            "app.kubernetes.io/managed-by": MANAGED_BY}


def _probe(values: ChartValues, which: str) -> dict[str, Any]:
    p = getattr(values.probes, which)
    return {"httpGet": {"path": values.probes.path, "port": "http"}, "periodSeconds": p.periodSeconds,
            "failureThreshold": p.failureThreshold, "timeoutSeconds": p.timeoutSeconds}


def _container(values: ChartValues, role: str) -> dict[str, Any]:
    script = values.multiNode.rayScript
    command = {"server": ["vllm"],
               "leader": ["/bin/bash", "-c",
                          f'bash {script} leader --ray_cluster_size=$LWS_GROUP_SIZE && exec vllm "$@"', "vllm"],
               "worker": ["/bin/bash", "-c", f"exec bash {script} worker --ray_address=$LWS_LEADER_ADDRESS"]}[role]
    c: dict[str, Any] = {"name": "vllm", "image": f"{values.image.repository}:{values.image.tag}",
                         "imagePullPolicy": values.image.pullPolicy, "command": command}
    if role != "worker":
        c["args"] = serve_args(values)
        c["ports"] = [{"name": "http", "containerPort": values.port, "protocol": "TCP"}]
    env: list[dict[str, Any]] = [{"name": "HF_HOME", "value": values.modelCache.mountPath}]
    if values.hfToken.secretName:
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
            "name": values.hfToken.secretName, "key": values.hfToken.secretKey, "optional": values.hfToken.optional}}})
    c["env"] = env + copy.deepcopy(values.env)
    gpu = {values.gpu.resource: str(values.gpusPerNode)}
    c["resources"] = {"requests": {**gpu, **values.resources.requests}, "limits": {**gpu, **values.resources.limits}}
    mounts = [{"name": "model-cache", "mountPath": values.modelCache.mountPath}]
    if values.shm.enabled:
        mounts.append({"name": "shm", "mountPath": "/dev/shm"})
    c["volumeMounts"] = mounts
    if role != "worker":
        c["startupProbe"] = _probe(values, "startup")
        c["readinessProbe"] = _probe(values, "readiness")
        c["livenessProbe"] = _probe(values, "liveness")
    if values.securityContext:
        c["securityContext"] = copy.deepcopy(values.securityContext)
    return c


def _pod_template(values: ChartValues, release: str, name: str, role: str) -> dict[str, Any]:
    labels = _selector_labels(release)
    if role != "server":
        labels["role"] = role
    labels.update(values.podLabels)
    meta: dict[str, Any] = {"labels": labels}
    if values.podAnnotations:
        meta["annotations"] = dict(values.podAnnotations)
    spec: dict[str, Any] = {}
    if values.imagePullSecrets:
        spec["imagePullSecrets"] = [s.model_dump() for s in values.imagePullSecrets]
    # the planned GPU: one product -> nodeSelector, several -> required node affinity (In); a
    # nodeSelector value replaces both, a nodeAffinity value replaces the affinity
    selector = dict(values.nodeSelector)
    affinity = copy.deepcopy(values.affinity)
    products = values.gpu.products
    if not selector and len(products) == 1:
        selector = {values.gpu.productLabel: products[0]}
    elif not values.nodeSelector and len(products) > 1 and "nodeAffinity" not in affinity:
        term = {"matchExpressions": [{"key": values.gpu.productLabel, "operator": "In", "values": list(products)}]}
        affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    if selector:
        spec["nodeSelector"] = selector
    if values.tolerations:
        spec["tolerations"] = copy.deepcopy(values.tolerations)
    if affinity:
        spec["affinity"] = affinity
    if values.podSecurityContext:
        spec["securityContext"] = copy.deepcopy(values.podSecurityContext)
    spec["containers"] = [_container(values, role)]
    p = values.modelCache.persistence
    volumes: list[dict[str, Any]] = []
    if p.existingClaim:
        volumes.append({"name": "model-cache", "persistentVolumeClaim": {"claimName": p.existingClaim}})
    elif p.enabled and values.nodes == 1:
        volumes.append({"name": "model-cache", "persistentVolumeClaim": {"claimName": f"{name}-model-cache"}})
    elif not p.enabled:
        volumes.append({"name": "model-cache", "emptyDir": {}})
    if values.shm.enabled:
        volumes.append({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": values.shm.sizeLimit}})
    spec["volumes"] = volumes
    return {"metadata": meta, "spec": spec}


def _claim_spec(values: ChartValues) -> dict[str, Any]:
    p = values.modelCache.persistence
    spec: dict[str, Any] = {"accessModes": list(p.accessModes), "resources": {"requests": {"storage": p.size}}}
    if p.storageClass:
        spec["storageClassName"] = p.storageClass
    return spec


def render(values: ChartValues, release: str) -> list[dict[str, Any]]:
    """The chart's objects for these values and release name, in Helm's install order.

    `values` are what the templates see: the user's values merged over the chart's defaults (maps
    key by key), which is what chart_values() builds."""
    name = _trunc(values.fullnameOverride or release, 52)
    labels = _labels(values, release)
    p = values.modelCache.persistence
    out: list[dict[str, Any]] = []
    if p.enabled and not p.existingClaim and values.nodes == 1:
        out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": f"{name}-model-cache", "labels": dict(labels)}, "spec": _claim_spec(values)})
    selector = _selector_labels(release)
    if values.nodes > 1:
        selector["role"] = "leader"
    out.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": dict(labels)},
                "spec": {"type": values.service.type, "selector": selector,
                         "ports": [{"name": "http", "port": values.service.port, "targetPort": "http",
                                    "protocol": "TCP"}]}})
    if values.nodes == 1:
        spec: dict[str, Any] = {"replicas": values.replicaCount}
        if values.strategy:
            spec["strategy"] = copy.deepcopy(values.strategy)
        spec["selector"] = {"matchLabels": _selector_labels(release)}
        spec["template"] = _pod_template(values, release, name, "server")
        out.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
                    "spec": spec})
        return out
    group: dict[str, Any] = {"size": values.nodes, "restartPolicy": values.multiNode.restartPolicy,
                             "leaderTemplate": _pod_template(values, release, name, "leader"),
                             "workerTemplate": _pod_template(values, release, name, "worker")}
    if p.enabled and not p.existingClaim:
        group["volumeClaimTemplates"] = [{"metadata": {"name": "model-cache"}, "spec": _claim_spec(values)}]
    out.append({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                "metadata": {"name": name, "labels": labels},
                "spec": {"replicas": values.replicaCount, "startupPolicy": "LeaderCreated",
                         "leaderWorkerTemplate": group}})
    return out


# ---- YAML at the edge ---------------------------------------------------------------------------

class _Dumper(yaml.SafeDumper):
    """Block style, no anchors or aliases (a value used twice is written twice)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(*docs: Any) -> str:
    """Deterministic YAML: keys in insertion order, block style, no aliases; documents joined by ---."""
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True,
                         width=1 << 20, explicit_start=len(docs) > 1)
