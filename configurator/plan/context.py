"""What every candidate of one plan shares: the request, the model and GPU, the release, the options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from configurator.hardware.catalog import GPU
from configurator.model.spec import ModelSpec
from configurator.plan.search import Candidate, Layout, PlanRequest
from configurator.plan.speed import candidate_speed
from configurator.workloads import Workload


@dataclass
class Context:
    """What every candidate of one plan shares."""

    req: PlanRequest
    model: ModelSpec
    gpu: GPU
    version: str
    limit: Any
    max_len: int
    len_why: str
    layouts: list[Layout]
    kvs: list[str]
    utils: list[float]
    default_seqs: int
    speeds: dict[tuple, dict | None]

    @property
    def w(self) -> Workload:
        return self.req.workload

    def speed(self, c: Candidate) -> dict | None:
        key = (c.lay, c.kv, c.util, c.max_len, c.result.flags.get("max_num_seqs"))
        if key not in self.speeds:
            self.speeds[key] = candidate_speed(self.model, self.gpu, self.req, c)
        return self.speeds[key]
