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
from configurator.lint.inputs import Inputs, NotUnderstood, identity  # the formats import them from here too
from configurator.lint.load import Loc
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


_VLLM_IN_TAG = re.compile(r"vllm[-_.]?v?(\d+\.\d+(?:\.\d+){0,2})", re.IGNORECASE)
_VERSION_TAG = re.compile(r"v?(\d+\.\d+(?:\.\d+){0,2})(?:$|[-+._])")


# NVIDIA NGC containers (nvcr.io/nvidia/vllm:25.09-py3) are tagged with the container's own release, year
# and month, not with the vLLM release inside; no mapping is read here (none with a citable source is in
# the repository), so such a tag names no vLLM release.
_NGC_TAG = re.compile(r"^\d{2}\.\d{2}(?:\.\d+)?(?:-[a-z0-9]+)*$")
NGC_REGISTRY = "nvcr.io/"
# Images of wrappers around vLLM tagged with the wrapper's own release: NVIDIA Dynamo's runtimes
# (nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0 is Dynamo 0.4.0) and KServe's Hugging Face server
_WRAPPER_IMAGES = ("ai-dynamo/", "huggingfaceserver")


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
    if any(w in image.lower() for w in _WRAPPER_IMAGES) and not _VLLM_IN_TAG.search(tag):
        return None, tag  # the wrapper's own release (Dynamo 1.3.1), not the vLLM inside
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
    origin: str = "literal"  # where its value came from: literal, env var X in the file, default of ${X:-d}


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
    # options (or the model) whose value the file does not give ($((A * B)), $VAR not in the env, templating):
    # (option as written, the value as written, location); the server is checked without them
    unresolved: list[tuple[str, str, Loc]] = field(default_factory=list)
    # what some modelled release accepts but the assumed one refuses, where the file names no release
    # (message, location): a warning, not an error
    release_dependent: list[tuple[str, Loc]] = field(default_factory=list)
    flags_release: str | None = None  # the release whose argument parser read the command (None: newest)
    sources: list[str] = field(default_factory=list)  # other files it was built from (its runtime, a ConfigMap)
    basis: dict[str, str] = field(default_factory=dict)
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


def _drop_flag(tokens: list[Token], message: str) -> list[Token] | None:
    """Remove the flag a parse error names (and its value), so the rest of the command is still read; the
    tokens removed, None when the message names no flag in the tokens."""
    m = re.match(r"(?:argument |ambiguous option: )?(-[\w.-]+)", message)
    if m is None:
        return None
    for i, t in enumerate(tokens):
        if t.text.partition("=")[0] == m.group(1):
            has_value = "=" not in t.text and i + 1 < len(tokens) and not tokens[i + 1].text.startswith("--")
            removed = tokens[i:i + 2 if has_value else i + 1]
            del tokens[i:i + 2 if has_value else i + 1]
            return removed
    return None


# what a release rests on when it is known: the file's image tag or VLLM_VERSION env, or the user's --vllm-version
# (a controller's default image, or the newest assumed, is not known: the controller's release may be another)
_KNOWN_RELEASE = ("image tag ", "env VLLM_VERSION", "--vllm-version")


def release_basis(image: str | None, env: dict[str, str]) -> str:
    """What the release that reads a server's command rests on (Server.basis['release'])."""
    from configurator.vllm.args import releases

    if image and (image_release(image)[0] or image_release(image)[1].startswith("latest")):
        return f"image tag {image}"  # latest: the newest release, which refuses what the newest modelled one does
    if env.get("VLLM_VERSION"):
        return f"env VLLM_VERSION={env['VLLM_VERSION']} in the file"
    if _ASSUMED_RELEASE.get():
        return f"--vllm-version {_ASSUMED_RELEASE.get()}"
    return f"assumed newest {releases()[-1]}"


def release_known(server: Server) -> bool:
    """Whether the file (or the user) says which vLLM release runs the server."""
    return server.basis.get("release", "").startswith(_KNOWN_RELEASE)


