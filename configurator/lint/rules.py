"""The rules: declarative metadata plus a pure check each. The engine attaches object and location.

A check takes a `Context` (one vLLM server, its GPU, model and memory estimate) and yields `Hit`s.
The registry refuses duplicate ids at import; docs/rules.md is generated from it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from configurator.lint.extract import Server
from configurator.lint.load import Loc
from configurator.startup import WEIGHT_LOAD_BYTES_PER_S, startup_time
from configurator.units import GiB, MiB, format_gib

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}

SHM_MIN_BYTES = GiB  # NCCL's shared-memory transport between tensor-parallel ranks


DOCS_PAGE = "docs/rules.md"  # every rule's section is DOCS_PAGE#<rule id>

# The refusals that depend on the available-KV prediction: under an `at-risk` verdict (vLLM refuses only
# somewhere inside the prediction's error band) they become one `memory-at-risk` warning, not errors.
MEMORY_REFUSALS = ("To serve at least one request", "CUDA out of memory while loading",
                   "No available memory for the cache blocks", "exceeds available Mamba cache blocks",
                   "Free memory on device", "Cannot auto-fit max_model_len")


@lru_cache(maxsize=256)
def _memory_refusal(text: str) -> bool:
    """Whether a refusal text names one of MEMORY_REFUSALS (the rules ask with a few fixed texts)."""
    return any(m in text for m in MEMORY_REFUSALS)


def verdict_of(result: object) -> str:
    """`fits`, `at-risk`, `refused` or `not-predicted` (EstimateResult.verdict; a result without one: from
    `fits`)."""
    return getattr(result, "verdict", None) or ("fits" if getattr(result, "fits", False) else "refused")


@dataclass(frozen=True)
class Release:
    """The vLLM release a server is evaluated as, where it came from, and what is wrong with the tag."""

    version: str
    source: str
    problem: Literal["not-modelled", "unknown"] | None = None
    message: str = ""


@dataclass(frozen=True)
class CatalogFit:
    """A server with no GPU type, evaluated on every catalog GPU (configurator.hardware.catalog.GPU)."""

    needs_bytes: int | None  # GPU memory one GPU needs at these flags
    fits: tuple = ()
    at_risk: tuple = ()
    refused: tuple = ()


@dataclass
class Context:
    server: Server
    gpu: object | None  # configurator.hardware.catalog.GPU
    gpu_source: str
    version: str
    model: object | None  # configurator.model.spec.ModelSpec
    model_error: str | None
    estimate: object | None  # configurator.estimate.EstimateResult
    estimate_error: str | None
    workload: object | None = None  # configurator.workloads.Workload
    typical_capacity: int | None = None  # concurrent typical-length requests (with a workload)
    release: Release | None = None
    catalog: CatalogFit | None = None  # no GPU type: the catalog GPUs it fits on and those it does not
    model_note: str | None = None  # how the model was found when the name itself did not say
    extra: dict = field(default_factory=dict)

    @property
    def verdict(self) -> str | None:
        return verdict_of(self.estimate) if self.estimate is not None else None

    def errors_with(self, text: str) -> list[str]:
        e = self.estimate
        return [x for x in (e.errors if e is not None else []) if text in x]

    def refusals(self, text: str, loc: Loc | None) -> Iterator[Hit]:
        """One hit per vLLM refusal (from the estimate) containing `text`, at `loc`; a refusal that depends
        on the memory prediction counts only when vLLM refuses across the whole error band, and on the largest
        of the GPUs the pod may land on (a refusal only on the smallest is `gpu-choice-refused`, a warning)."""
        e = self.estimate
        if e is None or not e.errors:  # no refusal at all (most servers)
            return iter(())
        if _memory_refusal(text) and (self.verdict == "at-risk" or self.extra.get("largest_gpu_starts")):
            return iter(())
        return (Hit(e, loc) for e in self.errors_with(text))


@dataclass(frozen=True)
class Hit:
    message: str
    loc: Loc | None = None


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    severity: Severity
    description: str  # what and why it matters
    remediation: str  # one sentence
    check: Callable[[Context], Iterator[Hit]]

    @property
    def docs(self) -> str:
        return f"{DOCS_PAGE}#{self.id}"


REGISTRY: dict[str, Rule] = {}


def rule(id: str, title: str, severity: Severity, description: str, remediation: str):
    def deco(fn: Callable[[Context], Iterator[Hit]]) -> Callable[[Context], Iterator[Hit]]:
        if id in REGISTRY:
            raise ValueError(f"duplicate rule id {id}")
        REGISTRY[id] = Rule(id, title, severity, description, remediation, fn)
        return fn
    return deco


def no_check(ctx: Context) -> Iterator[Hit]:
    """The check of a rule that no server check reports (the engine runs none of them per server)."""
    return iter(())


# parse-error and not-understood are reported by the loader and the extractor, not by a check; registered
# for their metadata (docs, severity, SARIF rules).
REGISTRY["parse-error"] = Rule(
    "parse-error", "File cannot be read or parsed", "error",
    "The file is not UTF-8 YAML or JSON (binary, truncated, invalid syntax, an alias bomb, or too large), so the "
    "servers it may hold were not checked.", "Fix the file or leave it out of the paths given to check.",
    no_check)
REGISTRY["template-not-rendered"] = Rule(
    "template-not-rendered", "A template, not a manifest", "info",
    "A Helm chart, a Kustomize folder, or a file with unfilled placeholders ({{ .Values.x }}, ${VAR}) is not YAML "
    "until rendered; when it cannot be rendered here (helm or kubectl not on PATH, or rendering fails) it is "
    "reported once, not as a parse error.", "Render it (helm template, kubectl kustomize, envsubst) and check the "
    "output, or put helm / kubectl on PATH.",
    no_check)
REGISTRY["not-understood"] = Rule(
    "not-understood", "Mentions vLLM, but no server was understood", "info",
    "An object or file mentions vLLM (a vLLM image, `vllm serve`, `vllm.entrypoints`, a known serving kind) but "
    "yields no server the linter could read, so nothing in it was checked. A linter that passes what it did not "
    "understand in silence is worse than none.",
    "Render it first (helm template, kubectl kustomize), or report the format so it can be read.",
    no_check)
REGISTRY["runtime-template-unbound"] = Rule(
    "runtime-template-unbound", "A KServe runtime template no InferenceService in the input uses", "info",
    "A ServingRuntime or ClusterServingRuntime runs no pod by itself: KServe merges its container into the pod "
    "of each InferenceService that selects it (spec.predictor.model.runtime, or an auto-selected modelFormat), "
    "and the model is the InferenceService's storageUri, downloaded to /mnt/models. A runtime whose vLLM command "
    "serves /mnt/models or a ${MODEL} placeholder has no model of its own, so its memory can only be checked "
    "together with an InferenceService that uses it; with none in the input it is reported here, not judged.",
    "Check the runtime together with the InferenceServices that use it (`check runtime.yaml isvc.yaml`); their "
    "storageUri (hf://org/name, or a pvc:// / s3:// URI mapped with models: in .vllm-configurator.yaml) names "
    "the model.",
    no_check)

REGISTRY["config-unbound"] = Rule(
    "config-unbound", "A ConfigMap of vLLM engine arguments no server in the input reads", "info",
    "A ConfigMap whose data are vLLM engine arguments (as keys, or as a YAML file that a pod mounts and passes "
    "to `vllm serve --config`) configures a server only through the pod that mounts it. With no such pod in "
    "the input its settings (max-model-len, gpu-memory-utilization ...) cannot be checked against a model and "
    "a GPU, so they are reported here instead of passing in silence.",
    "Check the ConfigMap together with the Deployment / pod that mounts it (`check configmap.yaml "
    "deployment.yaml`, or the folder holding both).",
    lambda ctx: iter(()))

REGISTRY["read-by-server"] = Rule(
    "read-by-server", "Read as part of a server in another file", "info",
    "A file whose objects hold no vLLM server of their own but are read by a server in another file of the "
    "input: a ConfigMap that a pod mounts as its `--config` file, a KServe runtime an InferenceService uses. "
    "Its settings are checked as that server's; the finding says which server, so that every file that "
    "mentions vLLM says what became of it.",
    "Nothing to do while the files are checked together. Where two files hold objects of the same name (a folder "
    "of unrelated examples), check them apart.",
    no_check)

REGISTRY["internal-error"] = Rule(
    "internal-error", "The server could not be evaluated", "error",
    "Evaluating the server raised an unexpected error (a value out of any range the estimate handles, nesting "
    "too deep, a fault in the tool), so nothing about it was checked. It is an error, not a note, so that a "
    "check that could not be made fails `check` and is denied by the webhook: a crash never lets a server pass. "
    "The message names the cause in one line. An annotation on the object cannot silence it; the operator's "
    "config file can.",
    "Fix or remove the flag value the message points at; if the manifest is valid, report the message as a bug.",
    no_check)


@rule("kv-cache-too-small", "max_model_len does not fit the KV cache", "error",
      "vLLM refuses to start when one request of max_model_len does not fit the KV-cache memory left after the "
      "weights and start-up overheads; the pod crash-loops minutes into each start.",
      "Lower --max-model-len to the length that fits, use --kv-cache-dtype fp8, raise "
      "--gpu-memory-utilization or add GPUs.")
def _kv_too_small(ctx: Context) -> Iterator[Hit]:
    return ctx.refusals("To serve at least one request", ctx.server.flag_loc("max_model_len"))


@rule("gpu-choice-refused", "vLLM refuses on some of the GPUs the pod may land on", "warning",
      "The pod may be scheduled on several GPU types (node affinity `In [a, b]`, a SkyPilot or dstack set of "
      "alternatives); on the smallest vLLM refuses for memory, on the largest it starts. Which one it gets is "
      "the scheduler's choice, so this is not sure to fail, and not sure to start.",
      "Allow only the GPU types it starts on, or fit the configuration to the smallest (lower --max-model-len, "
      "--kv-cache-dtype fp8).")
def _gpu_choice(ctx: Context) -> Iterator[Hit]:
    larger = ctx.extra.get("largest_gpu_starts")
    if not larger:
        return
    for e in ctx.estimate.errors if ctx.estimate is not None else []:
        if any(m in e for m in MEMORY_REFUSALS):
            smallest = getattr(ctx.gpu, "name", "the smallest")
            yield Hit(f"on {smallest}, the smallest of the GPUs allowed ({', '.join(ctx.extra['allowed_gpus'])}), "
                      f"vLLM refuses: {e} On {larger}, the largest, it starts.", ctx.server.gpu_loc)
            return


@rule("weights-exceed-gpu", "Weights do not fit the GPUs", "error",
      "The model's weights per GPU exceed the GPU's memory: loading fails with CUDA out of memory.",
      "Use more GPUs (tensor or pipeline parallelism), a quantized checkpoint, or a larger GPU.")
def _weights(ctx: Context) -> Iterator[Hit]:
    return ctx.refusals("CUDA out of memory while loading", ctx.server.gpu_loc or ctx.server.flag_loc("model"))


@rule("no-kv-memory", "No memory left for the KV cache", "error",
      "After weights, activations and CUDA graphs nothing is left of gpu_memory_utilization x total for KV "
      "blocks; vLLM refuses to start.",
      "Raise --gpu-memory-utilization, shorten --max-num-batched-tokens or use more or larger GPUs.")
def _no_kv(ctx: Context) -> Iterator[Hit]:
    return ctx.refusals("No available memory for the cache blocks", ctx.server.flag_loc("gpu_memory_utilization"))


@rule("mamba-blocks-exceeded", "max_num_seqs above the Mamba cache blocks", "error",
      "Hybrid attention + Mamba / linear-attention models hold one state block per running sequence; vLLM "
      "refuses CUDA-graph capture when max_num_seqs exceeds the blocks in the pool.",
      "Lower --max-num-seqs to the number of blocks or give the KV pool more memory.")
def _mamba(ctx: Context) -> Iterator[Hit]:
    return ctx.refusals("exceeds available Mamba cache blocks", ctx.server.flag_loc("max_num_seqs"))


@rule("parallelism-gpu-mismatch", "Parallelism differs from the GPUs requested", "error",
      "vLLM needs tensor_parallel_size x pipeline_parallel_size GPUs per data-parallel rank (expert parallelism "
      "reuses those ranks and adds none); with fewer it fails to start, with more the extra GPUs sit idle. A pod "
      "that runs only some ranks of a data-parallel group (--data-parallel-size-local, a controller's dataLocal, "
      "a --data-parallel-rank per pod) needs GPUs for its own ranks.",
      "Request exactly tensor x pipeline x data-parallel GPUs (per pod, or across a LeaderWorkerSet group).")
def _parallelism(ctx: Context) -> Iterator[Hit]:
    from configurator.lint.parallel import gpus_per_replica

    s = ctx.server
    if s.gpu_count is None or s.parallel_unresolved:
        return  # a size the file leaves to the environment is not judged (an unresolved-value note says so)
    if any(re.search(r"--(tensor|pipeline|data)[-_]parallel", n) for n in s.notes):
        return  # a parallel size vLLM rejects: invalid-flag says so, the count is unknown
    tp = int(s.flags.get("tensor_parallel_size") or 1)
    pp = int(s.flags.get("pipeline_parallel_size") or 1)
    need, how = gpus_per_replica(s)
    have = s.gpu_count * s.pods
    if need == have:
        return
    if s.dp_local is not None and tp * pp * s.dp_local == s.gpu_count:
        return  # this pod runs its local ranks of a larger data-parallel group
    if s.dp_ranked and tp * pp == s.gpu_count:
        return  # one data-parallel rank per pod (external load balancing)
    where = f"{s.gpu_count} per pod x {s.pods} pods" if s.pods > 1 else f"{s.gpu_count} requested"
    if s.gpu_count_source != "resources":
        where += f", {s.gpu_count_source}"
    yield Hit(f"{how} = {need} GPUs, but {have} GPUs are available ({where})",
              s.flag_locs.get("tensor_parallel_size") or s.gpu_loc)


@rule("tp-heads-divisibility", "Tensor parallelism does not divide the heads", "error",
      "vLLM splits attention (and KV, Mamba) heads evenly across tensor-parallel ranks and refuses sizes that do "
      "not divide them.", "Choose a tensor_parallel_size that divides the model's attention heads.")
def _tp(ctx: Context) -> Iterator[Hit]:
    err = ctx.estimate_error or ""
    if "divisible by tensor parallel size" in err or ("tensor parallel size" in err and "does not divide" in err):
        yield Hit(err, ctx.server.flag_loc("tensor_parallel_size"))


@rule("max-model-len-over-limit", "max_model_len above the model's limit", "error",
      "A max_model_len longer than the model's derived context (max_position_embeddings and RoPE scaling) is "
      "refused unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set, and then produces garbage past the limit.",
      "Lower --max-model-len to the model's context length.")
def _over_limit(ctx: Context) -> Iterator[Hit]:
    if ctx.server.env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "").lower() in ("1", "true"):
        return  # vLLM then accepts it (and the model extrapolates past its training length)
    for e in ctx.errors_with("User-specified max_model_len"):
        yield Hit(e.split(" To allow")[0], ctx.server.flag_loc("max_model_len"))


@rule("invalid-flag", "A vLLM flag has a value vLLM rejects", "error",
      "vLLM exits at argument parsing when a flag's value has the wrong type or is not one of its choices.",
      "Fix the flag's value (see `vllm serve --help`).")
def _invalid(ctx: Context) -> Iterator[Hit]:
    for note in ctx.server.notes:
        yield Hit(note)
    err = ctx.estimate_error or ""
    if err and not _tp_error(err) and ctx.model is not None and ctx.gpu is not None:
        m = re.search(r"--([a-z0-9-]+)", err)
        dest = m.group(1).replace("-", "_") if m else ""
        yield Hit(err, ctx.server.flag_locs.get(dest))


def _tp_error(err: str) -> bool:
    return "divisible by tensor parallel size" in err or "does not divide" in err


# the refusal texts the rules above and below report under their own ids (vllm-refuses reports the rest)
_OWN_RULE_TEXTS = (*(t for t in MEMORY_REFUSALS if t != "Cannot auto-fit max_model_len"),
                   "User-specified max_model_len", "no kernel image is available")


@rule("vllm-refuses", "vLLM refuses this configuration", "error",
      "The estimate reproduces a refusal vLLM makes at start-up that no more specific rule names: a quantization "
      "method the checkpoint has no config for (\"Cannot find the config file for awq\"), bfloat16 on a GPU "
      "below compute capability 8.0, a speculative-decoding configuration it rejects, a flag the release does "
      "not have. The message is vLLM's own.",
      "Do what the message says (drop --quantization for a checkpoint that is not quantized that way, pass "
      "--dtype half, fix the option), then check again.")
def _refuses(ctx: Context) -> Iterator[Hit]:
    e = ctx.estimate
    for err in (e.errors if e is not None else []):
        if any(t in err for t in _OWN_RULE_TEXTS) or not any(True for _ in ctx.refusals(err, None)):
            continue  # a narrower rule's, or inside the error band (memory-at-risk says so)
        m = re.search(r"(quantization|dtype|speculative|kv-cache-memory-bytes|bfloat16)", err, re.I)
        key = {"bfloat16": "dtype", "kv-cache-memory-bytes": "kv_cache_memory_bytes",
               "speculative": "speculative_config"}.get(m.group(1).lower(), m.group(1).lower()) if m else "model"
        if "config file for" in err:
            key = "quantization"
        yield Hit(err, ctx.server.flag_locs.get(key) or ctx.server.flag_loc("model"))


@rule("fp8-kv-unsupported", "fp8 KV cache on a GPU that cannot use it", "warning",
      "An fp8 KV cache needs FP8 support in the attention backend; on older GPUs vLLM refuses it or falls back to "
      "a slow path.", "Use --kv-cache-dtype auto on this GPU, or schedule the pod on an Ada, Hopper or Blackwell GPU.")
def _fp8(ctx: Context) -> Iterator[Hit]:
    kv = str(ctx.server.flags.get("kv_cache_dtype") or "auto")
    if kv.startswith("fp8") and ctx.gpu is not None and getattr(ctx.gpu, "fp8_kv", "native") == "unsupported":
        yield Hit(f"--kv-cache-dtype {kv} on {ctx.gpu.display_name}, which has no FP8 KV support in current vLLM",
                  ctx.server.flag_loc("kv_cache_dtype"))


@rule("gpu-arch-unsupported", "The image's vLLM release has no kernels for the GPU", "error",
      "Each vLLM release's wheel ships CUDA kernels for a range of GPU architectures; from 0.20.0 Volta (V100, "
      "compute capability 7.0) is no longer among them, and the server fails its first kernel launch with CUDA's "
      "\"no kernel image is available for execution on the device\" (docs/gpus.md lists what each release ships).",
      "Pin the newest release that still ships kernels for the GPU (the message names it), or schedule the pod on "
      "a newer GPU.")
def _arch(ctx: Context) -> Iterator[Hit]:
    yield from ctx.refusals("no kernel image is available",
                            ctx.server.gpu_labels_loc or ctx.server.gpu_loc or ctx.server.loc)


@rule("concurrency-preempted", "Target concurrency does not fit at the typical length", "warning",
      "With the workload's target concurrency the KV pool runs out and vLLM preempts requests (recomputes them), "
      "which multiplies latency.", "Use fp8 KV, more GPUs, or lower --max-num-seqs to what the pool holds.")
def _preempt(ctx: Context) -> Iterator[Hit]:
    w = ctx.workload
    if w is None or ctx.typical_capacity is None or ctx.estimate is None or not ctx.estimate.fits:
        return
    if ctx.typical_capacity < w.concurrency:
        yield Hit(f"the KV pool holds {ctx.typical_capacity} requests of {w.typical_tokens:,} tokens; the workload "
                  f"'{w.name}' runs {w.concurrency} at once", ctx.server.flag_loc("max_num_seqs"))


@rule("context-below-workload", "max_model_len below the workload's requests", "warning",
      "With --workload, the server's max_model_len (its own or the one vLLM derives) is compared with the "
      "workload's typical request (prompt + output tokens) and its longest (max_context_tokens): vLLM rejects a "
      "request longer than max_model_len with HTTP 400 (its OpenAI server's \"This model's maximum context length is "
      "N tokens\" error), so those requests fail, not slow down.",
      "Raise --max-model-len to the workload's longest request (with the KV cache to hold it), or serve the "
      "long requests elsewhere.")
def _context_below_workload(ctx: Context) -> Iterator[Hit]:
    w = ctx.workload
    if w is None:
        return
    flags = getattr(ctx.estimate, "flags", None) or ctx.server.flags
    mml = flags.get("max_model_len")
    if not isinstance(mml, int) or isinstance(mml, bool) or mml <= 0:
        return
    loc = ctx.server.flag_loc("max_model_len")
    if w.typical_tokens > mml:
        yield Hit(f"max_model_len {mml:,} is below the workload '{w.name}''s typical request of {w.typical_tokens:,} "
                  f"tokens (longest {w.max_context_tokens:,}): vLLM rejects those requests", loc)
    elif w.max_context_tokens > mml:
        yield Hit(f"max_model_len {mml:,} is below the workload '{w.name}''s longest request of "
                  f"{w.max_context_tokens:,} tokens: vLLM rejects those requests", loc)


@rule("shm-missing", "No /dev/shm for tensor parallelism", "warning",
      "Tensor-parallel ranks in one pod exchange data through NCCL's shared-memory transport; the container "
      "default /dev/shm of 64 MiB makes NCCL fail or fall back.",
      "Mount an emptyDir with medium: Memory at /dev/shm (sizeLimit of a few GiB).")
def _shm(ctx: Context) -> Iterator[Hit]:
    s = ctx.server
    if s.shm_error:
        return  # invalid-quantity reports it; the size is unknown, not "unlimited"
    tp = int(s.flags.get("tensor_parallel_size") or 1) * int(s.flags.get("pipeline_parallel_size") or 1)
    if tp <= 1 or (s.gpu_count is not None and s.gpu_count <= 1):
        return
    if s.shm_bytes is None:
        yield Hit(f"{tp} GPU ranks in the pod but no memory-backed /dev/shm is mounted", s.loc)
    elif 0 < s.shm_bytes < SHM_MIN_BYTES:
        yield Hit(f"/dev/shm is limited to {format_gib(s.shm_bytes)} GiB for {tp} ranks", s.shm_loc or s.loc)


@rule("no-max-model-len", "No --max-model-len with a long default context", "warning",  # < 4 full-length requests
      "Without --max-model-len vLLM uses the model's full context (often 128K-1M tokens); the pool then holds few "
      "full-length requests and one long request can take it all.",
      "Set --max-model-len to the longest request the service must take.")
def _no_len(ctx: Context) -> Iterator[Hit]:
    e = ctx.estimate
    if "max_model_len" in ctx.server.flags or e is None or not e.fits:
        return
    if e.flags["max_model_len"] >= 32768 and e.kv_cache.max_concurrency < 4:
        yield Hit(f"max_model_len defaults to {e.flags['max_model_len']:,}: the pool holds only "
                  f"{e.kv_cache.max_concurrency:.2f} requests of that length", ctx.server.loc)


@rule("gpu-memory-utilization", "GPU memory utilization leaves no margin", "warning",
      "Above 0.95 the CUDA context, NCCL buffers and fragmentation do not fit beside vLLM's budget; on a shared GPU "
      "vLLM refuses to start when the memory other processes hold exceeds 1 - utilization.",
      "Keep --gpu-memory-utilization at or below 0.95, and on a shared GPU below the share left to vLLM.")
def _util(ctx: Context) -> Iterator[Hit]:
    u = ctx.server.flags.get("gpu_memory_utilization")
    loc = ctx.server.flag_loc("gpu_memory_utilization")
    if u is not None and u > 0.95:
        yield Hit(f"--gpu-memory-utilization {u} leaves {1 - u:.0%} of the GPU for everything outside vLLM", loc)
    yield from ctx.refusals("Free memory on device", loc)


@rule("gpu-type-unknown", "GPU type unknown: judged against the GPU catalog", "info",
      "Without the GPU type the server's memory budget cannot be checked against the GPU it will run on; it is "
      "evaluated on every GPU of the catalog instead, and the finding lists the memory one GPU needs at these "
      "flags, the GPUs it fits on and those vLLM would refuse it on.",
      "Select the node by a GPU label (nvidia.com/gpu.product, cloud.google.com/gke-accelerator, an instance type), "
      "annotate the object with vllm-configurator.io/gpu, set gpu: in .vllm-configurator.yaml, or pass --gpu.")
def _gpu_unknown(ctx: Context) -> Iterator[Hit]:
    from configurator.hardware.labels import unknown_gpu_label

    if ctx.gpu is not None or ctx.server.accelerator:
        return  # a TPU / Gaudi / Neuron server: accelerator-not-modelled says so
    c = ctx.catalog
    lacking = unknown_gpu_label(ctx.server.gpu_labels)
    head = (f"GPU {lacking} is not in the catalog; map it in the config's gpus: or pass --gpu-memory" if lacking
            else "no GPU type given")
    where = ctx.server.gpu_labels_loc if lacking else None
    if c is None:
        yield Hit(f"{head}: the memory budget was not checked" if lacking else
                  "no GPU type in nodeSelector, node affinity, annotations, config or --gpu: the memory budget was "
                  "not checked", where or ctx.server.loc)
        return
    need = f"needs about {format_gib(c.needs_bytes)} GiB per GPU" if c.needs_bytes else "was evaluated"
    parts = [f"{head}; at these flags (vLLM {ctx.version}) it {need}"]
    for label, gpus in (("fits", c.fits), ("at risk on", c.at_risk), ("refused on", c.refused)):
        if gpus:
            parts.append(f"{label} {_by_class(gpus)}")
    yield Hit("; ".join(parts), where or ctx.server.loc)


@rule("accelerator-not-modelled", "An accelerator the memory model does not cover", "info",
      "The pod requests or selects a TPU (google.com/tpu), a Gaudi (habana.ai/gaudi) or an AWS Neuron device: vLLM "
      "runs its TPU / HPU / Neuron backend there, whose memory the model does not cover, so the server's flags are "
      "read but its memory budget is not judged (never as if it ran on an NVIDIA GPU).",
      "Nothing to do; check the start-up log on the accelerator, or annotate the object with vllm-configurator.io/gpu "
      "if it does run on a GPU.")
def _accelerator(ctx: Context) -> Iterator[Hit]:
    s = ctx.server
    if s.accelerator and ctx.gpu is None:
        yield Hit(f"{s.accelerator}: not a GPU the memory model covers (vLLM's TPU / HPU / Neuron backend); the "
                  "memory budget was not checked", s.gpu_loc or s.gpu_labels_loc or s.loc)


@rule("value-assumed", "A value the file leaves to its environment", "info",
      "A value of the server is a variable: `${VAR:-default}` (docker compose, shell) is taken at its default, as "
      "when the variable is unset (compose also reads a `.env` file beside the file, which check does not see); an "
      "option set to a variable the file does not give at all is left out, and a parallel size left out means the "
      "memory budget is not judged (the GPUs per rank are unknown).",
      "Nothing to do if the default is what runs; otherwise write the value in the file, or check the rendered one.")
def _assumed(ctx: Context) -> Iterator[Hit]:
    s = ctx.server
    seen = set()
    for text, loc in s.assumed:
        if text not in seen:
            seen.add(text)
            yield Hit(text, loc)
    if s.parallel_unresolved:
        from configurator.lint.parallel import per_gpu_unknown

        unknown = per_gpu_unknown(s)
        yield Hit(f"{', '.join(sorted(s.parallel_unresolved))} not known from the file: " +
                  ("the memory budget was not checked" if unknown else
                   "the memory budget was checked per GPU (a data-parallel rank holds what one GPU holds)"), s.loc)


# Product-name marks of workstation, desktop and consumer parts (profiles/gpus/*.yaml product_names): GeForce
# and RTX cards, and GB10 (DGX Spark, a desktop with unified memory: profiles/gpus/gb10.yaml).
_NON_DATACENTRE_MARKS = ("GeForce", "RTX", "GB10")


def gpu_class(gpu: object) -> str:
    """'data-centre' or 'workstation / consumer', from the catalog's class field when it has one."""
    explicit = getattr(gpu, "gpu_class", None) or getattr(gpu, "klass", None)
    if explicit:
        return {"datacenter": "data-centre", "desktop": "workstation / consumer",
                "workstation": "workstation / consumer"}.get(str(explicit), str(explicit))
    name = getattr(gpu, "product_name", "") or getattr(gpu, "display_name", "")
    return "workstation / consumer" if any(m in name for m in _NON_DATACENTRE_MARKS) else "data-centre"


