"""RunPod serverless vLLM worker templates (`.runpod/hub.json` of runpod-workers/worker-vllm and its forks): one
vLLM server.

The worker reads its engine arguments from environment variables named as vLLM's arguments in upper case
(runpod-workers/worker-vllm src/engine_args.py: MODEL_NAME, MAX_MODEL_LEN, GPU_MEMORY_UTILIZATION,
TENSOR_PARALLEL_SIZE ...); the hub template lists them under config.env[].{key, input.default}, its presets
under config.presets[].defaults, and the GPUs under config.{gpuCount, gpuIds}. A default that is not a value
(`auto`, empty) is left to the worker; the model is the first preset's MODEL_NAME (the template's own input has
no default). gpuIds are RunPod pool names (ADA_80_PRO, AMPERE_80), not GPU models: no GPU type is taken.
"""

from __future__ import annotations

from configurator.lint.discover import _engine_dests, build, new_server
from configurator.lint.extract import Inputs, Server, Token
from configurator.lint.formats import register
from configurator.lint.formats._common import set_gpu_count
from configurator.lint.shape import Node

RENAMED = {"model_name": "model"}  # worker-vllm's MODEL_NAME is vLLM's model


def recognise(obj: Node) -> bool:
    cfg = obj.mapping("config")
    return not obj.has("kind") and cfg is not None and any(
        e.str("key") == "MODEL_NAME" for e in cfg.mappings("env"))


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    cfg = obj.mapping("config")
    s = new_server(obj, ("config",), "RunPod template", {}, name=obj.str("title") or "")
    values: dict[str, tuple[str, Node]] = {}
    for e in cfg.mappings("env"):
        key, default = e.str("key"), e.at("input", "default")
        if key and default.value is not None:
            values[key] = (str(default.value).lower() if isinstance(default.value, bool) else str(default.value),
                           default)
    presets = cfg.mappings("presets")
    if presets:
        for k, v in presets[0].entries("defaults"):
            if v.text() is not None:
                values[k] = (v.text() or "", v)
    dests = _engine_dests()
    tokens: list[Token] = []
    for key, (text, node) in values.items():
        dest = RENAMED.get(key.lower(), key.lower())
        if dest not in dests or (text.strip() in ("", "auto") and dest != "model"):
            continue
        flag = "--" + dest.replace("_", "-")
        if text in ("true", "false"):
            if text == "true":
                tokens.append(Token(flag, node.loc()))
            continue
        tokens += [Token(flag, node.loc()), Token(text, node.loc())]
    if cfg.int("gpuCount") is not None:
        set_gpu_count(s, cfg.int("gpuCount"), cfg.loc("gpuCount"))
    out = build(s, obj, ("config",), tokens, [])
    return [out] if out is not None else []


register("runpod-hub", recognise, extract, order=20, kinds=())