def _ranges(found: list[str]) -> str:
    """Releases as ranges of consecutive modelled ones: '0.8.0-0.10.2, 0.12.0'."""
    from configurator.vllm.args import releases

    order = releases()
    runs: list[list[str]] = []
    for r in sorted(found, key=order.index):
        if runs and order.index(runs[-1][-1]) + 1 == order.index(r):
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def _accepted_by(words: list[str]) -> tuple[list[str], list[str]]:
    """(releases whose parser reads these option words without complaint, those that refuse them)."""
    from configurator.vllm.args import _normalise, release_args, releases, resolve, scan

    ok, refused = [], []
    for r in releases():
        try:
            if len(words) == 1 and words[0].startswith("-") and "=" not in words[0]:  # an option it may not have
                good = resolve(release_args(r), _normalise(words[0]), 0) is not None
            else:
                good = not scan(list(words), r, positional=False).leftovers
        except (InputError, ValueError, OverflowError, RecursionError):
            good = False
        (ok if good else refused).append(r)
    return ok, refused


def _release_dependent(server: Server, words: list[str], why: str, loc: Loc) -> bool:
    """Where the file names no release: a refusal that some modelled release does not make is a warning naming
    the releases that refuse it (Server.release_dependent); False when every release refuses it (an error)."""
    if release_known(server) or not words:
        return False
    from configurator.vllm.args import releases

    ok, refused = _accepted_by(words)
    if not ok or not refused:
        return False
    server.release_dependent.append((
        f"{' '.join(words)}: {why} in vLLM {server.flags_release or releases()[-1]} "
        f"({server.basis.get('release')}); "
        f"releases {_ranges(refused)} refuse it, {_ranges(ok)} accept it, and the file does not say which runs",
        loc))
    return True


def _without_unresolved(server: Server, tokens: list[Token], version: str | None) -> list[Token]:
    """The tokens less every value the file does not give (Server.unresolved): an option with such a value is
    left out with it, never split into flags or read as a number; the server is checked with what is known."""
    if not any(unresolved(t.text) for t in tokens):
        return tokens
    from configurator.vllm.args import _normalise, release_args, resolve

    rel = release_args(version)
    out: list[Token] = []
    for t in tokens:
        if not unresolved(t.text):
            out.append(t)
            continue
        if t.text.startswith("-"):
            name, _, value = t.text.partition("=")
            server.unresolved.append((name, value or t.text, t.loc))
            continue
        prev = out[-1] if out else None
        if prev is not None and prev.text.startswith("-") and "=" not in prev.text and not unresolved(prev.text):
            try:
                found = resolve(rel, _normalise(prev.text), 0)
            except InputError:
                found = None
            if found is None or found[0].nargs != 0:
                if found is not None:
                    out.pop()
                server.unresolved.append((prev.text, t.text, t.loc))
                continue
        server.unresolved.append(("", t.text, t.loc))
    for name, value, _ in server.unresolved:
        server.basis[(name.lstrip("-").replace("-", "_") or "argument")] = f"unresolved ({value[:80]})"
    return out