def _by_class(gpus: tuple) -> str:
    """'data-centre l4, a10g; workstation / consumer rtx-4090' (each group smallest first)."""
    groups: dict[str, list[str]] = {}
    for g in gpus:
        groups.setdefault(gpu_class(g), []).append(g.name)
    order = sorted(groups, key=lambda k: (k != "data-centre", k))
    return "; ".join(f"{k} {', '.join(groups[k])}" for k in order)


@rule("unknown-model", "Model unknown: memory not checked", "info",
      "The model is neither built in nor in the local Hugging Face cache or --model-config, so its geometry is "
      "unknown offline. A path in a manifest (/mnt/models, a PVC mount) is a path inside the container and is "
      "never read from the machine running the check.",
      "Map the name or path to a model with models: in .vllm-configurator.yaml or the vllm-configurator.io/model "
      "annotation, or pass --model-config DIR with its config.json.")
def _model_unknown(ctx: Context) -> Iterator[Hit]:
    if ctx.model is None and ctx.model_error:
        yield Hit(ctx.model_error, ctx.server.flag_loc("model"))


@rule("model-from-served-name", "Model taken from the served name", "info",
      "The model is a path inside the container (/data/, /mnt/models), which says nothing about its geometry, "
      "but --served-model-name names a model the tool knows; the server is checked as that model. A served name "
      "is what clients call the model, so it can differ from what was loaded.",
      "Map the path to its model with models: in .vllm-configurator.yaml or the vllm-configurator.io/model "
      "annotation to be exact.")
