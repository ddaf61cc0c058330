"""The plan's search space: the request, a layout of the GPUs, and one candidate judged by `estimate`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from configurator.calibration import Calibration
from configurator.errors import InputError
from configurator.estimate import EstimateRequest, EstimateResult, estimate
from configurator.estimate.loadable import block_shape_refusal
from configurator.hardware.catalog import GPU, custom_gpu, find_gpu
from configurator.model.spec import ModelSpec
from configurator.workloads import Workload, override

UTILIZATIONS = (0.90, 0.92, 0.95)
DEFAULT_HEADROOM = 0.10
# the largest --gpus a plan searches (128 nodes of 8): the split is searched over its divisors
MAX_GPUS = 1024
# --max-model-len is the workload's longest request rounded up to this many tokens
LEN_STEP_TOKENS = 1024


@dataclass(frozen=True)
class PlanRequest:
    model: str | ModelSpec
    workload: Workload
    gpu: str | None = None
    gpu_memory: str | None = None
    gpus: int | None = None
    vllm_version: str | None = None
    headroom: float = DEFAULT_HEADROOM
    max_gpu_memory_utilization: float | None = None
    gpu_memory_used: int = 0
    calibration: Calibration | None = None
    kv_cache_dtype: str | None = None  # fix the dtype instead of choosing it
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    quantization: str | None = None
    entry: str = "server"
    gpus_per_node: int = 8  # tensor parallelism stays within a node when it can
    max_model_len: int | Literal["full"] | None = None  # None: the workload's longest request, rounded up


@dataclass(frozen=True)
class Layout:
    """How the GPUs are used: `replicas` engines (Deployment replicas / LeaderWorkerSet groups), each of
    tp x pp x dp GPUs; dp > 1 is data-parallel attention with expert parallelism inside one engine."""

    tp: int
    pp: int = 1
    dp: int = 1
    replicas: int = 1
    ep: bool = False

    @property
    def engine_gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def gpus(self) -> int:
        return self.engine_gpus * self.replicas

    @property
    def ways(self) -> int:
        """Schedulers that share the workload, each with its own KV pool: DP ranks x replicas."""
        return self.dp * self.replicas

    def text(self) -> str:
        if self.dp > 1:
            core = f"data parallel {self.dp}" + (f" x tensor parallel {self.tp}" if self.tp > 1 else "") + \
                " with expert parallelism"
        else:
            core = f"tensor parallel {self.tp}" + (f" x pipeline parallel {self.pp}" if self.pp > 1 else "")
        return f"{self.replicas} replicas of {core}" if self.replicas > 1 else core


@dataclass(frozen=True)
class Candidate:
    lay: Layout
    kv: str
    util: float
    max_len: int
    result: EstimateResult
    at_typical: int  # concurrent typical-length requests one rank's pool holds

    @property
    def tp(self) -> int:
        return self.lay.tp

    @property
    def pp(self) -> int:
        return self.lay.pp


def gpu_of(req: PlanRequest) -> GPU:
    if req.gpu_memory:
        return custom_gpu(req.gpu_memory)
    if req.gpu:
        return find_gpu(req.gpu)
    raise InputError("name a GPU with --gpu (see `vllm-configurator gpus`) or give --gpu-memory")


def check_gpu_counts(req: PlanRequest) -> None:
    for name, v in (("--gpus", req.gpus), ("--tensor-parallel-size", req.tensor_parallel_size),
                    ("--pipeline-parallel-size", req.pipeline_parallel_size)):
        if v is not None and not 1 <= v <= MAX_GPUS:
            raise InputError(f"{name} must be between 1 and {MAX_GPUS:,}, got {v}")
    if not 1 <= req.gpus_per_node <= MAX_GPUS:
        raise InputError(f"--gpus-per-node must be between 1 and {MAX_GPUS:,}, got {req.gpus_per_node}")
    n = (req.tensor_parallel_size or 1) * (req.pipeline_parallel_size or 1)
    if n > MAX_GPUS:
        raise InputError(f"tensor x pipeline parallelism of {n:,} GPUs is beyond the {MAX_GPUS:,} a plan covers")


def expert_parallel(model: ModelSpec, tp: int) -> bool:
    """--enable-expert-parallel where plain TP would not load and EP would: a block-quantized MoE whose
    per-rank expert width is not a whole number of blocks (Qwen3-235B-A22B-FP8 at TP 8: 1,536 / 8 = 192)
    keeps whole experts per rank under EP (configurator/estimate/loadable.py)."""
    return bool(block_shape_refusal(model, {}, tp)) and \
        not block_shape_refusal(model, {"enable_expert_parallel": True}, tp)


def layout_flags(model: ModelSpec, lay: Layout) -> dict[str, Any]:
    flags: dict[str, Any] = {"tensor_parallel_size": lay.tp, "pipeline_parallel_size": lay.pp}
    if lay.dp > 1:
        flags["data_parallel_size"] = lay.dp
    if lay.ep or expert_parallel(model, lay.tp):
        flags["enable_expert_parallel"] = True
    return flags


def share(w: Workload, lay: Layout) -> Workload:
    """The part of the workload one scheduler (one DP rank of one replica) carries: concurrency / ways."""
    return w if lay.ways == 1 else override(w, concurrency=math.ceil(w.concurrency / lay.ways))


def evaluate(model: ModelSpec, gpu: GPU, req: PlanRequest, lay: Layout, kv: str, util: float,
             max_len: int, max_num_seqs: int | None = None) -> Candidate:
    flags: dict[str, Any] = {"gpu_memory_utilization": util, "kv_cache_dtype": kv, "max_model_len": max_len,
                             **layout_flags(model, lay)}
    if max_num_seqs:
        flags["max_num_seqs"] = max_num_seqs
    if req.quantization:
        flags["quantization"] = req.quantization
    base = dict(gpu=gpu.name if gpu.name != "custom" else None,
                gpu_memory=f"{gpu.total_bytes}B" if gpu.name == "custom" else None,
                vllm_version=req.vllm_version, gpu_memory_used=req.gpu_memory_used,
                calibration=req.calibration, entry=req.entry)
    res = estimate(EstimateRequest(model=model, flags=flags, **base))
    at_typical = 0
    if res.fits and res.memory.kv_cache_bytes > 0:
        typical = min(req.workload.typical_tokens, max_len)
        probe = estimate(EstimateRequest(model=model, **base, flags={
            **flags, "max_model_len": typical, "kv_cache_memory_bytes": res.memory.kv_cache_bytes,
            "max_num_seqs": res.flags["max_num_seqs"],
            "max_num_batched_tokens": res.flags["max_num_batched_tokens"]}))
        at_typical = int(probe.kv_cache.max_concurrency)
    return Candidate(lay, kv, util, max_len, res, at_typical)


def less_headroom(n: int, headroom: float) -> int:
    """The requests that run at once when `n` fit and `headroom` of them is kept free: floor(n / (1 + headroom)),
    exactly (275 / 1.1 is 250, where float division gives 249.99999999999997 and int() 249)."""
    return math.floor(Fraction(n) / (1 + Fraction(str(headroom))))


def with_headroom(n: int, headroom: float) -> int:
    """The requests a pool must hold for `n` to run with `headroom` kept: ceil(n x (1 + headroom)), exactly
    (10 x 1.1 is 11, where float multiplication gives 11.000000000000002 and ceil() 12)."""
    return math.ceil(Fraction(n) * (1 + Fraction(str(headroom))))


def carries(c: Candidate, w: Workload, headroom: float) -> bool:
    """vLLM starts and each scheduler's pool holds its share of the workload with the headroom kept."""
    return c.result.verdict == "fits" and c.at_typical >= with_headroom(share(w, c.lay).concurrency, headroom)
