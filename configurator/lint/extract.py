"""Extract typed views of every vLLM server in the loaded documents: the facade over the format plugins.

Each deployment format is a module of configurator/lint/formats/ that registers what it recognises
and an extractor returning `Server`s; `extract_all` only dispatches each document to the first
format that recognises it. This module holds the typed views (`Server`, `Token`, `NotUnderstood`)
and the helpers formats share: a pod spec's container -> `Server` (flags from `command` / `args`,
`sh -c` strings, `$(VAR)` from the env, a `--config` file from a ConfigMap in the same input, each
with its line), GPU requests, node labels, /dev/shm and probes. Every value is read through
configurator/lint/shape.py, so a value of the wrong shape becomes a finding on its object, never
an exception.
"""

from __future__ import annotations

import itertools
import math
import re
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from configurator.errors import InputError
from configurator.hardware.labels import gpu_from_labels
from configurator.k8s_quantity import QuantityError, quantity_bytes
from configurator.lint.load import Document, Loc
from configurator.lint.shape import MAX_BYTES, MAX_INT, Node, ShapeNote, describe
from configurator.vllm.flags import (
    BY_DEST,
    UNMODELLED_MEMORY_OPTIONS,
    Flag,
    ParsedArgs,
    UnknownArg,
    convert,
    parse_args,
)

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
ANNOTATION_PREFIX = "vllm-configurator.io/"
MAX_GPUS = 1 << 16  # per pod: more is a typo
MAX_SECONDS = (1 << 31) - 1  # probe fields are int32 in Kubernetes
MAX_SCRIPT_CHARS = 1 << 20  # a `sh -c` script in args may be long; past 1 MiB it is not a real one
MAX_BAD_FLAGS = 8  # flag values dropped (each a note) before a command is given up
_VAR = re.compile(r"\$\((\w+)\)|\$\{(\w+)\}|\$(\w+)")


_VLLM_IN_TAG = re.compile(r"vllm[-_.]?v?(\d+\.\d+(?:\.\d+){0,2})", re.IGNORECASE)
_VERSION_TAG = re.compile(r"v?(\d+\.\d+(?:\.\d+){0,2})(?:$|[-+._])")


# NVIDIA NGC containers (nvcr.io/nvidia/vllm:25.09-py3) are tagged with the container's own release, year
# and month, not with the vLLM release inside; no mapping is read here (none with a citable source is in
# the repository), so such a tag names no vLLM release.
_NGC_TAG = re.compile(r"^\d{2}\.\d{2}(?:\.\d+)?(?:-[a-z0-9]+)*$")
NGC_REGISTRY = "nvcr.io/"


def ngc_tag(image: str) -> bool:
    """Whether an image is an NGC container with a year.month release tag (`nvcr.io/nvidia/vllm:25.09-py3`)."""
    tag = image.rsplit("/", 1)[-1].split("@", 1)[0].partition(":")[2]
    return image.lower().startswith(NGC_REGISTRY) and bool(_NGC_TAG.match(tag))


@lru_cache(maxsize=1024)
def image_release(image: str) -> tuple[str | None, str]:
    """(the vLLM release an image tag names, the tag); None when it names none. `vllm/vllm-openai:v0.8.5`
    -> 0.8.5; `rocm/vllm:rocm6.3.1_vllm_0.8.5_20250521` -> 0.8.5 (not the ROCm version); `latest` -> None;
    `nvcr.io/nvidia/vllm:25.09-py3` -> None (an NGC container release, not vLLM's)."""
    last = image.rsplit("/", 1)[-1].split("@", 1)[0]
    tag = last.partition(":")[2]
    if not tag:
        return None, "latest"
    m = _VLLM_IN_TAG.search(tag)
    if m is None and "vllm" in image.lower() and not ngc_tag(image):
        m = _VERSION_TAG.match(tag)
    return (m.group(1) if m else None), tag



# The release a run assumes where an image names none (--vllm-version / the config's vllm_version), set by
# extract_all for the length of one extraction (a ContextVar: concurrent webhook reviews keep their own).
_ASSUMED_RELEASE: ContextVar[str | None] = ContextVar("assumed_release", default=None)


def flag_table_release(image: str | None, env: dict[str, str]) -> str | None:
    """The release whose argument parser reads this server's command: the one its image tag names, else its
    VLLM_VERSION env, else the run's --vllm-version (None: the newest). A release outside the table reads as
    the nearest one in it (configurator.vllm.args.table_version), as the engine evaluates it."""
    named = image_release(image)[0] if image else None
    named = named or env.get("VLLM_VERSION") or _ASSUMED_RELEASE.get()
    return _table_release(named) if named else None