def _model_from_served_name(ctx: Context) -> Iterator[Hit]:
    if ctx.model_note:
        yield Hit(ctx.model_note, ctx.server.flag_loc("served_model_name"))


@rule("model-inferred", "Model geometry inferred, not read from its config.json", "info",
      "The model was resolved without its own config.json: a quantized or fine-tuned derivative's name (its base's "
      "geometry, the quantization the name implies), a path whose last part names a catalog model, or a catalog "
      "entry derived from several sources because no copy of the published file was found. The verdict is "
      "that model's; reported so that a guess never passes as a reading.",
      "Map the name to its real config.json with --model-config NAME=PATH, models: in .vllm-configurator.yaml or "
      "the vllm-configurator.io/model annotation (a local config.json) to be exact.")
def _model_inferred(ctx: Context) -> Iterator[Hit]:
    inferred = getattr(ctx.model, "inferred", None)
    if inferred:
        yield Hit(inferred, ctx.server.flag_loc("model") or ctx.server.loc)


@rule("startup-probe-too-short", "Probes kill the server before the weights load", "warning",
      "The kubelet restarts a container whose startup (or liveness) probe fails for longer than its budget; "
      "loading the weights, compiling and capturing CUDA graphs take minutes on large models.",
      "Add a startupProbe on /health with failureThreshold x periodSeconds above the loading time.")
