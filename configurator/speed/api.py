"""The speed model's entry points, re-exported by configurator.speed: estimate_speed, speed_for_estimate."""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

from configurator.model.resolve import resolve_model
from configurator.model.spec import ModelSpec
from configurator.resources import load_yaml
from configurator.speed.geometry import geometry
from configurator.speed.hardware import GPUSpeed, gpu_speed
from configurator.speed.model import Layout, Params, Prediction, Speculative, Workload, predict
from configurator.speed.schedule import kv_groups

__all__ = ["Params", "Speculative", "SpeedEstimate", "Workload", "calibrated_params", "estimate_speed", "gpu_speed",
           "speed_for_estimate"]

METRICS = ("ttft_ms", "tpot_ms", "output_tok_s")


@lru_cache(maxsize=1)
def _calibration() -> dict:
    try:
        return load_yaml("profiles", "speed_calibration.yaml") or {}  # the prebuilt index, else the C loader
    except FileNotFoundError:  # pragma: no cover - the file ships with the package
        return {}


def calibrated_params() -> Params:
    """The fitted efficiency figures (profiles/speed_calibration.yaml), else the defaults."""
    p = _calibration().get("params") or {}
    return Params(**{f.name: float(p[f.name]) for f in fields(Params) if f.name in p})


@dataclass(frozen=True)
class SpeedEstimate:
    """A speed prediction with its bands and what it assumed."""

    prediction: Prediction
    gpu: GPUSpeed
    layout: Layout
    workload: Workload
    notes: tuple[str, ...]

    @property
    def ttft_ms(self) -> float:
        return self.prediction.ttft_ms

    @property
    def tpot_ms(self) -> float:
        return self.prediction.tpot_ms

    @property
    def output_tok_s(self) -> float:
        return self.prediction.output_tok_s

    @property
    def gpus(self) -> int:
        return self.layout.tp * self.layout.pp * self.layout.dp

    def band(self, metric: str) -> tuple[float, float]:
        """(low, high) of a metric: the cross-validated error's 10th-90th percentile around the prediction."""
        q = (_calibration().get("bands") or {}).get(metric) or {"low": 0.7, "high": 1.4}
        v = getattr(self, metric)
        return v * float(q["low"]), v * float(q["high"])

    def to_dict(self) -> dict[str, Any]:
        p = self.prediction
        out: dict[str, Any] = {}
        for m in METRICS:
            lo, hi = self.band(m)
            out[m] = round(getattr(self, m), 2)
            out[m + "_band"] = [round(lo, 2), round(hi, 2)]
        out.update(output_tok_s_per_gpu=round(self.output_tok_s / self.gpus, 2),
                   running_per_engine=round(p.running, 1), decode_step_ms=round(p.decode_step_ms, 3),
                   prefill_ms=round(p.prefill_ms, 3), bound=p.bound, limits=list(p.limits),
                   gpu_figures={"name": self.gpu.name, "hbm_gbs": self.gpu.hbm_gbs, "tflops": self.gpu.tflops,
                                "link": f"{self.gpu.link_kind} {self.gpu.link_gbs:g} GB/s", "source": self.gpu.source},
                   workload={"input_len": self.workload.input_len, "output_len": self.workload.output_len,
                             "concurrency": self.workload.concurrency, "request_rate": self.workload.request_rate},
                   notes=list(self.notes))
        return out


def estimate_speed(model: ModelSpec | str, gpu: str, *, workload: Workload, tp: int = 1, pp: int = 1, dp: int = 1,
                   ep: bool = False, weight_dtype: str | None = None, kv_cache_dtype: str | None = "auto",
                   max_num_seqs: int = 256, max_num_batched_tokens: int = 8192, kv_tokens: float | None = None,
                   speculative: Speculative | None = None, params: Params | None = None,
                   kv_groups: tuple[int, ...] = (0,)) -> SpeedEstimate | None:
    """Predict one deployment's speed; None when `gpu` (a catalog name) has no datasheet figures.

    kv_tokens: the KV cache's tokens per engine (EstimateResult.kv_cache.tokens); kv_groups: its groups
    (speed.schedule.kv_groups); max_num_seqs and max_num_batched_tokens as vLLM resolved them (the estimate's
    flags)."""
    spec = resolve_model(model, allow_hub=False) if isinstance(model, str) else model
    g_speed = gpu_speed(gpu)
    if g_speed is None:
        return None
    lay = Layout(tp=max(1, tp), pp=max(1, pp), dp=max(1, dp), ep=bool(ep))
    geo = geometry(spec, tp=lay.tp, ep_size=lay.tp * lay.dp if lay.ep else 1, weight_dtype=weight_dtype,
                   kv_cache_dtype=kv_cache_dtype, gpu_has_fp8=bool(g_speed.tflops.get("fp8")))
    pred = predict(geo, g_speed, lay, workload, max_num_seqs=max_num_seqs,
                   max_num_batched_tokens=max_num_batched_tokens, kv_tokens=kv_tokens,
                   params=params or calibrated_params(), spec=speculative, kv_groups=kv_groups)
    notes = [geo.weight_note, f"GEMMs at {geo.compute} ({g_speed.peak_tflops(geo.compute):g} dense TFLOPS peak), "
             f"{g_speed.hbm_gbs:g} GB/s memory ({g_speed.source})"]
    if speculative:
        notes.append(f"speculative decoding: {speculative.num_tokens} draft tokens, acceptance "
                     f"{speculative.acceptance:.0%} assumed (not validated against published runs)")
    if kv_tokens is None:
        notes.append("KV cache size unknown: only max_num_seqs caps the requests in flight")
    return SpeedEstimate(prediction=pred, gpu=g_speed, layout=lay, workload=workload, notes=tuple(notes))


def speed_for_estimate(result: Any, workload: Workload, *, speculative: Speculative | None = None) -> dict | None:
    """The speed of a deployment `estimate` described: its JSON dict (or EstimateResult) and a workload.
    Returns SpeedEstimate.to_dict(), or None when its GPU has no figures or the estimate has no KV layout."""
    d = result.to_dict() if hasattr(result, "to_dict") else result
    flags, kv = d.get("flags") or {}, d.get("kv_cache") or {}
    gpu = (d.get("gpu") or {}).get("name")
    name = (d.get("model") or {}).get("name") or flags.get("model")
    if not gpu or not name:
        return None
    try:
        spec = resolve_model(name, allow_hub=False)
    except Exception:  # an estimate of a model read from a path the Hub cannot name: no speed, not a failure
        return None
    s = estimate_speed(spec, gpu, workload=workload, tp=int(flags.get("tensor_parallel_size") or 1),
                       pp=int(flags.get("pipeline_parallel_size") or 1), dp=int(flags.get("data_parallel_size") or 1),
                       ep=bool(flags.get("enable_expert_parallel")), kv_cache_dtype=flags.get("kv_cache_dtype"),
                       weight_dtype=None if spec.quant.method else flags.get("quantization"),
                       max_num_seqs=int(flags.get("max_num_seqs") or 256),
                       max_num_batched_tokens=int(flags.get("max_num_batched_tokens") or 8192),
                       kv_tokens=kv.get("tokens"), speculative=speculative, kv_groups=kv_groups(kv))
    return s.to_dict() if s else None
