"""The values of charts/vllm as a pydantic model, and the chart files generated from it.

One model, four generated files (scripts/gen_chart_schema.py writes them; tests/test_chart.py fails on
drift): charts/vllm/values.schema.json (additionalProperties false everywhere), charts/vllm/values.yaml
(the defaults, each key with its description as a comment), the values table in charts/vllm/README.md,
and charts/vllm/templates/_flags.tpl, the flag table the chart renders `vllm serve` arguments from.

The `vllm` section is built from the one flag table (configurator.vllm.flags.FLAGS): each engine
argument is one typed value whose key is the camelCase of vLLM's name (`gpu_memory_utilization` ->
`vllm.gpuMemoryUtilization`) and renders to exactly one flag; null leaves vLLM's default.
"""

from __future__ import annotations

import json
import textwrap
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, create_model

from configurator.memory.kv_dtype import KV_DTYPES
from configurator.startup import ROLLOUT_MARGIN_S
from configurator.vllm.flags import FLAGS, SPELLINGS, Flag
from configurator.vllm.serve import SERVE_ORDER

CHART_NAME = "vllm"


def camel(dest: str) -> str:
    """vLLM's EngineArgs name -> the chart's value key: max_model_len -> maxModelLen."""
    head, *rest = dest.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---- the vllm section, from the flag table ------------------------------------------------------

HUMAN_LEN_PATTERN = r"^([0-9]+|[0-9]+(\.[0-9]+)?[kmgt]|[0-9]+[KMGT])$"

# Extra constraints on top of the flag table's types (the table says int/float; these say which).
_POSITIVE = {"max_num_seqs", "max_num_batched_tokens", "tensor_parallel_size", "pipeline_parallel_size",
             "data_parallel_size", "block_size", "num_gpu_blocks_override", "max_cudagraph_capture_size"}
_CHOICES: dict[str, tuple[str, ...]] = {
    "kv_cache_dtype": ("auto", *KV_DTYPES),
    "dtype": ("auto", "half", "float16", "bfloat16", "float", "float32"),
}
# Flags the chart does not take as a vllm.* value: the model is model.name (the positional argument).
_NOT_VALUES = {"model"}


def _value_type(f: Flag) -> Any:
    if f.dest in _CHOICES:
        return Literal[_CHOICES[f.dest]]  # type: ignore[valid-type]
    if f.dest == "gpu_memory_utilization":
        return Annotated[float, Field(gt=0, le=1)]
    if f.type == "float":
        return Annotated[float, Field(ge=0)]
    if f.type == "int":
        return Annotated[int, Field(ge=1 if f.dest in _POSITIVE else 0)]
    if f.type == "len":  # a length, or 'auto' / -1: fit the context to memory
        # or a length as vLLM's human_readable_int reads it: '128k' = 128,000, '128K' = 131,072 (decimals only
        # with the decimal, lower-case suffixes), which the chart passes through as text
        return Annotated[int, Field(ge=1)] | Literal[-1, "auto"] | Annotated[str, Field(pattern=HUMAN_LEN_PATTERN)]
    if f.type == "bytes":
        return Annotated[int, Field(ge=0)]
    if f.type == "bool":
        return bool
    return str


def vllm_flags() -> tuple[Flag, ...]:
    """The engine arguments the chart takes as typed values, in the order it renders them: the
    `vllm serve` order of configurator.vllm.serve, then the rest of the flag table."""
    flags = [f for f in FLAGS if f.dest not in _NOT_VALUES]
    first = [f for d in SERVE_ORDER for f in flags if f.dest == d]
    return tuple(first + [f for f in flags if f not in first])


def _bool_help(f: Flag) -> str:
    if f.negatable:
        return " true renders the flag, false its --no- form."
    return " true renders the flag; false leaves it out."


VllmSettings = create_model(  # type: ignore[call-overload]
    "VllmSettings",
    __config__=ConfigDict(extra="forbid"),
    __doc__="vLLM engine arguments, one typed value per flag; null = vLLM's own default (the flag is not "
            "passed).",
    **{camel(f.dest): (_value_type(f) | None, Field(
        None, description=f"{f.option}: {f.help}" + (_bool_help(f) if f.type == "bool" else "")))
       for f in vllm_flags()},
)