def _probe(ctx: Context) -> Iterator[Hit]:
    s, e = ctx.server, ctx.estimate
    if s.startup_budget_s is None or e is None:
        return
    # the pod downloads and loads the whole checkpoint: the weights of every rank it runs
    ranks = int(e.flags.get("tensor_parallel_size") or 1) * int(e.flags.get("pipeline_parallel_size") or 1)
    t = startup_time(e.memory.weights_bytes * ranks, enforce_eager=bool(e.flags.get("enforce_eager")),
                     multi_node=s.pods > 1)
    if s.startup_budget_s < t.total_s:
        yield Hit(f"the probes allow {s.startup_budget_s} s before a restart; a first start takes about "
                  f"{t.total_s} s ({format_gib(t.download_bytes)} GiB of weights at "
                  f"{WEIGHT_LOAD_BYTES_PER_S // MiB} MiB/s, compiling and CUDA graphs)", s.probe_loc)


@rule("duplicate-flag", "A flag is given more than once", "warning",
      "vLLM takes the last occurrence of a repeated flag, so an earlier value (for example a Helm value overridden "
      "by extraArgs) is silently ignored.", "Give each flag once.")
def _dup(ctx: Context) -> Iterator[Hit]:
    for dest, locs in ctx.server.repeated.items():
        lines = ", ".join(str(loc.line) for loc in locs)
        yield Hit(f"--{dest.replace('_', '-')} is given {len(locs)} times (lines {lines}); vLLM uses the last: "
                  f"{ctx.server.flags[dest]}", locs[-1])


