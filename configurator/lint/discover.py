"""Generic discovery: what any document says about a vLLM server, whatever its format.

The format plugins (configurator/lint/formats/) know where a controller keeps its command line; this module
knows what a vLLM server looks like wherever it is written, and serves both: the plugins ask it for the data
parallelism a command line gives (`parallel_facts`), and `discover` walks any YAML / JSON document no plugin
reads (docker compose, SkyPilot, Ray Serve config, a platform's own file, YAML held in a string) for

- a command line that runs vLLM (`vllm serve`, `python -m vllm.entrypoints.openai.api_server`, a known wrapper
  such as `python -m dynamo.vllm`) in any string, or any list of strings;
- a mapping of vLLM engine arguments in any case style (`max_model_len`, `maxModelLen`, `max-model-len`) next
  to a model (Ray Serve LLM `engine_kwargs`, production-stack `vllmConfig`, a platform's `vllm:` block);
- the GPU type and count from any hint it can read: resource names (`nvidia.com/gpu: 2`), `H100:8`-style specs
  (SkyPilot `accelerators`), accelerator / instance / GPU-type names, docker compose device reservations.

Plugins then refine (formats/compose.py reads docker compose as such, and every controller plugin reads its own
kind); `deploys_vllm` tells a file that deploys vLLM (and must never pass in silence) from one that only names
it. Three small adapters live here until the shell-arguments work covers every format: `expand_vars` (a file's
own variables and `${VAR:-default}`), `from_vllm` (launchers before the command) and `_known_only` (options
whose value stays a variable are left out). docs/formats.md describes the whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from configurator.lint.extract import GPU_RESOURCES, Inputs, Server, Token
from configurator.lint.load import Loc

# the parallel sizes a command line gives: configurator/lint/parallel.py, below extract.py, which reads them too
from configurator.lint.parallel import _PARALLEL, _option, parallel_facts
from configurator.lint.shape import Node

MAX_GPUS = 1 << 16

# -- generic discovery ----------------------------------------------------------------------------------

MAX_NODES = 200_000  # nodes looked at in one document
MAX_NESTED = 1 << 20  # YAML held in a string: past 1 MiB it is not a config
# A command line that runs vLLM: `vllm serve`, vLLM's OpenAI server module, or a known wrapper of it
# (Dynamo's `python -m dynamo.vllm`, which takes vLLM's engine flags: ai-dynamo/dynamo components/src/dynamo/vllm).
VLLM_COMMAND = re.compile(r"(?:^|[\s/\"'=\[,])vllm\s+serve\b|\bvllm\.entrypoints\.openai\.api_server\b"
                          r"|\bvllm\.entrypoints\.api_server\b|-m\s+dynamo\.vllm\b")
MODEL_KEYS = ("model", "model_id", "model_name", "model_source", "model_path", "served_model", "hf_model", "repo_id",
              "base_model", "model_uri", "model_loading_config")
# engine arguments that say "this mapping configures vLLM" (a mapping of `model` and `dtype` alone may be anything)
DISTINCTIVE = frozenset({"max_model_len", "gpu_memory_utilization", "tensor_parallel_size", "max_num_seqs",
                         "kv_cache_dtype", "enable_prefix_caching", "enforce_eager", "pipeline_parallel_size",
                         "max_num_batched_tokens", "enable_chunked_prefill", "swap_space", "block_size",
                         "enable_expert_parallel", "data_parallel_size", "cpu_offload_gb", "max_seq_len_to_capture",
                         "speculative_config", "compilation_config", "limit_mm_per_prompt", "enable_lora"})
GPU_COUNT_KEYS = ("num_gpus", "gpu_count", "gpus", "num_gpu", "gpus_per_node", "gpu_num", "ngpus", "n_gpus")
GPU_NAME_KEYS = ("accelerators", "accelerator", "gpu", "gpu_type", "accelerator_type", "gpu_model", "gpu_name",
                 "gpus")
ENV_KEYS = ("env", "envs", "environment", "env_vars", "variables")
_YAMLISH = re.compile(r"\A(?:\s*#[^\n]*\n)*\s*[\w.-]+:(?:\s|$)")  # a string that starts as a YAML mapping
# the key of a mapping of engine arguments: engine_kwargs (Ray Serve LLM), vllmConfig (production-stack),
# engineArgs, vllm_args, extraArgs ... (a `flags:` or `defaults:` mapping of other tools is not one)
_ENGINE_KEY = re.compile(r"engine|vllm|kwargs|args|serving|server", re.I)
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")
# a GPU given by its memory alone: dstack's `gpu: 24GB`, `40GB..48GB`, `80GB..` (count 1 unless written: dstack
# docs, concepts/services "resources"; its run plan prints `1xGPU (24GB)`)
_MEMORY_SPEC = re.compile(r"^\s*\d+(?:\.\d+)?\s*[GT]B\s*(?:\.\.\s*(?:\d+(?:\.\d+)?\s*[GT]B)?)?\s*(?::\s*(\d+)\s*)?$",
                          re.I)  # `80GB:2`: two of them
_SPEC = re.compile(r"^\s*([A-Za-z][\w.\- ]*?)\s*[:x*]\s*(\d+)\s*$")
_VAR = re.compile(r"\$\{(\w+)(:?[-=])([^}]*)\}|\$\{(\w+)\}|\$\((\w+)\)|\$(\w+)"
                  r"|\$\{\{\s*(?:env|vars|inputs|matrix)\.(\w+)\s*\}\}")  # the last: a GitHub Actions expression


def snake(key: str) -> str:
    """An engine-argument key in any case style as vLLM's dest: maxModelLen / max-model-len -> max_model_len."""
    return _CAMEL.sub(r"_\1", key.strip()).replace("-", "_").lower()


