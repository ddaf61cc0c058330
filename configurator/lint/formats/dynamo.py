"""NVIDIA Dynamo `DynamoGraphDeployment`: one vLLM server per worker that runs `dynamo.vllm`.

Keys from Dynamo's CRDs and examples (examples/backends/vllm/deploy/*.yaml and v1beta1/*.yaml):
- nvidia.com/v1alpha1: spec.services.<name>.{componentType (frontend | worker | ...),
  subComponentType (prefill | decode), replicas, resources.{limits, requests}.gpu,
  extraPodSpec.{mainContainer.{image, command, args, env}, nodeSelector, affinity, volumes}};
- nvidia.com/v1beta1: spec.components[].{name, type, replicas, podTemplate.spec} (a pod spec whose
  `main` container runs `dynamo.vllm`, GPUs in its resources).
`python3 -m dynamo.vllm` takes vLLM's engine options plus its own
(components/backends/vllm/src/dynamo/vllm/args.py: --is-prefill-worker, --is-decode-worker,
--migration-limit, --dynamo-port-min, --dynamo-port-max, --connector, --disaggregation-mode,
--endpoint), which are taken out before the rest is read as vLLM's command line.
"""

from __future__ import annotations

from configurator.lint.extract import (
    MAX_GPUS,
    Inputs,
    Server,
    Token,
    apply_tokens,
    container_env,
    container_facts,
    pod_scheduling,
)
from configurator.lint.formats import register
from configurator.lint.formats._common import new_server, set_gpu_count, tokens
from configurator.lint.shape import Node

# dynamo.vllm's own options -> how many values each takes ("*": all until the next option)
DYNAMO_OPTIONS: dict[str, int | str] = {
    "--is-prefill-worker": 0, "--is-decode-worker": 0, "--migration-limit": 1, "--dynamo-port-min": 1,
    "--dynamo-port-max": 1, "--connector": "*", "--disaggregation-mode": 1, "--endpoint": 1,
}


def recognise(obj: Node) -> bool:
    return obj.str("kind") == "DynamoGraphDeployment"


def _vllm_argv(argv: list[Token]) -> list[Token]:
    out: list[Token] = []
    i = 0
    while i < len(argv):
        name = argv[i].text.partition("=")[0]
        n = DYNAMO_OPTIONS.get(name)
        if n is None:
            out.append(argv[i])
            i += 1
            continue
        i += 1
        if "=" in argv[i - 1].text:
            continue
        if n == "*":
            while i < len(argv) and not argv[i].text.startswith("-"):
                i += 1
        else:
            i += int(n)
    return out


def _server(obj: Node, name: str, svc: Node) -> Server | None:
    pod = svc.mapping("extraPodSpec")
    c = pod.mapping("mainContainer") if pod is not None else None
    if c is None:
        return None
    return _container_server(obj, name, pod, c, svc)


def _container_server(obj: Node, name: str, pod: Node, c: Node, svc: Node | None) -> Server | None:
    command = tokens(c.items("command"))
    argv = tokens(c.items("args"))
    if not any("dynamo.vllm" in t.text for t in command + argv):
        return None
    s = new_server(obj, c, kind="DynamoGraphDeployment", container=name, image=c.str("image"))
    s.env = container_env(c)
    # `python3 -m dynamo.vllm`: the module's own tokens are not vLLM's options
    rest = [t for t in command + argv if t.text not in ("python", "python3", "-m", "dynamo.vllm")]
    apply_tokens(s, _vllm_argv(rest))
    pod_scheduling(s, pod)
    container_facts(s, pod, c)
    for section in ("limits", "requests"):
        if svc is not None and s.gpu_count is None and svc.at("resources", section, "gpu").value is not None:
            set_gpu_count(s, svc.int("resources", section, "gpu", hi=MAX_GPUS), svc.loc("resources", section, "gpu"))
    return s


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    out = []
    for comp in obj.mappings("spec", "components"):  # v1beta1
        pod = comp.mapping("podTemplate", "spec")
        if pod is None or (comp.str("type") or "worker") == "frontend":
            continue
        for c in pod.mappings("containers"):
            s = _container_server(obj, comp.name("name") or str(comp.path[-1]), pod, c, None)
            if s is not None:
                out.append(s)
    for name, svc in obj.entries("spec", "services"):  # v1alpha1
        if isinstance(svc.value, dict) and (svc.str("componentType") or "worker") != "frontend":
            s = _server(obj, name, svc)
            if s is not None:
                out.append(s)
    return out


register("dynamo", recognise, extract, order=50, kinds=("DynamoGraphDeployment",))