@rule("invalid-quantity", "A Kubernetes quantity Kubernetes refuses", "error",
      "A resource quantity (here the /dev/shm emptyDir sizeLimit) that does not follow Kubernetes' quantity grammar "
      "makes the API server reject the whole object, so nothing is deployed; the linter never reads it as "
      "'no limit'.", "Write the size as Kubernetes does: 2Gi, 512Mi, 20G or 1e9.")
def _bad_quantity(ctx: Context) -> Iterator[Hit]:
    s = ctx.server
    if s.shm_error:
        yield Hit(s.shm_error, s.shm_loc or s.loc)


@rule("memory-at-risk", "vLLM may refuse: the prediction's error band straddles the limit", "warning",
      "The available KV-cache memory is predicted with an error band; here vLLM refuses at the pessimistic end "
      "of the band and starts at the optimistic end. An error would be a false alarm as often as not, silence a "
      "missed crash-loop.", "Give the KV cache room: lower --max-model-len or --max-num-seqs, use "
      "--kv-cache-dtype fp8, or raise --gpu-memory-utilization; then check again.")
def _at_risk(ctx: Context) -> Iterator[Hit]:
    e = ctx.estimate
    if e is None or ctx.verdict != "at-risk":
        return
    low = getattr(e, "kv_cache_bytes_low", None)
    high = getattr(e, "kv_cache_bytes_high", None)
    need = e.kv_cache.blocks_per_request * e.kv_cache.bytes_per_block
    band = (f"between {format_gib(low)} and {format_gib(high)} GiB" if low is not None and high is not None
            else f"about {format_gib(e.memory.kv_cache_bytes)} GiB")
    msg = (f"the available KV-cache memory is predicted {band}; one request of max_model_len "
           f"{e.flags['max_model_len']:,} needs {format_gib(need)} GiB: vLLM may refuse to start")
    central = [x for x in e.errors if any(m in x for m in MEMORY_REFUSALS)]
    if central:
        msg += f" (at the central prediction: {central[0]})"
    # the estimate's own at-risk reasons beyond the band (a CUDA-graph pool with no room, an unmodelled layout)
    msg += "".join(f"; {w.removeprefix('at-risk: ')}" for w in e.warnings if w.startswith("at-risk: "))
    yield Hit(msg, ctx.server.flag_loc("max_model_len"))