def _engine_dests() -> frozenset[str]:
    from configurator.vllm.args import release_args

    global _DESTS
    if _DESTS is None:
        _DESTS = frozenset(o.dest for o in release_args().options)
    return _DESTS


_DESTS: frozenset[str] | None = None


def expand_vars(text: str, env: dict[str, str]) -> tuple[str, list[str]]:
    """`$VAR`, `${VAR}`, `$(VAR)` from the file's own env; `${VAR:-default}` (docker compose, shell) at its
    value when the file sets it, else at its default: (text, what was taken at a default). A variable the file
    does not set stays as written (unresolved)."""
    assumed: list[str] = []

    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(4) or m.group(5) or m.group(6) or m.group(7)
        if name in env:
            return env[name]
        if m.group(1):
            assumed.append(f"${{{name}{m.group(2)}{m.group(3)}}} taken as '{m.group(3)}'")
            return m.group(3)
        return m.group(0)

    return _VAR.sub(sub, text), assumed


def env_of(node: object) -> dict[str, str]:
    """Environment variables a mapping sets in any of the common shapes: a map (compose, SkyPilot `envs`, Ray
    `env_vars`), a list of `K=V` strings (compose, dstack) or of {name, value} (Kubernetes)."""
    out: dict[str, str] = {}
    if not isinstance(node, dict):
        return out
    for key in ENV_KEYS:
        v = node.get(key)
        if isinstance(v, dict):
            out.update({str(k): str(x) for k, x in v.items() if isinstance(x, str | int | float) and
                        not isinstance(x, bool)})
        elif isinstance(v, list):
            for item in v:
                if isinstance(item, str) and "=" in item:
                    k, _, x = item.partition("=")
                    out[k.strip()] = x
                elif isinstance(item, dict) and isinstance(item.get("name"), str) and \
                        isinstance(item.get("value"), str | int | float):
                    out[item["name"]] = str(item["value"])
    return out


@dataclass
class Hint:
    """What a document says about GPUs at one place: a count, a GPU name (as written), a node label, or an
    accelerator that is not a GPU the memory model covers."""

    path: tuple
    loc: Loc
    count: int | None = None
    names: tuple[str, ...] = ()
    label: tuple[str, str] | None = None
    other: str | None = None


def _int(v: object) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if 0 <= v <= MAX_GPUS else None
    if isinstance(v, str) and v.strip().isdigit():
        return _int(int(v.strip()))
    return None


def _spec(text: str) -> tuple[str, int | None]:
    """`H100:8`, `A100-80GB:4`, `MI300X:8`, `nvidia-l4` -> (name, count)."""
    m = _SPEC.match(text)
    return (m.group(1).strip(), int(m.group(2))) if m else (text.strip(), None)