# ---- the rest of the chart ----------------------------------------------------------------------

class Image(_Strict):
    """The vLLM container image."""

    repository: str = Field("vllm/vllm-openai", description="Image repository (it must carry the `vllm` CLI).")
    tag: str = Field("latest", description="Image tag; the emitter pins the planned vLLM release, e.g. v0.11.0.")
    pullPolicy: Literal["Always", "IfNotPresent", "Never"] = Field("IfNotPresent", description="Image pull policy.")


class ImagePullSecret(_Strict):
    """A registry Secret."""

    name: str = Field(description="Name of a docker-registry Secret.")


class ModelSource(_Strict):
    """What vLLM serves."""

    name: str = Field("", description="Hugging Face id or path served: the positional argument of `vllm serve` "
                                      "(required).")
    servedModelName: str | None = Field(None, description="--served-model-name: the name clients use; null = "
                                                          "model.name.")
    trustRemoteCode: bool = Field(False, description="--trust-remote-code: run the model repository's own code.")
    revision: str | None = Field(None, description="--revision: the model's branch, tag or commit on the Hub "
                                                   "(pins what every restart downloads); null = the default "
                                                   "branch.")


class GpuSelection(_Strict):
    """Which GPUs the pods request and which nodes carry them."""

    resource: str = Field("nvidia.com/gpu", description="Extended resource requested (nvidia.com/gpu, a MIG "
                                                        "resource such as nvidia.com/mig-3g.40gb, amd.com/gpu).")
    products: list[str] = Field(default_factory=list, description="Node-label values of the planned GPU (GPU "
                                "feature discovery, e.g. NVIDIA-H100-80GB-HBM3): one renders a nodeSelector, "
                                "several a required node affinity (In); empty = no GPU node selection.")
    productLabel: str = Field("nvidia.com/gpu.product", description="Node label that carries gpu.products "
                                                                    "(amd.com/gpu.product-name on AMD).")


class ResourceList(_Strict):
    """CPU and memory for the vLLM container; the GPUs come from gpusPerNode and gpu.resource."""

    requests: dict[str, str | int | float] = Field(
        default_factory=lambda: {"cpu": "4", "memory": "16Gi"},
        description="Requests, e.g. {cpu: '8', memory: 64Gi}. The GPU request is added from gpusPerNode.")
    limits: dict[str, str | int | float] = Field(
        default_factory=dict, description="Limits; the GPU limit is added from gpusPerNode. A memory limit counts "
                                          "the /dev/shm emptyDir and the page cache of the weights.")


class Shm(_Strict):
    """/dev/shm for NCCL and vLLM's inter-process queues: a memory-backed emptyDir."""

    enabled: bool = Field(True, description="Mount a memory-backed emptyDir at /dev/shm (the container default, "
                                            "64 MiB, breaks tensor parallelism).")
    sizeLimit: str = Field("2Gi", description="Size of /dev/shm; it counts against the pod's memory. The emitter "
                                              "sizes it at 2 GiB per GPU in the pod.")


class HfToken(_Strict):
    """The Hugging Face token, from a Secret you create (never from values)."""

    secretName: str = Field("hf-token", description="Secret holding the token (exposed as HF_TOKEN); empty = none.")
    secretKey: str = Field("token", description="Key in that Secret.")
    optional: bool = Field(True, description="Start without the token when the Secret is absent (public models).")


class Persistence(_Strict):
    """A PersistentVolumeClaim for the model cache, so a restart does not download the weights again."""

    enabled: bool = Field(False, description="Keep the cache on a PVC (one per pod on a LeaderWorkerSet).")
    existingClaim: str = Field("", description="Use this existing claim instead of creating one (a Deployment "
                                               "only).")
    size: str = Field("50Gi", description="Claim size; the emitter sizes it at 1.25x the checkpoint.")
    storageClass: str | None = Field(None, description="Storage class; null = the cluster default.")
    accessModes: list[Literal["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany", "ReadWriteOncePod"]] = Field(
        default_factory=lambda: ["ReadWriteOnce"], description="Access modes (ReadWriteMany to share one claim "
                                                               "between replicas).")