@lru_cache(maxsize=1024)
def _table_release(named: str) -> str | None:
    from configurator.vllm.args import table_version

    try:
        return table_version(named)
    except InputError:
        return None


@lru_cache(maxsize=4096)
def _parse_cached(texts: tuple[str, ...], version: str | None) -> ParsedArgs:
    """parse_args is pure in (tokens, release); manifests repeat the same command many times (replicas,
    one Deployment per namespace), so each distinct command is read once. Errors are not cached."""
    return parse_args(list(texts), version)


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
    shm_error: str | None = None  # a size limit Kubernetes refuses (the API server rejects the object)
    raw_command: list | None = None  # the container's command / args as written (None: not set, the image's)
    raw_args: list | None = None
    raw_args_loc: Loc | None = None
    shm_loc: Loc | None = None
    startup_budget_s: int | None = None  # seconds the probes allow before a kill
    probe_loc: Loc | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # the container's literal env (VLLM_* change behaviour)
    notes: list[str] = field(default_factory=list)
    served_names: list[str] = field(default_factory=list)  # --served-model-name values, as written
    # vLLM options that change memory but are not modelled, as written, with their location
    unmodelled: list[tuple[str, Loc]] = field(default_factory=list)
    # tokens vLLM's parser would reject ("unrecognized arguments"), with their location
    unknown: list[tuple[UnknownArg, Loc]] = field(default_factory=list)
    flags_release: str | None = None  # the release whose argument parser read the command (None: newest)
    sources: list[str] = field(default_factory=list)  # other files it was built from (its runtime, a ConfigMap)
    # data parallelism as the server's own ranks see it (configurator/lint/discover.py reads it): the ranks this
    # pod runs (--data-parallel-size-local, a controller's dataLocal), and whether each pod is one rank of a
    # larger group (--data-parallel-rank / --data-parallel-start-rank: external load balancing or multi-node)
    dp_local: int | None = None
    dp_ranked: bool = False
    gpu_count_source: str = "resources"  # where gpu_count came from ("resources" or the controller that derives it)
    parallel_unresolved: set[str] = field(default_factory=set)  # parallel sizes written as $VAR, $(( )): not judged
    accelerator: str | None = None  # a TPU / Gaudi / Neuron resource or label: not a GPU the memory model knows
    assumed: list[tuple[str, Loc]] = field(default_factory=list)  # values taken at a default (${VAR:-default})

    def flag_loc(self, dest: str) -> Loc:
        return self.flag_locs.get(dest, self.loc)


@dataclass(frozen=True)
class NotUnderstood:
    """An object (or file) that mentions vLLM but yields no server we could read, or a value in it of
    the wrong shape, and why."""

    loc: Loc
    kind: str
    name: str
    reason: str
    rule: str = "not-understood"  # the rule it is reported under (runtime-template-unbound: a template)


@dataclass
class Inputs:
    """What an extractor may look up beyond its own object: the other documents of the run (a
    ConfigMap named by `--config`, the ServingRuntime an InferenceService uses), which of them a
    server consumed, and findings an extractor makes about an object instead of a server."""

    docs: list[Document]
    consumed: set[int] = field(default_factory=set)  # id() of documents a server read
    notices: dict[int, list[NotUnderstood]] = field(default_factory=dict)  # id(document) -> its findings
    memo: dict[str, Any] = field(default_factory=dict)  # what a format computes once per run (its own key)
    all_named: dict[tuple[str, str], list[Node]] = field(default_factory=dict)  # (kind, name) -> objects, in order

    def named(self, kind: str, name: str, file: str | None = None, namespace: str | None = None) -> Node | None:
        """The object of this kind and name that a pod in `namespace` (of `file`) would get: never one in another
        namespace (an object that states none could be applied to any), then the one in the same file first (a
        folder of unrelated manifests often holds several ConfigMaps called vllm-config, and a pod reads the one
        it ships with), then one that states the same namespace."""
        best, best_key = None, None
        for node in self.all_named.get((kind, name), ()):
            ns = identity(node)[1]
            if namespace and ns and ns != namespace:
                continue
            key = (node.doc.file == file, bool(namespace) and ns == namespace)
            if best_key is None or key > best_key:
                best, best_key = node, key
        return best

    def notice(self, doc: Document, finding: NotUnderstood) -> None:
        """A finding on an object that yields no server (an unbound runtime template), reported with it."""
        self.notices.setdefault(id(doc), []).append(finding)

    @classmethod
    def of(cls, docs: list[Document]) -> Inputs:
        out = cls(docs)
        for d in docs:
            if isinstance(d.data, dict) and isinstance(d.data.get("kind"), str):
                meta = d.data.get("metadata")
                name = meta.get("name") if isinstance(meta, dict) else None
                if isinstance(name, str):
                    out.all_named.setdefault((d.data["kind"], name), []).append(Node.of(d))
        return out


