"""A pod spec's containers as Servers: which run vLLM, their command line, GPUs, node labels, /dev/shm and probes."""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

from configurator.k8s_quantity import QuantityError, quantity_bytes
from configurator.lint.command import apply_tokens, set_flag
from configurator.lint.inputs import Inputs, identity
from configurator.lint.load import Loc
from configurator.lint.server import GPU_RESOURCES, MAX_GPUS, Server, Token, annotations
from configurator.lint.shape import Node
from configurator.lint.shell import (
    _SHELLS,
    _WRAPPER_MODULES,
    VLLM_MODULE_PREFIX,
    _expand,
    argv_words,
    shell_script_at,
    shell_tokens,
)
from configurator.vllm.flags import BY_DEST, UNMODELLED_MEMORY_OPTIONS

MAX_SECONDS = (1 << 31) - 1  # probe fields are int32 in Kubernetes
MAX_SCRIPT_CHARS = 1 << 20  # a `sh -c` script in args may be long; past 1 MiB it is not a real one


def argv_items(c: Node, key: str) -> list[tuple[Node, str]]:
    """`command` or `args` as (node, text): a list of scalars, or (leniently) one string."""
    value = c.value.get(key) if type(c.value) is dict else c.at(key).value
    if value is None:
        return []
    if isinstance(value, str):
        text = c.text(key, max_chars=MAX_SCRIPT_CHARS)
        return [] if text is None else [(c.at(key), text)]
    out = []
    for item in c.items(key):
        text = item.text(max_chars=MAX_SCRIPT_CHARS)
        if text is not None:
            out.append((item, text))
        elif item.value is None:
            item.note(item.path, "null in a command: ignored")
    return out


# Images whose name mentions vLLM but that run no vLLM server: this tool's own image (the webhook and
# audit Deployments of charts/vllm-configurator-webhook run `vllm-configurator webhook ...`), and the words
# that name a component around vLLM rather than the server (production-stack's router, operators).
_NOT_SERVER_WORDS = ("router", "operator", "controller", "webhook", "exporter", "gateway", "proxy", "configurator")
# vLLM's server scripts run as files (python .../vllm/entrypoints/openai/api_server.py)
_SERVER_SCRIPTS = ("vllm/entrypoints/openai/api_server.py", "vllm/entrypoints/api_server.py")


def image_names_vllm(image: str) -> bool:
    """Whether an image is a vLLM server image (vllm/vllm-openai, rocm/vllm, lmcache/vllm-openai,
    kserve/vllmserver, nvcr.io/nvidia/vllm): its repository's last path part names vLLM, and is not this
    tool's own image or a component around vLLM (a router, an operator). The registry or organisation alone
    (ghcr.io/vllm-project/...) does not make a server image."""
    repo = image.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0].lower()
    return "vllm" in repo and not any(w in repo for w in _NOT_SERVER_WORDS)  # "configurator": this tool


def argv_runs_vllm(argv: list[str]) -> bool:
    """Whether a command line starts a vLLM server: `vllm serve` (the `vllm` program, any path, then
    `serve`), `python -m vllm.entrypoints...` (or a known wrapper: `python -m dynamo.vllm`, KServe's
    `huggingfaceserver` unless told another backend), or python running vLLM's api_server.py; anywhere in it,
    so behind `exec`, `uv run`, `env X=1` or in a `sh -c` script. A program that only mentions vLLM
    (`vllm-configurator webhook`, `curl http://vllm:8000`, `--backend vllm`) does not."""
    words = argv_words(argv)
    for i, w in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if w.rsplit("/", 1)[-1] == "vllm" and nxt == "serve":
            return True
        if w == "-m" and nxt.startswith(VLLM_MODULE_PREFIX):
            return True
        if w.startswith("-m" + VLLM_MODULE_PREFIX) or w.endswith(_SERVER_SCRIPTS):
            return True
        module = nxt if w == "-m" else w[2:] if w.startswith("-m") else ""
        if module in _WRAPPER_MODULES:
            if not module.startswith("huggingface"):
                return True
            rest = " ".join(words[i + 2:]).lower()
            if "--disable_vllm" not in rest and not re.search(r"--backend[= ](?!vllm|auto)", rest):
                return True
    return False


