"""PlanResult -> a values file for vllm-project/production-stack's Helm chart (one
servingEngineSpec.modelSpec[] entry), from the same chart_values() as charts/vllm.

Facts about that chart (data/notes/kubernetes-facts.md, section 1.1) that shape the output:
- a flag goes into `vllmConfig.<key>` when the chart has a key for it (the flag table's `helm` column),
  else into `vllmConfig.extraArgs`, which the chart appends after its own flags: a flag in both would
  be passed twice, so each planned flag is written in exactly one of the two places;
- /dev/shm is mounted only when `vllmConfig.tensorParallelSize` exists, so it is always written (1 too);
- GPU request = limit = `requestGPU`; node selection only through `nodeSelectorTerms` (no nodeSelector);
- multi-node runs through `raySpec` (KubeRay), which this emitter does not write;
- `vllmConfig.enablePrefixCaching` absent or false renders `--no-enable-prefix-caching`
  (helm/templates/deployment-vllm-multi.yaml at a6c01db), so the emitter always writes it: the value
  the estimate assumed (vLLM's default for the release and model unless the plan set it);
- `hf_token` is a string (the chart then stores it in a Secret it makes) or `{secretName, secretKey}`
  naming an existing Secret (helm/values.schema.json); the emitter writes the reference, never a token.
  That chart's reference is not optional: the Secret must exist before the pods start;
- `modelRevision` renders `--revision`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from configurator.emit.helm import DeployOptions, chart_values, default_name
from configurator.emit.manifest import go_text
from configurator.emit.values_model import vllm_flags
from configurator.errors import InputError

if TYPE_CHECKING:
    from configurator.plan_result import PlanResult


def _flag_text(value: Any, kind: str) -> str:
    return str(int(value)) if kind in ("int", "bytes") or (kind == "len" and not isinstance(value, str)) \
        else go_text(value)


def vllm_config(flags: dict[str, Any], prefix_caching: bool | None = None) -> dict[str, Any]:
    """Planned flags -> production-stack's vllmConfig: keyed values where the chart has a key, the rest
    as extraArgs tokens; tensorParallelSize always present, and enablePrefixCaching whenever the
    effective value is known (`prefix_caching`, what the estimate assumed), since that chart renders
    --no-enable-prefix-caching when the key is absent."""
    if flags.get("enable_prefix_caching") is None and prefix_caching is not None:
        flags = {**flags, "enable_prefix_caching": prefix_caching}
    config: dict[str, Any] = {}
    extra: list[str] = []
    for f in vllm_flags():
        value = flags.get(f.dest)
        if value is None:
            continue
        if f.helm:
            config[f.helm] = value
        elif f.type == "bool":
            if value:
                extra.append(f.option)
            elif f.negatable:
                extra.append("--no-" + f.option[2:])
        else:
            extra += [f.option, _flag_text(value, f.type)]
    config.setdefault("tensorParallelSize", 1)  # the chart mounts /dev/shm only when this key exists
    if extra:
        config["extraArgs"] = extra
    return config


def production_stack_values(plan: PlanResult, opts: DeployOptions | None = None) -> dict[str, Any]:
    """servingEngineSpec for production-stack: one model entry, and the start-up budget as its
    (chart-wide) startupProbe."""
    opts = opts or DeployOptions()
    values = chart_values(plan, opts)
    if values.nodes > 1:
        raise InputError(f"the plan spans {values.nodes} nodes of {values.gpusPerNode} GPUs; production-stack runs "
                         f"multi-node vLLM through raySpec (KubeRay), which this emitter does not write: use "
                         f"--emit helm or --emit manifest (a LeaderWorkerSet)")
    spec: dict[str, Any] = {
        "name": opts.name or default_name(plan.model).removeprefix("vllm-"),
        "repository": values.image.repository,
        "tag": values.image.tag,
        "modelURL": plan.model,
        "replicaCount": values.replicaCount,
        "requestCPU": int(values.resources.requests["cpu"]),
        "requestMemory": values.resources.requests["memory"],
        "requestGPU": values.gpusPerNode,
    }
    if values.gpu.resource != "nvidia.com/gpu":
        spec["requestGPUType"] = values.gpu.resource
    assumed = plan.estimate.flags.get("enable_prefix_caching") if plan.estimate else None
    spec["vllmConfig"] = vllm_config(plan.flags, None if assumed is None else bool(assumed))
    if values.model.revision:
        spec["modelRevision"] = values.model.revision
    spec["shmSize"] = values.shm.sizeLimit
    if values.gpu.products:
        spec["nodeSelectorTerms"] = [{"matchExpressions": [
            {"key": values.gpu.productLabel, "operator": "In", "values": list(values.gpu.products)}]}]
    spec["tolerations"] = list(values.tolerations)
    if values.hfToken.secretName:  # gated models cannot download without it
        spec["hf_token"] = {"secretName": values.hfToken.secretName, "secretKey": values.hfToken.secretKey}
    persistence = values.modelCache.persistence
    if persistence.enabled:
        spec["pvcStorage"] = persistence.size
        if persistence.storageClass:
            spec["storageClass"] = persistence.storageClass
    startup = values.probes.startup
    return {"servingEngineSpec": {
        "modelSpec": [spec],
        "startupProbe": {"periodSeconds": startup.periodSeconds, "failureThreshold": startup.failureThreshold},
    }}