# -- shared by the formats: one object's identity -------------------------------------------------

def identity(obj: Node) -> tuple[str, str | None, str]:
    """(kind, namespace, name) of a Kubernetes object, each read as a string."""
    meta = obj.mapping("metadata")
    kind = obj.str("kind", max_chars=253) or ""
    if meta is None:
        return kind, None, ""
    return kind, meta.name("namespace"), meta.name("name") or ""


def annotations(*metas: Node | None) -> dict[str, str]:
    """String annotations of the given metadata mappings (later ones win)."""
    out: dict[str, str] = {}
    for meta in metas:
        if meta is not None:
            for k, v in meta.entries("annotations"):
                text = v.text()
                if text is not None:
                    out[k] = text
    return out


# -- flags ----------------------------------------------------------------------------------------

def flag_value_problem(flag: Flag, value: Any) -> str | None:
    """Why a converted flag value cannot be used (NaN, infinite, absurdly large), or None."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return f"{flag.option}: {value} is not a finite number"
        if abs(value) > MAX_INT:
            return f"{flag.option}: {value:g} is out of range"
    if isinstance(value, int) and not isinstance(value, bool):
        hi = MAX_BYTES if flag.type == "bytes" else MAX_INT
        if not -1 <= value <= hi:
            text = f"{value:,}" if abs(value) < 10**30 else f"a {len(str(abs(value)))}-digit number"
            return f"{flag.option}: {text} is out of range"
    if flag.dest == "model" and isinstance(value, str) and (
            len(value) > 1024 or "\x00" in value or any(len(p) > 255 for p in value.split("/"))):
        return f"{flag.option}: '{value[:40]}...' is not a model id or path (too long)"
    return None


def set_flag(server: Server, node: Node, dest: str, loc: Loc | None = None) -> None:
    """A structured flag (production-stack vllmConfig, chart values): the scalar at `node`, converted as
    vLLM would, range-checked; a bad value is a note on the server and is not used."""
    flag = BY_DEST[dest]
    if node.value is None:
        return
    text = node.text()
    if text is None:
        server.notes.append(f"{flag.option}: expected a scalar value, got {describe(node.value)}")
        return
    try:
        value = convert(flag, node.value if isinstance(node.value, bool) else text,
                        flag_table_release(server.image, server.env))
    except (InputError, ValueError, OverflowError) as e:
        server.notes.append(str(e))
        return
    problem = flag_value_problem(flag, value)
    if problem:
        server.notes.append(problem)
        return
    server.flags[dest] = value
    server.flag_locs[dest] = loc or node.loc()


def _drop_flag(tokens: list[Token], message: str) -> bool:
    """Remove the flag a parse error names (and its value), so the rest of the command is still read;
    False when the message names no flag in the tokens."""
    m = re.match(r"(?:argument |ambiguous option: )?(-[\w-]+)", message)
    if m is None:
        return False
    for i, t in enumerate(tokens):
        if t.text.partition("=")[0] == m.group(1):
            has_value = "=" not in t.text and i + 1 < len(tokens) and not tokens[i + 1].text.startswith("--")
            del tokens[i:i + 2 if has_value else i + 1]
            return True
    return False


def apply_tokens(server: Server, tokens: list[Token]) -> None:
    """Parse a vLLM command line into the server's flags (last wins), noting repeats, unmodelled
    options and tokens vLLM would reject; a bad value is a note. The command is read by the argument
    parser of the server's own release (its image tag), not the newest: an option added later is
    "unrecognized" there, as vLLM itself would say."""
    tokens = list(tokens)
    version = flag_table_release(server.image, server.env)
    server.flags_release = version
    for i, t in enumerate(tokens):  # not a memory flag, but it may name the model a container path holds
        opt, eq, val = t.text.partition("=")
        if opt in ("--served-model-name", "--served_model_name"):
            following = [x.text for x in tokens[i + 1:i + 4]]
            names = [val] if eq else [x for x in following[:next(
                (k for k, x in enumerate(following) if x.startswith("-")), len(following))]]
            server.served_names = [n for n in names if n]  # the last occurrence wins, as in argparse
            server.flag_locs["served_model_name"] = t.loc
    for _ in range(MAX_BAD_FLAGS):
        try:
            parsed = _parse_cached(tuple(t.text for t in tokens), version)
            break
        except (InputError, ValueError, OverflowError) as e:
            server.notes.append(str(e))
            if not _drop_flag(tokens, str(e)):
                return
    else:
        return
    server.unmodelled += [(o.dest, tokens[o.index].loc) for o in parsed.unmodelled]
    server.unknown += [(u, tokens[u.index].loc) for u in parsed.unknown]
    for o in parsed.occurrences:
        dest, value, loc = o.dest, o.value, tokens[o.index].loc
        flag = BY_DEST.get(dest)
        problem = flag_value_problem(flag, value) if flag is not None else None
        if problem:
            server.notes.append(problem)
            continue
        if dest in server.flag_locs:
            server.repeated.setdefault(dest, [server.flag_locs[dest]])
            server.repeated[dest].append(loc)
        server.flags[dest] = value
        server.flag_locs[dest] = loc


# -- a container's command line -------------------------------------------------------------------

def _expand(text: str, env: dict[str, str]) -> str:
    if "$" not in text:
        return text

    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(2) or m.group(3)
        return env.get(name, m.group(0))
    return _VAR.sub(sub, text)


def argv_items(c: Node, key: str) -> list[tuple[Node, str]]:
    """`command` or `args` as (node, text): a list of scalars, or (leniently) one string."""
    if c.at(key).is_str():
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
# vLLM's server entrypoints: `vllm serve` (vllm/entrypoints/cli/main.py) and the modules older manifests run
# with `python -m` (vllm.entrypoints.openai.api_server, vllm.entrypoints.api_server)
VLLM_MODULE_PREFIX = "vllm.entrypoints"
_SERVER_SCRIPTS = ("vllm/entrypoints/openai/api_server.py", "vllm/entrypoints/api_server.py")
_SHELLS = ("sh", "bash", "zsh", "dash", "ash")


def image_names_vllm(image: str) -> bool:
    """Whether an image is a vLLM server image (vllm/vllm-openai, rocm/vllm, lmcache/vllm-openai,
    kserve/vllmserver, nvcr.io/nvidia/vllm): its repository's last path part names vLLM, and is not this
    tool's own image or a component around vLLM (a router, an operator). The registry or organisation alone
    (ghcr.io/vllm-project/...) does not make a server image."""
    repo = image.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0].lower()
    return "vllm" in repo and not any(w in repo for w in _NOT_SERVER_WORDS)  # "configurator": this tool


def argv_words(argv: list[str]) -> list[str]:
    """A command line as words: an item that is itself a command (`vllm serve m --port 8000`, a `sh -c`
    script) split as the shell would."""
    out: list[str] = []
    for text in argv:
        if any(ch in text for ch in " \t\n;&|") and not text.startswith("-"):
            out += [w for seg in shell_words(text, script=True) for w, _ in seg]
        else:
            out.append(text)
    return out


def argv_runs_vllm(argv: list[str]) -> bool:
    """Whether a command line starts a vLLM server: `vllm serve` (the `vllm` program, any path, then
    `serve`), `python -m vllm.entrypoints...`, or python running vLLM's api_server.py; anywhere in it, so
    behind `exec`, `uv run`, `env X=1` or in a `sh -c` script. A program that only mentions vLLM
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
    return False