def is_vllm(c: Node, argv: list[tuple[Node, str]], env: dict[str, str] | None = None) -> bool:
    """Whether a container runs a vLLM server: its command line starts one (`vllm serve`, `python -m
    vllm.entrypoints.openai.api_server`, ...), or it runs a vLLM server image whose entrypoint (`vllm serve`)
    its `command` does not replace, or replaces with a launcher script the check cannot see into
    (`/start.sh`, `bash run.sh`: the image's own server is assumed). A `command` that runs another program
    (this tool, `sleep`, `curl`, a `sh -c` script without vLLM) is not a vLLM server, whatever the image.
    `env`: the container's env when the caller has read it (container_env), else read here."""
    env = container_env(c) if env is None else env
    texts = [_expand(t, env) for _, t in argv]
    if argv_runs_vllm(texts):
        return True
    if not image_names_vllm(c.str("image") or ""):
        return False
    command = [_expand(t, env) for _, t in argv_items(c, "command")]
    if not command:
        return True  # the image's entrypoint runs the server with these args
    words = argv_words(command)
    prog = words[0].rsplit("/", 1)[-1] if words else ""
    if prog in _SHELLS and shell_script_at(command) is not None:
        return False  # a script we can read, and it starts no vLLM server
    runner = prog in _SHELLS or prog.startswith("python")
    script = words[1] if runner and len(words) > 1 else words[0] if words else ""
    return script.endswith((".sh", ".py", ".bash")) and "configurator" not in script


def container_env(c: Node) -> dict[str, str]:
    """The container's literal env (name -> value), each `$(VAR)` in a value expanded from the entries before
    it, as Kubernetes does; valueFrom entries are not known here."""
    out: dict[str, str] = {}
    for e in c.mappings("env"):
        name = e.str("name", max_chars=253)
        if name is not None and e.has("value"):
            value = e.text("value")
            if value is not None:
                out[name] = _expand(value, out) if "$(" in value else value
    return out


def container_tokens(argv: list[tuple[Node, str]], env: dict[str, str]) -> list[Token] | None:
    """The container's command + args as tokens, each with where it came from; None when a shell
    script in it runs no vLLM server (an LWS worker joining Ray, say). `$(VAR)` is expanded from the env
    first, as Kubernetes does (so `sh -c "$(CMD)"` runs the CMD of the env); a shell script's own expansions
    (`$VAR`, `${VAR:-default}`, `$(( ))`) are made with what the file gives, and each token says where its
    value came from (Token.origin)."""
    items: list[tuple[Token, str]] = []
    for node, text in argv:
        doc = node.doc
        style = doc.style(node.path) if doc.styles else ""
        if style == "|":
            style += str(doc.indent(node.path))
        if "$" in text:
            origins: list[str] = []
            expanded = _expand(text, env, origins)
            items.append((Token(expanded, node.loc(), ", ".join(dict.fromkeys(origins)) or "literal"), style))
        else:  # nothing to expand (_expand returns the text itself)
            items.append((Token(text, node.loc()), style))
    at = shell_script_at([t.text for t, _ in items])
    if at is not None:
        script, style = items[at]
        tokens = shell_tokens(script.text, script.loc, style, script=True, env=env)
        if tokens is None:
            return None
        positional = [t for t, _ in items[at + 2:]]  # items[at + 1] is $0; "$@" is what follows it
        out: list[Token] = []
        for t in tokens:
            if script.origin != "literal" and t.origin == "literal":
                t.origin = script.origin
            out += positional if t.text in ("$@", "$*", '"$@"') else [t]
        return out
    out = []
    for t, style in items:
        if "vllm" in t.text and " " in t.text.strip() and not t.text.startswith("-"):
            out += shell_tokens(t.text, t.loc, style, env=env) or []
        else:
            out.append(t)
    return out


def config_file_flags(path: str, pod: Node, inputs: Inputs, namespace: str | None = None
                      ) -> list[tuple[Node, str, Loc]]:
    """`--config /etc/vllm/config.yaml`: its (value node, key, line) from a ConfigMap mounted there,
    in the same input (and the pod's namespace)."""
    out: list[tuple[Node, str, Loc]] = []
    for c in pod.mappings("containers"):
        for m in c.mappings("volumeMounts"):
            mount = (m.str("mountPath") or "").rstrip("/")
            if not mount or not path.startswith(mount + "/"):
                continue
            key = path[len(mount) + 1:]
            for v in pod.mappings("volumes"):
                cm_name = v.str("configMap", "name")
                if cm_name is None or v.str("name") != m.str("name"):
                    continue
                found = inputs.config_document(cm_name, key, pod.doc.file, namespace)
                if found is None:
                    continue
                cfg, base = found
                for i, (k, val) in enumerate(cfg.entries()):
                    out.append((val, k, Loc(base.file, base.line + i + 1, 1)))
    return out


