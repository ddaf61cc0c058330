"""`audit`: the workloads of a live cluster, checked like `check` checks files.

Reads workloads with the `kubernetes` client (imported only here), finds the nodes their pods run on
and takes the GPU type from those nodes' labels (stated to the engine as the
`vllm-configurator.io/gpu` annotation), then runs the same `evaluate`.

The API server is an input like any other: every request has a connect and a read timeout and a
deadline for the whole answer, retries are bounded (Retry-After honoured up to a cap), every answer is
shape-checked before use, and a refusal (401 / 403, or 404 on a resource every cluster serves) ends the
run with exit 2 naming what was denied: a report missing what could not be read would read as clean.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from typing import Any
from urllib.parse import quote

from configurator.admission.shape import ShapeError, inspect, loads, object_problems
from configurator.errors import InputError
from configurator.hardware.labels import gpu_from_labels
from configurator.lint.engine import GPU_ANNOTATION, CheckReport, Options, evaluate
from configurator.lint.load import Document, Loc, Problem

# (API group/version path, plural, kind); CRDs that are not installed are skipped
RESOURCES = (
    ("apis/apps/v1", "deployments", "Deployment"), ("apis/apps/v1", "statefulsets", "StatefulSet"),
    ("apis/apps/v1", "daemonsets", "DaemonSet"), ("apis/batch/v1", "jobs", "Job"),
    ("apis/batch/v1", "cronjobs", "CronJob"), ("api/v1", "pods", "Pod"),
    ("apis/leaderworkerset.x-k8s.io/v1", "leaderworkersets", "LeaderWorkerSet"),
    ("apis/serving.kserve.io/v1beta1", "inferenceservices", "InferenceService"),
    ("apis/serving.kserve.io/v1alpha1", "servingruntimes", "ServingRuntime"),
)


CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 15.0  # one socket read
ANSWER_TIMEOUT_S = 30.0  # one whole answer, however it trickles
MAX_ANSWER_BYTES = 256 << 20
MAX_ATTEMPTS = 3  # for 429 / 5xx and dropped connections
MAX_RETRY_AFTER_S = 5.0  # Retry-After is honoured up to this; a longer one ends the run
PAGE_SIZE = 500
MAX_PAGES = 1000
# resources every cluster serves: a 404 there is an error, not "not installed"
CORE = {"nodes", "pods", "deployments", "statefulsets", "daemonsets", "jobs", "cronjobs"}


def _client(context: str | None, in_cluster: bool) -> Any:
    try:
        import urllib3
        from kubernetes import client, config
    except ImportError:
        raise InputError("audit needs the kubernetes package: pip install 'vllm-configurator[cluster]'") from None
    conf = client.Configuration()
    try:
        if in_cluster:
            config.load_incluster_config(client_configuration=conf)
        else:
            _check_kubeconfig()
            # the client reads KUBECONFIG once at import; read it at call time instead
            config.load_kube_config(config_file=os.environ.get("KUBECONFIG") or None, context=context,
                                    client_configuration=conf)
    except InputError:
        raise
    except Exception as e:  # the loader raises many types on a malformed file: the boundary is here
        first = (str(e).splitlines() or [""])[0][:300]
        raise InputError(f"cannot load the cluster configuration: {type(e).__name__}: {first}") from None
    # retries are ours (bounded, Retry-After capped): the client's own would sleep as long as told
    conf.retries = urllib3.Retry(total=1, connect=1, read=0, status=0, redirect=0, respect_retry_after_header=False)
    if hasattr(conf, "client_go_retries"):
        conf.client_go_retries = False
    return client.ApiClient(conf)


MAX_KUBECONFIG_BYTES = 16 << 20


def _check_kubeconfig() -> None:
    """Each kubeconfig file the client will read passes safe_io's bounds first: a FIFO, a device or a huge file
    is one line, not a hang or the whole file in memory (the client's loader reads whatever it is given)."""
    from configurator.safe_io import read_file

    for name in (os.environ.get("KUBECONFIG") or "~/.kube/config").split(os.pathsep):
        path = os.path.expanduser(name) if name else ""
        if path and os.path.lexists(path):
            read_file(path, cap=MAX_KUBECONFIG_BYTES, what=f"kubeconfig {path}")


def _raw_get(api: Any, url: str) -> tuple[int, dict, bytes]:
    """GET a raw API path with the client's authentication (kubernetes client 30+ and older)."""
    timeout = (CONNECT_TIMEOUT_S, READ_TIMEOUT_S)
    if hasattr(api, "param_serialize"):  # OpenAPI-generator 7 clients (kubernetes >= 30)
        params = api.param_serialize("GET", url, header_params={"Accept": "application/json"},
                                     auth_settings=["BearerToken"])
        resp = api.call_api(*params, _request_timeout=timeout)
        raw = resp.response
        data = raw.read(MAX_ANSWER_BYTES + 1)
        return resp.status, dict(raw.headers or {}), data
    from kubernetes.client.exceptions import ApiException

    try:
        resp = api.call_api(url, "GET", response_type=None, auth_settings=["BearerToken"], _preload_content=False,
                            _return_http_data_only=True, _request_timeout=timeout)
    except ApiException as e:
        return e.status, dict(e.headers or {}), b""
    return 200, {}, resp.read(MAX_ANSWER_BYTES + 1)


def _get_within(api: Any, url: str, deadline_s: float) -> tuple[int, dict, bytes]:
    """_raw_get in a daemon thread, abandoned after `deadline_s` (a server that trickles forever)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["answer"] = _raw_get(api, url)
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=run, daemon=True, name="audit-get")
    t.start()
    t.join(deadline_s)
    if t.is_alive():
        raise InputError(f"the API server did not answer {url} within {deadline_s:g} s")
    if "error" in box:
        e = box["error"]
        raise InputError(f"cannot reach the API server: {type(e).__name__}: "
                         f"{(str(e).splitlines() or [''])[0][:300]}") from None
    return box["answer"]


def _retry_after(headers: dict) -> float:
    value = next((v for k, v in headers.items() if str(k).lower() == "retry-after"), "1")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = 1.0  # an HTTP date or garbage: a short wait, not a parse of the server's clock
    return seconds if seconds == seconds and seconds >= 0 else 1.0


def _get(api: Any, url: str, left_s: float | None = None) -> tuple[int, bytes]:
    """GET with bounded retries on 429 / 5xx; Retry-After honoured only up to MAX_RETRY_AFTER_S. An answer
    is waited on ANSWER_TIMEOUT_S at most, and never past what is `left_s` of the run's deadline."""
    for attempt in range(1, MAX_ATTEMPTS + 1):
        wait_s = ANSWER_TIMEOUT_S if left_s is None else max(0.1, min(ANSWER_TIMEOUT_S, left_s))
        status, headers, data = _get_within(api, url, wait_s)
        if status in (429, 500, 502, 503, 504) and attempt < MAX_ATTEMPTS:
            wait = _retry_after(headers)
            if wait > MAX_RETRY_AFTER_S:
                raise InputError(f"the API server answered {status} for {url} and asks to retry after "
                                 f"{wait:g} s (more than the {MAX_RETRY_AFTER_S:g} s this waits)")
            time.sleep(wait)
            continue
        return status, data
    raise AssertionError("unreachable")  # pragma: no cover


def _items(url: str, data: bytes) -> tuple[list[dict], str | None]:
    """A list answer's items and continue token, shape-checked; one InputError line otherwise."""
    if len(data) > MAX_ANSWER_BYTES:
        raise InputError(f"the API server's answer for {url} is larger than {MAX_ANSWER_BYTES >> 20} MiB")
    try:
        body = loads(data)
    except ShapeError as e:
        raise InputError(f"the API server's answer for {url} is {e}") from None
    if not isinstance(body, dict):
        raise InputError(f"the API server's answer for {url} is not a Kubernetes list (not an object)")
    items = body.get("items")
    if items is None:
        items = []
    if not isinstance(items, list):
        raise InputError(f"the API server's answer for {url} is not a Kubernetes list (items is not a list)")
    for i, item in enumerate(items):
        problems = object_problems(item) if isinstance(item, dict) else ["not an object"]
        shape = inspect(item) if isinstance(item, dict) else None
        if shape is not None and not shape.ok:
            problems = shape.problems
        if not problems and not isinstance(item.get("spec", {}), dict):
            problems = ["spec is not a map"]
        if problems:
            raise InputError(f"the API server's answer for {url} is malformed: items[{i}]: {problems[0]}")
    meta = body.get("metadata")
    token = meta.get("continue") if isinstance(meta, dict) else None
    return items, token if isinstance(token, str) and token else None


def _list(api: Any, path: str, plural: str, namespace: str | None, deadline: _Deadline | None = None) -> list[dict]:
    url = f"/{path}/namespaces/{namespace}/{plural}" if namespace else f"/{path}/{plural}"
    what = f"list {plural}" + (f" in namespace {namespace}" if namespace else " in all namespaces")
    out: list[dict] = []
    token: str | None = None
    for _page in range(MAX_PAGES):
        query = f"?limit={PAGE_SIZE}" + (f"&continue={quote(token)}" if token else "")
        if deadline is not None:
            deadline.check(f"listing {plural}")
        status, data = _get(api, url + query, deadline.left() if deadline is not None else None)
        if status == 404 and plural not in CORE:
            return []  # an optional resource whose CRD is not installed
        if status in (401, 403):
            raise InputError(f"the API server refused to {what} ({status} "
                             f"{'Unauthorized' if status == 401 else 'Forbidden'}): audit needs get/list on "
                             f"{plural}; no report, since a partial one would read as clean")
        if status == 404:
            raise InputError(f"the API server has no {url} (404): is this a Kubernetes API server?")
        if status >= 400 or status < 200:
            raise InputError(f"the API server answered {status} for {url}")
        items, token = _items(url, data)
        out += items
        if token is None:
            return out
    raise InputError(f"the API server's list of {plural} did not end after {MAX_PAGES} pages")


def _map(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def _owned_by_workload(pod: dict) -> bool:
    return bool(_map(pod.get("metadata")).get("ownerReferences"))


def _requirements(selector: Any) -> list[tuple[str, str, frozenset[str]]] | None:
    """A LabelSelector as (key, operator, values) requirements, matchLabels as `In` of one value; None for a
    selector that selects nothing (null, not a map, or an operator Kubernetes does not know). An empty selector
    ({}) has no requirements and selects everything (metav1.LabelSelectorAsSelector)."""
    if not isinstance(selector, dict):
        return None
    reqs = [(str(k), "In", frozenset((str(v),))) for k, v in _map(selector.get("matchLabels")).items()]
    exprs = selector.get("matchExpressions") or []
    if not isinstance(exprs, list):
        return None
    for e in exprs:
        e = _map(e)
        op, key, values = e.get("operator"), e.get("key"), e.get("values") or []
        if op not in ("In", "NotIn", "Exists", "DoesNotExist") or not isinstance(key, str) \
                or not isinstance(values, list):
            return None
        reqs.append((key, op, frozenset(str(v) for v in values)))
    return reqs


def _matches(selector: Any, labels: dict) -> bool:
    """Whether a LabelSelector selects these labels, as Kubernetes evaluates one: every requirement holds
    (In: the key is set to one of the values; NotIn: it is unset or set to none of them; Exists / DoesNotExist)."""
    reqs = _requirements(selector)
    return reqs is not None and all(_holds(r, labels) for r in reqs)


def _holds(req: tuple[str, str, frozenset[str]], labels: dict) -> bool:
    key, op, values = req
    if op == "In":
        return key in labels and str(labels[key]) in values
    if op == "NotIn":
        return key not in labels or str(labels[key]) not in values
    return (key in labels) == (op == "Exists")


class PodIndex:
    """The pods of a listing, indexed once by namespace and label (and by owner uid), so that finding a
    workload's pods costs the pods that could match it, not every pod: audit is linear in objects."""

    def __init__(self, pods: list[dict]):
        self.by_ns: dict[Any, list[int]] = {}
        self.by_label: dict[tuple[Any, str, str], list[int]] = {}
        self.by_key: dict[tuple[Any, str], list[int]] = {}
        self.by_owner: dict[str, list[int]] = {}
        self.labels: list[dict] = []
        self.pods = pods
        for i, p in enumerate(pods):
            meta = _map(p.get("metadata"))
            ns = meta.get("namespace")
            labels = _map(meta.get("labels"))
            self.labels.append(labels)
            self.by_ns.setdefault(ns, []).append(i)
            for k, v in labels.items():
                self.by_label.setdefault((ns, str(k), str(v)), []).append(i)
                self.by_key.setdefault((ns, str(k)), []).append(i)
            for ref in meta.get("ownerReferences") or []:
                uid = _map(ref).get("uid")
                if isinstance(uid, str) and uid:
                    self.by_owner.setdefault(uid, []).append(i)

    def _candidates(self, ns: Any, reqs: list[tuple[str, str, frozenset[str]]]) -> list[int]:
        """The smallest index list that holds every pod the requirements can select."""
        best = self.by_ns.get(ns, [])
        for key, op, values in reqs:
            if op == "In":
                found = sorted({i for v in values for i in self.by_label.get((ns, key, v), ())})
            elif op == "Exists":
                found = self.by_key.get((ns, key), [])
            else:
                continue
            if len(found) < len(best):
                best = found
        return best

    def owned_or_selected(self, obj: dict) -> list[dict]:
        """A workload's pods: those whose ownerReferences name its uid (StatefulSet, DaemonSet, Job,
        LeaderWorkerSet), else those its selector selects in its namespace (a Deployment's pods belong to
        its ReplicaSets, which are not listed)."""
        meta = _map(obj.get("metadata"))
        uid = meta.get("uid")
        if isinstance(uid, str) and uid in self.by_owner:
            return [self.pods[i] for i in self.by_owner[uid]]
        reqs = _requirements(_map(obj.get("spec")).get("selector"))
        if reqs is None or not reqs:  # none, or an empty selector: all pods of the namespace is no one's in practice
            return []
        ns = meta.get("namespace")
        return [self.pods[i] for i in self._candidates(ns, reqs) if all(_holds(r, self.labels[i]) for r in reqs)]


class _Deadline:
    """The whole run's time limit (--deadline): checked before each request and between evaluation batches."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.end = None if seconds is None else time.monotonic() + seconds

    def left(self) -> float | None:
        return None if self.end is None else self.end - time.monotonic()

    def check(self, doing: str) -> None:
        left = self.left()
        if left is not None and left <= 0:
            raise InputError(f"audit stopped: its --deadline of {self.seconds:g} s passed while {doing}; no report, "
                             "since a partial one would read as clean (raise --deadline, or audit one namespace)")


_NO_DEADLINE = _Deadline(None)


def collect(api: Any, namespace: str | None, deadline: _Deadline = _NO_DEADLINE) -> list[Document]:
    """Workload objects as documents, each annotated with the GPU its pods' nodes carry.
    Every answer has been shape-checked by `_items` (maps are maps, labels map strings to strings)."""
    nodes: dict[str, dict] = {}
    for n in _list(api, "api/v1", "nodes", None, deadline):
        meta = _map(n.get("metadata"))
        if isinstance(meta.get("name"), str):
            nodes[meta["name"]] = _map(meta.get("labels"))
    pods = PodIndex(_list(api, "api/v1", "pods", namespace, deadline))
    docs: list[Document] = []
    for path, plural, kind in RESOURCES:
        for obj in _list(api, path, plural, namespace, deadline):
            if kind == "Pod" and _owned_by_workload(obj):
                continue
            if not isinstance(obj.get("kind"), str):
                obj["kind"] = kind
            if not isinstance(obj.get("metadata"), dict):
                obj["metadata"] = {}
            meta = obj["metadata"]
            mine = [obj] if kind == "Pod" else pods.owned_or_selected(obj)
            node_labels: dict[str, list[str]] = {}
            for p in mine:
                node = _map(p.get("spec")).get("nodeName")
                for k, v in (nodes.get(node, {}) if isinstance(node, str) else {}).items():
                    node_labels.setdefault(k, []).append(str(v))
            gpu, _source = gpu_from_labels(node_labels)
            if gpu is not None and GPU_ANNOTATION not in _map(meta.get("annotations")):
                if not isinstance(meta.get("annotations"), dict):
                    meta["annotations"] = {}
                meta["annotations"][GPU_ANNOTATION] = gpu.name
            name = f"{kind}/{meta.get('namespace') or '-'}/{meta.get('name')}"
            docs.append(Document(file=name, index=0, data=obj, positions={}))
    return docs


DEFAULT_DEADLINE_S = 300.0
EVALUATE_BATCH = 500  # workloads evaluated between two looks at the deadline


def audit(opts: Options, *, context: str | None = None, namespace: str | None = None,
          in_cluster: bool = False, deadline_s: float | None = DEFAULT_DEADLINE_S) -> CheckReport:
    """The cluster's workloads, evaluated as `check` would, with its model lookup (configurator.model.resolver:
    a model path a workload names is a path on the cluster's nodes, never opened here). The whole run stops
    with one InputError line once `deadline_s` has passed (listing, or between batches of evaluation)."""
    deadline = _Deadline(deadline_s)
    api = _client(context, in_cluster)
    docs = collect(api, namespace, deadline)
    if len(docs) <= EVALUATE_BATCH:
        deadline.check("evaluating the workloads")
        return _evaluate(docs, opts)
    parts = []
    for start in range(0, len(docs), EVALUATE_BATCH):
        deadline.check(f"evaluating the workloads ({start:,} of {len(docs):,} done)")
        parts.append(_evaluate(docs[start:start + EVALUATE_BATCH], opts))
    return _merge(parts)


def _merge(parts: list[CheckReport]) -> CheckReport:
    """One report of several evaluated apart (audit's documents are independent workloads)."""
    from configurator.lint.engine import Summary, _order

    findings = sorted((f for r in parts for f in r.findings), key=_order)
    suppressed = sorted((f for r in parts for f in r.suppressed), key=_order)
    summary = Summary(**{f.name: sum(getattr(r.summary, f.name) for r in parts if r.summary is not None)
                         for f in dataclasses.fields(Summary)})
    return CheckReport(findings=findings, suppressed=suppressed, servers=[s for r in parts for s in r.servers],
                       files=sum(r.files for r in parts), summary=summary)


def _evaluate(docs: list[Document], opts: Options) -> CheckReport:
    try:
        return evaluate(docs, [], opts)
    except Exception:  # one object the rules cannot read must not cost the report on the others
        good: list[Document] = []
        problems: list[Problem] = []
        for d in docs:
            try:
                evaluate([d], [], opts)
                good.append(d)
            except Exception as e:
                problems.append(Problem(Loc(d.file, 1), f"not checked: the object could not be read "
                                                        f"({type(e).__name__})"))
        return evaluate(good, problems, opts)
