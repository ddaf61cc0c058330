"""Real start-up logs: --kv-cache-memory-bytes = the logged GiB reproduces tokens and concurrency."""

from tests.conftest import load_benchmark, shared_or_skip


def _bench():
    return load_benchmark("kv_reproduction")


def test_logged_tokens_and_concurrency_reproduced_within_one_percent():
    logs = shared_or_skip("data", "vllm-startup-logs.dev.jsonl")
    done, _skipped = _bench().run(logs)
    within = [d for d in done if abs(d["tok_err"]) <= 0.01 and abs(d["conc_err"] or 0) <= 0.01]
    assert len(within) >= 10, [(d["id"], d["tok_err"]) for d in done]
    off = [d for d in done if d not in within]
    assert all(d["mm_sliding"] for d in off), "only the documented Gemma-4 media-item gap may be off"