def _hints_at(path: tuple, key: str, v: object, loc: Loc) -> Hint | None:
    from configurator.hardware.labels import INSTANCE_KEYS, NAME_KEYS, OTHER_ACCELERATOR_RESOURCES, gpu_from_labels

    if key in GPU_RESOURCES or key.startswith("nvidia.com/mig-"):
        n = _int(v)
        return Hint(path, loc, count=n) if n is not None else None
    if key in OTHER_ACCELERATOR_RESOURCES:
        return Hint(path, loc, other=key)
    if key in NAME_KEYS or key in INSTANCE_KEYS:
        return Hint(path, loc, label=(key, str(v))) if isinstance(v, str | int) else None
    if key == "CUDA_VISIBLE_DEVICES" and isinstance(v, str) and re.fullmatch(r"\s*\d+(\s*,\s*\d+)*\s*", v):
        return Hint(path, loc, count=len(v.split(",")))
    if key in ("ray.io/accelerator-type", "accelerator_type") and isinstance(v, str) and v.strip():
        return Hint(path, loc, names=(v.strip(),))  # Ray's node label / Ray Serve accelerator_type: `L4`, `A10G`
    k = snake(key)
    if k in ("instance_type", "machine_type", "vm_size", "node_type", "instance") and isinstance(v, str) and \
            gpu_from_labels({INSTANCE_KEYS[0]: [v]})[0] is not None:  # g6.24xlarge, a3-highgpu-8g, Standard_ND96...
        return Hint(path, loc, label=(INSTANCE_KEYS[0], v))
    if (k in GPU_COUNT_KEYS or k == "gpu") and _int(v) is not None:  # Ray resources {GPU: 4}, bundles [{GPU: 1}]
        return Hint(path, loc, count=_int(v))
    if k in GPU_NAME_KEYS:
        if isinstance(v, str) and (m := _MEMORY_SPEC.match(v)):
            return Hint(path, loc, count=_int(m.group(1)) if m.group(1) else 1)  # dstack `gpu: 24GB`: one GPU
        if isinstance(v, str) and v.strip() and not v.strip().isdigit():
            name, count = _spec(v)
            if name.lower() in ("all", "none", "auto", "true", "false", "gpu", "nvidia", "amd") or "$" in name:
                return None
            if count is None and k in ("accelerators", "accelerator", "gpu"):
                count = 1  # SkyPilot `accelerators: A100` ("simply <name>, short for a count of 1"), Baseten, dstack
            return Hint(path, loc, count=count, names=(name,))
        if isinstance(v, dict) and v and all(isinstance(x, str) for x in v):  # SkyPilot {H100: 1, H200: 1}
            specs = [_spec(x) for x in v]  # `{H100:1, H200:1}` (no space) is a mapping of keys `H100:1`
            # `{L4, A10g}` (no counts) is a mapping of names to null: one GPU each, as a name alone is
            counts = [c if c is not None else 1 if x is None else _int(x)
                      for (_, c), x in zip(specs, v.values(), strict=True)]
            return Hint(path, loc, count=counts[0], names=tuple(n for n, _ in specs))
    return None


def _gpu_name(name: str) -> str | None:
    """The catalog name of a GPU as a platform writes it (`H100`, `A100-80GB`, `nvidia-l4`, `NVIDIA_L4`,
    `L40S`, `MI300X`), or None when the catalog has no such GPU."""
    from configurator.errors import ConfiguratorError
    from configurator.hardware.catalog import find_gpu

    base = name.strip()
    for cand in (base, base.replace("_", "-"), re.sub(r"^(nvidia|amd)[-_ ]", "", base, flags=re.I),
                 re.sub(r"^(nvidia|amd)[-_ ](tesla[-_ ])?", "", base, flags=re.I).replace("_", "-")):
        try:
            return find_gpu(cand).name
        except ConfiguratorError:
            continue
    return None


def apply_hints(server: Server, hints: list[Hint], at: tuple) -> None:
    """The GPU count and type nearest to `at` (the hints sharing the longest path prefix with it), where the
    server has none of its own."""
    from configurator.lint.formats._common import GPU_NAME_LABEL, set_gpu_count

    def near(h: Hint) -> int:
        n = 0
        for a, b in zip(h.path, at, strict=False):
            if a != b:
                break
            n += 1
        return n

    ordered = sorted(hints, key=near, reverse=True)
    if server.gpu_count is None:
        for h in ordered:
            if h.count is not None:
                set_gpu_count(server, h.count, h.loc)
                break
    if not server.gpu_labels:
        for h in ordered:
            if h.label is not None:
                server.gpu_labels = {h.label[0]: [h.label[1]]}
                server.gpu_labels_loc = h.loc
                break
            if h.names:
                known = _distinguished([n for n in (_gpu_name(x) for x in h.names) if n], h.names)
                # several allowed (SkyPilot any-of): every one is a value the server may land on, as `In [a, b]`
                server.gpu_labels = {GPU_NAME_LABEL: known or [h.names[0]]}
                server.gpu_labels_loc = h.loc
                break
    if server.accelerator is None:
        server.accelerator = next((h.other for h in ordered if h.other), None)


def _distinguished(known: list[str], names: tuple[str, ...]) -> list[str]:
    """A set of alternatives that names a family both bare and sized (SkyPilot `{A100:8, A100-80GB:4}`) means the
    bare name as the family's other part: the catalog reads a bare `A100` as the 80 GB part (catalog.alias_note),
    but beside `A100-80GB` it is the 40 GB one."""
    from configurator.hardware.catalog import list_gpus

    out = list(known)
    for i, (name, got) in enumerate(zip(names, known, strict=False)):
        sized = [x for j, x in enumerate(names) if j != i and known[j] == got and _norm_name(x) != _norm_name(name)]
        if not sized:
            continue
        family = [g.name for g in list_gpus() if g.name.startswith(name.strip().lower() + "-")]
        others = [f for f in family if f != got]
        if len(family) == 2 and len(others) == 1:
            out[i] = others[0]
    return out


def _norm_name(x: str) -> str:
    return re.sub(r"[^a-z0-9]", "", x.lower())