class ModelCache(_Strict):
    """Where the weights are downloaded (HF_HOME): an emptyDir limited to sizeLimit (the default; the weights are
    downloaded again at every restart), or a PersistentVolumeClaim (persistence.enabled, or an existingClaim)."""

    mountPath: str = Field("/data/huggingface", description="HF_HOME in the container: an emptyDir, or the PVC.")
    sizeLimit: str = Field("100Gi", description="Size limit of the emptyDir used when persistence is off (the kubelet "
                                                "evicts the pod past it); the emitter sizes it at 1.25x the "
                                                "checkpoint.")
    persistence: Persistence = Field(default_factory=Persistence)


class Probe(_Strict):
    """One probe's timing."""

    periodSeconds: int = Field(10, ge=1, description="Seconds between checks.")
    failureThreshold: int = Field(3, ge=1, description="Failed checks in a row before the probe fails.")
    timeoutSeconds: int = Field(5, ge=1, description="Seconds one check may take.")


def _startup() -> Probe:
    return Probe(periodSeconds=10, failureThreshold=60, timeoutSeconds=5)


class Probes(_Strict):
    """Probes on vLLM's /health; the start-up budget is startup.failureThreshold x startup.periodSeconds."""

    path: str = Field("/health", description="HTTP path the probes check.")
    startup: Probe = Field(default_factory=_startup, description="Start-up probe: the budget to download and "
                                                                 "load the weights, compile and capture graphs.")
    readiness: Probe = Field(default_factory=Probe, description="Readiness probe (traffic only when healthy).")
    liveness: Probe = Field(default_factory=lambda: Probe(periodSeconds=15, failureThreshold=3, timeoutSeconds=10),
                            description="Liveness probe (restarts a dead engine).")


class ServiceSpec(_Strict):
    """The Service in front of vLLM (the leader pod when nodes > 1)."""

    type: Literal["ClusterIP", "NodePort", "LoadBalancer"] = Field("ClusterIP", description="Service type.")
    port: int = Field(8000, ge=1, le=65535, description="Service port (to the container's port).")
    annotations: dict[str, str] = Field(default_factory=dict, description="Service annotations (load balancer "
                                                                          "settings, service mesh).")


IntOrPercent = Annotated[int, Field(ge=0)] | Annotated[str, Field(pattern=r"^[0-9]+%$")]


class DisruptionBudget(_Strict):
    """A PodDisruptionBudget (policy/v1) over the vLLM pods: a node drain evicts at most this many at a time."""

    enabled: bool = Field(False, description="Render the PodDisruptionBudget.")
    maxUnavailable: IntOrPercent = Field(1, description="Pods a voluntary disruption may take down at once "
                                                        "(an integer or a percentage).")
    minAvailable: IntOrPercent | None = Field(None, description="Pods that must stay up; when set it replaces "
                                                                "maxUnavailable (Kubernetes takes one of the two).")


class Autoscaling(_Strict):
    """A HorizontalPodAutoscaler (autoscaling/v2) on one of vLLM's own metrics, per pod, as the custom
    metrics API serves it (e.g. prometheus-adapter exposing vLLM's /metrics). Not with keda.enabled."""

    enabled: bool = Field(False, description="Render the HorizontalPodAutoscaler; the chart then leaves "
                                             "replicas to it (replicaCount is the starting size only).")
    minReplicas: int = Field(1, ge=1, description="Fewest replicas.")
    maxReplicas: int = Field(2, ge=1, description="Most replicas (each needs its GPUs free in the cluster).")
    metric: str = Field("vllm:num_requests_waiting", description="Pods metric to scale on: vLLM's queue "
                        "(vllm:num_requests_waiting), vllm:num_requests_running or vllm:kv_cache_usage_perc.")
    averageValue: str = Field("5", description="Target average of the metric per pod (a quantity, e.g. 5 "
                                               "waiting requests, or 800m of the KV cache).")
    behavior: dict[str, Any] = Field(default_factory=dict, description="HPA scaling behavior (scaleUp / "
                                     "scaleDown policies); empty = Kubernetes' defaults.")


