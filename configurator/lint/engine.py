"""load -> extract -> evaluate: the one pipeline the CLI, the webhook and `audit` call.

The engine resolves each server's model, GPU and release, runs `estimate` on its flags, runs every
enabled rule, and attaches rule id, severity, object and location to each hit. Findings are
immutable once made; suppressions (annotations, config) are applied here, not in the rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from configurator.errors import ConfiguratorError, InputError
from configurator.estimate import EstimateRequest, estimate
from configurator.hardware.catalog import find_gpu
from configurator.hardware.labels import gpu_from_labels
from configurator.lint.extract import ANNOTATION_PREFIX, Server, extract
from configurator.lint.load import Document, Problem
from configurator.lint.rules import REGISTRY, SEVERITY_ORDER, Context, Severity
from configurator.model.resolve import load_local, resolve_model

IGNORE_ANNOTATION = ANNOTATION_PREFIX + "ignore"
GPU_ANNOTATION = ANNOTATION_PREFIX + "gpu"
USED_ANNOTATION = ANNOTATION_PREFIX + "gpu-memory-used"


class LintConfig(BaseModel):
    """`.vllm-configurator.yaml` (schemas/lint-config.schema.json)."""

    model_config = ConfigDict(extra="forbid")

    rules: dict[str, Literal["off", "error", "warning", "info"]] = Field(
        default_factory=dict, description="per-rule severity, or off")
    gpu: str | None = Field(None, description="GPU assumed when a manifest does not say")
    workload: str | None = Field(None, description="workload whose target concurrency to check")
    vllm_version: str | None = Field(None, description="release assumed when the image tag does not say")
    model_config_dirs: list[str] = Field(default_factory=list, description="folders of local config.json files")
    strict: bool = Field(False, description="warnings fail the run too")

    @field_validator("rules")
    @classmethod
    def _known_rules(cls, v: dict) -> dict:
        unknown = sorted(set(v) - set(REGISTRY))
        if unknown:
            raise ValueError(f"unknown rule id(s) {', '.join(unknown)} (see docs/rules.md)")
        return v


class ObjectRef(BaseModel):
    kind: str
    namespace: str | None = None
    name: str


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)

    rule: str
    severity: Severity
    message: str
    file: str
    line: int
    column: int = 1
    object: ObjectRef | None = None
    container: str | None = None


class ServerReport(BaseModel):
    file: str
    line: int
    object: ObjectRef
    container: str
    model: str | None
    gpu: str | None
    gpu_source: str
    gpu_count: int | None
    vllm_version: str
    flags: dict[str, Any]
    verdict: Literal["fits", "refused", "not-checked"]
    kv_cache_bytes: int | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None


class CheckReport(BaseModel):
    """schemas/check-report.schema.json is generated from this."""

    findings: list[Finding]
    servers: list[ServerReport]
    files: int = Field(description="files read")

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
    # name -> ModelSpec in place of the lookup below (the webhook's: catalog only, never a pod's path)
    model_resolver: Any = None


def _model(name: str, dirs: tuple[str, ...], cache: dict, resolver: Any = None) -> tuple[Any, str | None]:
    if name in cache:
        return cache[name]
    result: tuple[Any, str | None]
    try:
        if resolver is not None:
            result = (resolver(name), None)
            cache[name] = result
            return result
        for d in dirs:
            for cand in (Path(d) / (name.replace("/", "__") + ".json"), Path(d) / name / "config.json",
                         Path(d) / name.rsplit("/", 1)[-1] / "config.json"):
                if cand.is_file():
                    result = (load_local(cand), None)
                    cache[name] = result
                    return result
        result = (resolve_model(name, allow_hub=False), None)
    except ConfiguratorError as e:
        result = (None, f"model '{name}' cannot be resolved offline: {e}")
    cache[name] = result
    return result


def _gpu(server: Server, opts: Options) -> tuple[Any, str]:
    note = server.annotations.get(GPU_ANNOTATION)
    if note:
        try:
            return find_gpu(note), f"annotation {GPU_ANNOTATION}={note}"
        except ConfiguratorError:
            pass
    gpu, source = gpu_from_labels(server.gpu_labels)
    if gpu is not None:
        if server.gpu_resource and server.gpu_resource.startswith("nvidia.com/mig-"):
            profile = server.gpu_resource.split("mig-", 1)[1]
            try:
                return find_gpu(f"{gpu.name}:{profile}"), f"{source} + {server.gpu_resource}"
            except ConfiguratorError:
                pass
        return gpu, source
    if opts.gpu:
        try:
            return find_gpu(opts.gpu), "--gpu"
        except ConfiguratorError:
            return None, ""
    return None, ""


def _version(server: Server, opts: Options) -> str:
    from configurator.vllm.versions import version_from_image

    if server.image and ":" in server.image.rsplit("/", 1)[-1]:
        v, warn = version_from_image(server.image)
        if not warn:
            return v
    return opts.vllm_version or "latest"


def _estimate_flags(server: Server) -> dict[str, Any]:
    return {k: v for k, v in server.flags.items() if k != "model"}


def evaluate(docs: list[Document], problems: list[Problem], opts: Options) -> CheckReport:
    from configurator.units import parse_size
    from configurator.vllm.versions import behaviour
    from configurator.workloads import load_workload

    findings: list[Finding] = []
    servers: list[ServerReport] = []
    severities = opts.severities or {}
    for p in problems:
        if severities.get("parse-error") != "off":
            findings.append(Finding(rule="parse-error", severity=severities.get("parse-error", "error"),
                                    message=p.message, file=p.loc.file, line=p.loc.line, column=p.loc.column))
    workload = load_workload(opts.workload) if opts.workload else None
    models: dict = {}
    for s in extract(docs):
        name = s.flags.get("model")
        model, model_error = (_model(str(name), opts.model_config_dirs, models, opts.model_resolver) if name
                              else (None, None))
        if name is None:
            model_error = "no model in the command (vLLM's default model is facebook/opt-125m)"
        gpu, gpu_source = _gpu(s, opts)
        version = _version(s, opts)
        try:
            version = behaviour(version).version
        except InputError:
            version = behaviour("latest").version
        result, est_error, typical = None, None, None
        if model is not None and gpu is not None:
            used = 0
            if s.annotations.get(USED_ANNOTATION):
                try:
                    used = parse_size(s.annotations[USED_ANNOTATION], what=USED_ANNOTATION)
                except InputError:
                    used = 0
            try:
                result = estimate(EstimateRequest(model=model, gpu=gpu.name if gpu.name != "custom" else None,
                                                  gpu_memory=f"{gpu.total_bytes}B" if gpu.name == "custom" else None,
                                                  vllm_version=version, flags=_estimate_flags(s),
                                                  gpu_memory_used=used))
            except InputError as e:
                est_error = str(e)
            if result is not None and workload is not None and result.fits and result.memory.kv_cache_bytes > 0:
                probe = estimate(EstimateRequest(
                    model=model, gpu=gpu.name if gpu.name != "custom" else None,
                    gpu_memory=f"{gpu.total_bytes}B" if gpu.name == "custom" else None, vllm_version=version,
                    flags={**_estimate_flags(s), "kv_cache_memory_bytes": result.memory.kv_cache_bytes,
                           "max_model_len": min(workload.typical_tokens, result.flags["max_model_len"]),
                           "max_num_seqs": result.flags["max_num_seqs"],
                           "max_num_batched_tokens": result.flags["max_num_batched_tokens"]}))
                typical = int(probe.kv_cache.max_concurrency)
        ctx = Context(server=s, gpu=gpu, gpu_source=gpu_source, version=version, model=model,
                      model_error=model_error, estimate=result, estimate_error=est_error, workload=workload,
                      typical_capacity=typical)
        ignored = {x.strip() for x in s.annotations.get(IGNORE_ANNOTATION, "").split(",") if x.strip()}
        obj = ObjectRef(kind=s.kind, namespace=s.namespace, name=s.name)
        for r in REGISTRY.values():
            sev = severities.get(r.id, r.severity)
            if sev == "off" or r.id in ignored or "all" in ignored:
                continue
            for hit in r.check(ctx):
                loc = hit.loc or s.loc
                findings.append(Finding(rule=r.id, severity=sev, message=hit.message, file=loc.file, line=loc.line,
                                        column=loc.column, object=obj, container=s.container))
        verdict = "not-checked" if result is None else ("fits" if result.fits else "refused")
        servers.append(ServerReport(
            file=s.file, line=s.loc.line, object=obj, container=s.container, model=str(name) if name else None,
            gpu=gpu.name if gpu is not None else None, gpu_source=gpu_source, gpu_count=s.gpu_count,
            vllm_version=version, flags=result.flags if result is not None else dict(s.flags), verdict=verdict,
            kv_cache_bytes=result.memory.kv_cache_bytes if result is not None else None,
            kv_cache_tokens=result.kv_cache.tokens if result is not None else None,
            max_concurrency=result.kv_cache.max_concurrency if result is not None else None))
    findings.sort(key=lambda f: (f.file, f.line, SEVERITY_ORDER[f.severity], f.rule))
    files = len({d.file for d in docs} | {p.loc.file for p in problems})
    return CheckReport(findings=findings, servers=servers, files=files)
