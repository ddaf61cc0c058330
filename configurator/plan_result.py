"""The plan's result (schemas/plan.schema.json): what `plan` chose and why, read by the emitters and the solver."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from configurator.estimate.result import EstimateResult


class Reason(BaseModel):
    flag: str
    value: Any
    why: str


class Alternative(BaseModel):
    """One point of the trade-off: context vs concurrency vs KV dtype, at the chosen utilization."""

    kv_cache_dtype: str
    max_model_len: int
    fits: bool
    requests_at_typical_length: int = Field(description="concurrent requests of the typical length the pool holds")
    requests_at_max_model_len: float = Field(description="vLLM's 'Maximum concurrency' at max_model_len")
    kv_cache_bytes: int


class Remedy(BaseModel):
    """A change that makes an infeasible workload fit, checked by planning again with it."""

    action: str
    cost_rank: int = Field(description="1 = cheapest")
    changes: dict[str, Any]
    requests_at_typical_length: int
    carries_target: bool = Field(True, description="planning again with it carries the target; false: vLLM then "
                                                   "starts but carries less (a plan that started with nothing)")


class LayoutOption(BaseModel):
    """One layout `plan` compared (with --gpus): its best candidate's memory and predicted speed."""

    layout: str = Field(description="'2 replicas of tensor parallel 8', 'data parallel 8 with expert parallelism'")
    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int
    replicas: int
    gpus: int
    starts: bool
    carries: bool = Field(description="every scheduler's pool holds its share of the target with the headroom")
    kv_cache_dtype: str
    kv_cache_tokens: int = Field(description="KV cache tokens over all DP ranks and replicas (per rank x ranks)")
    kv_cache_tokens_per_rank: int
    requests_at_typical_length: int = Field(description="over all DP ranks and replicas")
    speed: dict[str, Any] | None = Field(None, description="predicted speed at the workload's concurrency")
    chosen: bool = False


class Capacity(BaseModel):
    target_concurrency: int
    typical_tokens: int
    headroom: float
    requests_at_typical_length: int
    requests_at_max_model_len: float


class PlanResult(BaseModel):
    """The plan; schemas/plan.schema.json is generated from this."""

    feasible: bool = Field(description="the plan carries the target workload with the headroom")
    status: Literal["carries", "short", "nothing-starts"] = Field(
        "carries", description="carries the target; short of it (the flags that carry the most of it); or vLLM "
                               "would start with no candidate")
    carried_concurrency: int = Field(0, description="concurrent requests of the typical length the flags carry "
                                                    "with the headroom kept (the target when it carries)")
    vllm_version: str
    model: str
    gpu: str
    gpus: int
    workload: dict[str, Any]
    flags: dict[str, Any] = Field(description="the four chosen flags, parallelism and batched tokens")
    estimate: EstimateResult | None = Field(description="estimate for exactly these flags")
    capacity: Capacity | None
    reasons: list[Reason]
    summary: str = Field(description="'The KV pool holds N requests of T tokens at once ..., against a target of "
                                     "M: it is ... GiB per GPU after ...'")
    alternatives: list[Alternative]
    remedies: list[Remedy]
    shortfall_bytes: int = Field(0, description="KV memory missing to carry the workload (infeasible plans)")
    serve_command: str = ""
    serve_args: list[str] = Field(default_factory=list)
    replicas: int = Field(1, description="identical engines, each running serve_command on gpus / replicas GPUs "
                                         "(Deployment replicas, LeaderWorkerSet groups)")
    layout: str = Field("", description="'tensor parallel 8', '2 replicas of tensor parallel 8 ...'")
    queued: int = Field(0, description="requests of a queue workload that wait in vLLM's queue at the target")
    speed: dict[str, Any] | None = Field(None, description="predicted time to first token, time per output token "
                                                           "and throughput of the plan (configurator/speed)")
    meets_targets: bool | None = Field(None, description="the workload's TTFT / TPOT targets are met; none without "
                                                         "targets or a speed prediction")
    binding: str = Field("", description="the constraint that binds the plan: memory, or a speed target")
    next_step: str = Field("", description="what the next step up (twice the GPUs) buys")
    layouts: list[LayoutOption] = Field(default_factory=list, description="the layouts compared (with --gpus)")
