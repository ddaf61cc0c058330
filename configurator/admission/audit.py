"""`audit`: the workloads of a live cluster, checked like `check` checks files.

Reads workloads with the `kubernetes` client (imported only here), finds the nodes their pods run on
and takes the GPU type from those nodes' labels (stated to the engine as the
`vllm-configurator.io/gpu` annotation), then runs the same `evaluate`.
"""

from __future__ import annotations

import json
import os
from typing import Any

from configurator.errors import InputError
from configurator.hardware.labels import gpu_from_labels
from configurator.lint.engine import GPU_ANNOTATION, CheckReport, Options, evaluate
from configurator.lint.load import Document

# (API group/version path, plural, kind); CRDs that are not installed are skipped
RESOURCES = (
    ("apis/apps/v1", "deployments", "Deployment"), ("apis/apps/v1", "statefulsets", "StatefulSet"),
    ("apis/apps/v1", "daemonsets", "DaemonSet"), ("apis/batch/v1", "jobs", "Job"),
    ("apis/batch/v1", "cronjobs", "CronJob"), ("api/v1", "pods", "Pod"),
    ("apis/leaderworkerset.x-k8s.io/v1", "leaderworkersets", "LeaderWorkerSet"),
    ("apis/serving.kserve.io/v1beta1", "inferenceservices", "InferenceService"),
    ("apis/serving.kserve.io/v1alpha1", "servingruntimes", "ServingRuntime"),
)


def _client(context: str | None, in_cluster: bool) -> Any:
    try:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException
    except ImportError:
        raise InputError("audit needs the kubernetes package: pip install 'vllm-configurator[cluster]'") from None
    try:
        if in_cluster:
            config.load_incluster_config()
        else:
            # the client reads KUBECONFIG once at import; read it at call time instead
            config.load_kube_config(config_file=os.environ.get("KUBECONFIG") or None, context=context)
    except (ConfigException, OSError) as e:
        raise InputError(f"cannot load the cluster configuration: {e}") from None
    return client.ApiClient()


def _get(api: Any, url: str) -> tuple[int, bytes]:
    """GET a raw API path with the client's authentication (kubernetes client 30+ and older)."""
    if hasattr(api, "param_serialize"):  # OpenAPI-generator 7 clients (kubernetes >= 30)
        params = api.param_serialize("GET", url, header_params={"Accept": "application/json"},
                                     auth_settings=["BearerToken"])
        resp = api.call_api(*params)
        resp.read()
        return resp.status, resp.data
    from kubernetes.client.exceptions import ApiException

    try:
        resp = api.call_api(url, "GET", response_type=None, auth_settings=["BearerToken"],
                            _preload_content=False, _return_http_data_only=True)
    except ApiException as e:
        return e.status, b""
    return 200, resp.data


def _list(api: Any, path: str, plural: str, namespace: str | None) -> list[dict]:
    url = f"/{path}/namespaces/{namespace}/{plural}" if namespace else f"/{path}/{plural}"
    try:
        status, data = _get(api, url)
    except Exception as e:
        raise InputError(f"cannot reach the API server: {str(e).splitlines()[0]}") from None
    if status in (403, 404):
        return []  # not installed, or not ours to read
    if status >= 400:
        raise InputError(f"the API server answered {status} for {url}")
    return list(json.loads(data).get("items") or [])


def _owned_by_workload(pod: dict) -> bool:
    return bool((pod.get("metadata") or {}).get("ownerReferences"))


def _matches(selector: dict, labels: dict) -> bool:
    ml = (selector or {}).get("matchLabels") or {}
    return bool(ml) and all(labels.get(k) == v for k, v in ml.items())


def collect(api: Any, namespace: str | None) -> list[Document]:
    """Workload objects as documents, each annotated with the GPU its pods' nodes carry."""
    nodes = {(n.get("metadata") or {}).get("name"): (n.get("metadata") or {}).get("labels") or {}
             for n in _list(api, "api/v1", "nodes", None)}
    pods = _list(api, "api/v1", "pods", namespace)
    docs: list[Document] = []
    for path, plural, kind in RESOURCES:
        for obj in _list(api, path, plural, namespace):
            if kind == "Pod" and _owned_by_workload(obj):
                continue
            obj.setdefault("kind", kind)
            meta = obj.setdefault("metadata", {})
            selector = (obj.get("spec") or {}).get("selector") or {}
            mine = [obj] if kind == "Pod" else [
                p for p in pods if (p.get("metadata") or {}).get("namespace") == meta.get("namespace")
                and _matches(selector, (p.get("metadata") or {}).get("labels") or {})]
            node_labels: dict[str, list[str]] = {}
            for p in mine:
                for k, v in nodes.get((p.get("spec") or {}).get("nodeName"), {}).items():
                    node_labels.setdefault(k, []).append(str(v))
            gpu, _source = gpu_from_labels(node_labels)
            if gpu is not None and GPU_ANNOTATION not in (meta.get("annotations") or {}):
                meta.setdefault("annotations", {})[GPU_ANNOTATION] = gpu.name
            name = f"{kind}/{meta.get('namespace') or '-'}/{meta.get('name')}"
            docs.append(Document(file=name, index=0, data=obj, positions={}))
    return docs


def audit(opts: Options, *, context: str | None = None, namespace: str | None = None,
          in_cluster: bool = False) -> CheckReport:
    api = _client(context, in_cluster)
    return evaluate(collect(api, namespace), [], opts)
