"""vLLM V1's scheduler, replayed step by step for a closed load (a burst, or a client concurrency), without timings.

When every request is sent at once (`vllm bench serve --request-rate inf`) or a client keeps C in flight, which
requests run in which step does not depend on how long a step takes: it follows from the token budget, the
running cap and the KV cache's blocks alone. So the schedule is replayed once, and each step's work (decodes, their
context, prefill tokens) is timed afterwards by the step-time model (configurator/speed/model.py).

The rules replayed (vllm/v1/core/sched/scheduler.py, Scheduler.schedule, v0.10-0.11; chunked prefill on):
- the running requests are scheduled first, in order, each its remaining prompt (a chunk up to the step's token
  budget, max_num_batched_tokens) or one decode token; each allocates the KV blocks its new tokens need
  (KVCacheManager.allocate_slots: None when the free blocks do not suffice);
- when a running request cannot get its blocks the last running request is preempted (RECOMPUTE): its blocks are
  freed, its computed tokens reset to 0 and it goes back to the front of the waiting queue; when it is scheduled
  again its prompt and the tokens it already generated are prefilled again;
- only when nothing was preempted in the step, waiting requests are admitted while fewer than max_num_seqs run,
  budget is left and their (chunk of) prompt gets blocks;
- a request whose prefill completes in a step samples its next token in that step.
- in a hybrid pool (kv_groups) a request's blocks are counted in every group; a sliding-window group frees, before
  each allocation, the blocks that fell out of the window (SingleTypeKVCacheManager.remove_skipped_blocks), so a
  request holds there its window and the tokens of its step.
A request's TPOT as `vllm bench serve` reports it is (e2e - ttft) / (output_tokens - 1): a preempted request's
wait and recompute after its first token count in it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

BLOCK = 16  # vLLM's default block size (CacheConfig.block_size on CUDA)
SEGMENTS = 8
MAX_TOTAL = 2048  # the replayed steps are timed in this many groups of consecutive steps


@dataclass(frozen=True)
class StepClass:
    """Steps of one segment alike enough to time together: their count and mean work."""

    steps: int
    decodes: float
    ctx: float  # mean context of a decoding request
    prefill: float  # prompt tokens in the step (new prompts, chunks, recomputed ones)
    prefill_ctx: float  # mean context a prefill token's attention reads
    eager: bool  # more tokens than the largest captured CUDA graph


@dataclass(frozen=True)
class Trace:
    """A replayed schedule: segments of steps, and per request the step its first token came in and its last."""

    segments: tuple[tuple[int, int, tuple[StepClass, ...]], ...]  # (first step, steps, classes)
    arrive: tuple[int, ...]  # the step the client sent it in (0 for a burst; when one finished, at a concurrency)
    first: tuple[int, ...]
    last: tuple[int, ...]
    output: tuple[int, ...]
    steps: int
    preemptions: int
    peak_running: int


GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def _field(record: Any, name: str) -> Any:
    """A field of an estimate's record (a dataclass) or of its JSON (a dict)."""
    return record.get(name) if isinstance(record, dict) else getattr(record, name, None)


def kv_groups(kv_cache: Any) -> tuple[int, ...]:
    """The KV cache groups of an estimate's kv_cache (EstimateResult.kv_cache, or its JSON dict), one number
    each: 0 where a request's blocks grow with it (full attention), -window for a sliding window of that many
    tokens, the estimate's blocks a request for a fixed state (Mamba / linear attention). (0,) when the estimate
    has no groups: one full-attention pool."""
    out = []
    for g in (_field(kv_cache, "groups") if kv_cache else None) or ():
        window = int(_field(g, "window_tokens") or 0)
        if window:
            out.append(-window)
        elif "mamba" in str(_field(g, "kind") or "").lower():
            out.append(max(1, int(_field(g, "blocks_per_request") or 1)))
        else:
            out.append(0)
    return tuple(out) or (0,)


