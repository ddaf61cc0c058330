"""load -> extract -> evaluate: the one pipeline the CLI, the webhook and `audit` call.

The engine resolves each server's model, GPU and release, runs `estimate` on its flags (or, with no
GPU type, against the GPU catalog), runs every enabled rule, and attaches rule id, severity, object
and location to each hit. Findings are immutable once made; suppressions (annotations, config) are
applied here, not in the rules, and a suppressed finding is kept with its reason, not dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from configurator.errors import ConfiguratorError, InputError
from configurator.estimate import EstimateRequest, estimate
from configurator.hardware.catalog import find_gpu
from configurator.hardware.labels import gpu_from_labels, gpus_from_labels
from configurator.lint.config import LintConfig, Settings
from configurator.lint.extract import ANNOTATION_PREFIX, Server, image_release, ngc_tag
from configurator.lint.find import extract_all
from configurator.lint.load import Document, Problem
from configurator.lint.parallel import per_gpu_unknown
from configurator.lint.rules import (
    REGISTRY,
    SEVERITY_ORDER,
    CatalogFit,
    Context,
    Release,
    Severity,
    no_check,
    verdict_of,
)
from configurator.model.resolver import manifest_model
from configurator.record import doc, to_json, to_json_large
from configurator.vllm.versions import image_ships_flashinfer

IGNORE_ANNOTATION = ANNOTATION_PREFIX + "ignore"  # "rule-a,rule-b" or "all" (no reason)
IGNORE_ALL_ANNOTATION = ANNOTATION_PREFIX + "ignore-all"  # "<reason>"
IGNORE_CHECK_PREFIX = "ignore-check.vllm-configurator.io/"  # ignore-check.vllm-configurator.io/<rule>: "<reason>"
GPU_ANNOTATION = ANNOTATION_PREFIX + "gpu"
USED_ANNOTATION = ANNOTATION_PREFIX + "gpu-memory-used"
MODEL_ANNOTATION = ANNOTATION_PREFIX + "model"  # the model a served name or local path stands for
INTERNAL_ERROR = "internal-error"  # fails closed: an annotation cannot silence it (only the operator's config)

__all__ = ["CheckReport", "Finding", "LintConfig", "ObjectRef", "Options", "ServerReport", "Suppression", "evaluate"]


@dataclass(kw_only=True)
class ObjectRef:
    kind: str
    namespace: str | None = None
    name: str


@dataclass(kw_only=True, frozen=True)
class Suppression:
    """Why a finding is not counted (SARIF `suppressions`): an annotation on the object (inSource) or
    the config file (external)."""

    kind: Literal["inSource", "external"]
    justification: str
    source: str = doc(description="the annotation key or config setting that suppressed it")


@dataclass(kw_only=True, frozen=True)
class Finding:
    rule: str
    severity: Severity
    message: str
    file: str
    line: int
    column: int = 1
    object: ObjectRef | None = None
    container: str | None = None
    suppression: Suppression | None = None
    basis: dict[str, str] = doc(default_factory=dict, description="what the server's finding rests on: `release` "
                                "(image tag / controller default / assumed newest) and, per flag, where its value "
                                "came from (literal / env var X in the file / default of ${X:-d} / unresolved)")


@dataclass(kw_only=True)
class CatalogReport:
    """A server with no GPU type, evaluated on every catalog GPU at its flags."""

    needs_bytes_per_gpu: int | None = doc(description="GPU memory (CUDA total) one GPU needs at these flags")
    fits: list[str]
    at_risk: list[str]
    refused: list[str]


@dataclass(kw_only=True)
class ServerReport:
    file: str
    line: int
    object: ObjectRef
    container: str
    model: str | None
    gpu: str | None
    gpu_source: str
    gpu_count: int | None
    vllm_version: str
    vllm_version_source: str = doc("", description="where the release came from (image tag, --vllm-version, ...)")
    flags: dict[str, Any]
    verdict: Literal["fits", "at-risk", "refused", "not-predicted", "not-checked"]
    kv_cache_bytes: int | None = None
    kv_cache_bytes_low: int | None = None
    kv_cache_bytes_high: int | None = None
    band_basis: str | None = doc(None, description="what the available-KV band rests on (EstimateResult.band_basis)")
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    catalog: CatalogReport | None = None
    basis: dict[str, str] = doc(default_factory=dict, description="what the server's reading rests on (Finding.basis)")


@dataclass(kw_only=True)
class Summary:
    files: int = doc(description="files read")
    servers_found: int = doc(description="vLLM servers found")
    servers_checked: int = doc(description="servers checked against a GPU's memory budget")
    not_understood: int = doc(description="objects that mention vLLM but yield no server the linter understood")
    errors: int
    warnings: int
    info: int
    suppressed: int = doc(description="findings silenced by an annotation or the config file")


@dataclass(kw_only=True)
class CheckReport:
    """schemas/check-report.schema.json is generated from this."""

    findings: list[Finding] = doc(description="active findings (suppressed ones are in `suppressed`)")
    suppressed: list[Finding] = doc(default_factory=list, description="findings silenced, each with its reason")
    servers: list[ServerReport]
    files: int = doc(description="files read")
    summary: Summary | None = None

    def to_json(self, indent: int | None = 2) -> str:
        """`check --format json`."""
        large = len(self.servers) + len(self.findings) + len(self.suppressed) > 200
        return (to_json_large if large else to_json)(self, indent)

    def worst(self) -> str | None:
        if not self.findings:
            return None
        return min(self.findings, key=lambda f: SEVERITY_ORDER[f.severity]).severity


@dataclass
class Options:
    gpu: str | None = None
    workload: str | None = None
    vllm_version: str | None = None
    model_config_dirs: tuple[str, ...] = ()
    severities: dict[str, str] | None = None
    settings: Settings | None = None  # the config file: GPU map, models, per-rule paths
    catalog: bool = True  # with no GPU type, evaluate against every catalog GPU
    # name -> ModelSpec in place of the lookup below (the webhook's: catalog only, never a pod's path)
    model_resolver: Any = None
    # caches that outlive one evaluation, for a long-lived caller (the webhook): model name -> spec,
    # (spec, GPU, release, flags) -> estimate and (spec, release, flags) -> catalog fit, pure for the process's
    # life as its verdict cache already assumes; bounded (_Run.shared). None: each evaluation computes its own.
    memo: dict | None = None


# -- model, GPU, release ------------------------------------------------------------------------------

def _model(name: str, dirs: tuple[str, ...], cache: dict, resolver: Any = None,
           local_ok: bool = False) -> tuple[Any, str | None]:
    """The ModelSpec a server's model name stands for, or (None, why): configurator.model.resolver, the one
    lookup `check`, `review`, the webhook and `audit` share (a path a manifest names is never read here)."""
    key = (name, local_ok, dirs)
    if key not in cache:
        if resolver is not None:
            try:
                cache[key] = (resolver(name), None)
            except (ConfiguratorError, OSError, ValueError) as e:
                cache[key] = (None, f"model '{name}' cannot be resolved offline: {e}")
        else:
            cache[key] = manifest_model(name, dirs, local_ok)
    return cache[key]


def _find(name: str) -> Any:
    try:
        return find_gpu(name)
    except ConfiguratorError:
        return None


def _gpu(server: Server, opts: Options, settings: Settings) -> tuple[Any, str]:
    note = server.annotations.get(GPU_ANNOTATION)
    if note and (gpu := _find(note)) is not None:
        return gpu, f"annotation {GPU_ANNOTATION}={note}"
    gpu, source = gpu_from_labels(server.gpu_labels)
    if gpu is not None:
        if server.gpu_resource and server.gpu_resource.startswith("nvidia.com/mig-"):
            profile = server.gpu_resource.split("mig-", 1)[1]
            if (mig := _find(f"{gpu.name}:{profile}")) is not None:
                return mig, f"{source} + {server.gpu_resource}"
        return gpu, source
    mapped = settings.gpu_for(server.gpu_resource, server.gpu_labels)
    if mapped is not None and (gpu := _find(mapped[0])) is not None:
        return gpu, mapped[1]
    if opts.gpu and (gpu := _find(opts.gpu)) is not None:
        return gpu, "--gpu"
    default = settings.default_gpu()
    if default and (gpu := _find(default)) is not None:
        return gpu, f"{settings.source or 'config'} gpu"
    return None, ""


def _release(server: Server, opts: Options) -> Release:
    """The vLLM release a server runs and where that came from; a tag outside the modelled range or
    naming no release is evaluated as the nearest modelled release, and the Release says so."""
    from configurator.vllm.versions import NEWEST, OLDEST, _key, normalize

    chosen = opts.vllm_version
    image = server.image or ""
    named, tag = image_release(image) if image else (None, "latest")
    if named is None and server.env.get("VLLM_VERSION"):
        named, tag = server.env["VLLM_VERSION"], f"env VLLM_VERSION={server.env['VLLM_VERSION']}"
    if named is None:
        if chosen:
            return Release(_normalize(chosen), "--vllm-version / config vllm_version")
        if tag.startswith("latest") or not image:  # latest, latest-gpu: the newest release
            return Release(NEWEST, f"image tag '{tag}' (the newest modelled release)")
        what = (f"image tag '{tag}' is an NGC container release (year.month), not a vLLM release, and names "
                f"none" if ngc_tag(image) else f"image tag '{tag}' names no vLLM release")
        return Release(NEWEST, f"image {image}", problem="unknown",
                       message=f"{what}: evaluated as {NEWEST}, the newest modelled release, with its defaults (set "
                               f"--vllm-version or vllm_version in .vllm-configurator.yaml to choose)")
    try:
        key = _key(re.split(r"[+\-]", named.lower().lstrip("v"))[0])
    except ValueError:
        key = None
    if key is not None and key < _key(OLDEST):
        return Release(OLDEST, f"image {image}", problem="not-modelled",
                       message=f"{image or tag} runs vLLM {named}, older than the oldest modelled release {OLDEST}: "
                               f"evaluated as {OLDEST}, with its defaults")
    if key is not None and key > _key(NEWEST):
        return Release(NEWEST, f"image {image}", problem="not-modelled",
                       message=f"{image or tag} runs vLLM {named}, newer than the newest modelled release {NEWEST}: "
                               f"evaluated as {NEWEST}, with its defaults")
    try:
        return Release(normalize(named), f"image {image}" if image else tag)
    except InputError:
        return Release(NEWEST, f"image {image}", problem="unknown",
                       message=f"image tag '{tag}' names no vLLM release: evaluated as {NEWEST}")


def _normalize(version: str) -> str:
    from configurator.vllm.versions import NEWEST, normalize

    try:
        return normalize(version)
    except InputError:
        return NEWEST


def _estimate_flags(server: Server) -> dict[str, Any]:
    return {k: v for k, v in server.flags.items() if k != "model"}


def _request(model: Any, gpu: Any, version: str, flags: dict, used: int = 0,
             flashinfer: bool | None = None) -> EstimateRequest:
    """`flashinfer`: whether the image ships FlashInfer (vllm.versions.image_ships_flashinfer: the official image
    does; None when unknown), which decides the profiling sampler of 0.9.0-0.11.0 and so the band's high end."""
    return EstimateRequest(model=model, gpu=gpu.name if gpu.name != "custom" else None,
                           gpu_memory=f"{gpu.total_bytes}B" if gpu.name == "custom" else None,
                           vllm_version=version, flags=flags, gpu_memory_used=used, flashinfer_installed=flashinfer)