# -- a pod's scheduling and a container's resources -----------------------------------------------

def pod_scheduling(server: Server, pod: Node) -> None:
    """Node labels the pod requires (nodeSelector, required node affinity `In` terms)."""
    labels: dict[str, list[str]] = {}
    selector = pod.mapping("nodeSelector")
    if selector is not None:
        for k, v in selector.entries():
            text = v.text()
            if text is not None:
                labels.setdefault(k, []).append(text)
        server.gpu_labels_loc = pod.loc("nodeSelector")
    if type(pod.value) is dict and pod.value.get("affinity") is None:  # the common case: no node affinity
        server.gpu_labels = labels
        return
    terms = pod.at("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    for term in terms.mappings("nodeSelectorTerms"):
        for expr in term.mappings("matchExpressions"):
            key = expr.str("key")
            if key is not None and expr.str("operator") == "In":
                labels.setdefault(key, []).extend(t for t in (x.text() for x in expr.items("values")) if t)
                server.gpu_labels_loc = server.gpu_labels_loc or expr.loc()
    server.gpu_labels = labels


def gpu_request(server: Server, c: Node) -> None:
    """The GPUs a container requests (limits first, then requests); a TPU / Gaudi / Neuron request is
    recorded as the server's accelerator (not a GPU the memory model knows)."""
    from configurator.hardware.labels import OTHER_ACCELERATOR_LABELS, OTHER_ACCELERATOR_RESOURCES

    for section in ("limits", "requests"):
        for k, v in c.entries("resources", section):
            if k in OTHER_ACCELERATOR_RESOURCES and server.accelerator is None:
                server.accelerator = k
            if k in GPU_RESOURCES or k.startswith("nvidia.com/mig-"):
                count = v.int(hi=MAX_GPUS)
                if count is None:
                    continue
                server.gpu_count = count
                server.gpu_resource = k
                server.gpu_loc = v.loc()
        if server.gpu_count is not None:
            break
    for key in OTHER_ACCELERATOR_LABELS:
        if key in server.gpu_labels and server.accelerator is None:
            server.accelerator = f"{key}={server.gpu_labels[key][0] if server.gpu_labels[key] else ''}"


def probe_budget(probe: Node) -> int | None:
    """Seconds a probe allows before a kill: initialDelay + failureThreshold x period (Kubernetes
    defaults 0, 3, 10); None when one of them is unreadable."""
    total = []
    for key, default in (("initialDelaySeconds", 0), ("failureThreshold", 3), ("periodSeconds", 10)):
        v = probe.int(key, hi=MAX_SECONDS)
        if v is None and probe.at(key).value is not None:
            return None
        total.append(default if v is None else v)
    return total[0] + total[1] * total[2]


@lru_cache(maxsize=1024)
def _size_limit_bytes(text: str) -> int:
    """A /dev/shm sizeLimit by Kubernetes' rules; the same few sizes recur across a repository (cached; a
    refusal, QuantityError, is raised again each time)."""
    return quantity_bytes(text, what="sizeLimit")


def container_facts(server: Server, pod: Node, c: Node) -> None:
    """GPU request, memory-backed /dev/shm, and the startup budget of the probes."""
    gpu_request(server, c)
    for m in c.mappings("volumeMounts"):
        if (m.str("mountPath") or "").rstrip("/") != "/dev/shm":
            continue
        for v in pod.mappings("volumes"):
            if v.str("name") != m.str("name"):
                continue
            ed = v.mapping("emptyDir")
            if ed is not None and ed.str("medium") == "Memory":
                server.shm_loc = v.loc()
                raw = ed.at("sizeLimit").value
                if raw is None:
                    server.shm_bytes = 0
                    continue
                try:  # Kubernetes' own parser; a size it refuses is never read as "no limit"
                    server.shm_bytes = _size_limit_bytes(raw if isinstance(raw, str) else str(raw))
                except QuantityError as e:
                    server.shm_bytes = None
                    server.shm_error = f"/dev/shm sizeLimit: {e}"
    if pod.bool("hostIPC") is True:
        server.shm_bytes = 0  # the host's /dev/shm
    for name in ("startupProbe", "livenessProbe"):
        probe = c.mapping(name)
        if probe is not None:
            server.startup_budget_s = probe_budget(probe)
            server.probe_loc = probe.loc()
            break


def container_server(obj: Node, pod: Node, c: Node, inputs: Inputs, *, kind: str, pods: int = 1,
                     pod_meta: Node | None = None, default_name: str = "") -> Server | None:
    """A vLLM container of a pod spec -> its Server (None when it runs no vLLM server)."""
    argv = argv_items(c, "command") + argv_items(c, "args")
    env = container_env(c)
    if not is_vllm(c, argv, env):
        return None
    _, namespace, name = identity(obj)
    s = Server(file=obj.doc.file, kind=kind, namespace=namespace, name=name,
               container=c.str("name", max_chars=253) or default_name, loc=c.loc(), object_loc=obj.loc(),
               image=c.str("image"), pods=pods, annotations=annotations(obj.mapping("metadata"), pod_meta))
    s.env = env
    cmd, args = c.at("command").value, c.at("args").value
    s.raw_command = cmd if isinstance(cmd, list) else None
    s.raw_args = args if isinstance(args, list) else None
    s.raw_args_loc = c.at("args", 0).loc() if s.raw_args else None
    tokens = container_tokens(argv, s.env)
    if tokens is None:
        return None
    apply_tokens(s, tokens)
    from configurator.lint.parallel import parallel_facts

    parallel_facts(s, tokens)
    model = str(s.flags.get("model", ""))
    if not model:  # `--model /gcs/$(MODEL_ID)` left out as unresolved (Server.unresolved): the model is not known
        model = next((value for name, value, _ in s.unresolved if name == "--model" and re.search(r"\$\(\w+\)", value)),
                     "")
    if re.search(r"\$\(\w+\)", model):  # `--model /gcs/$(MODEL_ID)`: Kubernetes found no such env in the pod
        c.note(c.path, f"runs vLLM, but its model is '{model}', a variable the pod does not set: nothing was checked")
        return None
    if "config" not in s.flags:
        for t, nxt in itertools.pairwise(tokens):
            if t.text == "--config":
                found = config_file_flags(nxt.text, pod, inputs, s.namespace)
                if not found:  # its options may change memory, and none of them was read
                    s.unmodelled.append((f"--config {nxt.text} (no ConfigMap of the input, mounted there, gives that "
                                         "file in a form check reads, so its options were not read)", nxt.loc))
                for val, key, loc in found:
                    dest = key.replace("-", "_")
                    s.sources.append(loc.file)
                    if dest in BY_DEST:
                        set_flag(s, val, dest, loc)
                    elif "--" + key.replace("_", "-") in UNMODELLED_MEMORY_OPTIONS:
                        s.unmodelled.append(("--" + key.replace("_", "-"), loc))
    pod_scheduling(s, pod)
    container_facts(s, pod, c)
    return s


def workload_pod(obj: Node, path: tuple) -> Node | None:
    """The pod spec at `path` of a workload; a missing one, or one without containers, is noted (Kubernetes
    requires both, so there is nothing to check)."""
    pod = obj.mapping(*path)
    if pod is None:
        if obj.at(*path).value is None:
            obj.note((*obj.path, *path), "missing: no pod spec to check")
        return None
    if not pod.mappings("containers"):
        pod.note((*pod.path, "containers"), "no containers: nothing to check")
    return pod


def pod_servers(obj: Node, pod: Node, inputs: Inputs, *, kind: str, pods: int = 1,
                pod_meta: Node | None = None) -> list[Server]:
    """Every vLLM server among a pod spec's containers."""
    out = []
    for c in pod.mappings("containers"):
        if all(c.value.get(k) is None for k in ("image", "command", "args")):
            c.note(c.path, "a container without an image or a command: nothing to check")
            continue
        s = container_server(obj, pod, c, inputs, kind=kind, pods=pods, pod_meta=pod_meta,
                             default_name=str(c.path[-1]))
        if s is not None:
            out.append(s)
    return out