def is_vllm(c: Node, argv: list[tuple[Node, str]]) -> bool:
    """Whether a container runs a vLLM server: its command line starts one (`vllm serve`, `python -m
    vllm.entrypoints.openai.api_server`, ...), or it runs a vLLM server image whose entrypoint (`vllm serve`)
    its `command` does not replace, or replaces with a launcher script the check cannot see into
    (`/start.sh`, `bash run.sh`: the image's own server is assumed). A `command` that runs another program
    (this tool, `sleep`, `curl`, a `sh -c` script without vLLM) is not a vLLM server, whatever the image."""
    texts = [t for _, t in argv]
    if argv_runs_vllm(texts):
        return True
    if not image_names_vllm(c.str("image") or ""):
        return False
    command = [t for _, t in argv_items(c, "command")]
    if not command:
        return True  # the image's entrypoint runs the server with these args
    words = argv_words(command)
    prog = words[0].rsplit("/", 1)[-1] if words else ""
    if prog in _SHELLS and len(command) > 1 and command[1] == "-c":
        return False  # a script we can read, and it starts no vLLM server
    runner = prog in _SHELLS or prog.startswith("python")
    script = words[1] if runner and len(words) > 1 else words[0] if words else ""
    return script.endswith((".sh", ".py", ".bash")) and "configurator" not in script