class Keda(_Strict):
    """A KEDA ScaledObject (keda.sh/v1alpha1) with a Prometheus trigger on vLLM's own metrics, as
    production-stack does; KEDA then owns the HPA. Needs KEDA in the cluster. Not with autoscaling.enabled."""

    enabled: bool = Field(False, description="Render the ScaledObject.")
    minReplicaCount: int = Field(1, ge=0, description="Fewest replicas (0 scales to zero when idle: the next "
                                                      "request then waits for a full start-up).")
    maxReplicaCount: int = Field(2, ge=1, description="Most replicas.")
    pollingInterval: int = Field(15, ge=1, description="Seconds between metric queries.")
    cooldownPeriod: int = Field(300, ge=0, description="Seconds after the last active trigger before "
                                                       "scaling to minReplicaCount 0.")
    serverAddress: str = Field("http://prometheus-operated.monitoring.svc:9090",
                               description="Prometheus that scrapes vLLM (see metrics.serviceMonitor).")
    query: str = Field("", description="PromQL giving the load; empty = sum(vllm:num_requests_waiting"
                                       "{namespace=<release namespace>, model_name=<served model name>}).")
    threshold: str = Field("5", description="Target value of the query per replica.")


class Monitor(_Strict):
    """A Prometheus-operator scrape object for vLLM's /metrics."""

    enabled: bool = Field(False, description="Render it (needs the monitoring.coreos.com CRDs).")
    interval: str = Field("15s", pattern=r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?"
                                         r"(([0-9]+)s)?(([0-9]+)ms)?)$",
                          description="Scrape interval (a Prometheus duration).")
    labels: dict[str, str] = Field(default_factory=dict, description="Extra labels, e.g. the release label "
                                                                     "your Prometheus selects monitors by.")


class Metrics(_Strict):
    """Scraping vLLM's Prometheus metrics (/metrics on the http port)."""

    serviceMonitor: Monitor = Field(default_factory=Monitor, description="A ServiceMonitor on the Service.")
    podMonitor: Monitor = Field(default_factory=Monitor, description="A PodMonitor on the pods (every "
                                                                     "replica, without the Service).")


class MultiNode(_Strict):
    """How a LeaderWorkerSet starts vLLM across nodes (nodes > 1): a Ray cluster, leader first."""

    rayScript: str = Field("/vllm-workspace/examples/online_serving/multi-node-serving.sh",
                           description="vLLM's script in the image that starts (leader) or joins (worker) Ray.")
    restartPolicy: Literal["RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None"] = Field(
        "RecreateGroupOnPodRestart", description="LeaderWorkerSet restart policy: one pod failing restarts the "
                                                 "group (a Ray cluster does not survive losing a node).")