def _model_near(doc_root: object, path: tuple) -> str | None:
    """A model named beside `path` (in it, its parent or grandparent mapping): model / model_id / modelName ..."""
    for depth in range(len(path), max(-1, len(path) - 3), -1):
        node = doc_root
        for key in path[:depth]:
            node = node[key] if isinstance(node, dict | list) else None
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(k, str) and snake(k) in MODEL_KEYS:
                    if isinstance(v, str) and v.strip() and not v.strip().startswith(("{{", "$")):
                        return v.strip()
                    if isinstance(v, dict):  # Ray Serve LLM model_loading_config: {model_id, model_source}
                        for kk in ("model_source", "model_id"):
                            if isinstance(v.get(kk), str):
                                return v[kk]
    return None


def _is_argv(v: list) -> bool:
    if not v or len(v) > 4096 or not all(isinstance(x, str | int | float) and not isinstance(x, bool) for x in v):
        return False
    words = [str(x) for x in v]
    if len(words) > 1 and re.search(r"\s", words[0].strip()):
        return False  # a list of command lines (dstack `commands`), not an argv: an exec path has no blank
    if any(VLLM_COMMAND.search(w) for w in words[:3]):
        return True
    joined = " ".join(words[:4])
    return bool(VLLM_COMMAND.search(joined)) and words[0].rsplit("/", 1)[-1] in ("vllm", "python", "python3", "uv")


def engine_args(v: dict) -> bool:
    """Whether a mapping holds vLLM engine arguments (two or more, one of them one that only vLLM's engine takes)."""
    dests = _engine_dests()
    keys = {snake(k) for k in v if isinstance(k, str)}
    return len(keys & dests) >= 2 and bool(keys & DISTINCTIVE)


def engine_mapping(path: tuple, v: dict) -> bool:
    """Engine arguments that configure a server: beside a model, or under a key that says so (engine_kwargs,
    vllmConfig ...); a `flags:` mapping of a test's expectations is not one."""
    return engine_args(v) and (any(isinstance(k, str) and snake(k) == "model" for k in v) or bool(
        path and isinstance(path[-1], str) and _ENGINE_KEY.search(path[-1])))


def _walk(root: object, budget: int = MAX_NODES):
    """(path, value) of every node, parents first; a candidate's subtree is skipped by the caller's `skip`."""
    stack: list[tuple[tuple, object]] = [((), root)]
    while stack and budget > 0:
        budget -= 1
        path, v = stack.pop()
        yield path, v
        if isinstance(v, dict):
            stack.extend(((*path, k), x) for k, x in reversed(list(v.items())) if isinstance(k, str | int))
        elif isinstance(v, list):
            stack.extend(((*path, i), x) for i, x in reversed(list(enumerate(v))))


@dataclass
class Found:
    """One vLLM server discovery found, before it becomes a Server."""

    path: tuple
    how: str  # pod, command, argv, kwargs, docker, dynamo-sdk


def _name(obj: Node) -> str:
    from configurator.lint.extract import identity

    _, _, name = identity(obj)
    return name or obj.str("name", max_chars=253) or ""


@dataclass
class _Scan:
    """What one walk over a document found: server candidates, GPU hints, the env of each mapping that sets one,
    YAML held in strings and Kubernetes objects embedded in the document."""

    found: list[Found]
    hints: list[Hint]
    envs: list[tuple[tuple, dict[str, str]]]
    nested: list[tuple[tuple, str]]
    embedded: list[tuple]


def _scan_mapping(obj: Node, path: tuple, v: dict, scan: _Scan) -> bool:
    """Record what a mapping holds; True when its subtree is a candidate (or an embedded object) to skip."""
    env = env_of(v)
    if env:
        scan.envs.append((path, env))
    for k, x in v.items():
        if isinstance(k, str) and not isinstance(x, list):
            h = _hints_at((*path, k), k, x, obj.loc(*path, k))
            if h is not None:
                scan.hints.append(h)
    if path and isinstance(v.get("kind"), str) and isinstance(v.get("apiVersion"), str):
        scan.embedded.append(path)  # a Kubernetes object inside another document (an OpenShift Template's objects)
    elif isinstance(v.get("Common"), dict) and any(isinstance(x, dict) and "common-configs" in x
                                                    for x in v.values()):
        scan.found.append(Found(path, "dynamo-sdk"))
    elif isinstance(v.get("containers"), list) and any(isinstance(c, dict) and (
            c.get("image") or c.get("command") or c.get("args")) for c in v["containers"]):
        scan.found.append(Found(path, "pod"))
    elif engine_mapping(path, v):
        scan.found.append(Found(path, "kwargs"))
    else:
        return False
    return True