def container_env(c: Node) -> dict[str, str]:
    """The container's literal env (name -> value); valueFrom entries are not known here."""
    out = {}
    for e in c.mappings("env"):
        name = e.str("name", max_chars=253)
        if name is not None and e.has("value"):
            value = e.text("value")
            if value is not None:
                out[name] = value
    return out


def container_tokens(argv: list[tuple[Node, str]], env: dict[str, str]) -> list[Token] | None:
    """The container's command + args as tokens, each with where it came from; None when a shell
    script in it runs no vLLM server (an LWS worker joining Ray, say)."""
    items: list[tuple[Token, str]] = []
    for node, text in argv:
        style = node.doc.style(node.path)
        if style == "|":
            style += str(node.doc.indent(node.path))
        items.append((Token(_expand(text, env), node.loc()), style))
    if len(items) >= 3 and items[0][0].text.rsplit("/", 1)[-1] in _SHELLS and items[1][0].text == "-c":
        tokens = shell_tokens(items[2][0].text, items[2][0].loc, items[2][1], script=True)
        if tokens is None:
            return None
        positional = [t for t, _ in items[4:]]  # items[3] is $0; "$@" is what follows it
        out: list[Token] = []
        for t in tokens:
            out += positional if t.text in ("$@", "$*") else [t]
        return out
    out = []
    for t, style in items:
        if "vllm" in t.text and " " in t.text.strip() and not t.text.startswith("-"):
            out += shell_tokens(t.text, t.loc, style) or []
        else:
            out.append(t)
    return out


# One piece of a POSIX shell word, or what separates words. Linear: each character is matched once.
_SH = re.compile(r"""
    (?P<cont>\\\n)
  | (?P<ws>[ \t\r\n]+)
  | (?P<comment>(?<![^ \t\r\n;&|])\#[^\n]*)
  | (?P<op>[;&|]+)
  | (?P<sq>'[^']*'?)
  | (?P<dq>"(?:[^"\\]|\\.)*"?)
  | (?P<esc>\\.?)
  | (?P<plain>[^ \t\r\n'"\\;&|]+)
""", re.X | re.S)
_DQ_ESCAPE = re.compile(r"\\([\\\"$`\n])")


def shell_words(text: str, script: bool = False) -> list[list[tuple[str, int]]]:
    """A shell script as segments (split at ; && || |, and with `script` at a newline, as `sh -c` does)
    of (word, offset of its first character), in linear time. Quotes and backslashes are removed as the
    shell would; comments dropped. Without `script` a newline is only a space (one command written over
    several lines of a YAML block, which no shell reads)."""
    segments: list[list[tuple[str, int]]] = [[]]
    word: list[str] = []
    start = -1

    def end_word() -> None:
        nonlocal word, start
        if start >= 0:
            segments[-1].append(("".join(word), start))
        word, start = [], -1

    for m in _SH.finditer(text):
        kind, piece = m.lastgroup, m.group()
        if kind in ("ws", "cont", "comment"):
            end_word()
            if script and kind == "ws" and "\n" in piece and segments[-1]:
                segments.append([])  # a newline ends a command in a script (`if ...\nthen`, `export X\nvllm`)
            continue
        if kind == "op":
            end_word()
            segments.append([])
            continue
        if start < 0:
            start = m.start()
        if kind == "sq":
            word.append(piece[1:-1] if len(piece) > 1 and piece.endswith("'") else piece[1:])
        elif kind == "dq":
            inner = piece[1:-1] if len(piece) > 1 and piece.endswith('"') and not piece.endswith('\\"') \
                else piece[1:]
            word.append(_DQ_ESCAPE.sub(r"\1", inner))
        elif kind == "esc":
            word.append(piece[1:])
        else:
            word.append(piece)
    end_word()
    return segments


