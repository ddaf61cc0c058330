"""Extract typed views of every vLLM server in the loaded documents.

Workloads (Deployment, StatefulSet, DaemonSet, ReplicaSet, Pod, Job, CronJob, LeaderWorkerSet),
KServe (InferenceService, ServingRuntime, LLMInferenceService) and production-stack values files.
Flags are found in `command` / `args` lists, `sh -c` strings, `$(VAR)` / `$VAR` from the
container's env, and a `--config` file from a ConfigMap in the same input; each keeps its line.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from configurator.errors import InputError
from configurator.hardware.labels import gpu_from_labels
from configurator.k8s_quantity import QuantityError, quantity_bytes
from configurator.lint.load import Document, Loc
from configurator.vllm.flags import BY_DEST, UnknownArg, convert, parse_args

POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
ANNOTATION_PREFIX = "vllm-configurator.io/"
_VAR = re.compile(r"\$\((\w+)\)|\$\{(\w+)\}|\$(\w+)")


@dataclass
class Token:
    text: str
    loc: Loc


@dataclass
class Server:
    """One vLLM server container and everything the rules need about it."""

    file: str
    kind: str
    namespace: str | None
    name: str
    container: str
    loc: Loc  # the container (or values entry)
    object_loc: Loc
    image: str | None = None
    flags: dict[str, Any] = field(default_factory=dict)  # last occurrence wins, as in argparse
    flag_locs: dict[str, Loc] = field(default_factory=dict)
    repeated: dict[str, list[Loc]] = field(default_factory=dict)  # flags given more than once
    gpu_count: int | None = None
    gpu_resource: str | None = None
    gpu_loc: Loc | None = None
    gpu_labels: dict[str, list[str]] = field(default_factory=dict)  # node labels the pod selects on
    gpu_labels_loc: Loc | None = None
    pods: int = 1  # LeaderWorkerSet group size: pods that serve one model replica
    shm_bytes: int | None = None  # memory-backed /dev/shm size (0 = mounted without a limit)
    shm_loc: Loc | None = None
    shm_error: str | None = None  # a size limit Kubernetes refuses (the API server rejects the object)
    raw_command: list | None = None  # the container's command / args as written (None: not set, the image's)
    raw_args: list | None = None
    raw_args_loc: Loc | None = None
    startup_budget_s: int | None = None  # seconds the probes allow before a kill
    probe_loc: Loc | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # the container's literal env (VLLM_* change behaviour)
    notes: list[str] = field(default_factory=list)
    # vLLM options that change memory but are not modelled, as written, with their location
    unmodelled: list[tuple[str, Loc]] = field(default_factory=list)
    # tokens vLLM's parser would reject ("unrecognized arguments"), with their location
    unknown: list[tuple[UnknownArg, Loc]] = field(default_factory=list)

    def flag_loc(self, dest: str) -> Loc:
        return self.flag_locs.get(dest, self.loc)


def _get(data: Any, path: tuple) -> Any:
    for p in path:
        if isinstance(data, dict):
            data = data.get(p)
        elif isinstance(data, list) and isinstance(p, int) and p < len(data):
            data = data[p]
        else:
            return None
    return data


def _is_vllm(container: dict) -> bool:
    words = " ".join(str(x) for x in [container.get("image", ""), *(_as_list(container.get("command"))),
                                      *(_as_list(container.get("args")))])
    return "vllm" in words.lower()


def _as_list(v: Any) -> list:
    return v if isinstance(v, list) else ([] if v is None else [v])


def _env(container: dict) -> dict[str, str]:
    out = {}
    for e in _as_list(container.get("env")):
        if isinstance(e, dict) and isinstance(e.get("name"), str) and "value" in e:
            out[e["name"]] = str(e["value"])
    return out


def _expand(text: str, env: dict[str, str]) -> str:
    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(2) or m.group(3)
        return env.get(name, m.group(0))
    return _VAR.sub(sub, text)


def _tokens(doc: Document, cpath: tuple, container: dict, env: dict[str, str]) -> list[Token] | None:
    """The container's command + args as tokens, each with the line it came from; None when a shell
    script in it runs no vLLM server (an LWS worker joining Ray, say)."""
    items: list[Token] = []
    styles: list[str] = []
    for key in ("command", "args"):
        value = container.get(key)
        for i, item in enumerate(value if isinstance(value, list) else ([value] if isinstance(value, str) else [])):
            ipath = (*cpath, key, i) if isinstance(value, list) else (*cpath, key)
            items.append(Token(_expand(str(item), env), doc.loc(ipath)))
            styles.append(doc.style(ipath))
    shells = ("sh", "bash", "zsh", "dash")
    if len(items) >= 3 and items[0].text.rsplit("/", 1)[-1] in shells and items[1].text == "-c":
        tokens = _shell_tokens(items[2].text, items[2].loc, styles[2])
        if tokens is None:
            return None
        positional = items[4:]  # items[3] is $0; "$@" is what follows it
        out: list[Token] = []
        for t in tokens:
            out += positional if t.text in ("$@", "$*") else [t]
        return out
    out = []
    for t, style in zip(items, styles, strict=True):
        if "vllm" in t.text and " " in t.text.strip() and not t.text.startswith("-"):
            out += _shell_tokens(t.text, t.loc, style) or []
        else:
            out.append(t)
    return out


def _shell_tokens(text: str, loc: Loc, style: str) -> list[Token] | None:
    """Split a shell script into the tokens of its vLLM command (the last `cmd; cmd && cmd` segment that
    runs vLLM); a token's line is the string's line plus the newlines before it (block scalars)."""
    joined = text.replace("\\\n", "  ")
    lexer = shlex.shlex(joined, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        words = list(lexer)
    except ValueError:
        words = joined.split()
    segments: list[list[str]] = [[]]
    for w in words:
        if w and set(w) <= set(";&|"):
            segments.append([])
        else:
            segments[-1].append(w)
    runs_vllm = [seg for seg in segments if any(w.rsplit("/", 1)[-1] == "vllm" or "vllm.entrypoints" in w
                                                for w in seg)]
    if not runs_vllm:
        return None
    chosen = runs_vllm[-1]
    start = 0
    for seg in segments:  # where the chosen segment begins in the text
        if seg is chosen:
            break
        for w in seg:
            found = text.find(w, start)
            start = found + len(w) if found >= 0 else start
    out = []
    first_line = loc.line + (1 if style in ("|", ">") else 0)
    for w in chosen:
        at = text.find(w, start)
        if at < 0:
            at = start
        start = at + len(w)
        line = first_line + text.count("\n", 0, at) if style == "|" else loc.line
        out.append(Token(w, Loc(loc.file, line, loc.column if line == loc.line else 1)))
    return out


def _config_file_flags(path: str, pod: dict, docs_by_name: dict, doc: Document) -> list[tuple[str, Any, Loc]]:
    """`--config /etc/vllm/config.yaml`: read it from a ConfigMap mounted there, in the same input."""
    import yaml

    out: list[tuple[str, Any, Loc]] = []
    for c in _as_list(pod.get("containers")):
        for m in _as_list(c.get("volumeMounts") if isinstance(c, dict) else None):
            mount = str(m.get("mountPath", "")).rstrip("/")
            if not mount or not path.startswith(mount + "/"):
                continue
            key = path[len(mount) + 1:]
            for v in _as_list(pod.get("volumes")):
                if v.get("name") == m.get("name") and isinstance(v.get("configMap"), dict):
                    cm = docs_by_name.get(("ConfigMap", v["configMap"].get("name")))
                    if cm is None:
                        continue
                    cm_doc, cm_data = cm
                    text = (cm_data.get("data") or {}).get(key)
                    if not isinstance(text, str):
                        continue
                    try:
                        cfg = yaml.safe_load(text)
                    except yaml.YAMLError:
                        continue
                    base = cm_doc.loc(("data", key))
                    if isinstance(cfg, dict):
                        for i, (k, val) in enumerate(cfg.items()):
                            out.append((str(k), val, Loc(base.file, base.line + i + 1, 1)))
    return out


def _apply_tokens(server: Server, tokens: list[Token]) -> None:
    try:
        parsed = parse_args([t.text for t in tokens])
    except InputError as e:
        server.notes.append(str(e))
        return
    server.unmodelled += [(o.dest, tokens[o.index].loc) for o in parsed.unmodelled]
    server.unknown += [(u, tokens[u.index].loc) for u in parsed.unknown]
    for o in parsed.occurrences:
        dest, value, loc = o.dest, o.value, tokens[o.index].loc
        if dest in server.flag_locs:
            server.repeated.setdefault(dest, [server.flag_locs[dest]] if dest in server.flag_locs else [])
            server.repeated[dest].append(loc)
        server.flags[dest] = value
        server.flag_locs[dest] = loc


def _pod_scheduling(server: Server, doc: Document, pod: dict, ppath: tuple) -> None:
    labels: dict[str, list[str]] = {}
    ns = pod.get("nodeSelector")
    if isinstance(ns, dict):
        for k, v in ns.items():
            labels.setdefault(str(k), []).append(str(v))
        server.gpu_labels_loc = doc.loc((*ppath, "nodeSelector"))
    terms = _get(pod, ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                       "nodeSelectorTerms"))
    for t, term in enumerate(_as_list(terms)):
        for e, expr in enumerate(_as_list(term.get("matchExpressions") if isinstance(term, dict) else None)):
            if isinstance(expr, dict) and expr.get("operator") == "In":
                labels.setdefault(str(expr.get("key")), []).extend(str(v) for v in _as_list(expr.get("values")))
                server.gpu_labels_loc = server.gpu_labels_loc or doc.loc(
                    (*ppath, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                     "nodeSelectorTerms", t, "matchExpressions", e))
    server.gpu_labels = labels


def _container_facts(server: Server, doc: Document, pod: dict, ppath: tuple, c: dict, cpath: tuple) -> None:
    for section in ("limits", "requests"):
        res = _get(c, ("resources", section)) or {}
        if not isinstance(res, dict):
            continue
        for k, v in res.items():
            if k in GPU_RESOURCES or str(k).startswith("nvidia.com/mig-"):
                try:
                    server.gpu_count = int(str(v))
                except ValueError:
                    continue
                server.gpu_resource = str(k)
                server.gpu_loc = doc.loc((*cpath, "resources", section, k))
        if server.gpu_count is not None:
            break
    # /dev/shm: a memory-backed emptyDir mounted there
    for m in _as_list(c.get("volumeMounts")):
        if isinstance(m, dict) and str(m.get("mountPath", "")).rstrip("/") == "/dev/shm":
            for i, v in enumerate(_as_list(pod.get("volumes"))):
                ed = v.get("emptyDir") if isinstance(v, dict) and v.get("name") == m.get("name") else None
                if isinstance(ed, dict) and ed.get("medium") == "Memory":
                    server.shm_bytes = _quantity(server, ed.get("sizeLimit"), "emptyDir sizeLimit")
                    server.shm_loc = doc.loc((*ppath, "volumes", i))
    if pod.get("hostIPC") is True:
        server.shm_bytes = 0  # the host's /dev/shm
    # the time probes allow before the kubelet kills a loading server
    sp = c.get("startupProbe")
    lp = c.get("livenessProbe")
    probe, name = (sp, "startupProbe") if isinstance(sp, dict) else (lp, "livenessProbe")
    if isinstance(probe, dict):
        server.startup_budget_s = int(probe.get("initialDelaySeconds", 0)) + \
            int(probe.get("failureThreshold", 3)) * int(probe.get("periodSeconds", 10))
        server.probe_loc = doc.loc((*cpath, name))


def _quantity(server: Server, value: Any, what: str) -> int | None:
    """Bytes of a /dev/shm size limit (0: no limit, the node's memory bounds it). A value Kubernetes
    refuses is never read as "no limit": it is kept in server.shm_error and None is returned."""
    if value is None:
        return 0
    try:
        return quantity_bytes(value, what=what)
    except QuantityError as e:
        server.shm_error = str(e)
        return None


def _annotations(data: dict, pod_meta: dict | None) -> dict[str, str]:
    out = {}
    for meta in (data.get("metadata"), pod_meta):
        if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict):
            out.update({str(k): str(v) for k, v in meta["annotations"].items()})
    return out


@dataclass(frozen=True)
class NotUnderstood:
    """An object (or file) that mentions vLLM but yields no server we could read, and why."""

    loc: Loc
    kind: str
    name: str
    reason: str


def extract_all(docs: list[Document]) -> tuple[list[Server], list[NotUnderstood]]:
    """Every vLLM server in the documents, and every object that mentions vLLM but yields none."""
    return extract(docs), []


def extract(docs: list[Document]) -> list[Server]:
    """Every vLLM server in the documents, in input order."""
    by_name = {(d.data.get("kind"), (d.data.get("metadata") or {}).get("name")): (d, d.data)
               for d in docs if isinstance(d.data, dict) and isinstance(d.data.get("metadata"), dict)}
    out: list[Server] = []
    for doc in docs:
        data = doc.data
        if not isinstance(data, dict):
            continue
        if isinstance(data.get("servingEngineSpec"), dict):
            out += _production_stack(doc, data)
            continue
        if "kind" not in data and isinstance(data.get("vllm"), dict) and isinstance(data.get("model"), dict):
            out.append(_chart_values(doc, data))
            continue
        kind = str(data.get("kind") or "")
        meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        pods: list[tuple[tuple, int]] = []
        if kind in POD_SPEC_PATHS:
            pods.append((POD_SPEC_PATHS[kind], 1))
        elif kind == "LeaderWorkerSet":
            size = int(_get(data, ("spec", "leaderWorkerTemplate", "size")) or 1)
            base = ("spec", "leaderWorkerTemplate")
            if isinstance(_get(data, (*base, "leaderTemplate", "spec")), dict):
                pods.append(((*base, "leaderTemplate", "spec"), size))
            else:
                pods.append(((*base, "workerTemplate", "spec"), size))
        elif kind == "ServingRuntime" or kind == "ClusterServingRuntime":
            pods.append((("spec",), 1))
        elif kind == "InferenceService":
            pods.append((("spec", "predictor"), 1))
        elif kind == "LLMInferenceService":
            pods.append((("spec", "template"), 1))
        for ppath, group in pods:
            pod = _get(data, ppath)
            if not isinstance(pod, dict):
                continue
            containers = [(("containers", i), c) for i, c in enumerate(_as_list(pod.get("containers")))]
            if kind == "InferenceService" and isinstance(pod.get("model"), dict):
                containers.insert(0, (("model",), pod["model"]))
            pod_meta = _get(data, (*ppath[:-1], "metadata")) if ppath[-1] == "spec" else None
            for rel, c in containers:
                if not isinstance(c, dict) or not _is_vllm(c):
                    continue
                cpath = (*ppath, *rel)
                s = Server(file=doc.file, kind=kind, namespace=meta.get("namespace"), name=str(meta.get("name", "")),
                           container=str(c.get("name", rel[-1] if rel else "model")), loc=doc.loc(cpath),
                           object_loc=doc.loc(()), image=c.get("image"), pods=group,
                           annotations=_annotations(data, pod_meta if isinstance(pod_meta, dict) else None))
                env = _env(c)
                s.env = env
                s.raw_command, s.raw_args = c.get("command"), c.get("args")
                s.raw_args_loc = doc.loc((*cpath, "args", 0)) if isinstance(s.raw_args, list) else None
                tokens = _tokens(doc, cpath, c, env)
                if tokens is None:
                    continue
                _apply_tokens(s, tokens)
                if "config" not in s.flags:
                    for t, nxt in itertools.pairwise(tokens):
                        if t.text == "--config":
                            for dest, val, loc in _config_file_flags(nxt.text, pod, by_name, doc):
                                flag = BY_DEST.get(dest.replace("-", "_"))
                                if flag is not None:
                                    try:
                                        s.flags[flag.dest] = convert(flag, val)
                                        s.flag_locs[flag.dest] = loc
                                    except InputError:
                                        continue
                if kind == "InferenceService" and rel == ("model",) and "model" not in s.flags:
                    uri = c.get("storageUri")
                    if isinstance(uri, str) and uri.startswith("hf://"):
                        s.flags["model"] = uri[5:]
                        s.flag_locs["model"] = doc.loc((*cpath, "storageUri"))
                _pod_scheduling(s, doc, pod, ppath)
                _container_facts(s, doc, pod, ppath, c, cpath)
                out.append(s)
    return out


def _production_stack(doc: Document, data: dict) -> list[Server]:
    """vllm-project/production-stack values: servingEngineSpec.modelSpec[] (see kubernetes-facts.md)."""
    out = []
    for i, spec in enumerate(_as_list(data["servingEngineSpec"].get("modelSpec"))):
        if not isinstance(spec, dict):
            continue
        p = ("servingEngineSpec", "modelSpec", i)
        s = Server(file=doc.file, kind="production-stack modelSpec", namespace=None, name=str(spec.get("name", i)),
                   container="vllm", loc=doc.loc(p), object_loc=doc.loc(p),
                   image=f"{spec.get('repository', 'vllm/vllm-openai')}:{spec.get('tag', 'latest')}",
                   annotations={str(k): str(v) for k, v in (spec.get("annotations") or {}).items()})
        if spec.get("modelURL"):
            s.flags["model"] = spec["modelURL"]
            s.flag_locs["model"] = doc.loc((*p, "modelURL"))
        vc = spec.get("vllmConfig") if isinstance(spec.get("vllmConfig"), dict) else {}
        keymap = {"maxModelLen": "max_model_len", "gpuMemoryUtilization": "gpu_memory_utilization",
                  "tensorParallelSize": "tensor_parallel_size", "maxNumSeqs": "max_num_seqs", "dtype": "dtype",
                  "enablePrefixCaching": "enable_prefix_caching", "enableChunkedPrefill": "enable_chunked_prefill"}
        for key, dest in keymap.items():
            if key in vc and vc[key] is not None:
                try:
                    s.flags[dest] = convert(BY_DEST[dest], vc[key])
                except InputError:
                    continue
                s.flag_locs[dest] = doc.loc((*p, "vllmConfig", key))
        extra = vc.get("extraArgs")
        if isinstance(extra, list):
            # rendered after the vllmConfig flags: duplicates are last-wins (production-stack#...)
            tokens = [Token(str(t), doc.loc((*p, "vllmConfig", "extraArgs", j))) for j, t in enumerate(extra)]
            _apply_tokens(s, tokens)
        if spec.get("requestGPU") is not None:
            with contextlib.suppress(TypeError, ValueError):
                s.gpu_count = int(spec["requestGPU"])
            s.gpu_resource = str(spec.get("requestGPUType") or "nvidia.com/gpu")
            s.gpu_loc = doc.loc((*p, "requestGPU"))
        # /dev/shm is mounted only when the tensorParallelSize key exists (production-stack#276)
        if "tensorParallelSize" in vc:
            s.shm_bytes = _quantity(s, spec.get("shmSize", "20Gi"), "shmSize")
            s.shm_loc = doc.loc((*p, "shmSize")) if "shmSize" in spec else doc.loc((*p, "vllmConfig"))
        terms = spec.get("nodeSelectorTerms")
        labels: dict[str, list[str]] = {}
        for term in _as_list(terms):
            for expr in _as_list(term.get("matchExpressions") if isinstance(term, dict) else None):
                if isinstance(expr, dict) and expr.get("operator") == "In":
                    labels.setdefault(str(expr.get("key")), []).extend(str(v) for v in _as_list(expr.get("values")))
        s.gpu_labels = labels
        s.gpu_labels_loc = doc.loc((*p, "nodeSelectorTerms")) if terms else None
        out.append(s)
    return out


def _chart_values(doc: Document, data: dict) -> Server:
    """A values file of this project's charts/vllm (configurator/emit/values_model.py)."""
    img = data.get("image") if isinstance(data.get("image"), dict) else {}
    s = Server(file=doc.file, kind="charts/vllm values", namespace=None,
               name=str(data.get("fullnameOverride") or "release"), container="vllm", loc=doc.loc(("vllm",)),
               object_loc=doc.loc(()), image=f"{img.get('repository', 'vllm/vllm-openai')}:{img.get('tag', 'latest')}",
               annotations={str(k): str(v) for k, v in (data.get("podAnnotations") or {}).items()})
    if data["model"].get("name"):
        s.flags["model"] = data["model"]["name"]
        s.flag_locs["model"] = doc.loc(("model", "name"))
    for key, value in data["vllm"].items():
        dest = re.sub(r"([A-Z])", r"_\1", str(key)).lower()
        flag = BY_DEST.get(dest)
        if flag is None or value is None:
            continue
        try:
            s.flags[dest] = convert(flag, value)
        except InputError as e:
            s.notes.append(f"vllm.{key}: {e}")
            continue
        s.flag_locs[dest] = doc.loc(("vllm", key))
    extra = data.get("extraArgs")
    if isinstance(extra, list):
        _apply_tokens(s, [Token(str(t), doc.loc(("extraArgs", j))) for j, t in enumerate(extra)])
    s.gpu_count = int(data.get("gpusPerNode") or 1)
    s.pods = int(data.get("nodes") or 1)
    s.gpu_resource = str((data.get("gpu") or {}).get("resource") or "nvidia.com/gpu")
    s.gpu_loc = doc.loc(("gpusPerNode",))
    gpu = data.get("gpu") if isinstance(data.get("gpu"), dict) else {}
    if isinstance(data.get("nodeSelector"), dict) and data["nodeSelector"]:
        s.gpu_labels = {str(k): [str(v)] for k, v in data["nodeSelector"].items()}
        s.gpu_labels_loc = doc.loc(("nodeSelector",))
    elif gpu.get("products"):
        s.gpu_labels = {str(gpu.get("productLabel") or "nvidia.com/gpu.product"): [str(x) for x in gpu["products"]]}
        s.gpu_labels_loc = doc.loc(("gpu", "products"))
    shm = data.get("shm") if isinstance(data.get("shm"), dict) else {}
    s.shm_bytes = _quantity(s, shm.get("sizeLimit"), "shm.sizeLimit")
    s.shm_loc = doc.loc(("shm",))
    startup = ((data.get("probes") or {}).get("startup") or {}) if isinstance(data.get("probes"), dict) else {}
    if startup:
        s.startup_budget_s = int(startup.get("initialDelaySeconds", 0)) + \
            int(startup.get("failureThreshold", 3)) * int(startup.get("periodSeconds", 10))
        s.probe_loc = doc.loc(("probes", "startup"))
    return s


__all__ = ["Server", "extract", "gpu_from_labels"]