def _estimate_once(cache: dict, model: Any, gpu: Any, version: str, flags: dict, used: int = 0,
                   flashinfer: bool | None = None) -> Any:
    """`estimate` for one (model, GPU, release, flags, memory in use) key, computed once per run: public
    manifests repeat the same server many times (replicas of a chart, one Deployment per namespace), and
    estimate is pure. A refusal (InputError) is remembered and raised again, like the first time."""
    key = (id(model), gpu.name, gpu.total_bytes, version, repr(sorted(flags.items())), used, flashinfer)
    hit = cache.get(key)
    if hit is None or hit[2] is not model:  # an id is unique only while its object lives: the spec is kept
        try:
            hit = (estimate(_request(model, gpu, version, flags, used, flashinfer)), None, model)
        except InputError as e:
            hit = (None, e, model)
        cache[key] = hit
    if hit[1] is not None:
        raise hit[1]
    return hit[0]


def needed_bytes_per_gpu(result: Any) -> int:
    """The GPU memory (CUDA total) vLLM needs at these flags: what is not KV, plus one request of
    max_model_len (blocks_per_request x bytes_per_block), over gpu_memory_utilization."""
    m, kv = result.memory, result.kv_cache
    fixed = m.weights_bytes + m.activation_bytes + m.non_torch_bytes + m.cudagraph_bytes + m.other_bytes
    one_request = kv.blocks_per_request * kv.bytes_per_block
    util = float(result.flags.get("gpu_memory_utilization") or 0.9)
    return int((fixed + one_request) / util)