def _scan(obj: Node) -> _Scan:
    """One walk over a document (see the module doc): a candidate's subtree is not walked again."""
    scan = _Scan([], [], [], [], [])
    skip: tuple | None = None
    for path, v in _walk(obj.value):
        if skip is not None and path[:len(skip)] == skip:
            continue
        skip = None
        if isinstance(v, dict):
            if _scan_mapping(obj, path, v, scan):
                skip = path
        elif isinstance(v, list):
            if _is_argv(v):
                scan.found.append(Found(path, "argv"))
                skip = path
            elif path and isinstance(path[-1], str) and snake(path[-1]) in GPU_NAME_KEYS:
                for i, x in enumerate(v):  # gpus: [H100:8]
                    h = _hints_at((*path, i), path[-1], x, obj.loc(*path, i)) if isinstance(x, str) else None
                    if h is not None:
                        scan.hints.append(h)
        elif isinstance(v, str):
            if VLLM_COMMAND.search(v):
                scan.found.append(Found(path, "command"))
            elif DOCKER_RUN.search(v) and "vllm" in v.lower():
                scan.found.append(Found(path, "docker"))
            elif "\n" in v and len(v) < MAX_NESTED and len(scan.nested) < 64 and _YAMLISH.match(v):
                scan.nested.append((path, v))
    return scan


def _found_servers(obj: Node, inputs: Inputs, kind: str, f: Found, scan: _Scan,
                   platform: dict[str, str]) -> list[Server]:
    """The servers of one candidate, with the env of every mapping on the way to it and the nearest GPU hints."""
    from configurator.lint.extract import pod_servers

    env: dict[str, str] = dict(platform)
    for p, e in scan.envs:  # the env of every mapping on the way to the server, nearest last
        if f.path[:len(p)] == p:
            env.update(e)
    if f.how == "pod":
        got = pod_servers(obj, obj.at(*f.path), inputs, kind=kind or "pod spec")
    elif f.how == "dynamo-sdk":
        got = dynamo_sdk(obj, f.path, env, kind)
    else:
        s = _server(obj, f, env, kind)
        got = [s] if s is not None else []
    for s in got:
        apply_hints(s, scan.hints, f.path)
        if platform.get("SKYPILOT_NUM_NODES", "1") != "1" and s.gpu_count is not None:
            s.pods = int(platform["SKYPILOT_NUM_NODES"])  # num_nodes machines run one server together
        if f.path[-1:] == ("engine_kwargs",):
            # Ray Serve LLM runs each data-parallel rank as its own replica with its own placement bundle
            # (ray python/ray/llm/_internal/serve/.../data_parallel/dp_server.py, DPServer)
            s.dp_ranked = True
    return got


def discover(obj: Node, inputs: Inputs, kind: str = "") -> list[Server]:
    """Every vLLM server written anywhere in one document (see the module doc); plugins refine what they know."""
    scan = _scan(obj)
    servers: list[Server] = []
    for path in scan.embedded:
        servers += _embedded(obj.at(*path), inputs)
    platform = platform_env(obj.value, scan.hints)
    for f in scan.found:
        servers += _found_servers(obj, inputs, kind, f, scan, platform)
    if not servers:
        for path, text in scan.nested:
            servers += _nested(obj, inputs, path, text, kind)
    return servers


# How a Kubernetes object embedded in another document is read: configurator.lint.formats sets it to its own
# reader (the plugin of the object's kind, else discovery). This module never imports the plugin registry,
# which imports it.
read_object: Callable[[Node, Inputs], list[Server]] | None = None


def _embedded(node: Node, inputs: Inputs) -> list[Server]:
    """A Kubernetes object held inside another document (an OpenShift Template's `objects`, a Helm release's
    manifest): read by the plugin of its kind, else by discovery."""
    if read_object is not None:
        return read_object(node, inputs)
    return discover(node, inputs, node.str("kind") or "")


# Variables a platform sets from the resources the file asks for: dstack (docs: concepts/services, "System
# environment variables": DSTACK_GPUS_NUM, DSTACK_GPUS_PER_NODE, DSTACK_NODES_NUM) and SkyPilot (docs:
# running-jobs/environment-variables: SKYPILOT_NUM_GPUS_PER_NODE, SKYPILOT_NUM_NODES).
def platform_env(root: object, hints: list[Hint]) -> dict[str, str]:
    if not isinstance(root, dict) or not isinstance(root.get("resources"), dict):
        return {}
    per_node = next((h.count for h in hints if h.count is not None and h.path[:1] == ("resources",)), None)
    if per_node is None:
        return {}
    nodes = _int(root.get("num_nodes") or root.get("nodes") or 1) or 1
    return {"DSTACK_GPUS_NUM": str(per_node * nodes), "DSTACK_GPUS_PER_NODE": str(per_node),
            "DSTACK_NODES_NUM": str(nodes), "SKYPILOT_NUM_GPUS_PER_NODE": str(per_node),
            "SKYPILOT_NUM_NODES": str(nodes)}


def _image_near(root: object, path: tuple) -> str | None:
    """The container image written beside `path` (compose `image`, dstack `image`, SkyPilot `image_id: docker:`)."""
    for depth in range(len(path), -1, -1):
        node = root
        for key in path[:depth]:
            node = node[key] if isinstance(node, dict | list) else None
        if isinstance(node, dict):
            for key in ("image", "image_id", "docker_image", "container_image", "base_image"):
                v = node.get(key)
                if isinstance(v, str) and v.strip():
                    return v.strip().removeprefix("docker:")
                if isinstance(v, dict) and isinstance(v.get("image"), str):
                    return v["image"]
    return None