def apply_tokens(server: Server, tokens: list[Token]) -> None:
    """Parse a vLLM command line into the server's flags (last wins), noting repeats, unmodelled
    options and tokens vLLM would reject; a bad value is a note. The command is read by the argument
    parser of the server's own release (its image tag), not the newest: an option added later is
    "unrecognized" there, as vLLM itself would say. Where the file names no release, what some modelled
    release accepts is a warning naming the releases that refuse it (Server.release_dependent), not an error.
    A value the file does not give (an unset $VAR, $(( )), templating) is left out (Server.unresolved), and each
    flag's basis (Server.basis) says where its value came from."""
    version = flag_table_release(server.image, server.env)
    server.flags_release = version
    server.basis.setdefault("release", release_basis(server.image, server.env))
    at = shell_script_at([t.text for t in tokens]) if tokens and "-" in tokens[min(1, len(tokens) - 1)].text else None
    if at is not None:  # a format's raw command + args that are a `sh -c` script (a Dynamo service's [/bin/sh, -c])
        inner = shell_tokens(tokens[at].text, tokens[at].loc, ">", script=True, env=server.env)
        tokens = (inner or []) + list(tokens[at + 2:])
    tokens = _without_unresolved(server, list(tokens), version)
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
        except (InputError, ValueError, OverflowError, RecursionError) as e:
            message = str(e) if not isinstance(e, RecursionError) else "a value nested too deeply to read"
            removed = _drop_flag(tokens, message)
            if removed is None:
                server.notes.append(message)
                return
            if not _release_dependent(server, [t.text for t in removed], f"\"{message}\"", removed[0].loc):
                server.notes.append(message)
    else:
        return
    server.unmodelled += [(o.dest, tokens[o.index].loc) for o in parsed.unmodelled]
    for u in parsed.unknown:
        loc = tokens[u.index].loc
        if u.wrapper and u.token.startswith("--") and not u.suggestion:
            # neither vLLM's nor the wrapper's as listed here (flags.WRAPPERS); a wrapper release after the list
            # may have it, and nothing here says which wrapper release runs
            server.release_dependent.append((
                f"{u.token}: an option of neither vLLM {version or 'the newest'} nor {u.wrapper} as read here; a "
                f"{u.wrapper} release may add it, else its parser exits (\"unrecognized arguments\")", loc))
        elif not _release_dependent(server, [u.token], "\"unrecognized arguments\"", loc):
            server.unknown.append((u, loc))
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
        origins = [t.origin for t in tokens[o.index:max(o.end, o.index + 1)] if t.origin != "literal"]
        server.basis[dest] = ", ".join(dict.fromkeys(origins)) or "literal"
    for i, t in enumerate(tokens):  # a default taken (${VAR:-d}) by any option, modelled or not, is said
        if "default of $" in t.origin:
            option = t.text if t.text.startswith("--") else tokens[i - 1].text if i else "argument"
            key = option.partition("=")[0].lstrip("-").replace("-", "_")
            server.basis.setdefault(key, t.origin)
            server.flag_locs.setdefault(key, t.loc)


# -- a container's command line -------------------------------------------------------------------

# Kubernetes' own expansion of command / args (`$(VAR)` from the container's env, `$$` an escaped `$`),
# done before any shell sees the text (k8s.io/kubernetes third_party/forked/golang/expansion/expand.go)
_K8S_VAR = re.compile(r"\$\$|\$\((\w+)\)")
# what a shell would expand: ${VAR}, ${VAR:-default} (and -, =, :=, +, :+), $VAR
_SH_PARAM = re.compile(r"\$\{(\w+)(?:(:?[-=+?])([^}]*))?\}|\$([A-Za-z_]\w*)")
_SH_ARITH = re.compile(r"^\$\(\((.*)\)\)$", re.S)
# a word that still holds an expansion nothing in the file gives a value (a command substitution, a variable the
# env does not set, arithmetic over one) or leftover templating ({{ .Values.x }}, ${{ }}, <% %>)
_UNRESOLVED = re.compile(r"\$[({A-Za-z_0-9@*#?!-]|`|\{\{.*?\}\}|\{%.*?%\}|<%.*?%>", re.S)
MAX_ARITH_CHARS = 200


def unresolved(text: str) -> bool:
    """Whether a word (after expansion) still holds a shell expansion or templating with no value in the file."""
    return ("$" in text or "{" in text or "`" in text or "<%" in text) and _UNRESOLVED.search(text) is not None


def _expand(text: str, env: dict[str, str], origins: list[str] | None = None) -> str:
    """Kubernetes' `$(VAR)` expansion of a command / args item with the container's env (an unset VAR stays
    as written, as Kubernetes leaves it); `$$` is a literal `$`."""
    if "$" not in text:
        return text

    def sub(m: re.Match) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        if name in env:
            if origins is not None:
                origins.append(f"env var {name} in the file")
            return env[name]
        return m.group(0)
    return _K8S_VAR.sub(sub, text)