def _catalog_fit(model: Any, version: str, flags: dict, cache: dict) -> CatalogFit | None:
    """Every catalog GPU (MIG slices aside) at these flags: which fit, which vLLM would refuse."""
    from configurator.hardware.catalog import list_gpus

    key = (id(model), version, repr(sorted(flags.items())))
    hit = cache.get(key)
    if hit is not None and hit[1] is model:  # as in _estimate_once: the spec is kept beside what it gave
        return hit[0]
    fits, risky, refused = [], [], []
    needs: list[tuple[int, int]] = []  # (GPU total, bytes needed) of every GPU evaluated
    for gpu in sorted(list_gpus(), key=lambda g: g.total_bytes):
        try:
            r = estimate(_request(model, gpu, version, flags))
        except InputError:
            refused.append(gpu)
            continue
        v = verdict_of(r)
        (fits if v == "fits" else risky if v in ("at-risk", "not-predicted") else refused).append(gpu)
        if r.kv_cache.blocks_per_request > 0:
            needs.append((gpu.total_bytes, needed_bytes_per_gpu(r)))
    # the figure of the smallest GPU it fits on (defaults that depend on the GPU are then the ones it gets),
    # else of the largest GPU
    fitting = {g.total_bytes for g in fits}
    chosen = next((n for total, n in needs if total in fitting), needs[-1][1] if needs else None)
    out = CatalogFit(needs_bytes=chosen, fits=tuple(fits), at_risk=tuple(risky), refused=tuple(refused))
    cache[key] = (out, model)
    return out