def group_cap(group: int, scheduled: float) -> float:
    """The most blocks a request holds in a group while `scheduled` of its tokens run in a step: none for full
    attention; for a sliding window, the blocks that cover the window before the new tokens and the new tokens
    (vLLM's SlidingWindowManager.remove_skipped_blocks frees the blocks that fell out of the window before each
    allocation: cdiv(window - 1 + scheduled, block) + 1); a fixed state's blocks."""
    if group == 0:
        return math.inf
    if group > 0:
        return group
    return -(-(-group - 1 + scheduled) // BLOCK) + 1


def group_blocks(groups: tuple[int, ...], tokens: float, scheduled: float = 1.0) -> float:
    """Blocks a request of `tokens` tokens holds over every group (continuous: tokens / BLOCK a group), while
    `scheduled` of its tokens run (1: decoding)."""
    per = tokens / BLOCK
    return sum(min(per, group_cap(g, scheduled)) for g in groups)


def output_lengths(n: int, mean: float, variable: bool, isl: int = 0) -> list[int]:
    """Output lengths of n requests in the order they are sent: all `mean`, or (a chat dataset) exponential
    quantiles with that mean, each prompt + output at most MAX_TOTAL tokens as `vllm bench serve` filters ShareGPT
    (is_valid_sequence, vllm/benchmarks/datasets.py: max_total_len 2048), rescaled to keep the mean.

    The quantiles are sent in a mixed order, as the benchmark samples the dataset at random (random.sample in
    SampleRequest lists): request i takes the quantile that (i x golden ratio) mod 1 ranks at, a fixed order,
    so that any run of consecutive requests spans short and long outputs alike. In ascending order the first
    max_num_seqs admitted were all the shortest, which churned prefills through the start of a burst and left the
    longest for a drain at a small batch."""
    if not variable:
        return [max(1, round(mean))] * n
    cap = max(mean, MAX_TOTAL - isl)
    raw = [min(cap, -mean * math.log(1.0 - (i + 0.5) / n)) for i in range(n)]
    scale = mean * n / sum(raw)
    ascending = [max(1, round(min(cap, x * scale))) for x in raw]
    out = [0] * n
    for rank, i in enumerate(sorted(range(n), key=lambda i: (i * GOLDEN) % 1.0)):
        out[i] = ascending[rank]  # request i gets the quantile its golden-ratio position ranks at
    return out


class _Engine:
    """The scheduler's state while a closed load is replayed: the requests' progress, the running and waiting
    queues, and the KV blocks (the free block queue as two counters: blocks ever put at its tail, `freed`, the
    initial free blocks first, and ever taken from its head, `taken`; a block put at position q is reused once
    `taken` passes q)."""

    def __init__(self, n: int, isl: int, outs: list[int], max_num_seqs: int, budget: int, kv_tokens: float | None,
                 concurrency: int | None, graph_max: int, groups: tuple[int, ...] = (0,)):
        self.n, self.isl, self.outs, self.max_num_seqs, self.budget, self.graph_max = \
            n, isl, outs, max_num_seqs, budget, graph_max
        self.groups = groups
        # the pool: kv_tokens is what vLLM logs, the blocks over the groups (num_blocks // groups x block size)
        self.free = math.inf if not kv_tokens else int(kv_tokens // BLOCK) * len(groups)
        self.freed, self.taken = (0 if self.free == math.inf else self.free), 0
        self.computed = [0] * n  # tokens whose KV is in the cache
        self.generated = [0] * n
        self.blocks = [0] * n
        self.first = [-1] * n
        self.arrive = [0] * n
        self.last = [-1] * n
        self.waiting: list[int] = []
        self.running: list[int] = []
        self.released = 0
        self.cached_at: dict[int, tuple[float, int]] = {}
        self.limit = concurrency or n
        self.step = self.preemptions = self.peak = self.done = 0
        # per step: decodes, their context sum, prefill tokens, their context sum, eager
        self.rows: list[tuple[int, float, int, float, bool]] = []

    def release(self, k: int) -> None:
        """The client sends requests until k were sent (all at once in a burst, one per finished at a concurrency)."""
        while self.released < min(self.n, k):
            self.waiting.append(self.released)
            self.arrive[self.released] = self.step + 1 if k > self.limit else 0
            self.released += 1

    def _preempt(self) -> int:
        """Preempt the last running request (RECOMPUTE); its full blocks stay in the prefix cache, at the free
        queue's tail, last block first (BlockPool.free_blocks, vllm/v1/core/block_pool.py), until allocations
        reach them."""
        victim = self.running.pop()
        self.free += self.blocks[victim]
        full = min(self.blocks[victim], self.computed[victim] // BLOCK)
        self.cached_at[victim] = (self.freed + self.blocks[victim], full)
        self.freed += self.blocks[victim]
        self.blocks[victim] = self.computed[victim] = 0
        self.waiting.insert(0, victim)
        self.preemptions += 1
        return victim

    def _blocks_for(self, tokens: int, scheduled: int) -> int:
        """Blocks a request holds over every group once `tokens` of its tokens are computed, `scheduled` of them
        in this step."""
        full = -(-tokens // BLOCK)
        return sum(int(min(full, group_cap(g, scheduled))) for g in self.groups)

    def _allocate(self, r: int, want: int) -> None:
        """`want` more blocks for request r; fewer than none frees the blocks its windows left behind."""
        self.free -= want
        self.blocks[r] += want
        if want > 0:
            self.taken += want
        else:
            self.freed -= want

    def schedule_running(self, sched: list[tuple[int, int]]) -> tuple[int, bool]:
        """The running requests first, in order: (the token budget left, whether one was preempted)."""
        tokens_left, preempted, i = self.budget, False, 0
        while i < len(self.running) and tokens_left > 0:
            r = self.running[i]
            need = max(min(self.isl + self.generated[r] - self.computed[r], tokens_left), 1)
            want = self._blocks_for(self.computed[r] + need, need) - self.blocks[r]
            while want > self.free and self.running:
                preempted = True
                if self._preempt() == r:
                    break
            if r not in self.running[i:i + 1]:
                break
            self._allocate(r, want)
            sched.append((r, need))
            tokens_left -= need
            i += 1
        return tokens_left, preempted

    def admit_waiting(self, sched: list[tuple[int, int]], tokens_left: int) -> None:
        """Waiting requests while fewer than max_num_seqs run, budget is left and their blocks fit."""
        while self.waiting and tokens_left > 0 and len(self.running) < self.max_num_seqs:
            r = self.waiting[0]
            hit = 0
            if r in self.cached_at:  # a preempted request: the prefix cache hits its blocks not yet reused
                end, full = self.cached_at[r]
                hit = max(0, min(full, (end - self.taken) // len(self.groups),
                                 (self.isl + self.generated[r] - 1) // BLOCK))
            need = min(self.isl + self.generated[r] - hit * BLOCK, tokens_left)
            want = self._blocks_for(hit * BLOCK + need, need)  # the cached blocks and the new ones, all or none
            if want > self.free:
                break
            self.cached_at.pop(r, None)
            self.computed[r] = hit * BLOCK
            self.waiting.pop(0)
            self.running.append(r)
            self._allocate(r, want)
            sched.append((r, need))
            tokens_left -= need

    def run_step(self, sched: list[tuple[int, int]]) -> None:
        """The scheduled work done: decodes and prefill tokens counted, tokens sampled, finished requests freed."""
        self.peak = max(self.peak, len(self.running))
        dec = pre = 0
        dctx = pctx = 0.0
        finished = []
        for r, need in sched:
            target = self.isl + self.generated[r]
            if self.generated[r] and target - self.computed[r] == 1:  # a decode: the last sampled token
                dec += 1
                dctx += self.computed[r]
                self.computed[r] += 1
            else:
                pre += need
                pctx += need * (self.computed[r] + need / 2)
                self.computed[r] += need
                if self.computed[r] < target:
                    continue
            self.generated[r] += 1  # a decode, or the prefill done: one token sampled
            if self.first[r] < 0:
                self.first[r] = self.step
            if self.generated[r] >= self.outs[r]:
                self.last[r] = self.step
                finished.append(r)
        for r in finished:
            self.running.remove(r)
            self.free += self.blocks[r]
            self.freed += self.blocks[r]
            self.blocks[r] = 0
            self.done += 1
        if finished:
            self.release(self.limit + self.done)
        self.rows.append((dec, dctx, pre, pctx, dec + pre > self.graph_max))
        self.step += 1


def _segments(rows: list[tuple[int, float, int, float, bool]]) -> tuple:
    """The steps in SEGMENTS groups of consecutive steps, each as its classes (with / without prefill, eager or
    captured) and their mean work."""
    segs = []
    size = max(1, -(-len(rows) // SEGMENTS))
    for s in range(0, len(rows), size):
        chunk = rows[s:s + size]
        classes = []
        for has_pre in (False, True):
            for eager in (False, True):
                part = [x for x in chunk if (x[2] > 0) == has_pre and x[4] == eager]
                if not part:
                    continue
                d = sum(x[0] for x in part)
                p = sum(x[2] for x in part)
                classes.append(StepClass(len(part), d / len(part), sum(x[1] for x in part) / d if d else 0.0,
                                         p / len(part), sum(x[3] for x in part) / p if p else 0.0, eager))
        segs.append((s, len(chunk), tuple(classes)))
    return tuple(segs)


@lru_cache(maxsize=512)
def replay(n: int, isl: int, osl: float, variable: bool, max_num_seqs: int, budget: int, kv_tokens: float | None,
           concurrency: int | None, graph_max: int, groups: tuple[int, ...] = (0,)) -> Trace:
    """Replay n requests of isl prompt tokens and osl mean output tokens on one engine (groups: kv_groups)."""
    e = _Engine(n, isl, output_lengths(n, osl, variable, isl), max_num_seqs, budget, kv_tokens, concurrency,
                graph_max, groups)
    e.release(e.limit)
    max_steps = 50 * (n * (isl + osl) // max(1, budget) + n * osl + 10)
    while e.done < n and e.step < max_steps:
        sched: list[tuple[int, int]] = []
        tokens_left, preempted = e.schedule_running(sched)
        if not preempted:
            e.admit_waiting(sched, tokens_left)
        e.run_step(sched)
    return Trace(_segments(e.rows), tuple(e.arrive), tuple(e.first), tuple(e.last), tuple(e.outs), len(e.rows),
                 e.preemptions, e.peak)
