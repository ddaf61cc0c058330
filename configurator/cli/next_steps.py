"""What to change when `estimate` says vLLM would refuse: each change is checked by estimating again, so a
suggestion printed under a refusal is one that starts (a larger GPU, tensor parallelism, fp8 weights or KV, a
shorter context, a higher utilization); a quantized checkpoint, which cannot be checked offline, is named as such.
"""

from __future__ import annotations

from dataclasses import replace

from configurator.errors import ConfiguratorError
from configurator.units import GiB

_TP = (2, 4, 8)
_UTIL = 0.95


def _fits(req, **flags):
    from configurator.estimate import estimate

    try:
        r = estimate(replace(req, flags={**req.flags, **flags}))
    except (ConfiguratorError, ValueError):
        return None
    return r if r.fits else None


def _holds(r) -> str:
    risk = "; at risk: within the prediction's error band" if r.verdict == "at-risk" else ""
    return (f"{r.kv_cache.max_concurrency:.2f} requests of {r.flags['max_model_len']:,} tokens fit "
            f"({r.kv_cache.tokens:,} tokens of KV cache{risk})")


def _capability(gpu) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in str(gpu.compute_capability).split("."))
    except ValueError:
        return (0,)


def estimate_next_steps(req, result) -> list[str]:
    """Changes that make a refused estimate start, cheapest first, each with what the pool then holds."""

    if result.fits or result.not_modelled:
        return []
    f, out = result.flags, []
    from configurator.report.estimate_text import dies_loading

    weights_oom = dies_loading(result)
    gpu = None
    if result.gpu.name:
        from configurator.hardware.catalog import find_gpu

        try:
            gpu = find_gpu(result.gpu.name)
        except ConfiguratorError:
            gpu = None
    if not weights_oom:
        fp8_kv = getattr(gpu, "fp8_kv", "native") != "unsupported"
        if fp8_kv and not str(f.get("kv_cache_dtype") or "auto").startswith("fp8") \
                and (r := _fits(req, kv_cache_dtype="fp8")):
            out.append(f"--kv-cache-dtype fp8 (half the KV bytes per token): then {_holds(r)}")
        if (f.get("gpu_memory_utilization") or 1) < _UTIL and "kv_cache_memory_bytes" not in req.flags \
                and (r := _fits(req, gpu_memory_utilization=_UTIL)):
            out.append(f"--gpu-memory-utilization {_UTIL} (if nothing else uses the GPU): then {_holds(r)}")
        # the longest multiple of 1,024 tokens below the refused length that starts (a search: the pool a
        # length leaves only grows as the length shrinks)
        lo, hi, best = 1, ((f.get("max_model_len") or 0) - 1) // 1024, None
        while lo <= hi:
            mid = (lo + hi) // 2
            if r := _fits(req, max_model_len=mid * 1024):
                lo, best = mid + 1, (mid * 1024, r)
            else:
                hi = mid - 1
        if best is not None:
            out.append(f"--max-model-len {best[0]} (the longest request vLLM then accepts): then {_holds(best[1])}")
    quantized = bool(f.get("quantization"))
    # vLLM quantizes to fp8 at load; a GPU without FP8 hardware from compute capability 8.0 runs them weight-only
    # through Marlin (vllm/model_executor/layers/quantization/utils/marlin_utils_fp8.py: is_fp8_marlin_supported is
    # has_device_capability(80)): the estimate says where that starts, so it is tried on every GPU
    if not quantized and gpu is not None and _capability(gpu) >= (8, 0) and (r := _fits(req, quantization="fp8")):
        out.append(f"-q fp8 (fp8 weights, about half the bytes of 16-bit ones): then {_holds(r)}")
    n = (f.get("tensor_parallel_size") or 1) * (f.get("pipeline_parallel_size") or 1)
    if "pipeline_parallel_size" not in req.flags or n == 1:
        for tp in _TP:
            if tp > (f.get("tensor_parallel_size") or 1) and (r := _fits(req, tensor_parallel_size=tp)):
                out.append(f"--tensor-parallel-size {tp} ({tp} GPUs, the weights split across them): then "
                           f"{_holds(r)}")
                break
    if gpu is not None and not req.gpu_memory:
        from configurator.speed.gpu_order import larger_gpu_order  # the same family's larger part first

        for g in larger_gpu_order(gpu):
            try:
                from configurator.estimate import estimate

                r = estimate(replace(req, gpu=g.name))
            except (ConfiguratorError, ValueError):
                continue
            if r.fits:
                out.append(f"--gpu {g.name} (a larger GPU, {g.total_bytes / GiB:.0f} GiB): then {_holds(r)}")
                break
    if weights_oom and not quantized:
        out.append("a quantized checkpoint of the model (AWQ, GPTQ, FP8: a quarter to half of the weight bytes; "
                   "estimate it by its own id; not checked here)")
    if weights_oom and not out:  # nothing within one node of these GPUs: say how many the weights alone need
        m = result.memory
        need = -(-m.weights_bytes * n // max(m.requested_bytes, 1))
        out.append(f"more GPUs than one node of 8: the weights alone need at least {need} of these "
                   f"({m.weights_bytes * n / GiB:,.2f} GiB against {m.requested_bytes / GiB:.2f} GiB each; "
                   f"`vllm-configurator plan {result.model.name} --gpu {result.gpu.name or 'GPU'} --gpus N` "
                   f"chooses the tensor and pipeline parallelism; not checked here)")
    return out