def _arith(expr: str) -> int | None:
    """A shell `$(( ))` whose operands are all numbers (after expansion), evaluated as the shell does
    (integers; / truncates); None for anything else."""
    import ast

    if len(expr) > MAX_ARITH_CHARS or not re.fullmatch(r"[\d\s+\-*/%()]*", expr):
        return None
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None

    def ev(n: ast.AST) -> int:
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub | ast.UAdd):
            v = ev(n.operand)
            return -v if isinstance(n.op, ast.USub) else v
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            if abs(a) > 1 << 62 or abs(b) > 1 << 62:
                raise ValueError
            if isinstance(n.op, ast.Add):
                return a + b
            if isinstance(n.op, ast.Sub):
                return a - b
            if isinstance(n.op, ast.Mult):
                return a * b
            if isinstance(n.op, ast.Div | ast.FloorDiv | ast.Mod) and b != 0:
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                return q if not isinstance(n.op, ast.Mod) else a - q * b
        raise ValueError
    try:
        return ev(tree)
    except (ValueError, RecursionError):
        return None


def _expand_shell(text: str, env: dict[str, str], origins: list[str], labels: dict[str, str] | None = None) -> str:
    """A shell's parameter expansion of one piece of a word, with the variables the file gives (the container's
    env, assignments earlier in the script); `${VAR:-default}` takes its default where VAR has no value here
    (said in `origins`); an expansion with no value stays as written (unresolved)."""
    if "$" not in text:
        return text

    def label(name: str) -> str:
        return (labels or {}).get(name) or f"env var {name} in the file"

    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(4)
        op, word = m.group(2), m.group(3) or ""
        value = env.get(name)
        if op is None:
            if value is None:
                return m.group(0)
            origins.append(label(name))
            return value
        is_set = value is not None and (value != "" or ":" not in op)
        if op.endswith("+"):
            return word if is_set else ""
        if is_set:
            origins.append(label(name))
            return value or ""
        if op.endswith("?"):
            return m.group(0)
        origins.append(f"default of ${{{name}{op}{word}}} ({name} is not set in the file)")
        return word
    arith = _SH_ARITH.match(text)
    if arith is None:
        return _SH_PARAM.sub(sub, text)
    # $(( )): bare names are variables too; one the file does not set leaves it unresolved (never 0, as an
    # unset variable would be in the shell: LWS_GROUP_SIZE is set at run time, not in the file)
    found: list[str] = []
    inner = _SH_PARAM.sub(sub, arith.group(1))
    missing = False

    def name_value(m: re.Match) -> str:
        nonlocal missing
        if m.group(0) in env:
            found.append(label(m.group(0)))
            return env[m.group(0)]
        missing = True
        return m.group(0)
    numeric = re.sub(r"[A-Za-z_]\w*", name_value, inner)
    value = None if missing else _arith(numeric)
    if value is None:
        return "$((" + inner + "))"
    origins += found
    return str(value)


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
# shell options that take a value before -c (bash -o pipefail -c, bash -O extglob -c, bash --rcfile f -c)
_SHELL_VALUE_OPTIONS = ("-o", "+o", "-O", "+O", "--rcfile", "--init-file")


def image_names_vllm(image: str) -> bool:
    """Whether an image is a vLLM server image (vllm/vllm-openai, rocm/vllm, lmcache/vllm-openai,
    kserve/vllmserver, nvcr.io/nvidia/vllm): its repository's last path part names vLLM, and is not this
    tool's own image or a component around vLLM (a router, an operator). The registry or organisation alone
    (ghcr.io/vllm-project/...) does not make a server image."""
    repo = image.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0].lower()
    return "vllm" in repo and not any(w in repo for w in _NOT_SERVER_WORDS)  # "configurator": this tool


