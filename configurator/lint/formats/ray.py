"""KubeRay `RayService`, `RayCluster` and `RayJob` (ray.io/v1): vLLM run by Ray Serve applications, by
a RayJob's `entrypoint` (`vllm serve ...` submitted to the cluster of `spec.rayClusterSpec`), or by a
container of the cluster's pods.

RayService.spec.serveConfigV2 is a Ray Serve config (YAML in a string): `applications[].{name,
import_path, args, runtime_env.env_vars, deployments[].ray_actor_options.num_gpus}`.
- Ray Serve LLM (`import_path: ray.serve.llm:build_openai_app`, ray/python/ray/llm LLMConfig):
  `args.llm_configs[].{model_loading_config.{model_id, model_source}, engine_kwargs (vLLM's engine
  arguments), accelerator_type}`; each config is one server on TP x PP GPUs (one placement-group
  bundle per engine worker).
- Other applications that mention vLLM (KubeRay's ray-operator/config/samples/vllm/serve.py and its
  kind): `args` is a mapping of vLLM flags, and the sample's env vars MODEL_ID / TENSOR_PARALLELISM /
  PIPELINE_PARALLELISM set --model, --tensor-parallel-size and --pipeline-parallel-size; GPUs are
  `ray_actor_options.num_gpus` when set, else TP x PP. An application whose model is in neither is
  reported as not understood.
Ray accelerator types (ray.util.accelerators: V100, T4, A10G, L4, L40S, A100, A100-40G, A100-80G,
H100, H200, B200) name the GPU; else the worker groups' node selectors do. Containers of the head and
worker group pods that run vLLM themselves are read as pods. KubeRay mounts a memory-backed /dev/shm
in every Ray container, its size limit the container's memory limit, unlimited without one
(ray-operator/controllers/ray/common/pod.go, addEmptyDir of SharedMemoryVolumeMountPath).
"""

from __future__ import annotations

import math

from configurator.lint.extract import (
    Inputs,
    Server,
    Token,
    apply_tokens,
    pod_scheduling,
    pod_servers,
    shell_tokens,
)
from configurator.lint.formats import mentions_vllm, register
from configurator.lint.formats._common import apply_kwargs, new_server, set_gpu_count, set_gpu_name, set_model
from configurator.lint.load import Document, parse_text
from configurator.lint.shape import Node

MAX_CONFIG_CHARS = 1 << 20
# ray.util.accelerators names -> catalog GPUs ("A100" alone: the smaller one, as labels.py does)
ACCELERATORS = {"V100": "v100-16gb", "T4": "t4", "A10G": "a10g", "L4": "l4", "L40S": "l40s", "A100": "a100-40gb",
                "A100-40G": "a100-40gb", "A100-80G": "a100-80gb", "H100": "h100-80gb", "H200": "h200", "B200": "b200"}
SAMPLE_ENV = (("MODEL_ID", "--model"), ("TENSOR_PARALLELISM", "--tensor-parallel-size"),
              ("PIPELINE_PARALLELISM", "--pipeline-parallel-size"))


def recognise(obj: Node) -> bool:
    return obj.str("kind") in ("RayService", "RayCluster", "RayJob") and (obj.str("apiVersion") or "").startswith(
        "ray.io/")


def _serve_config(spec: Node) -> Node | None:
    """serveConfigV2 parsed, its positions moved to where the string sits in the file."""
    text = spec.str("serveConfigV2", max_chars=MAX_CONFIG_CHARS)
    if not text:
        return None
    path = (*spec.path, "serveConfigV2")
    at = spec.loc("serveConfigV2")
    block = spec.doc.style(path).startswith("|") or spec.doc.style(path) == ">"
    docs, problems = parse_text(text, at.file)
    if problems or len(docs) != 1:
        spec.note(path, "serveConfigV2 is not valid YAML: its applications are not checked")
        return None
    d = docs[0]
    indent = spec.doc.indent(path) if block else 0
    shift = {p: (line + at.line if block else at.line, col + indent if block else at.column)
             for p, (line, col) in d.positions.items()}
    return Node.of(Document(at.file, spec.doc.index, d.data, shift))


def _pods(spec: Node) -> list[Node]:
    cluster = spec.mapping("rayClusterConfig") or spec.mapping("rayClusterSpec") or spec
    pods = [cluster.mapping("headGroupSpec", "template", "spec")]
    pods += [g.mapping("template", "spec") for g in cluster.mappings("workerGroupSpecs")]
    return [p for p in pods if p is not None]


def _gpu_pod(pods: list[Node]) -> Node | None:
    """The first pod that requests GPUs (a worker group), whose node selectors say which GPU."""
    for pod in pods:
        for c in pod.mappings("containers"):
            for section in ("limits", "requests"):
                if any(k == "nvidia.com/gpu" or k == "amd.com/gpu" for k, _ in c.entries("resources", section)):
                    return pod
    return None


