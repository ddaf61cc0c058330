"""The available-KV prediction on the dev log set stays within the targets (benchmarks/accuracy.py)."""

from tests.conftest import load_benchmark, shared_or_skip


def _accuracy():
    return load_benchmark("accuracy")


def test_available_kv_error_beats_naive_baseline_threefold():
    logs = shared_or_skip("data", "vllm-startup-logs.dev.jsonl")
    acc = _accuracy()
    rows, _ = acc.evaluate(logs, "0.19.0")
    s = acc.summary(rows)
    assert s["n_kv"] >= 15
    assert s["median"] <= 0.5 and s["p90"] <= 1.5, s
    assert s["median"] * 3 <= s["naive_median"] and s["p90"] * 3 <= s["naive_p90"], s
    assert s["weights_max_pct"] <= 3.0, s


def test_every_verdict_matches_vllm():
    logs = shared_or_skip("data", "vllm-startup-logs.dev.jsonl")
    rows, _ = _accuracy().evaluate(logs, "0.19.0")
    wrong = [(r["id"], r["fits"], r["status"]) for r in rows if r["fits"] != r["logged_fits"]]
    assert not wrong
    assert any(not r["logged_fits"] for r in rows)  # refusals are among the records