class ChartValues(_Strict):
    """Values of the vllm chart. Every key is typed; unknown keys are refused (values.schema.json)."""

    fullnameOverride: str = Field("", description="Name of the objects; empty = the release name.")
    image: Image = Field(default_factory=Image)
    imagePullSecrets: list[ImagePullSecret] = Field(default_factory=list, description="Registry Secrets.")
    model: ModelSource = Field(default_factory=ModelSource)
    vllm: VllmSettings = Field(default_factory=VllmSettings)  # type: ignore[valid-type]
    extraArgs: list[str] = Field(default_factory=list, description="Further `vllm serve` arguments, verbatim; a "
                                                                   "flag that a typed value covers is refused.")
    port: int = Field(8000, ge=1, le=65535, description="Port vLLM listens on (--port).")
    replicaCount: int = Field(1, ge=0, description="Model replicas (pods, or pod groups when nodes > 1).")
    nodes: int = Field(1, ge=1, description="Nodes one replica spans: 1 = a Deployment; more = a LeaderWorkerSet "
                                            "(leaderworkerset.x-k8s.io/v1) of that size, over Ray.")
    gpusPerNode: int = Field(1, ge=1, description="GPUs each pod requests (limit = request). nodes x gpusPerNode "
                                                  "must equal tensor x pipeline x data parallel size.")
    gpu: GpuSelection = Field(default_factory=GpuSelection)
    nodeSelector: dict[str, str] = Field(default_factory=dict, description="Node selector; when set it replaces "
                                                                           "the gpu.products selection.")
    tolerations: list[dict[str, Any]] = Field(
        default_factory=lambda: [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        description="Tolerations (default: the usual taint on GPU nodes).")
    affinity: dict[str, Any] = Field(default_factory=dict, description="Affinity; a nodeAffinity here replaces the "
                                                                       "one gpu.products renders.")
    resources: ResourceList = Field(default_factory=ResourceList)
    shm: Shm = Field(default_factory=Shm)
    hfToken: HfToken = Field(default_factory=HfToken)
    env: list[dict[str, Any]] = Field(default_factory=list, description="Extra environment variables (EnvVar "
                                                                        "objects).")
    modelCache: ModelCache = Field(default_factory=ModelCache)
    probes: Probes = Field(default_factory=Probes)
    podSecurityContext: dict[str, Any] = Field(default_factory=dict, description="Pod security context. The "
                                               "vllm/vllm-openai image runs as root; with a non-root image set "
                                               "runAsNonRoot, runAsUser and fsGroup here.")
    securityContext: dict[str, Any] = Field(default_factory=lambda: {"allowPrivilegeEscalation": False},
                                            description="Container security context.")
    strategy: dict[str, Any] = Field(default_factory=lambda: {"type": "Recreate"},
                                     description="Deployment strategy. Recreate: a rolling surge needs a spare set "
                                                 "of GPUs.")
    progressDeadlineSeconds: int | None = Field(None, ge=1, description="Seconds a Deployment rollout may go "
                                                "without progress before it is marked failed; null = the start-up "
                                                "budget (probes.startup) plus a rollout margin for scheduling and "
                                                "the image pull (Kubernetes' own default, 600 s, fails large "
                                                "models).")
    service: ServiceSpec = Field(default_factory=ServiceSpec)
    podAnnotations: dict[str, str] = Field(default_factory=dict, description="Pod annotations.")
    podLabels: dict[str, str] = Field(default_factory=dict, description="Extra pod labels.")
    serviceAccountName: str = Field("", description="Service account of the pods; empty = the namespace's "
                                                    "default.")
    runtimeClassName: str | None = Field(None, description="RuntimeClass of the pods (e.g. nvidia where the "
                                                           "GPU runtime is not the node default).")
    priorityClassName: str = Field("", description="PriorityClass of the pods; empty = none.")
    topologySpreadConstraints: list[dict[str, Any]] = Field(default_factory=list, description="Pod topology "
                                                            "spread constraints, verbatim.")
    terminationGracePeriodSeconds: int | None = Field(None, ge=0, description="Seconds between SIGTERM and "
                                                      "SIGKILL (in-flight requests finish in this time); null = "
                                                      "Kubernetes' 30.")
    lifecycle: dict[str, Any] = Field(default_factory=dict, description="Lifecycle of the vLLM container, e.g. "
                                      "{preStop: {sleep: {seconds: 10}}} so endpoints drop the pod before "
                                      "vLLM stops.")
    envFrom: list[dict[str, Any]] = Field(default_factory=list, description="Extra environment from ConfigMaps "
                                                                            "or Secrets (EnvFromSource objects).")
    initContainers: list[dict[str, Any]] = Field(default_factory=list, description="Init containers, verbatim "
                                                 "(e.g. one that pre-fetches the weights into the cache).")
    extraContainers: list[dict[str, Any]] = Field(default_factory=list, description="Sidecar containers, "
                                                                                    "verbatim.")
    extraVolumes: list[dict[str, Any]] = Field(default_factory=list, description="Extra pod volumes, verbatim.")
    extraVolumeMounts: list[dict[str, Any]] = Field(default_factory=list, description="Extra volume mounts of "
                                                                                      "the vLLM container.")
    podDisruptionBudget: DisruptionBudget = Field(default_factory=DisruptionBudget)
    autoscaling: Autoscaling = Field(default_factory=Autoscaling)
    keda: Keda = Field(default_factory=Keda)
    metrics: Metrics = Field(default_factory=Metrics)
    multiNode: MultiNode = Field(default_factory=MultiNode)


# ---- generated chart files ----------------------------------------------------------------------

def values_schema() -> dict:
    """charts/vllm/values.schema.json: the JSON Schema of ChartValues (unknown keys refused everywhere)."""
    out = ChartValues.model_json_schema()
    out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    out["title"] = "Values of the vllm chart (generated from configurator/emit/values_model.py)"
    _factory_defaults(ChartValues, out, out)
    return out


def _factory_defaults(cls: type[BaseModel], node: dict, schema: dict) -> None:
    """pydantic leaves out the defaults of default_factory fields: write them, so the schema says what
    values.yaml says (probes.startup.failureThreshold is 60, not Probe's 3)."""
    for key, info in cls.model_fields.items():
        prop = node["properties"][key]
        if info.default_factory is not None:
            value = info.default_factory()  # type: ignore[call-arg]
            prop["default"] = value.model_dump() if isinstance(value, BaseModel) else value
        sub = info.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel) and "$ref" in prop:
            _factory_defaults(sub, schema["$defs"][prop["$ref"].rsplit("/", 1)[-1]], schema)


