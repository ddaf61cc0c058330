"""PlanResult -> plain Kubernetes objects (a Deployment and a Service, or a LeaderWorkerSet and a
Service), and the deterministic YAML every emitter is written with.

`render()` is the Python twin of charts/vllm/templates: the same chart values give the same objects
that `helm template` renders, less Helm's own labels (tests/test_chart.py renders both and compares).
Pure: objects are plain dicts; YAML only in `to_yaml()`.
"""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import yaml

from configurator.emit.helm import DeployOptions, chart_values, default_name
from configurator.emit.values_model import CHART_NAME, ChartValues, flag_rows
from configurator.startup import progress_deadline_s

if TYPE_CHECKING:
    from configurator.plan_result import PlanResult

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
    if values.envFrom:
        c["envFrom"] = copy.deepcopy(values.envFrom)
    gpu = {values.gpu.resource: str(values.gpusPerNode)}
    c["resources"] = {"requests": {**gpu, **values.resources.requests}, "limits": {**gpu, **values.resources.limits}}
    mounts = [{"name": "model-cache", "mountPath": values.modelCache.mountPath}]
    if values.shm.enabled:
        mounts.append({"name": "shm", "mountPath": "/dev/shm"})
    c["volumeMounts"] = mounts + copy.deepcopy(values.extraVolumeMounts)
    if values.lifecycle:
        c["lifecycle"] = copy.deepcopy(values.lifecycle)
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
    if values.serviceAccountName:
        spec["serviceAccountName"] = values.serviceAccountName
    if values.runtimeClassName:
        spec["runtimeClassName"] = values.runtimeClassName
    if values.priorityClassName:
        spec["priorityClassName"] = values.priorityClassName
    if values.terminationGracePeriodSeconds is not None:
        spec["terminationGracePeriodSeconds"] = values.terminationGracePeriodSeconds
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
    if values.topologySpreadConstraints:
        spec["topologySpreadConstraints"] = copy.deepcopy(values.topologySpreadConstraints)
    if values.podSecurityContext:
        spec["securityContext"] = copy.deepcopy(values.podSecurityContext)
    if values.initContainers:
        spec["initContainers"] = copy.deepcopy(values.initContainers)
    spec["containers"] = [_container(values, role), *copy.deepcopy(values.extraContainers)]
    p = values.modelCache.persistence
    volumes: list[dict[str, Any]] = []
    if p.existingClaim:
        volumes.append({"name": "model-cache", "persistentVolumeClaim": {"claimName": p.existingClaim}})
    elif p.enabled and values.nodes == 1:
        volumes.append({"name": "model-cache", "persistentVolumeClaim": {"claimName": f"{name}-model-cache"}})
    elif not p.enabled:
        volumes.append({"name": "model-cache", "emptyDir": {"sizeLimit": values.modelCache.sizeLimit}})
    if values.shm.enabled:
        volumes.append({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": values.shm.sizeLimit}})
    spec["volumes"] = volumes + copy.deepcopy(values.extraVolumes)
    return {"metadata": meta, "spec": spec}


def _claim_spec(values: ChartValues) -> dict[str, Any]:
    p = values.modelCache.persistence
    spec: dict[str, Any] = {"accessModes": list(p.accessModes), "resources": {"requests": {"storage": p.size}}}
    if p.storageClass:
        spec["storageClassName"] = p.storageClass
    return spec


def progress_deadline(values: ChartValues) -> int:
    """progressDeadlineSeconds of the Deployment: the value, else the start-up budget the startup
    probe allows plus the rollout margin (configurator.startup.progress_deadline_s)."""
    if values.progressDeadlineSeconds is not None:
        return values.progressDeadlineSeconds
    startup = values.probes.startup
    return progress_deadline_s(startup.failureThreshold * startup.periodSeconds)


def _scale_target(values: ChartValues, name: str) -> dict[str, str]:
    if values.nodes == 1:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": name}


def _go_quote(text: str) -> str:
    """Go's %q for the strings a query holds (JSON's escaping, non-ASCII kept as is)."""
    return json.dumps(text, ensure_ascii=False)


def _autoscalers(values: ChartValues, name: str, labels: dict[str, str], namespace: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    a = values.autoscaling
    if a.enabled:
        spec: dict[str, Any] = {
            "scaleTargetRef": _scale_target(values, name), "minReplicas": a.minReplicas, "maxReplicas": a.maxReplicas,
            "metrics": [{"type": "Pods", "pods": {"metric": {"name": a.metric},
                                                  "target": {"type": "AverageValue", "averageValue": a.averageValue}}}]}
        if a.behavior:
            spec["behavior"] = copy.deepcopy(a.behavior)
        out.append({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                    "metadata": {"name": name, "labels": dict(labels)}, "spec": spec})
    k = values.keda
    if k.enabled:
        # vLLM labels its metrics model_name = the served model name (vllm/v1/metrics/loggers.py, 0.33)
        served = values.model.servedModelName or values.model.name
        query = k.query or (f"sum(vllm:num_requests_waiting{{namespace={_go_quote(namespace)}, "
                            f"model_name={_go_quote(served)}}})")
        out.append({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
                    "metadata": {"name": name, "labels": dict(labels)},
                    "spec": {"scaleTargetRef": _scale_target(values, name), "minReplicaCount": k.minReplicaCount,
                             "maxReplicaCount": k.maxReplicaCount, "pollingInterval": k.pollingInterval,
                             "cooldownPeriod": k.cooldownPeriod,
                             "triggers": [{"type": "prometheus", "metadata": {
                                 "serverAddress": k.serverAddress, "query": query, "threshold": k.threshold}}]}})
    return out


def _monitors(values: ChartValues, release: str, name: str, labels: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kind, endpoints, m in (("ServiceMonitor", "endpoints", values.metrics.serviceMonitor),
                               ("PodMonitor", "podMetricsEndpoints", values.metrics.podMonitor)):
        if m.enabled:
            out.append({"apiVersion": "monitoring.coreos.com/v1", "kind": kind,
                        "metadata": {"name": name, "labels": {**labels, **m.labels}},
                        "spec": {"selector": {"matchLabels": _selector_labels(release)},
                                 endpoints: [{"port": "http", "path": "/metrics", "interval": m.interval}]}})
    return out


def render(values: ChartValues, release: str, namespace: str = "default") -> list[dict[str, Any]]:
    """The chart's objects for these values and release name, in Helm's install order (its known
    kinds first, then custom resources by kind).

    `values` are what the templates see: the user's values merged over the chart's defaults (maps
    key by key), which is what chart_values() builds."""
    name = _trunc(values.fullnameOverride or release, 52)
    labels = _labels(values, release)
    p = values.modelCache.persistence
    out: list[dict[str, Any]] = []
    pdb = values.podDisruptionBudget
    if pdb.enabled:
        budget = {"minAvailable": pdb.minAvailable} if pdb.minAvailable is not None else \
            {"maxUnavailable": pdb.maxUnavailable}
        out.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": name, "labels": dict(labels)},
                    "spec": {**budget, "selector": {"matchLabels": _selector_labels(release)}}})
    if p.enabled and not p.existingClaim and values.nodes == 1:
        out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": f"{name}-model-cache", "labels": dict(labels)}, "spec": _claim_spec(values)})
    selector = _selector_labels(release)
    if values.nodes > 1:
        selector["role"] = "leader"
    service_meta: dict[str, Any] = {"name": name, "labels": dict(labels)}
    if values.service.annotations:
        service_meta["annotations"] = dict(values.service.annotations)
    out.append({"apiVersion": "v1", "kind": "Service", "metadata": service_meta,
                "spec": {"type": values.service.type, "selector": selector,
                         "ports": [{"name": "http", "port": values.service.port, "targetPort": "http",
                                    "protocol": "TCP"}]}})
    autoscaled = values.autoscaling.enabled or values.keda.enabled  # the autoscaler owns the replicas
    custom = _monitors(values, release, name, labels)
    if values.nodes == 1:
        spec: dict[str, Any] = {} if autoscaled else {"replicas": values.replicaCount}
        spec["progressDeadlineSeconds"] = progress_deadline(values)
        if values.strategy:
            spec["strategy"] = copy.deepcopy(values.strategy)
        spec["selector"] = {"matchLabels": _selector_labels(release)}
        spec["template"] = _pod_template(values, release, name, "server")
        out.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
                    "spec": spec})
        autoscalers = _autoscalers(values, name, labels, namespace)
        out += [o for o in autoscalers if o["kind"] == "HorizontalPodAutoscaler"]
        return out + sorted(custom + [o for o in autoscalers if o["kind"] != "HorizontalPodAutoscaler"],
                            key=lambda o: o["kind"])
    group: dict[str, Any] = {"size": values.nodes, "restartPolicy": values.multiNode.restartPolicy,
                             "leaderTemplate": _pod_template(values, release, name, "leader"),
                             "workerTemplate": _pod_template(values, release, name, "worker")}
    if p.enabled and not p.existingClaim:
        group["volumeClaimTemplates"] = [{"metadata": {"name": "model-cache"}, "spec": _claim_spec(values)}]
    lws: dict[str, Any] = {} if autoscaled else {"replicas": values.replicaCount}
    autoscalers = _autoscalers(values, name, labels, namespace)
    out += [o for o in autoscalers if o["kind"] == "HorizontalPodAutoscaler"]
    custom.append({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                   "metadata": {"name": name, "labels": labels},
                   "spec": {**lws, "startupPolicy": "LeaderCreated", "leaderWorkerTemplate": group}})
    return out + sorted(custom + [o for o in autoscalers if o["kind"] != "HorizontalPodAutoscaler"],
                        key=lambda o: o["kind"])


# ---- YAML at the edge ---------------------------------------------------------------------------

class _Dumper(yaml.SafeDumper):
    """Block style, no anchors or aliases (a value used twice is written twice)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(*docs: Any) -> str:
    """Deterministic YAML: keys in insertion order, block style, no aliases; documents joined by ---."""
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True,
                         width=1 << 20, explicit_start=len(docs) > 1)
