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
A request's TPOT as `vllm bench serve` reports it is (e2e - ttft) / (output_tokens - 1): a preempted request's
wait and recompute after its first token count in it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

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


def output_lengths(n: int, mean: float, variable: bool, isl: int = 0) -> list[int]:
    """Output lengths of n requests: all `mean`, or (a chat dataset) exponential quantiles with that mean, each
    prompt + output at most MAX_TOTAL tokens as `vllm bench serve` filters ShareGPT (is_valid_sequence,
    vllm/benchmarks/datasets.py: max_total_len 2048), rescaled to keep the mean."""
    if not variable:
        return [max(1, round(mean))] * n
    cap = max(mean, MAX_TOTAL - isl)
    raw = [min(cap, -mean * math.log(1.0 - (i + 0.5) / n)) for i in range(n)]
    scale = mean * n / sum(raw)
    return [max(1, round(min(cap, x * scale))) for x in raw]


@lru_cache(maxsize=512)
def replay(n: int, isl: int, osl: float, variable: bool, max_num_seqs: int, budget: int, kv_tokens: float | None,
           concurrency: int | None, graph_max: int) -> Trace:
    """Replay n requests of isl prompt tokens and osl mean output tokens on one engine."""
    outs = output_lengths(n, osl, variable, isl)
    free = math.inf if not kv_tokens else int(kv_tokens // BLOCK)
    freed, taken = (0 if free == math.inf else free), 0
    computed = [0] * n  # tokens whose KV is in the cache
    generated = [0] * n
    blocks = [0] * n
    first = [-1] * n
    arrive = [0] * n
    last = [-1] * n
    waiting: list[int] = []
    running: list[int] = []
    released = 0
    # the free block queue (LRU) as two counters: blocks ever put at its tail (`freed`, the initial free blocks
    # first) and ever taken from its head (`taken`); a block put at position q is reused once `taken` passes q
    cached_at: dict[int, tuple[float, int]] = {}
    limit = concurrency or n
    step = preemptions = peak = 0
    rows: list[tuple[int, float, int, float, bool]] = []  # per step: decodes, ctx sum, prefill, pctx sum, eager

    def release(k: int) -> None:
        nonlocal released
        while released < min(n, k):
            waiting.append(released)
            arrive[released] = step + 1 if k > limit else 0
            released += 1

    release(limit)
    done = 0
    max_steps = 50 * (n * (isl + osl) // max(1, budget) + n * osl + 10)
    while done < n and step < max_steps:
        tokens_left = budget
        sched: list[tuple[int, int]] = []
        preempted = False
        i = 0
        while i < len(running) and tokens_left > 0:
            r = running[i]
            need = min(isl + generated[r] - computed[r], tokens_left)
            need = max(need, 1)
            want = -(-(computed[r] + need) // BLOCK) - blocks[r]
            while want > free and running:
                victim = running.pop()
                free += blocks[victim]
                # its full blocks stay in the prefix cache, at the free queue's tail, last block first
                # (BlockPool.free_blocks, vllm/v1/core/block_pool.py), until allocations reach them
                cached_at[victim] = (freed + blocks[victim], min(blocks[victim], computed[victim] // BLOCK))
                freed += blocks[victim]
                blocks[victim] = computed[victim] = 0
                waiting.insert(0, victim)
                preemptions += 1
                preempted = True
                if victim == r:
                    break
            if r not in running[i:i + 1]:
                break
            free -= max(want, 0)
            taken += max(want, 0)
            blocks[r] += max(want, 0)
            sched.append((r, need))
            tokens_left -= need
            i += 1
        if not preempted:
            while waiting and tokens_left > 0 and len(running) < max_num_seqs:
                r = waiting[0]
                hit = 0
                if r in cached_at:  # a preempted request: the prefix cache hits its blocks not yet reused
                    end, full = cached_at[r]
                    hit = max(0, min(full, end - taken, (isl + generated[r] - 1) // BLOCK))
                need = min(isl + generated[r] - hit * BLOCK, tokens_left)
                want = -(-(hit * BLOCK + need) // BLOCK)  # the cached blocks and the new ones, all or none
                if want > free:
                    break
                cached_at.pop(r, None)
                computed[r] = hit * BLOCK
                waiting.pop(0)
                running.append(r)
                free -= want
                taken += want
                blocks[r] += want
                sched.append((r, need))
                tokens_left -= need
        peak = max(peak, len(running))
        dec = pre = 0
        dctx = pctx = 0.0
        finished = []
        for r, need in sched:
            target = isl + generated[r]
            if generated[r] and target - computed[r] == 1:  # a decode: the last sampled token, at its context
                dec += 1
                dctx += computed[r]
                computed[r] += 1
            else:
                pre += need
                pctx += need * (computed[r] + need / 2)
                computed[r] += need
                if computed[r] < target:
                    continue
            generated[r] += 1  # a decode, or the prefill done: one token sampled
            if first[r] < 0:
                first[r] = step
            if generated[r] >= outs[r]:
                last[r] = step
                finished.append(r)
        for r in finished:
            running.remove(r)
            free += blocks[r]
            freed += blocks[r]
            blocks[r] = 0
            done += 1
        if finished:
            release(limit + done)
        rows.append((dec, dctx, pre, pctx, dec + pre > graph_max))
        step += 1
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
    return Trace(tuple(segs), tuple(arrive), tuple(first), tuple(last), tuple(outs), len(rows), preemptions, peak)
