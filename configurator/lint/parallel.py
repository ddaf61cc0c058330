"""The parallel layout a vLLM command line gives: data-parallel ranks and local sizes the flag table does not
keep, parallel sizes written as values not known here, and the GPUs one replica uses. Below lint/extract.py and
lint/discover.py, which both read it (a lint.extract.Server and its tokens are what the functions take)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

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


@lru_cache(maxsize=4096)
def _option(text: str) -> tuple[str, str | None]:
    """(option, value after `=`); an unambiguous prefix of a parallel option is that option, as argparse's
    allow_abbrev reads it (`--tensor-parallel 8`). Pure in the text, which recurs across servers (cached)."""
    opt, eq, val = text.partition("=")
    if opt.startswith("--"):
        opt = opt.replace("_", "-")
        if opt not in _PARALLEL and opt not in _DP_RANK and len(opt) > 6:
            full = {k for k in _PARALLEL if k.startswith(opt)}
            opt = full.pop() if len(full) == 1 else opt
    return opt, (val if eq else None)


def parallel_facts(server: Any, tokens: list[Any]) -> None:
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
            server.parallel_unresolved.add(dest)
            continue
        if dest == "data_parallel_size_local":
            server.dp_local = int(val)


def gpus_per_replica(server: Any) -> tuple[int, str]:
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


# Sizes that change what one GPU holds: the weights split over tensor and pipeline ranks. A data-parallel rank is
# an engine of its own with the same per-GPU memory (vllm/config/parallel.py: world_size = pipeline x tensor),
# unless expert parallelism spreads the experts over the data-parallel ranks too.
PER_GPU_SIZES = frozenset({"tensor_parallel_size", "pipeline_parallel_size"})


def per_gpu_unknown(server: Any) -> set[str]:
    """The unresolved parallel sizes (Server.parallel_unresolved) that leave one GPU's memory unknown: tensor and
    pipeline sizes always; data-parallel sizes only with --enable-expert-parallel. An unresolved data-parallel
    size alone leaves one rank's memory as written, so the budget is still checked per GPU (a pod that must be
    refused stays refused when `-dp $((A * B))` is added)."""
    unknown = set(server.parallel_unresolved)
    if server.flags.get("enable_expert_parallel"):
        return unknown
    return unknown & PER_GPU_SIZES