def render_schema() -> str:
    return json.dumps(values_schema(), indent=2, sort_keys=True) + "\n"


def _dump(value: Any) -> str:
    """One value in flow style on one line: 0.9, null, '', [a, b], {k: v}."""
    return yaml.safe_dump([value], default_flow_style=True, sort_keys=False, width=1 << 20).strip()[1:-1]


def _comment(text: str, pad: str) -> list[str]:
    return [f"{pad}# {line}" for line in textwrap.wrap(text.strip(), 100 - len(pad))]


def _values_lines(model: BaseModel, indent: int) -> list[str]:
    lines: list[str] = []
    pad = " " * indent
    for key, info in type(model).model_fields.items():
        value = getattr(model, key)
        desc = info.description
        if not desc and isinstance(value, BaseModel) and type(value).__doc__:
            desc = type(value).__doc__.strip().splitlines()[0]
        if desc:
            lines += _comment(desc, pad)
        if isinstance(value, BaseModel):
            lines.append(f"{pad}{key}:")
            lines += _values_lines(value, indent + 2)
        elif isinstance(value, dict | list) and value:
            block = yaml.safe_dump(value, default_flow_style=False, sort_keys=False, width=1 << 20)
            lines.append(f"{pad}{key}:")
            lines += [f"{pad}  {line}" for line in block.splitlines()]
        else:
            lines.append(f"{pad}{key}: {_dump(value)}")
    return lines


def render_values_yaml() -> str:
    """charts/vllm/values.yaml: every default, commented; it parses back to ChartValues()."""
    head = ["# Values of the vllm chart. GENERATED from configurator/emit/values_model.py by",
            "# scripts/gen_chart_schema.py: edit the model, not this file. values.schema.json refuses",
            "# unknown keys and wrong types. `vllm-configurator plan --emit helm` writes values for a plan.", ""]
    return "\n".join(head + _values_lines(ChartValues(), 0)) + "\n"


# model.* settings that are flags too (not memory flags, so not in the flag table)
_MODEL_FLAGS = (("servedModelName", "--served-model-name", "str"), ("trustRemoteCode", "--trust-remote-code", "bool"),
                ("revision", "--revision", "str"))
# flags the chart writes itself from other values: never accepted from extraArgs either
_RESERVED = {"--port": "port", "--model": "model.name"}


def flag_rows() -> list[dict[str, Any]]:
    """One row per vLLM setting of the chart: where its value lives, its flag, type and every spelling."""
    rows = []
    for f in vllm_flags():
        spellings = sorted({s.replace("_", "-") for s, g in SPELLINGS.items() if g is f})
        rows.append({"section": "vllm", "key": camel(f.dest), "flag": f.option, "type": f.type,
                     "negatable": f.negatable, "spellings": spellings})
    rows += [{"section": "model", "key": k, "flag": o, "type": t, "negatable": False, "spellings": [o]}
             for k, o, t in _MODEL_FLAGS]
    return rows


