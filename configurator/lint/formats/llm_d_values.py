"""llm-d modelservice values (the llm-d-modelservice chart, used by llm-d's guides as
`ms-*/values.yaml`): one vLLM server per role, `decode` and `prefill`, unless the role has
`create: false`.

Keys from the chart's values.yaml and templates (llm-d-incubation/llm-d-modelservice,
charts/llm-d-modelservice): modelArtifacts.{uri, name}, accelerator.type, <role>.{create, replicas,
parallelism.{tensor, data, dataLocal}, containers[].{name, image, modelCommand, command, args, env,
resources, volumeMounts}, volumes, acceleratorTypes.{labelKey, labelValues}}. With `modelCommand:
vllmServe` (or `imageDefault`) the container runs `vllm serve <model>` with `--tensor-parallel-size`,
`--data-parallel-size` and `--data-parallel-size-local` derived from `parallelism` (each when above 1), then
its args; with `custom` (the chart's default) its own command and args. The chart also sets DP_SIZE,
TP_SIZE and DP_SIZE_LOCAL in the container's env (`parallelismEnv`). GPUs per pod are the container's
`resources.limits` when given, else dataLocal x tensor (`numGpuPerWorker` in the chart's _helpers.tpl,
llm-d-incubation/llm-d-modelservice commit 024c0f2d); with `multinode: true` one LeaderWorkerSet group of
`workers` (else data / dataLocal) pods serves a replica; `accelerator.type: cpu` requests none. The model
is the Hugging Face id of an `hf://` modelArtifacts.uri, else modelArtifacts.name.
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
)
from configurator.lint.formats import register
from configurator.lint.formats._common import (
    model_from_uri,
    new_server,
    set_gpu_count,
    set_model,
    tokens,
)
from configurator.lint.parallel import parallel_facts
from configurator.lint.shape import Node

ROLES = ("decode", "prefill")


def recognise(obj: Node) -> bool:
    return not obj.has("kind") and obj.mapping("modelArtifacts") is not None and any(
        obj.mapping(r) is not None for r in ROLES)


def _parallelism(role: Node) -> tuple[int, int, int, int]:
    """(tensor, data, dataLocal, workers) as the chart's _helpers.tpl derives them (tensorParallelism,
    dataParallelism, dataLocalParallelism, numWorkers): data = data, else dataLocal x workers, else dataLocal;
    dataLocal = dataLocal, else data / workers, else data; workers = workers, else data / dataLocal."""
    par = role.mapping("parallelism")

    def get(key: str) -> int | None:
        return par.int(key, lo=1) if par is not None else None

    tensor, data, local, workers = get("tensor") or 1, get("data"), get("dataLocal"), get("workers")
    dp = data or (local * workers if local and workers else local) or 1
    dpl = local or ((data // workers if workers else data) if data else None) or 1
    n = workers or (data // local if data and local else 1)
    return tensor, dp, dpl, max(1, n)


def _server(obj: Node, role: Node, name: str) -> Server | None:
    containers = role.mappings("containers")
    c = next((x for x in containers if x.has("modelCommand")), None) or next(
        (x for x in containers if x.str("name") == "vllm"), None)
    if c is None:
        return None
    s = new_server(obj, c, kind=f"llm-d modelservice {name}", container=c.str("name") or "vllm",
                   image=c.str("image"), name=name)
    tensor, dp, dpl, workers = _parallelism(role)
    # the chart sets DP_SIZE, TP_SIZE, DP_SIZE_LOCAL in every vLLM container (parallelismEnv), before its own env
    s.env = {"DP_SIZE": str(dp), "TP_SIZE": str(tensor), "DP_SIZE_LOCAL": str(dpl), **container_env(c)}
    command = c.str("modelCommand") or "custom"  # the chart's default (`default "custom" .container.modelCommand`)
    argv = tokens(c.items("args"))
    if command == "custom":
        argv = tokens(c.items("command")) + argv
    else:  # vllmServe / imageDefault: the chart writes the parallel sizes before the user's args
        at = role.loc("parallelism") if role.mapping("parallelism") is not None else c.loc()
        derived = [("--tensor-parallel-size", tensor), ("--data-parallel-size", dp),
                   ("--data-parallel-size-local", dpl)]
        given = {t.text.partition("=")[0] for t in argv}  # the user's own (later, so they win) are not repeated
        argv = [Token(t, at) for opt, n in derived if n > 1 and opt not in given for t in (opt, str(n))] + argv
    apply_tokens(s, argv)
    parallel_facts(s, argv)
    if command != "custom" and dpl > 1:
        s.dp_local = s.dp_local or dpl
    art = obj.mapping("modelArtifacts")
    if art is not None:
        uri = model_from_uri(art.str("uri"))
        uri = None if uri and "{{" in uri else uri  # `hf://"{{ .Values.modelArtifacts.name }}"`: the chart's tpl
        set_model(s, uri or art.str("name"), art.loc("uri" if uri else "name"))
    pod_scheduling(s, role)
    container_facts(s, role, c)
    if s.gpu_count is None and (obj.str("accelerator", "type") or "nvidia") != "cpu":
        set_gpu_count(s, tensor * dpl, role.loc("parallelism") if role.mapping("parallelism") is not None
                      else role.loc())
        s.gpu_count_source = "derived by the llm-d modelservice chart from parallelism (tensor x dataLocal)"
    if obj.bool("multinode") is True:
        s.pods = workers  # one LeaderWorkerSet group of numWorkers pods (decode-lws.yaml / prefill-lws.yaml)
    at = role.mapping("acceleratorTypes")
    if at is not None and at.str("labelKey"):
        values = [v.text() for v in at.items("labelValues") if v.text()]
        if values:
            s.gpu_labels = {**s.gpu_labels, at.str("labelKey") or "": values}
            s.gpu_labels_loc = at.loc()
    return s


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    out = []
    for name in ROLES:
        role = obj.mapping(name)
        if role is None or role.bool("create") is False:
            continue
        s = _server(obj, role, name)
        if s is not None:
            out.append(s)
    return out


register("llm-d-modelservice-values", recognise, extract, order=12, kinds=())