@rule("release-not-modelled", "The image's vLLM release is not modelled", "warning",
      "The image runs a vLLM release outside the modelled range (older images such as v0.8.5 are common in public "
      "samples); it is evaluated as the nearest modelled release, with that release's defaults, which may differ "
      "from the image's own.", "Use a modelled release (see docs/vllm-versions.md), or read the verdict as an "
      "approximation.")
def _release_range(ctx: Context) -> Iterator[Hit]:
    r = ctx.release
    if r is not None and r.problem == "not-modelled":
        yield Hit(r.message, ctx.server.loc)


@rule("release-unknown", "The image tag names no vLLM release", "info",
      "The image tag (a custom build, a digest, a nightly) names no vLLM release; the server is evaluated as the "
      "newest modelled release, with its defaults.",
      "Pin a release tag (vllm/vllm-openai:v0.X.Y), or pass --vllm-version (or vllm_version in "
      ".vllm-configurator.yaml).")
def _release_unknown(ctx: Context) -> Iterator[Hit]:
    r = ctx.release
    if r is not None and r.problem == "unknown":
        yield Hit(r.message, ctx.server.loc)


@rule("unknown-flag", "vLLM would reject an argument", "error",
      "vLLM's argument parser exits at start-up on an option it does not know (\"unrecognized arguments\"); a "
      "typo such as --max-modle-len would otherwise be ignored here and the server judged at the model's default "
      "length, while the pod crash-loops.", "Fix the spelling (the nearest real option is named) or remove it.")
