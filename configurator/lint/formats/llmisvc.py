"""KServe `LLMInferenceService` (serving.kserve.io/v1alpha1 and v1alpha2): the decode workload
(`spec.template`, plus `spec.worker` pods for multi-node) and, when present, the prefill workload
(`spec.prefill.template` / `.worker`), each one vLLM server.

Keys from KServe's API (pkg/apis/serving/v1alpha2/llm_inference_service_types.go): spec.model.{uri,
name}, spec.{template, worker, prefill, parallelism.{tensor, pipeline, data, dataLocal, expert},
baseRefs}. What the server runs comes from the LLMInferenceServiceConfig templates
(config/llmisvcconfig/config-llm-decode-template.yaml): `vllm serve /mnt/models --served-model-name
<model.name> ... [--tensor-parallel-size <parallelism.tensor>] ${VLLM_ADDITIONAL_ARGS} $@`, so the
flags are the parallelism keys, then the `VLLM_ADDITIONAL_ARGS` env of the `main` container, then
its `args`. The model is the Hugging Face id of an `hf://` uri, else `model.name`. A `baseRefs` entry
is merged from an LLMInferenceServiceConfig in the same input; one that is not there is reported.
"""

from __future__ import annotations

from configurator.lint.extract import (
    Inputs,
    Server,
    Token,
    apply_tokens,
    container_env,
    container_facts,
    pod_scheduling,
    set_flag,
    shell_words,
)
from configurator.lint.formats import register
from configurator.lint.formats._common import model_from_uri, new_server, set_model, tokens
from configurator.lint.shape import Node

KIND = "LLMInferenceService"
CONFIG_KIND = "LLMInferenceServiceConfig"
PARALLELISM = (("tensor", "tensor_parallel_size"), ("pipeline", "pipeline_parallel_size"),
               ("data", "data_parallel_size"), ("expert", "enable_expert_parallel"))
ADDITIONAL_ARGS = "VLLM_ADDITIONAL_ARGS"


def recognise(obj: Node) -> bool:
    return obj.str("kind") in (KIND, CONFIG_KIND) and (obj.str("apiVersion") or "").startswith("serving.kserve.io/")


def _main(pod: Node | None) -> Node | None:
    if pod is None:
        return None
    containers = pod.mappings("containers")
    return next((c for c in containers if c.str("name") == "main"), containers[0] if containers else None)


def _env_tokens(c: Node) -> list[Token]:
    for e in c.mappings("env"):
        if e.str("name") == ADDITIONAL_ARGS:
            text = e.text("value")
            if text:
                loc = e.loc("value")
                return [Token(w, loc) for seg in shell_words(text) for w, _ in seg]
    return []


def _server(obj: Node, spec: Node, wl: Node, role: str, bases: list[Node]) -> Server:
    pod = wl.mapping("template")
    main = _main(pod)
    base_mains = [m for m in (_main(b.mapping("template") if role == "decode" else b.mapping("prefill", "template"))
                              for b in bases) if m is not None]
    image = (main.str("image") if main is not None else None) or next(
        (m.str("image") for m in reversed(base_mains) if m.str("image")), None)
    at = main if main is not None else wl
    s = new_server(obj, at, kind=KIND, container="main" if role == "decode" else f"main ({role})", image=image)
    pars = [*(b.mapping("parallelism") for b in bases), spec.mapping("parallelism")]
    if role != "decode":  # the prefill workload has its own parallelism (WorkloadSpec)
        pars.append(wl.mapping("parallelism"))
    for par in pars:
        if par is not None:
            for key, dest in PARALLELISM:
                set_flag(s, par.at(key), dest)
    for c in [*base_mains, main]:
        if c is not None:
            s.env.update(container_env(c))
            apply_tokens(s, _env_tokens(c) + tokens(c.items("args")))
    model = spec.mapping("model")
    if model is not None:
        from_uri = model_from_uri(model.str("uri"))
        set_model(s, from_uri or model.str("name"), model.loc("uri" if from_uri else "name"))
    if pod is not None and main is not None:
        pod_scheduling(s, pod)
        container_facts(s, pod, main)
    if wl.mapping("worker") is not None:
        par = wl.mapping("parallelism") or spec.mapping("parallelism")
        data = par.int("data", lo=1) if par is not None else None
        local = par.int("dataLocal", lo=1) if par is not None else None
        pipeline = par.int("pipeline", lo=1) if par is not None else None
        s.pods = max(1, data // local) if data and local else (pipeline or 2)
        # every pod of the group runs `vllm serve --data-parallel-size <data> --data-parallel-size-local
        # <dataLocal or 1> --data-parallel-start-rank $START_RANK` (config/llmisvcconfig/
        # config-llm-worker-data-parallel.yaml, kserve/kserve commit 01b12410): its GPUs serve its local ranks
        if data:
            s.dp_local = local or 1
            s.dp_ranked = True
    if spec.has("speculator"):
        s.unmodelled.append(("--speculative-config", spec.loc("speculator")))
    return s


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    if obj.str("kind") == CONFIG_KIND:
        inputs.consumed.add(id(obj.doc))  # a template for services: its findings are theirs
        return []
    spec = obj.mapping("spec")
    if spec is None:
        return []
    bases: list[Node] = []
    for i, ref in enumerate(spec.mappings("baseRefs")):
        name = ref.name("name")
        base = inputs.named(CONFIG_KIND, name or "", obj.doc.file)
        if base is None:
            obj.note((*spec.path, "baseRefs", i), f"{CONFIG_KIND} '{name}' is not in the input: what it "
                     "sets (image, command, args, parallelism, resources) is not checked")
            continue
        inputs.consumed.add(id(base.doc))
        if base.mapping("spec") is not None:
            bases.append(base.mapping("spec"))
    out = [_server(obj, spec, spec, "decode", bases)]
    prefill = spec.mapping("prefill")
    if prefill is not None:
        out.append(_server(obj, spec, prefill, "prefill", bases))
    return out


register("kserve-llminferenceservice", recognise, extract, order=50, kinds=(KIND, CONFIG_KIND))