def shell_script_at(words: list[str]) -> int | None:
    """Where the script of a `sh -c SCRIPT` command line is: the shell (any path, behind `tini --`, `dumb-init`,
    `exec`, `env A=1`), its options (-l, -e, -x, -o pipefail, --login, ...) and `-c` or an option cluster holding c
    (-lc, -ec, -xc, -euxc); None when the words are not a shell given a script."""
    from configurator.vllm.flags import skip_prefix

    i = skip_prefix(words)
    if i >= len(words) or words[i].rsplit("/", 1)[-1] not in _SHELLS:
        return None
    i += 1
    seen_c = False
    while i < len(words):
        w = words[i]
        if w in _SHELL_VALUE_OPTIONS:
            i += 2
            continue
        if w == "--":
            i += 1
            break
        if w.startswith("--"):  # --login, --norc, --noprofile, --posix
            i += 1
            continue
        if len(w) > 1 and w[0] in "-+" and w[1:].isalpha():
            seen_c = seen_c or "c" in w[1:]
            i += 1
            continue
        break
    return i if seen_c and i < len(words) else None


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


# modules run with `python -m` that start a vLLM server: vLLM's own, and wrappers that take vLLM's engine options
# (configurator.vllm.flags.WRAPPERS: Dynamo's dynamo.vllm, KServe's Hugging Face server)
_WRAPPER_MODULES = ("dynamo.vllm", "huggingfaceserver", "huggingface_server")


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


def is_vllm(c: Node, argv: list[tuple[Node, str]]) -> bool:
    """Whether a container runs a vLLM server: its command line starts one (`vllm serve`, `python -m
    vllm.entrypoints.openai.api_server`, ...), or it runs a vLLM server image whose entrypoint (`vllm serve`)
    its `command` does not replace, or replaces with a launcher script the check cannot see into
    (`/start.sh`, `bash run.sh`: the image's own server is assumed). A `command` that runs another program
    (this tool, `sleep`, `curl`, a `sh -c` script without vLLM) is not a vLLM server, whatever the image."""
    env = container_env(c)
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
        style = node.doc.style(node.path)
        if style == "|":
            style += str(node.doc.indent(node.path))
        origins: list[str] = []
        expanded = _expand(text, env, origins)
        items.append((Token(expanded, node.loc(), ", ".join(dict.fromkeys(origins)) or "literal"), style))
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


# One piece of a POSIX shell word, or what separates words. Linear: each character is matched once. An
# expansion ($(( )), $( ), ${ }, `...`) is one piece, so the spaces inside `$((A * B))` never split a word.
_SH = re.compile(r"""
    (?P<cont>\\\n)
  | (?P<ws>[ \t\r\n]+)
  | (?P<comment>(?<![^ \t\r\n;&|])\#[^\n]*)
  | (?P<op>[;&|]+)
  | (?P<sq>'[^']*'?)
  | (?P<dq>"(?:[^"\\]|\\.)*"?)
  | (?P<esc>\\.?)
  | (?P<subst>\$\(\((?:[^()]|\([^()]*\))*\)\)|\$\((?:[^()'"]|\([^()]*\))*\)|\$\{[^}\s]*\}|`[^`]*`)
  | (?P<var>\$[A-Za-z_]\w*)
  | (?P<plain>[^ \t\r\n'"\\;&|$`]+|[$`])
""", re.X | re.S)
_DQ_ESCAPE = re.compile(r"\\([\\\"$`\n])")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")