# -- suppressions -------------------------------------------------------------------------------------

def _suppression(rule: str, annotations: dict[str, str]) -> Suppression | None:
    key = IGNORE_CHECK_PREFIX + rule
    if key in annotations:
        return Suppression(kind="inSource", justification=annotations[key].strip() or "no reason given", source=key)
    if IGNORE_ALL_ANNOTATION in annotations:
        return Suppression(kind="inSource", source=IGNORE_ALL_ANNOTATION,
                           justification=annotations[IGNORE_ALL_ANNOTATION].strip() or "no reason given")
    listed = {x.strip() for x in annotations.get(IGNORE_ANNOTATION, "").split(",") if x.strip()}
    if rule in listed or "all" in listed:
        return Suppression(kind="inSource", source=IGNORE_ANNOTATION,
                           justification=f"listed in the {IGNORE_ANNOTATION} annotation (no reason given)")
    return None


class _Collector:
    """Builds findings, routing each to `findings` or `suppressed`."""

    def __init__(self, severities: dict[str, str], settings: Settings):
        self.severities = severities
        self.settings = settings
        self.findings: list[Finding] = []
        self.suppressed: list[Finding] = []

    def severity(self, rule: str) -> str:
        return self.severities.get(rule, REGISTRY[rule].severity)

    def add(self, rule: str, message: str, loc: Any, obj: ObjectRef | None = None, container: str | None = None,
            annotations: dict[str, str] | None = None, basis: dict[str, str] | None = None) -> None:
        sev = self.severity(rule)
        if sev == "off":
            return
        sup = _suppression(rule, annotations) if annotations and rule != INTERNAL_ERROR else None
        if sup is None:
            why = self.settings.rule_excluded(rule, loc.file)
            if why is not None:
                sup = Suppression(kind="external", justification=why, source=self.settings.source or "config")
        f = Finding(rule=rule, severity=sev, message=message, file=loc.file, line=loc.line, column=loc.column,
                    object=obj, container=container, suppression=sup, basis=basis or {})
        (self.suppressed if sup is not None else self.findings).append(f)


def _order(f: Finding) -> tuple:
    return f.file, f.line, SEVERITY_ORDER[f.severity], f.rule


# -- the pipeline -------------------------------------------------------------------------------------

def _mentions_vllm(data: Any) -> bool:
    """Whether any key or scalar of a document mentions vLLM (an iterative walk: no recursion on user data)."""
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack += list(x.keys()) + list(x.values())
        elif isinstance(x, list):
            stack += x
        elif isinstance(x, str) and "vllm" in x.lower():
            return True
    return False


def _may_deploy(data: Any, read: bool) -> bool:
    """Whether a document that mentions vLLM may deploy it: never a Service, Ingress, RBAC object ... (it only
    names it); a ConfigMap or an object without a kind only when it holds a vLLM command, image or engine
    arguments, or a server reads it (a .pre-commit-config.yaml hook, a router's ConfigMap only name vLLM)."""
    from configurator.lint.discover import deploys_vllm
    from configurator.lint.formats import NO_SERVER_KINDS

    kind = data.get("kind") if isinstance(data, dict) else None
    if isinstance(kind, str) and kind in NO_SERVER_KINDS:
        return read
    if kind is None or kind == "ConfigMap":
        return read or deploys_vllm(data) or bool(kind and engine_config_keys(data))
    return True


MAX_CONFIG_TEXT = 64 << 10  # a ConfigMap value read as a vLLM --config file only up to this many characters


def engine_config_keys(data: Any) -> list[str]:
    """The vLLM engine arguments a ConfigMap holds, as its data keys or in a value that is a YAML `--config`
    file (vllm/engine/arg_utils.py reads one mapping of argument names); [] when it holds none."""
    from configurator.lint.discover import engine_args

    values = data.get("data") if isinstance(data, dict) else None
    if not isinstance(values, dict):
        return []
    found = [values] if engine_args(values) else []
    for text in values.values():
        if isinstance(text, str) and ":" in text:
            doc = _config_text(text)
            if isinstance(doc, dict) and engine_args(doc):
                found.append(doc)
    return sorted({str(k) for d in found for k in d})