def new_server(obj: Node, path: tuple, kind: str, env: dict[str, str], image: str | None = None,
               name: str | None = None) -> Server:
    from configurator.lint.extract import annotations, identity
    from configurator.lint.shape import dotted

    _, namespace, _ = identity(obj)
    at = obj.at(*path)
    s = Server(file=obj.doc.file, kind=kind or "document", namespace=namespace,
               name=name or _name(obj) or obj.doc.file.rsplit("/", 1)[-1], container=dotted(path) or "(document)",
               loc=at.loc(), object_loc=obj.loc(), image=image or _image_near(obj.value, path),
               annotations=annotations(obj.mapping("metadata")))
    s.env = dict(env)
    return s


def command_tokens(node: Node, env: dict[str, str], assumed: list[str]) -> list[Token] | None:
    """A command line written as one string (a shell script, a `run:` block) or a list of words, with the file's
    own variables expanded: the tokens of the command that runs vLLM, or None when none does."""
    from configurator.lint.extract import container_tokens, shell_tokens

    if isinstance(node.value, str):
        text, took = expand_vars(node.value, env)
        assumed += took
        style = node.doc.style(node.path)
        if style == "|":
            style += str(node.doc.indent(node.path))
        if text != node.value:
            style = ">"  # columns moved: point at the string itself
        got = shell_tokens(text, node.loc(), style, script=True)
        inner = _inner_script(text) if got is None else None
        if inner is not None:  # `sh -c "... vllm serve ..."` as one string: the script the shell is given
            got = shell_tokens(inner, node.loc(), ">", script=True)
        return from_vllm(got)
    items = []
    for item in node.items():
        t = item.text()
        if t is None:
            continue
        t, took = expand_vars(t, env)
        assumed += took
        items.append((item, t))
    return from_vllm(container_tokens(items, env))


def _inner_script(text: str) -> str | None:
    """The script of a one-line `sh -c "<script>"` / `bash -lc '<script>'` (Baseten's `start_command`, a
    Procfile-style line), or None when the text is not one."""
    import shlex

    try:
        words = shlex.split(text.strip(), posix=True)
    except ValueError:
        return None
    if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in ("sh", "bash", "zsh", "dash") and \
            re.fullmatch(r"-[a-z]*c", words[1]) and VLLM_COMMAND.search(words[2]):
        return words[2]
    return None


def from_vllm(tokens: list[Token] | None) -> list[Token] | None:
    """The command from where vLLM starts: launchers before it (`nohup`, `hatch run --`, `uv run`, `exec`,
    `CUDA_VISIBLE_DEVICES=0`) are the shell's, not vLLM's arguments. (An adapter until the shell-arguments work
    recognises launchers for every format.)"""
    if not tokens:
        return tokens
    words = [t.text for t in tokens]
    for i, w in enumerate(words):
        base = w.rsplit("/", 1)[-1]
        start = (base == "vllm" and i + 1 < len(words) and words[i + 1] == "serve") or (
            base.startswith("python") and i + 2 < len(words) and words[i + 1] == "-m" and (
                words[i + 2].startswith("vllm.entrypoints") or words[i + 2] == "dynamo.vllm"))
        if start:
            # prose that names the command ("Run vllm serve to start it") is not a command line
            return tokens[i:] if all(_launcher(x) for x in words[:i]) else None
    return tokens


# Words that may come before vLLM on a command line: launchers, their options, VAR=value assignments.
_LAUNCHERS = frozenset({"nohup", "exec", "env", "sudo", "time", "uv", "run", "hatch", "poetry", "pipenv", "conda",
                        "micromamba", "pixi", "srun", "mpirun", "taskset", "numactl", "stdbuf", "timeout", "nice",
                        "ionice", "setsid", "--", "-m", "bash", "sh", "-c", "source", "apptainer", "singularity"})


def _launcher(word: str) -> bool:
    return word in _LAUNCHERS or word.startswith("-") or "=" in word or "/" in word or word.isdigit()


def _known_only(tokens: list[Token]) -> tuple[list[Token], list[tuple[str, str]]]:
    """The tokens less every option whose value is a variable the file does not give (`--max-model-len
    $MAX_MODEL_LEN`), and those (option, value): vLLM never sees `$X`, the shell gives it a value the check does
    not know. (A small adapter: configurator.lint.extract's argument reader does this for every format once the
    shell-arguments work is merged.)"""
    out: list[Token] = []
    left: list[tuple[str, str]] = []
    words = [t.text for t in tokens]
    serve = next((i for i, w in enumerate(words[:-1]) if w.rsplit("/", 1)[-1] == "vllm" and words[i + 1] == "serve"),
                 None)
    skip = False
    for i, t in enumerate(tokens):
        if skip:
            skip = False
            continue
        if "$" not in t.text:
            out.append(t)
            continue
        opt, eq, val = t.text.partition("=")
        if eq and opt.startswith("-"):
            left.append((_option(opt)[0], val))
        elif out and out[-1].text.startswith("-") and "=" not in out[-1].text:
            left.append((_option(out.pop().text)[0], t.text))
        elif serve is not None and i == serve + 2:
            left.append(("model", t.text))
        else:
            left.append(("", t.text))
    return out, left


