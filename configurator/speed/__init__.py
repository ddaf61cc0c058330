"""Speed model: time to first token, time per output token and output throughput of a vLLM deployment.

    from configurator.speed import Workload, estimate_speed, speed_for_estimate

    s = estimate_speed(model_spec, "h100-80gb", tp=1, max_num_seqs=1024, max_num_batched_tokens=8192,
                       kv_tokens=35424, workload=Workload(input_len=1024, output_len=128, concurrency=16))
    s.tpot_ms, s.ttft_ms, s.output_tok_s, s.band("tpot_ms"), s.to_dict()

    speed_for_estimate(estimate_json, Workload(...))   # from `estimate --format json` (a dict or EstimateResult)

First principles (configurator/speed/model.py) with three efficiency figures fitted on published benchmarks
(data/benchmarks, benchmarks/speed_accuracy.py); the bands are the cross-validated errors' 10th-90th
percentiles. None where the GPU has no datasheet figures in profiles/gpu_speed.yaml.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Params", "Speculative", "SpeedEstimate", "Workload", "calibrated_params", "estimate_speed", "gpu_speed",
           "speed_for_estimate"]


def __getattr__(name: str) -> Any:
    """The entry points, imported when first asked for (configurator.speed.api): a command that needs only a
    submodule (gpu_order, hardware) does not import the step-time model and the scheduler with it."""
    if name in __all__:
        from configurator.speed import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
