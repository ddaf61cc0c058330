"""Resolved flags -> `vllm serve` arguments, through the one flag table (configurator.vllm.flags)."""

from __future__ import annotations

import shlex
from typing import Any

from configurator.vllm.flags import BY_DEST

# The order flags are written in: the four the plan chooses first, then parallelism and batching.
SERVE_ORDER = ("gpu_memory_utilization", "kv_cache_dtype", "max_num_seqs", "max_model_len",
               "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "max_num_batched_tokens",
               "quantization",
               "block_size", "enforce_eager", "enable_prefix_caching", "enable_expert_parallel")
# Values vLLM takes by default, left out of the command (one place: these are not vLLM defaults that
# vary by release, only the neutral values of the flags).
_NEUTRAL = {"tensor_parallel_size": 1, "pipeline_parallel_size": 1, "data_parallel_size": 1, "kv_cache_dtype": "auto",
            "enforce_eager": False, "quantization": None, "block_size": None, "enable_prefix_caching": None,
            "enable_expert_parallel": False}


def serve_args(model: str, flags: dict[str, Any]) -> list[str]:
    """The container `args` of `vllm serve`: ['serve', MODEL, '--flag', 'value', ...] minus `vllm`."""
    out = ["serve", model]
    # the table's order first, then any other flag of vLLM's that was set (none is dropped from the command)
    order = [*SERVE_ORDER, *(d for d in flags if d not in SERVE_ORDER and d in BY_DEST)]
    for dest in order:
        if dest not in flags or flags[dest] is None:
            continue
        value = flags[dest]
        if dest in _NEUTRAL and value == _NEUTRAL[dest]:
            continue
        flag = BY_DEST[dest]
        if flag.type == "bool":
            if value:
                out.append(flag.option)
            elif flag.negatable:
                out.append("--no-" + flag.option[2:])
            continue
        out += [flag.option, _text(value)]
    return out


def serve_command(model: str, flags: dict[str, Any]) -> str:
    """One copy-pasteable, shell-quoted `vllm serve ...` line."""
    return shlex.join(["vllm", *serve_args(model, flags)])


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