def build(s: Server, obj: Node, path: tuple, tokens: list[Token], assumed: list[str]) -> Server | None:
    """Apply the command line to the server, its model from beside it when the command names none; None (and a
    note on the object) when the model is a variable the file does not give."""
    from configurator.lint.extract import apply_tokens
    from configurator.lint.formats._common import set_model

    tokens, unknown = _known_only(tokens)
    if any(opt in ("--model", "model") for opt, _ in unknown):
        value = next(v for opt, v in unknown if opt in ("--model", "model"))
        obj.note((*obj.path, *path), f"runs vLLM, but its model is '{value}', which the file does not give: "
                 "nothing was checked")
        return None
    apply_tokens(s, tokens)
    parallel_facts(s, tokens)
    for opt, value in unknown:
        assumed.append(f"{opt} {value} is not given in the file: left out")
        if opt in _PARALLEL:
            s.parallel_unresolved.add(_PARALLEL[opt])
    if "model" not in s.flags:
        set_model(s, _model_near(obj.value, path), s.loc)
    model = str(s.flags.get("model", ""))
    if "$" in model or "{{" in model or re.search(r"__[A-Z_]+__", model):
        obj.note((*obj.path, *path), f"runs vLLM, but its model is '{model}', which the file does not give: "
                 "nothing was checked")
        return None
    s.assumed += [(a, s.loc) for a in assumed]
    return s


def _server(obj: Node, f: Found, env: dict[str, str], kind: str) -> Server | None:
    from configurator.lint.formats._common import kwargs_tokens

    node = obj.at(*f.path)
    s = new_server(obj, f.path, kind, env)
    assumed: list[str] = []
    if f.how == "kwargs":
        dests = _engine_dests() | {"model"}
        wanted = {k for k in node.value if isinstance(k, str) and snake(k) in dests and
                  (snake(k) != "model" or isinstance(node.value[k], str))}
        sub = Node(node.doc, node.path, {k: v for k, v in node.value.items() if k in wanted}, node.notes)
        tokens = kwargs_tokens(sub, snake)
        if not any(t.text == "--model" for t in tokens) and _model_near(obj.value, f.path) is None:
            return None  # engine arguments with no model near them: defaults of a chart, not a server
    elif f.how == "docker":
        got = docker_run(node, env, assumed)
        if got is None:
            return None
        s.image, tokens, gpus = got
        if gpus is not None:
            s.gpu_count, s.gpu_resource, s.gpu_loc = gpus, "nvidia.com/gpu", node.loc()
    else:
        tokens = command_tokens(node, env, assumed)
        if tokens is None:
            return None
    return build(s, obj, f.path, tokens, assumed)


DOCKER_RUN = re.compile(r"\b(?:docker|podman)\s+run\b")
# `docker run` options that take a value (docker/cli cli/command/container/opts.go), so the image is the first
# word that is neither an option nor such a value
_DOCKER_VALUED = frozenset({"-v", "--volume", "-p", "--publish", "-e", "--env", "--name", "--gpus", "--ipc",
                            "--shm-size", "--network", "--net", "--mount", "--runtime", "--entrypoint", "--ulimit",
                            "--device", "--env-file", "-w", "--workdir", "-u", "--user", "--restart", "--memory",
                            "-m", "--cpus", "--label", "-l", "--platform", "--hostname", "-h", "--pull",
                            "--cap-add", "--security-opt", "--add-host", "--log-driver", "--log-opt"})


def docker_run(node: Node, env: dict[str, str], assumed: list[str]) -> tuple[str, list[Token], int | None] | None:
    """`docker run [options] <vllm image> [vLLM arguments]` in a script: (image, the arguments, GPUs from
    --gpus N / "device=0,1"; None for `all`), or None when the image run is not vLLM's."""
    from configurator.lint.extract import shell_words

    text, took = expand_vars(node.value, env)
    for seg in shell_words(text, script=True):
        words = [w for w, _ in seg]
        at = next((i for i, w in enumerate(words[:-1]) if w in ("docker", "podman") and words[i + 1] == "run"), None)
        if at is None:
            continue
        i, gpus = at + 2, None
        while i < len(words) and words[i].startswith("-"):
            opt, eq, val = words[i].partition("=")
            if opt in _DOCKER_VALUED and not eq:
                val = words[i + 1] if i + 1 < len(words) else ""
                i += 1
            if opt == "--gpus":
                val = val.strip("'\"")
                gpus = int(val) if val.isdigit() else len(val.split("=", 1)[1].split(",")) if \
                    val.startswith("device=") else None
            i += 1
        if i < len(words) and "vllm" in words[i].lower():
            assumed += took
            return words[i], from_vllm([Token(w, node.loc()) for w in words[i + 1:]]) or [], gpus
    return None