def _config_text(text: str) -> Any:
    """A ConfigMap value parsed as the YAML file vLLM's --config would read (the C safe loader), None when it does
    not parse or is longer than MAX_CONFIG_TEXT."""
    import yaml

    from configurator.lint.load import _BaseLoader

    if len(text) > MAX_CONFIG_TEXT:
        return None
    try:
        return yaml.load(text, Loader=_BaseLoader)
    except (yaml.YAMLError, ValueError, RecursionError):
        return None


CONFIG_FILE_SUFFIXES = (".yaml", ".yml", ".json")  # a ConfigMap key named as a file vLLM's --config could read


def _not_an_object(data: Any) -> str | None:
    """Why this document cannot be what it names, for the shapes a vLLM deployment gets wrong without a parse
    error, or None: an object whose apiVersion is not a string or that has no kind, and a ConfigMap whose data or
    binaryData is not a map of names to strings (a --config file written as a nested mapping instead of a literal
    block), which the API server rejects; a ConfigMap key named as a YAML / JSON file whose text is a bare value,
    not a mapping of settings (vLLM's --config reads one mapping)."""
    if not isinstance(data, dict):
        return None
    kind = data.get("kind")
    if "apiVersion" in data and not isinstance(data["apiVersion"], str):
        return f"an object whose apiVersion is a {type(data['apiVersion']).__name__}: the API server would reject it"
    if "apiVersion" in data and (not isinstance(kind, str) or not kind):
        return "an object with an apiVersion but no kind: the API server would reject it"
    if kind != "ConfigMap":
        return None
    for key in ("data", "binaryData"):
        values = data.get(key)
        if values is None:
            continue
        if not isinstance(values, dict):
            return (f"a ConfigMap whose {key} is a {type(values).__name__}, not a map of names to strings: the API "
                    "server would reject it")
        bad = next((k for k, v in values.items() if v is not None and not isinstance(v, str)), None)
        if bad is not None:
            return (f"a ConfigMap whose {key} value '{str(bad)[:40]}' is a {type(values[bad]).__name__}, not a "
                    "string (a file kept in a ConfigMap is a literal block: `|`): the API server would reject it")
    for name, text in (data.get("data") or {}).items():
        if not str(name).endswith(CONFIG_FILE_SUFFIXES):
            continue
        if text is None or not text.strip():
            return f"a ConfigMap file '{str(name)[:40]}' that is empty (vLLM's --config reads one mapping of settings)"
        if len(text) <= MAX_CONFIG_TEXT and not isinstance(_config_text(text), (dict, list)):
            return (f"a ConfigMap file '{str(name)[:40]}' whose text is not a mapping of settings (vLLM's "
                    "--config reads one mapping)")
    return None


def _no_silent_files(docs: list[Document], servers: list, out: Any, read: dict[str, list[str]] | None = None) -> int:
    """A file that mentions vLLM but yielded neither a server nor a finding gets one note, so nothing that names
    vLLM passes in silence: read-by-server when a server of another file read it (`read`: file -> the servers
    that read it, a KServe runtime, a --config ConfigMap), else not-understood (a Service called vllm, an object
    of an unknown kind). Returns how many files were reported not-understood (the summary counts them)."""
    read = read or {}
    unread = 0
    spoken = {s.file for s in servers} | {f.file for f in out.findings} | {f.file for f in out.suppressed}
    for d in docs:
        if d.file in spoken or not _mentions_vllm(d.data):
            continue
        bad = _not_an_object(d.data)
        if bad is None and not _may_deploy(d.data, d.file in read):
            continue
        spoken.add(d.file)
        if bad is not None:
            out.add("not-understood", f"{bad}: nothing in it was checked", d.loc(()))
            unread += 1
            continue
        if d.file in read:
            names = sorted(set(read[d.file]))
            out.add("read-by-server", f"read by {', '.join(names[:3])}{' and others' if len(names) > 3 else ''}: "
                    "its settings are checked as part of that server", d.loc(()))
            continue
        keys = engine_config_keys(d.data) if isinstance(d.data, dict) and d.data.get("kind") == "ConfigMap" else []
        if keys:
            out.add("config-unbound", f"a ConfigMap of vLLM engine arguments ({', '.join(keys[:4])}"
                    f"{' ...' if len(keys) > 4 else ''}) that no server in the input reads: its settings were not "
                    "checked", d.loc(()))
            continue
        kinds = sorted({str(x.data.get("kind")) for x in docs if x.file == d.file and isinstance(x.data, dict)
                        and isinstance(x.data.get("kind"), str)})
        what = f" (kinds: {', '.join(kinds)})" if kinds else ""
        out.add("not-understood", f"the file mentions vLLM but holds no vLLM server check reads{what}: "
                "nothing in it was checked", d.loc(()))
        unread += 1
    return unread


