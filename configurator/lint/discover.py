"""Generic discovery: what any document says about a vLLM server, whatever its format.

The format plugins (configurator/lint/formats/) know where a controller keeps its command line; this module
knows what a vLLM server looks like wherever it is written, and serves both: the plugins ask it for the data
parallelism a command line gives (`parallel_facts`), and `discover` walks any YAML / JSON document no plugin
reads (docker compose, SkyPilot, Ray Serve config, a platform's own file, YAML held in a string) for

- a command line that runs vLLM (`vllm serve`, `python -m vllm.entrypoints.openai.api_server`, a known wrapper
  such as `python -m dynamo.vllm`) in any string, or any list of strings;
- a mapping of vLLM engine arguments in any case style (`max_model_len`, `maxModelLen`, `max-model-len`) next
  to a model (Ray Serve LLM `engine_kwargs`, production-stack `vllmConfig`, a platform's `vllm:` block);
- the GPU type and count from any hint it can read: resource names (`nvidia.com/gpu: 2`), `H100:8`-style specs
  (SkyPilot `accelerators`), accelerator / instance / GPU-type names, docker compose device reservations.
"""

from __future__ import annotations

import re

from configurator.lint.extract import Server, Token

# --data-parallel-size-local and the rank options are not memory flags (configurator.vllm.flags leaves them
# out); vLLM's own names and short forms (vllm/engine/arg_utils.py, EngineArgs.add_cli_args: --data-parallel-rank
# -dpn, --data-parallel-start-rank -dpr, --data-parallel-size-local -dpl).
_DP_LOCAL = ("--data-parallel-size-local", "--data_parallel_size_local", "-dpl")
_DP_RANK = ("--data-parallel-rank", "--data_parallel_rank", "-dpn", "-dpr", "--data-parallel-start-rank",
            "--data_parallel_start_rank", "--data-parallel-external-lb", "--data_parallel_external_lb")
_PARALLEL = {"--tensor-parallel-size": "tensor_parallel_size", "-tp": "tensor_parallel_size",
             "--pipeline-parallel-size": "pipeline_parallel_size", "-pp": "pipeline_parallel_size",
             "--data-parallel-size": "data_parallel_size", "-dp": "data_parallel_size",
             **dict.fromkeys(_DP_LOCAL, "data_parallel_size_local")}
_INT = re.compile(r"^\d+$")


def _option(text: str) -> tuple[str, str | None]:
    opt, eq, val = text.partition("=")
    return opt.replace("_", "-") if opt.startswith("--") else opt, (val if eq else None)


def parallel_facts(server: Server, tokens: list[Token]) -> None:
    """The data parallelism a command line gives that the flag table does not keep (the ranks this pod runs,
    whether it is one rank of a group), and the parallel sizes written as a value not known here (`$DP_SIZE`,
    `$((LWS_GROUP_SIZE * DP_SIZE_LOCAL))`): those are never judged against the GPUs."""
    for i, t in enumerate(tokens):
        opt, val = _option(t.text)
        if opt not in _PARALLEL and opt not in _DP_RANK:
            continue
        if val is None and opt not in ("--data-parallel-external-lb",):
            val = tokens[i + 1].text if i + 1 < len(tokens) else None
        if opt in _DP_RANK:
            server.dp_ranked = True
            continue
        dest = _PARALLEL[opt]
        if val is None or not _INT.match(val.strip()):
            server.unresolved.add(dest)
            continue
        if dest == "data_parallel_size_local":
            server.dp_local = int(val)


def gpus_per_replica(server: Server) -> tuple[int, str]:
    """GPUs one model replica uses, and how: tensor x pipeline x data parallel (expert parallelism reuses
    the same ranks and never adds GPUs: vllm/config/parallel.py, world_size = pipeline x tensor, and
    data-parallel ranks are each their own world)."""
    f = server.flags
    tp, pp = int(f.get("tensor_parallel_size") or 1), int(f.get("pipeline_parallel_size") or 1)
    dp = int(f.get("data_parallel_size") or 1)
    text = f"tensor_parallel_size {tp} x pipeline_parallel_size {pp}"
    if dp > 1:
        text += f" x data_parallel_size {dp}"
    return tp * pp * dp, text