def shell_tokens(text: str, loc: Loc, style: str, script: bool = False) -> list[Token] | None:
    """The tokens of the vLLM command in a shell script (the last `cmd; cmd && cmd` segment that runs
    vLLM), each at its line and column: a `|` block's lines are the file's; a one-line string's
    columns are offsets from where it starts."""
    segments = shell_words(text, script)
    runs_vllm = [seg for seg in segments if any(w.rsplit("/", 1)[-1] == "vllm" or "vllm.entrypoints" in w
                                                for w, _ in seg)]
    if not runs_vllm:
        return None
    chosen = runs_vllm[-1]
    out = []
    if style.startswith("|"):  # a literal block: the content starts on the next line, indented
        indent = int(style[1:] or 0)
        line, last_nl, counted = loc.line + 1, -1, 0
        for w, at in chosen:
            line += text.count("\n", counted, at)  # incremental: linear overall
            nl = text.rfind("\n", counted, at)
            last_nl = nl if nl >= 0 else last_nl
            counted = at
            out.append(Token(w, Loc(loc.file, line, indent + at - last_nl)))
        return out
    if "\n" in text or style == ">":  # folded or multi-line flow scalar: the string's own position
        return [Token(w, loc) for w, _ in chosen]
    quote = 1 if style in ('"', "'") else 0
    return [Token(w, Loc(loc.file, loc.line, loc.column + quote + at)) for w, at in chosen]


def config_file_flags(path: str, pod: Node, inputs: Inputs, namespace: str | None = None
                      ) -> list[tuple[Node, str, Loc]]:
    """`--config /etc/vllm/config.yaml`: its (value node, key, line) from a ConfigMap mounted there,
    in the same input (and the pod's namespace)."""
    from configurator.lint.load import parse_text

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
                cm = inputs.named("ConfigMap", cm_name, pod.doc.file, namespace)
                if cm is None:
                    continue
                text = cm.str("data", key, max_chars=1 << 20)
                if text is None:
                    continue
                inputs.consumed.add(id(cm.doc))
                base = cm.loc("data", key)
                docs, problems = parse_text(text, base.file)
                if problems or len(docs) != 1:
                    continue
                cfg = Node.of(docs[0])
                for i, (k, val) in enumerate(cfg.entries()):
                    out.append((val, k, Loc(base.file, base.line + i + 1, 1)))
    return out


# -- a pod's scheduling and a container's resources -----------------------------------------------

def pod_scheduling(server: Server, pod: Node) -> None:
    """Node labels the pod requires (nodeSelector, required node affinity `In` terms)."""
    labels: dict[str, list[str]] = {}
    selector = pod.entries("nodeSelector")
    for k, v in selector:
        text = v.text()
        if text is not None:
            labels.setdefault(k, []).append(text)
    if pod.mapping("nodeSelector") is not None:
        server.gpu_labels_loc = pod.loc("nodeSelector")
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
    if not is_vllm(c, argv):
        return None
    _, namespace, name = identity(obj)
    s = Server(file=obj.doc.file, kind=kind, namespace=namespace, name=name,
               container=c.str("name", max_chars=253) or default_name, loc=c.loc(), object_loc=obj.loc(),
               image=c.str("image"), pods=pods, annotations=annotations(obj.mapping("metadata"), pod_meta))
    s.env = container_env(c)
    cmd, args = c.at("command").value, c.at("args").value
    s.raw_command = cmd if isinstance(cmd, list) else None
    s.raw_args = args if isinstance(args, list) else None
    s.raw_args_loc = c.at("args", 0).loc() if s.raw_args else None
    tokens = container_tokens(argv, s.env)
    if tokens is None:
        return None
    apply_tokens(s, tokens)
    from configurator.lint.discover import parallel_facts

    parallel_facts(s, tokens)
    model = str(s.flags.get("model", ""))
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


# -- the dispatch ---------------------------------------------------------------------------------

def extract_all(docs: list[Document], assumed_release: str | None = None) -> tuple[list[Server], list[NotUnderstood]]:
    """Every vLLM server in the documents, in input order, and every object that mentions vLLM but
    yields none (or holds a value of the wrong shape), with the reason. `assumed_release` (--vllm-version)
    reads the commands of servers whose image names no release."""
    from configurator.lint.formats import dispatch

    token = _ASSUMED_RELEASE.set(assumed_release)
    try:
        return dispatch(docs)
    finally:
        _ASSUMED_RELEASE.reset(token)


def extract(docs: list[Document]) -> list[Server]:
    """Every vLLM server in the documents, in input order."""
    return extract_all(docs)[0]


__all__ = ["Inputs", "NotUnderstood", "Server", "ShapeNote", "Token", "extract", "extract_all",
           "gpu_from_labels"]
