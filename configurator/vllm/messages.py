"""vLLM's refusal messages, word for word per release style (vllm/v1/core/kv_cache_utils.py,
kv_cache_planning.py, vllm/v1/worker/utils.py)."""

from __future__ import annotations

from configurator.units import GiB, format_gib

_DOCS = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."


def no_memory(style: str) -> str:
    """Nothing left for KV blocks (available <= 0)."""
    if style == "v0_11":
        return "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` " \
               "when initializing the engine."
    if style in ("v0_13", "v0_15"):
        return "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` " \
               "when initializing the engine. " + _DOCS
    return ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
            "initializing the engine (this flag also controls CPU memory reservation on the CPU "
            "backend, despite its name). " + _DOCS)


def too_long(style: str, max_model_len: int, needed_bytes: int, available_bytes: int,
             estimated_max_len: int) -> str:
    """One request of max_model_len does not fit."""
    if style in ("v0_11", "v0_13"):
        est = (f"Based on the available memory, the estimated maximum model length is "
               f"{estimated_max_len}.") if estimated_max_len > 0 else ""
        text = (f"To serve at least one request with the models's max seq len ({max_model_len}), "
                f"({needed_bytes / GiB:.2f} GiB KV cache is needed, which is larger than the available "
                f"KV cache memory ({available_bytes / GiB:.2f} GiB). {est} Try increasing "
                f"`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
        return text + (" " + _DOCS if style == "v0_13" else "")
    est = (f"Based on the available memory, the estimated maximum model length is "
           f"{estimated_max_len}. ") if estimated_max_len > 0 else ""
    head = (f"To serve at least one request with the {'models' if style == 'v0_15' else 'model'}'s max "
            f"seq len ({max_model_len}), ({format_gib(needed_bytes)} GiB KV cache is needed, which is "
            f"larger than the available KV cache memory ({format_gib(available_bytes)} GiB). {est}")
    if style == "v0_15":
        return head + ("Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
                       "initializing the engine. " + _DOCS)
    return head + ("Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU "
                   "backend) or decreasing `max_model_len` when initializing the engine. " + _DOCS)


def free_memory(device: str, free_bytes: int, total_bytes: int, util: float, requested_bytes: int) -> str:
    """Free memory at start-up is below util x total (vllm/v1/worker/utils.py::request_memory)."""
    return (f"Free memory on device {device} ({format_gib(free_bytes)}/{format_gib(total_bytes)} GiB) on "
            f"startup is less than desired GPU memory utilization ({util}, {format_gib(requested_bytes)} "
            f"GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.")


def auto_fit_failed() -> str:
    return ("Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single "
            "token. Try increasing `gpu_memory_utilization`.")


def user_len_too_long(user_len: int, derived: int, key: str) -> str:
    """User max_model_len above the model's derived limit (vllm/config/model.py)."""
    return (f"User-specified max_model_len ({user_len}) is greater than the derived max_model_len "
            f"({key}={derived} in model's config.json). To allow overriding this maximum, set the env "
            f"var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with "
            f"extreme caution. If the model uses relative position encoding (RoPE), positions exceeding "
            f"derived_max_model_len lead to nan. If the model uses absolute position encoding, positions "
            f"exceeding derived_max_model_len will cause a CUDA array out-of-bounds error.")


def weights_oom(weights_bytes: int, free_bytes: int, tp: int, pp: int) -> str:
    """Weights larger than the GPU: vLLM dies with torch's CUDA out-of-memory error while loading
    (its text names the tensor being allocated, which a prediction cannot know)."""
    return (f"CUDA out of memory while loading the model: {format_gib(weights_bytes)} GiB of weights per GPU "
            f"(tensor parallel {tp}, pipeline parallel {pp}) exceed the {format_gib(free_bytes)} GiB free. "
            f"Use more GPUs or a quantized checkpoint.")


def startup_log(style: str, *, weights_bytes: int | None, available_bytes: int | None, tokens: int | None,
                max_model_len: int, max_concurrency: float) -> list[str]:
    """The memory lines vLLM logs at start-up, in the release's own format (the load time, which a
    prediction cannot know, is left out). Model loading: gpu_model_runner.py; available memory:
    gpu_worker.py; capacity: kv_cache_utils.py (two lines until 0.27, one from 0.28)."""
    lines = []
    if weights_bytes is not None:
        old = style in ("v0_8gb", "v0_8", "v0_10", "v0_12")
        amount = f"{weights_bytes / GiB:.4f}" if old else f"{format_gib(weights_bytes)}"
        unit = "GB" if style == "v0_8gb" else "GiB"
        memory = "" if style in ("v0_8gb", "v0_8", "v0_10") else " memory"
        lines.append(f"Model loading took {amount} {unit}{memory} and ... seconds")
    if style in ("v0_8gb", "v0_8"):  # 0.8.0-0.9.0 log no available-memory line
        available_bytes = None
    if available_bytes is not None:
        avail = f"{available_bytes / GiB:.2f}" if style in ("v0_10", "v0_12") else f"{format_gib(available_bytes)}"
        lines.append(f"Available KV cache memory: {avail} GiB")
    if tokens is not None:
        conc = (f"Maximum concurrency for {max_model_len:,} tokens per request: {max_concurrency:.2f}x")
        if style == "v0_28":
            lines.append(f"GPU KV cache size: {tokens:,} tokens, {conc}")
        else:
            lines += [f"GPU KV cache size: {tokens:,} tokens", conc]
    return lines


def quant_config_missing(method: str) -> str:
    """`--quantization` of a checkpoint-config method on a checkpoint that has none
    (model_executor/model_loader/weight_utils.py::get_quant_config)."""
    return f"Cannot find the config file for {method}"


def bf16_unsupported(gpu_name: str, compute_capability: str) -> str:
    """bfloat16 on a GPU below compute capability 8.0 (platforms/cuda.py::check_if_supports_dtype from
    0.11; v1/worker/gpu_worker.py::_check_if_gpu_supports_dtype before; same words since 0.8)."""
    return ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
            f"Your {gpu_name} GPU has compute capability {compute_capability}. You can use float16 instead "
            "by explicitly setting the `dtype` flag in CLI, for example: --dtype=half.")


def dtype_fallback(gpu_name: str) -> str:
    """--dtype auto on a GPU without bfloat16 (config/model.py::_resolve_auto_dtype, 0.10+)."""
    return f"Your device {gpu_name} doesn't support torch.bfloat16. Falling back to torch.float16 for compatibility."


def v1_fallback(feature: str) -> str:
    """0.8.0-0.10.1.1: a feature V1 does not support sends vLLM to V0 (arg_utils._raise_or_fallback)."""
    return f"{feature} is not supported by the V1 Engine. Falling back to V0."