def _unknown_flag(ctx: Context) -> Iterator[Hit]:
    for u, loc in ctx.server.unknown:
        msg = f"vLLM {ctx.version} exits at start-up: \"error: unrecognized arguments: {u.token}\""
        if getattr(u, "suggestion", None):
            msg += f"; did you mean {u.suggestion}?"
        yield Hit(msg, loc)


@rule("removed-flag", "A flag the assumed vLLM release refuses, where the file names no release", "warning",
      "The file does not say which vLLM release runs (no release in the image tag: a controller such as KAITO or "
      "KubeAI chooses the image, or a custom tag), and a flag (or its value) that some modelled releases accept is "
      "refused by the release assumed (--swap-space, --num-scheduler-steps, --max-seq-len-to-capture were removed; "
      "--enable-chunked-prefill=false is refused once it became a switch). The message names the releases that "
      "refuse it and those that accept it; it is an error (unknown-flag, invalid-flag) only where the release is "
      "known.", "Pin the image to a release that accepts it (or pass --vllm-version), or drop the flag if the "
      "release that runs is one that refuses it.")
def _removed_flag(ctx: Context) -> Iterator[Hit]:
    for message, loc in getattr(ctx.server, "release_dependent", ()):
        yield Hit(message, loc)


@rule("unresolved-value", "A value the file does not give", "info",
      "An argument is a shell expansion or a template with no value in the file (`$((LWS_GROUP_SIZE * "
      "DP_SIZE_LOCAL))`, `$START_RANK` computed at run time, a variable the container's env does not set, "
      "`{{ .Values.maxModelLen }}`, a command substitution): it is never split into flags or read as a number; "
      "the server is checked with what the file does give, and this names what was left out. A `${VAR:-default}` "
      "takes its default (the server's basis says so).", "Nothing to do if the value is set at run time; to have it "
      "checked, write it literally or set the variable in the container's env.")