def _shell_words(text: str, script: bool = False, env: dict[str, str] | None = None
                 ) -> list[list[tuple[str, int, str]]]:
    """shell_words, each word with where its value came from ('literal', 'env var X in the file', ...). With
    `env`, expansions are made as the shell would with what the file gives: the env, and `NAME=value`
    assignments earlier in the script (`export`, or a prefix of a command); unquoted, an expanded value with
    spaces splits into words. Without `env` nothing is expanded."""
    segments: list[list[tuple[str, int, str]]] = [[]]
    local = dict(env) if env is not None else None
    labels: dict[str, str] = {}  # a script variable -> where its value came from
    word: list[str] = []
    origins: list[str] = []
    start = -1
    quoted = False  # the word has a quote or a literal character (an empty unquoted expansion is no word)

    def end_word() -> None:
        nonlocal word, start, origins, quoted
        w = "".join(word)
        if start >= 0 and (w or quoted):
            segments[-1].append((w, start, ", ".join(dict.fromkeys(origins)) or "literal"))
            seg = [x for x, _, _ in segments[-1]]
            if local is not None and _ASSIGNMENT.match(w) and all(
                    _ASSIGNMENT.match(x) or x in ("export", "readonly", "local", "declare") for x in seg):
                name, _, value = w.partition("=")
                if not unresolved(value):
                    local[name] = value
                    got = ", ".join(dict.fromkeys(origins))
                    labels[name] = f"script variable {name}" + (f" ({got})" if got else "")
                else:
                    local.pop(name, None)
        word, start, origins, quoted = [], -1, [], False

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
        quoted = quoted or kind not in ("subst", "var")
        if kind == "sq":
            word.append(piece[1:-1] if len(piece) > 1 and piece.endswith("'") else piece[1:])
        elif kind == "dq":
            inner = piece[1:-1] if len(piece) > 1 and piece.endswith('"') and not piece.endswith('\\"') \
                else piece[1:]
            inner = _DQ_ESCAPE.sub(r"\1", inner)
            word.append(_expand_shell(inner, local, origins, labels) if local is not None else inner)
        elif kind == "esc":
            word.append(piece[1:])
        elif kind in ("subst", "var") and local is not None:
            value = _expand_shell(piece, local, origins, labels)
            parts = value.split() if value != piece else [value]
            if len(parts) > 1:  # unquoted: the expansion's words are separate words
                word.append(parts[0])
                for p in parts[1:]:
                    end_word()
                    start = m.start()
                    word.append(p)
                    origins = [f"word of {piece}"]
            elif parts and parts[0]:
                word.append(parts[0])
        else:
            word.append(piece)
    end_word()
    return segments


def shell_words(text: str, script: bool = False) -> list[list[tuple[str, int]]]:
    """A shell script as segments (split at ; && || |, and with `script` at a newline, as `sh -c` does)
    of (word, offset of its first character), in linear time. Quotes and backslashes are removed as the
    shell would; comments dropped; expansions kept as written, each one piece of its word. Without `script`
    a newline is only a space (one command written over several lines of a YAML block, which no shell reads)."""
    return [[(w, at) for w, at, _ in seg] for seg in _shell_words(text, script)]


def _runs_vllm(word: str) -> bool:
    return word.rsplit("/", 1)[-1] == "vllm" or VLLM_MODULE_PREFIX in word or word in _WRAPPER_MODULES


def shell_tokens(text: str, loc: Loc, style: str, script: bool = False,
                 env: dict[str, str] | None = None) -> list[Token] | None:
    """The tokens of the vLLM command in a shell script (the last `cmd; cmd && cmd` segment that runs
    vLLM), each at its line and column: a `|` block's lines are the file's; a one-line string's
    columns are offsets from where it starts. With `env`, the script's expansions are made (_shell_words)."""
    segments = _shell_words(text, script, env if env is not None else {})
    runs_vllm = [seg for seg in segments if any(_runs_vllm(w) for w, _, _ in seg)]
    if not runs_vllm:
        return None
    chosen = runs_vllm[-1]
    out = []
    if style.startswith("|"):  # a literal block: the content starts on the next line, indented
        indent = int(style[1:] or 0)
        line, last_nl, counted = loc.line + 1, -1, 0
        for w, at, origin in chosen:
            line += text.count("\n", counted, at)  # incremental: linear overall
            nl = text.rfind("\n", counted, at)
            last_nl = nl if nl >= 0 else last_nl
            counted = at
            out.append(Token(w, Loc(loc.file, line, indent + at - last_nl), origin))
        return out
    if "\n" in text or style == ">":  # folded or multi-line flow scalar: the string's own position
        return [Token(w, loc, origin) for w, _, origin in chosen]
    quote = 1 if style in ('"', "'") else 0
    return [Token(w, Loc(loc.file, loc.line, loc.column + quote + at), origin) for w, at, origin in chosen]


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


# -- the dispatch ---------------------------------------------------------------------------------

__all__ = ["Inputs", "NotUnderstood", "Server", "ShapeNote", "Token", "gpu_from_labels"]