def cause(e: BaseException, limit: int = 160) -> str:
    """An exception as one short line: its type and its message, control characters and newlines flattened."""
    try:
        text = str(e)
    except Exception:  # a message that cannot itself be rendered
        text = ""
    text = " ".join("".join(c if c.isprintable() else " " for c in text[: limit * 2]).split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _extract_failing_closed(docs: list[Document], release: str | None, out: Any) -> tuple[list, list]:
    """extract_all, but an exception is an internal-error finding, never a crash nor a pass: the input is
    retried file by file, and each file whose extraction still fails is reported (and its servers unchecked)."""
    try:
        return extract_all(docs, release)
    except Exception:  # retried per file below, where the cause is reported
        pass
    by_file: dict[str, list[Document]] = {}
    for d in docs:
        by_file.setdefault(d.file, []).append(d)
    found: list = []
    unread: list = []
    for file_docs in by_file.values():
        try:
            f, u = extract_all(file_docs, release)
        except Exception as e:  # that file fails closed
            out.add(INTERNAL_ERROR, f"internal error reading the servers of this file ({cause(e)}): not checked",
                    file_docs[0].loc(()))
            continue
        found += f
        unread += u
    return found, unread


@dataclass
class _Run:
    """What one evaluation shares across its servers: the options, the collector and the caches of values that
    are pure in their keys (the same few recur across a repository's servers)."""

    opts: Options
    settings: Settings
    out: _Collector
    workload: Any
    dirs: tuple[str, ...]
    enabled: list  # the rules not turned off, once per run
    checks: list = field(default_factory=list)  # (id, check) of each enabled rule that checks servers
    models: dict = field(default_factory=dict)
    catalog_cache: dict = field(default_factory=dict)
    estimates: dict = field(default_factory=dict)  # (model, GPU, release, flags, used) -> estimate
    gpus: dict = field(default_factory=dict)  # (GPU annotation, node labels, GPU resource) -> (GPU, its source)
    releases: dict = field(default_factory=dict)  # (image, VLLM_VERSION env) -> (Release, behaviour version)

    # Options.memo's bound on each cache: past it in any, all start again. An estimate kept holds ~23 KiB
    # (tracemalloc over 200), so 1,024 of them ~23 MiB of the webhook chart's 512 MiB limit
    MEMO_BOUND = 1024

    def shared(self, memo: dict) -> None:
        """Use the caller's lasting caches (Options.memo) of models, estimates and catalog fits."""
        caches = [memo.setdefault(name, {}) for name in ("models", "estimates", "catalog")]
        if any(len(c) > self.MEMO_BOUND for c in caches):
            for c in caches:
                c.clear()
        self.models, self.estimates, self.catalog_cache = caches


def _server_model(s: Server, run: _Run) -> tuple[Any, Any, str | None, str | None]:
    """(the model name as written, its ModelSpec, why it has none, a note on how it was found). What the served
    name or path stands for: the config's models: map (may name a local config.json), else the workload's
    vllm-configurator.io/model annotation, else the name itself; a path inside the container may be named by its
    served name."""
    settings, opts = run.settings, run.opts
    name = s.flags.get("model")
    model_id, local_ok = None, False
    if name is not None:
        model_id = settings.model_for(str(name))
        local_ok = model_id != str(name)
        if local_ok and model_id.startswith(("./", "../")) and settings.source \
                and (settings.base / model_id).exists():
            model_id = str(settings.base / model_id)  # a config.json named relative to the config file
        if not local_ok and s.annotations.get(MODEL_ANNOTATION, "").strip():
            model_id = s.annotations[MODEL_ANNOTATION].strip()
    model, model_error = _model(model_id, run.dirs, run.models, opts.model_resolver, local_ok) if model_id \
        else (None, None)
    if name is None:
        model_error = "no model in the command (vLLM's default model is facebook/opt-125m)"
    model_note = None
    if model is None and model_id == str(name) and str(name).startswith(("/", "./", "../", "~")):
        # a path inside the container: its served name may name the model (checked as that, and said so)
        for alias in s.served_names:
            found_model, _ = _model(str(alias), run.dirs, run.models, opts.model_resolver)
            if found_model is not None:
                model, model_error = found_model, None
                model_note = (f"model '{name}' is a path inside the container; its served name '{alias}' "
                              f"names {found_model.hf_id or found_model.name}, whose geometry is used")
                break
    return name, model, model_error, model_note


def _gpu_and_release(s: Server, run: _Run) -> tuple[Any, str, Release, str]:
    """(GPU, where it came from, the Release, the behaviour version evaluated), each computed once per key."""
    from configurator.vllm.versions import behaviour

    gpu_key = (s.annotations.get(GPU_ANNOTATION), repr(sorted(s.gpu_labels.items())), s.gpu_resource)
    if gpu_key not in run.gpus:
        run.gpus[gpu_key] = _gpu(s, run.opts, run.settings)
    gpu, gpu_source = run.gpus[gpu_key]
    release_key = (s.image, s.env.get("VLLM_VERSION"))
    if release_key not in run.releases:
        release = _release(s, run.opts)
        try:
            version = behaviour(release.version).version
        except InputError:
            version = behaviour("latest").version
        run.releases[release_key] = release, version
    release, version = run.releases[release_key]
    return gpu, gpu_source, release, version


def _budget(s: Server, run: _Run, model: Any, gpu: Any, version: str) -> tuple[Any, str | None, int | None, Any]:
    """(the estimate, why there is none, the workload's typical concurrency, the catalog fit with no GPU type)."""
    from configurator.units import parse_size

    result, est_error, typical, catalog = None, None, None, None
    flags = _estimate_flags(s)
    if model is not None and gpu is not None and not per_gpu_unknown(s):
        used = 0
        if s.annotations.get(USED_ANNOTATION):
            try:
                used = parse_size(s.annotations[USED_ANNOTATION], what=USED_ANNOTATION)
            except InputError:
                used = 0
        try:
            result = _estimate_once(run.estimates, model, gpu, version, flags, used, image_ships_flashinfer(s.image))
        except InputError as e:
            est_error = str(e)
        workload = run.workload
        if result is not None and workload is not None and result.fits and result.memory.kv_cache_bytes > 0:
            probe = estimate(_request(model, gpu, version, {
                **flags, "kv_cache_memory_bytes": result.memory.kv_cache_bytes,
                "max_model_len": min(workload.typical_tokens, result.flags["max_model_len"]),
                "max_num_seqs": result.flags["max_num_seqs"],
                "max_num_batched_tokens": result.flags["max_num_batched_tokens"]}))
            typical = int(probe.kv_cache.max_concurrency)
    elif model is not None and gpu is None and run.opts.catalog and not s.accelerator and not per_gpu_unknown(s):
        try:
            catalog = _catalog_fit(model, version, flags, run.catalog_cache)
        except InputError as e:
            est_error = str(e)
    return result, est_error, typical, catalog


def _server_report(s: Server, obj: ObjectRef, name: Any, gpu: Any, gpu_source: str, version: str, release: Release,
                   result: Any, catalog: CatalogFit | None) -> ServerReport:
    return ServerReport(
        file=s.file, line=s.loc.line, object=obj, container=s.container, model=str(name) if name else None,
        gpu=gpu.name if gpu is not None else None, gpu_source=gpu_source, gpu_count=s.gpu_count,
        vllm_version=version, vllm_version_source=release.source,
        flags=dict(result.flags) if result is not None else dict(s.flags),
        verdict="not-checked" if result is None else verdict_of(result),
        kv_cache_bytes=result.memory.kv_cache_bytes if result is not None else None,
        kv_cache_bytes_low=getattr(result, "kv_cache_bytes_low", None) if result is not None else None,
        kv_cache_bytes_high=getattr(result, "kv_cache_bytes_high", None) if result is not None else None,
        band_basis=getattr(result, "band_basis", None) if result is not None else None,
        kv_cache_tokens=result.kv_cache.tokens if result is not None else None,
        max_concurrency=result.kv_cache.max_concurrency if result is not None else None,
        catalog=CatalogReport(needs_bytes_per_gpu=catalog.needs_bytes, fits=[g.name for g in catalog.fits],
                              at_risk=[g.name for g in catalog.at_risk],
                              refused=[g.name for g in catalog.refused]) if catalog is not None else None,
        basis=dict(s.basis))


def _largest_allowed(s: Server, run: _Run, model: Any, gpu: Any, version: str, result: Any) -> dict:
    """Where the labels allow several GPU types and vLLM refuses on the smallest (the one evaluated), whether
    it starts on the largest: then the refusal is not sure (rules: gpu-choice-refused)."""
    if result is None or verdict_of(result) != "refused" or not s.gpu_labels or \
            s.annotations.get(GPU_ANNOTATION):
        return {}
    allowed = gpus_from_labels(s.gpu_labels)
    if len(allowed) < 2 or gpu is None or allowed[0].name != gpu.name:
        return {}
    try:
        largest = _estimate_once(run.estimates, model, allowed[-1], version, _estimate_flags(s), 0,
                                 image_ships_flashinfer(s.image))
    except InputError:
        return {}
    if verdict_of(largest) == "refused":
        return {}
    return {"largest_gpu_starts": allowed[-1].name, "allowed_gpus": [g.name for g in allowed]}


def _evaluate_server(s: Server, run: _Run) -> ServerReport:
    """One server: its model, GPU and release resolved, its budget estimated, every enabled rule run on it."""
    name, model, model_error, model_note = _server_model(s, run)
    gpu, gpu_source, release, version = _gpu_and_release(s, run)
    result, est_error, typical, catalog = _budget(s, run, model, gpu, version)
    ctx = Context(server=s, gpu=gpu, gpu_source=gpu_source, version=version, model=model,
                  model_error=model_error, estimate=result, estimate_error=est_error, workload=run.workload,
                  typical_capacity=typical, release=release, catalog=catalog,
                  model_note=model_note, extra=_largest_allowed(s, run, model, gpu, version, result))
    obj = ObjectRef(kind=s.kind, namespace=s.namespace, name=s.name)
    out = run.out
    for rule_id, check in run.checks:
        for hit in check(ctx):
            out.add(rule_id, hit.message, hit.loc or s.loc, obj, s.container, s.annotations, s.basis)
    return _server_report(s, obj, name, gpu, gpu_source, version, release, result, catalog)


def _failed_server(s: Server, e: Exception, out: _Collector) -> ServerReport:
    """The last line of defence: fail closed, an error finding that fails check and denies."""
    obj = ObjectRef(kind=s.kind, namespace=s.namespace, name=s.name)
    out.add(INTERNAL_ERROR, f"internal error evaluating this server ({cause(e)}): not checked", s.loc, obj,
            s.container, s.annotations, s.basis)
    return ServerReport(file=s.file, line=s.loc.line, object=obj, container=s.container, model=None, gpu=None,
                        gpu_source="", gpu_count=None, vllm_version="", flags={}, verdict="not-checked",
                        basis=dict(s.basis))


def _report(docs: list[Document], problems: list[Problem], found: list[Server], not_understood: list,
            servers: list[ServerReport], out: _Collector) -> CheckReport:
    """The report: every file that mentions vLLM said something, findings in file order, the summary counted."""
    readers: dict[str, list[str]] = {}
    for s in found:
        for f in s.sources:
            if f != s.file:
                readers.setdefault(f, []).append(f"{s.kind}/{s.name} in {s.file}")
    silent = _no_silent_files(docs, servers, out, readers)
    findings, suppressed = sorted(out.findings, key=_order), sorted(out.suppressed, key=_order)
    files = len({d.file for d in docs} | {p.loc.file for p in problems})
    counts = {sev: sum(1 for f in findings if f.severity == sev) for sev in ("error", "warning", "info")}
    summary = Summary(files=files, servers_found=len(servers),
                      servers_checked=sum(1 for x in servers if x.verdict != "not-checked"),
                      not_understood=sum(nu.rule == "not-understood" for nu in not_understood) + silent,
                      errors=counts["error"], warnings=counts["warning"],
                      info=counts["info"], suppressed=len(suppressed))
    return CheckReport(findings=findings, suppressed=suppressed, servers=servers, files=files, summary=summary)


def _workload(name: str | None) -> Any:
    """The workload a check's concurrency is judged against (validated: imported only when one is named)."""
    if not name:
        return None
    from configurator.workloads import load_workload

    return load_workload(name)


def evaluate(docs: list[Document], problems: list[Problem], opts: Options) -> CheckReport:
    settings = opts.settings or Settings()
    severities = {**settings.config.severities(), **(opts.severities or {})}
    out = _Collector(severities, settings)
    for p in problems:  # a Problem may name its rule (render.RenderNote: template-not-rendered)
        rule = getattr(p, "rule", "parse-error")
        out.add(rule if rule in REGISTRY else "parse-error", p.message, p.loc)
    run = _Run(opts=opts, settings=settings, out=out,
               workload=_workload(opts.workload),
               dirs=opts.model_config_dirs + tuple(settings.config.model_config_dirs),
               enabled=[r for r in REGISTRY.values() if out.severity(r.id) != "off"])
    run.checks = [(r.id, r.check) for r in run.enabled if r.check is not no_check]
    if opts.memo is not None:
        run.shared(opts.memo)
    found, not_understood = _extract_failing_closed(docs, opts.vllm_version, out)
    for nu in not_understood:
        out.add(nu.rule if nu.rule in REGISTRY else "not-understood", nu.reason, nu.loc,
                ObjectRef(kind=nu.kind, name=nu.name))
    servers: list[ServerReport] = []
    for s in found:
        try:
            servers.append(_evaluate_server(s, run))
        except Exception as e:  # last line of defence: fail closed, an error finding that fails check and denies
            servers.append(_failed_server(s, e, out))
    return _report(docs, problems, found, not_understood, servers, out)