def _nested(obj: Node, inputs: Inputs, path: tuple, text: str, kind: str) -> list[Server]:
    """YAML held in a string (a Ray Serve config, a values file in a Helm release, an env var): its servers, each
    location moved to the line in the outer file."""
    from configurator.lint.load import parse_text

    base = obj.loc(*path)
    docs, problems = parse_text(text, obj.doc.file)
    if problems:
        return []
    block = obj.doc.style(obj.path + path) in ("|", ">")
    shift = base.line + (1 if block else 0) - 1

    def move(loc: Loc) -> Loc:
        return Loc(base.file, loc.line + shift, loc.column) if block else base

    out = []
    for d in docs:
        if isinstance(d.data, dict | list):
            for s in discover(Node.of(d), inputs, kind):
                s.loc, s.object_loc = move(s.loc), base
                s.flag_locs = {k: move(v) for k, v in s.flag_locs.items()}
                s.gpu_loc = move(s.gpu_loc) if s.gpu_loc else None
                s.gpu_labels_loc = move(s.gpu_labels_loc) if s.gpu_labels_loc else None
                s.unmodelled = [(a, move(b)) for a, b in s.unmodelled]
                s.unknown = [(a, move(b)) for a, b in s.unknown]
                s.assumed = [(a, move(b)) for a, b in s.assumed]
                out.append(s)
    return out


def dynamo_sdk(obj: Node, path: tuple, env: dict[str, str], kind: str) -> list[Server]:
    """A Dynamo SDK graph config (ai-dynamo/dynamo v0.3, examples/llm/configs/*.yaml, `dynamo serve -f`): each
    component takes the `Common` keys it lists in `common-configs`, then its own; a component with GPUs
    (`ServiceArgs.resources.gpu`) is a vLLM worker, run `ServiceArgs.workers` times (each its own server)."""
    from configurator.lint.formats._common import kwargs_tokens, set_gpu_count

    graph = obj.at(*path)
    common = graph.mapping("Common")
    out: list[Server] = []
    for name, comp in graph.entries():
        if name == "Common" or not isinstance(comp.value, dict):
            continue
        gpu = comp.at("ServiceArgs", "resources", "gpu")
        if _int(gpu.value) is None:
            continue  # Frontend, Processor: no GPUs, not a vLLM worker
        keys = {str(k.text()) for k in comp.items("common-configs")}
        tokens = []
        if common is not None:  # each value at its own line: Common's first, the component's own after (they win)
            tokens += kwargs_tokens(Node(common.doc, common.path, {k: v for k, v in common.value.items()
                                                                   if k in keys}, common.notes), snake)
        tokens += kwargs_tokens(Node(comp.doc, comp.path, {k: v for k, v in comp.value.items()
                                                           if snake(k) in _engine_dests() | {"model"}}, comp.notes),
                                snake)
        for _ in range(max(1, min(_int(comp.at("ServiceArgs", "workers").value) or 1, 64))):
            s = new_server(obj, (*path, name), kind, env, name=name)
            s = build(s, obj, (*path, name), tokens, [])
            if s is not None:
                set_gpu_count(s, _int(gpu.value), gpu.loc())
                out.append(s)
    return out


# What says "vLLM runs here" (not merely "vLLM is named here"): a vLLM command line, a vLLM image, a mapping of
# engine arguments, or a key that configures a vLLM server. A Service named vllm, a ConfigMap of router
# settings, a .pre-commit-config.yaml hook or a README string name vLLM without deploying it.
_IMAGE_KEYS = frozenset({"image", "repository", "image_id", "imagename", "image_name", "base_image", "from"})
_NOT_VLLM_IMAGE = re.compile(r"configurator|router|gateway|proxy|exporter", re.I)  # named after vLLM, not vLLM
_SERVER_KEYS = frozenset({"engine_kwargs", "vllm_config", "vllmconfig", "engine_args", "vllm_args", "vllmargs",
                          "servingengine", "serving_engine_spec", "servingenginespec"})


def deploys_vllm(data: object, budget: int = MAX_NODES) -> bool:
    """Whether a document deploys a vLLM server (see above), as far as a bounded walk can tell."""
    for path, v in _walk(data, budget):
        if isinstance(v, str):
            if VLLM_COMMAND.search(v) or (path and isinstance(path[-1], str) and path[-1].lower() in _IMAGE_KEYS
                                          and "vllm" in v.lower() and not _NOT_VLLM_IMAGE.search(v)):
                return True
        elif isinstance(v, dict):
            if any(isinstance(k, str) and k.lower() in _SERVER_KEYS for k in v) or engine_mapping(path, v):
                return True
        elif isinstance(v, list) and v and all(isinstance(x, str) for x in v[:3]) and _is_argv(v):
            return True
    return False