def _finish(s: Server, gpu_pod: Node | None, accelerator: Node | None) -> None:
    tp = int(s.flags.get("tensor_parallel_size") or 1)
    pp = int(s.flags.get("pipeline_parallel_size") or 1)
    if s.gpu_count is None:
        set_gpu_count(s, tp * pp, s.loc)
    if gpu_pod is not None and s.shm_bytes is None:
        c = next(iter(gpu_pod.mappings("containers")), None)  # the Ray container is the first
        s.shm_bytes = (c.quantity("resources", "limits", "memory") if c is not None else None) or 0
        s.shm_loc = c.loc() if c is not None else gpu_pod.loc()
    name = accelerator.str() if accelerator is not None else None
    if not (name and set_gpu_name(s, ACCELERATORS.get(name.upper(), name), accelerator.loc())) and gpu_pod is not None:
        pod_scheduling(s, gpu_pod)


def _llm_configs(obj: Node, app: Node, gpu_pod: Node | None) -> list[Server]:
    out = []
    for cfg in app.items("args", "llm_configs"):
        if not isinstance(cfg.value, dict):
            cfg.note(cfg.path, "an llm_config given as a file path: its model and engine arguments are not checked")
            continue
        mlc = cfg.mapping("model_loading_config")
        model_id = mlc.str("model_id") if mlc is not None else None
        s = new_server(obj, cfg, kind=obj.str("kind") or "RayService", container=model_id or app.str("name") or "llm")
        apply_kwargs(s, cfg.mapping("engine_kwargs"))
        if mlc is not None:
            source = mlc.str("model_source")
            set_model(s, source or model_id, mlc.loc("model_source" if source else "model_id"))
        _finish(s, gpu_pod, cfg.at("accelerator_type"))
        out.append(s)
    return out


def _custom_app(obj: Node, app: Node, gpu_pod: Node | None) -> Server | None:
    env = {k: v for k, v in app.entries("runtime_env", "env_vars") if v.text() is not None}
    s = new_server(obj, app, kind=obj.str("kind") or "RayService", container=app.str("name") or "app")
    s.env = {k: v.text() or "" for k, v in env.items()}
    apply_tokens(s, [t for k, flag in SAMPLE_ENV if k in env
                     for t in (Token(flag, env[k].loc()), Token(env[k].text() or "", env[k].loc()))])
    apply_kwargs(s, app.mapping("args"), name=lambda k: k.replace("-", "_"))
    if "model" not in s.flags:
        app.note(app.path, f"a Ray Serve application that runs vLLM from its own code ({app.str('import_path')}): "
                 "its model is in neither args nor MODEL_ID, so it is not checked")
        return None
    gpus = [d.number("ray_actor_options", "num_gpus", hi=1 << 16) for d in app.mappings("deployments")]
    gpus = [g for g in gpus if g]
    if gpus:
        set_gpu_count(s, math.ceil(max(gpus)), app.loc("deployments"))
    _finish(s, gpu_pod, None)
    return s


def _entrypoint(obj: Node, spec: Node, gpu_pod: Node | None) -> Server | None:
    """A RayJob whose entrypoint runs a vLLM server (its last `vllm serve` / `vllm.entrypoints` command)."""
    text = spec.str("entrypoint", max_chars=MAX_CONFIG_CHARS)
    if not text:
        return None
    path = (*spec.path, "entrypoint")
    argv = shell_tokens(text, spec.loc("entrypoint"), spec.doc.style(path))
    if argv is None:
        return None
    s = new_server(obj, spec.at("entrypoint"), kind="RayJob", container="entrypoint")
    apply_tokens(s, argv)
    _finish(s, gpu_pod, None)
    return s


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    spec = obj.mapping("spec")
    if spec is None:
        return []
    kind = obj.str("kind") or ""
    pods = _pods(spec)
    out: list[Server] = []
    for pod in pods:
        out += pod_servers(obj, pod, inputs, kind=kind)
    if kind == "RayJob":
        entry = _entrypoint(obj, spec, _gpu_pod(pods))
        return out + ([entry] if entry is not None else [])
    cfg = _serve_config(spec) if kind == "RayService" else None
    if cfg is None:
        return out
    gpu_pod = _gpu_pod(pods)
    for app in cfg.mappings("applications"):
        if (app.str("import_path") or "").startswith("ray.serve.llm"):
            out += _llm_configs(obj, app, gpu_pod)
        elif mentions_vllm(app.value):
            s = _custom_app(obj, app, gpu_pod)
            if s is not None:
                out.append(s)
    for i, n in enumerate(cfg.notes):  # notes inside the serve config belong to the object
        obj.note((*spec.path, "serveConfigV2", i), n.message)
    return out


register("ray", recognise, extract, order=50, kinds=("RayService", "RayCluster", "RayJob"))