def render_flags_tpl() -> str:
    """charts/vllm/templates/_flags.tpl: the rows of flag_rows() as a YAML list, and the reserved flags."""
    body = "\n".join(f"- {json.dumps(r)}" for r in flag_rows())
    return ("{{/* GENERATED from configurator/vllm/flags.py by scripts/gen_chart_schema.py; do not edit.\n"
            "     One row per vLLM setting, in the order the chart renders them: the value's section and key,\n"
            "     its flag, type, whether false renders --no-<flag>, and every spelling (for extraArgs). */}}\n"
            "{{- define \"vllm.flagTable\" -}}\n" + body + "\n{{- end -}}\n"
            "{{- define \"vllm.reservedFlags\" -}}\n" + json.dumps(_RESERVED) + "\n{{- end -}}\n"
            "{{- /* progressDeadlineSeconds when null: the start-up budget plus this (configurator/startup.py) */}}\n"
            "{{- define \"vllm.rolloutMarginSeconds\" -}}\n" + str(ROLLOUT_MARGIN_S) + "\n{{- end -}}\n")


def _schema_rows(schema: dict, node: dict, path: str, default: Any, rows: list[tuple[str, str, str, str]]) -> None:
    defs = schema.get("$defs", {})
    for key, prop in node.get("properties", {}).items():
        full = f"{path}.{key}" if path else key
        target = defs[prop["$ref"].rsplit("/", 1)[-1]] if "$ref" in prop else prop
        if target.get("type") == "object" and "properties" in target:
            _schema_rows(schema, target, full, default[key], rows)
            continue
        rows.append((full, _type_text(prop, defs), _dump(default[key]),
                     (prop.get("description") or "").replace("|", "\\|")))


def _type_text(prop: dict, defs: dict) -> str:
    if "$ref" in prop:
        return _type_text(defs[prop["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in prop:
        return " \\| ".join(_type_text(p, defs) for p in prop["anyOf"])
    if "enum" in prop:
        return " \\| ".join(json.dumps(v) for v in prop["enum"])
    if "const" in prop:
        return json.dumps(prop["const"])
    t = prop.get("type", "any")
    if t == "array":
        return f"list of {_type_text(prop.get('items', {}), defs)}"
    if t == "object" and "additionalProperties" in prop and isinstance(prop["additionalProperties"], dict):
        return f"map of {_type_text(prop['additionalProperties'], defs)}"
    bounds = [f"{op} {prop[k]:g}" for k, op in (("exclusiveMinimum", ">"), ("minimum", ">="),
                                                ("exclusiveMaximum", "<"), ("maximum", "<=")) if k in prop]
    return t + (f" ({', '.join(bounds)})" if bounds else "")


README_START = "<!-- values-table:start (generated by scripts/gen_chart_schema.py) -->"
README_END = "<!-- values-table:end -->"


def render_values_table() -> str:
    """The values table of charts/vllm/README.md, from values.schema.json."""
    schema = values_schema()
    rows: list[tuple[str, str, str, str]] = []
    _schema_rows(schema, schema, "", ChartValues().model_dump(), rows)
    out = ["| Key | Type | Default | Description |", "| --- | --- | --- | --- |"]
    out += [f"| `{k}` | {t} | `{d}` | {desc} |" for k, t, d, desc in rows]
    return "\n".join(out)


def render_readme(current: str) -> str:
    """`current` (the chart README) with its values table replaced by the generated one."""
    if README_START not in current or README_END not in current:
        raise ValueError("charts/vllm/README.md lacks the values-table markers")
    head, rest = current.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    return f"{head}{README_START}\n{render_values_table()}\n{README_END}{tail}"


def render_chart_files(readme: str) -> dict[str, str]:
    """Path under charts/vllm -> generated text."""
    return {"values.schema.json": render_schema(), "values.yaml": render_values_yaml(),
            "templates/_flags.tpl": render_flags_tpl(), "README.md": render_readme(readme)}