def _unresolved_value(ctx: Context) -> Iterator[Hit]:
    for option, value, loc in getattr(ctx.server, "unresolved", ()):
        what = f"{option} {value}" if option and option not in value else value
        yield Hit(f"{what[:160]}: no value in the file (a shell expansion or template resolved only at run "
                  "time), so the server is checked without it", loc)
    for dest, basis in getattr(ctx.server, "basis", {}).items():
        if "default of $" in basis:
            yield Hit(f"--{dest.replace('_', '-')}: {basis}: checked at that default", ctx.server.flag_loc(dest))


@rule("not-modelled", "An option that changes GPU memory is not modelled", "warning",
      "The option (LoRA, speculative decoding, KV transfer, multimodal limits, ...) changes the memory vLLM needs, "
      "but the memory model does not account for it yet, so the verdict may say 'fits' where vLLM runs out of "
      "memory.", "Leave a margin (lower --gpu-memory-utilization's target use), or check the start-up log; the "
      "warning goes once the option is modelled.")
def _not_modelled(ctx: Context) -> Iterator[Hit]:
    seen = set()
    for option, loc in ctx.server.unmodelled:
        if option in seen:
            continue
        seen.add(option)
        yield Hit(f"{option} changes GPU memory, but the memory model leaves it out: the verdict ignores it", loc)


@rule("estimate-not-modelled", "The estimate names a memory mechanism it does not model here", "info",
      "The estimate says what it leaves out for this server and why (an integrated GPU's host memory counted by "
      "vLLM, a KV layout, a multimodal tower's transient peak, speculative-decoding keys it does not read): the "
      "verdict stands, with that caveat. Reported so that nothing the estimate knows it missed passes in silence.",
      "Read the caveat; where it matters, calibrate from a real start-up log (`vllm-configurator calibrate`) or "
      "pin the KV pool with --kv-cache-memory-bytes.")
def _estimate_not_modelled(ctx: Context) -> Iterator[Hit]:
    e = ctx.estimate
    seen = set()
    for w in (e.warnings if e is not None else []):
        if w.startswith("not-modelled: ") and w not in seen:
            seen.add(w)
            yield Hit(w.removeprefix("not-modelled: "), ctx.server.flag_loc("model") or ctx.server.loc)


# Images whose entrypoint already runs the server: vllm-project/vllm docker/Dockerfile, stage vllm-openai
# (ENTRYPOINT ["vllm", "serve"]; before, python3 -m vllm.entrypoints.openai.api_server, which rejects a
# leading "serve" just the same).
_SERVE_ENTRYPOINT_IMAGES = ("vllm-openai", "vllm-openai-rocm")


def _image_repo(image: str | None) -> str:
    last = (image or "").rsplit("/", 1)[-1]
    return last.split("@", 1)[0].split(":", 1)[0]


@rule("stray-serve-arg", "`serve` given again under the image's `vllm serve` entrypoint", "error",
      "The stock vLLM image already runs `vllm serve`; container args that start with `serve` (as `plan --emit "
      "args` once emitted) make it run `vllm serve serve ...`, and vLLM exits with \"unrecognized arguments: "
      "serve\".", "Drop the leading `serve` from args (start with the model), or set command: [vllm, serve].")
def _stray_serve(ctx: Context) -> Iterator[Hit]:
    s = ctx.server
    raw_args = getattr(s, "raw_args", None)
    if getattr(s, "raw_command", None) or not raw_args or str(raw_args[0]).strip() != "serve":
        return
    if _image_repo(s.image) in _SERVE_ENTRYPOINT_IMAGES:
        yield Hit(f"args start with 'serve' under {s.image}, whose entrypoint is already `vllm serve`: the "
                  f"container runs `vllm serve serve ...`", getattr(s, "raw_args_loc", None) or s.loc)
