"""`plan`'s text output (the README's example), checked line by line against the plan's own JSON so that the
text cannot drift from what was planned, and the NO PLAN / SHORT OF THE TARGET renderings."""

from __future__ import annotations

import json
import re

README_EXAMPLE = ("plan", "Qwen/Qwen3.6-27B-FP8", "--gpu", "h100-nvl", "--workload", "long-context",
                  "--concurrency", "8", "--max-gpu-memory-utilization", "0.75")


def _flat(text: str) -> str:
    """The text with the table's wrapped cells joined back into one line each."""
    return re.sub(r"\s+", " ", text)


def test_readme_example_text_says_what_the_plan_is(run_cli):
    res = run_cli(*README_EXAMPLE)
    assert res.exit_code == 0, res.output
    text = res.stdout
    plan = json.loads(run_cli(*README_EXAMPLE, "--format", "json").stdout)
    lines = text.splitlines()
    assert lines[0] == "Qwen/Qwen3.6-27B-FP8 on h100-nvl, vLLM " + plan["vllm_version"]
    assert lines[1].startswith("workload long-context: up to ") and "8 at once" in lines[1]
    assert "PLAN" in lines and "flag                       value  why" in text  # the README's header
    # every chosen flag on its row with its value and (wrapped) reason, in the README's order
    rows = [(r["flag"], r["value"], r["why"]) for r in plan["reasons"]]
    assert [f for f, _, _ in rows][:4] == ["gpu_memory_utilization", "kv_cache_dtype", "max_num_seqs", "max_model_len"]
    flat = _flat(text)
    for flag, value, why in rows:
        assert re.search(rf"--{flag.replace('_', '-')} +{re.escape(str(value))} ", text), flag
        assert _flat(why) in flat, why
    # the README's figures for this example
    assert re.search(r"^--gpu-memory-utilization +0\.75 +the --max-gpu-memory-utilization cap; 23\.27 GiB stay "
                     r"outside vLLM's budget", text, re.M)
    assert re.search(r"^--kv-cache-dtype +auto +full precision \(bfloat16\) carries the workload", text, re.M)
    assert re.search(r"^--max-num-seqs +13 +the pool holds 15 requests of 33,792 tokens; keeping 10% headroom, "
                     r"15 / 1.1 \n? *= 13.64, rounded down 13 \(the target is 8\)", text, re.M)
    # the sentence, the budget bar and its legend, the alternatives, and the command
    assert _flat(plan["summary"]) in flat
    assert plan["summary"].startswith("The KV pool holds 15 requests of 33,792 tokens at once")
    assert "against a target of 8" in plan["summary"]
    m = plan["estimate"]["memory"]
    assert f"weights {m['weights_bytes'] / 2**30:.2f} GiB" in text
    assert f"KV pool {m['kv_cache_bytes'] / 2**30:.2f} GiB" in text
    assert "W weights  A activations/overheads" in text
    assert "Alternatives at this utilization" in text
    for alt in plan["alternatives"]:
        assert re.search(rf"{alt['kv_cache_dtype']} +{alt['max_model_len']:,} +{'yes' if alt['fits'] else 'no'} +"
                         rf"{alt['requests_at_typical_length']:,} +{alt['requests_at_max_model_len']:.2f}", text), alt
    assert lines[-2:] == ["Run:", "  " + plan["serve_command"]]
    assert plan["serve_command"].startswith("vllm serve Qwen/Qwen3.6-27B-FP8 --gpu-memory-utilization 0.75 "
                                            "--max-num-seqs 13 --max-model-len ")


def test_no_plan_text_names_the_shortfall_and_numbers_the_remedies(run_cli):
    args = ("plan", "--model", "Qwen/Qwen3-32B", "--gpu", "l4", "--gpus", "2")
    res = run_cli(*args)
    plan = json.loads(run_cli(*args, "--format", "json").stdout)
    assert res.exit_code == 1 and plan["status"] == "nothing-starts"
    text = res.stdout
    assert text.splitlines()[0].endswith(" x 2, vLLM " + plan["vllm_version"])  # the GPU count is shown
    assert "NO PLAN: vLLM would start with none of the candidates" in text
    assert _flat(plan["summary"]) in _flat(text) and "GiB short per GPU" in text
    assert "Run:" not in text and "vllm serve" not in text  # nothing to run
    assert "Remedies (each checked by planning again with it), cheapest first:" in text
    shown = re.findall(r"^  (\d+)\. (.+): then ([\d,]+) requests fit$", text, re.M)
    assert [int(n) for n, _, _ in shown] == list(range(1, len(plan["remedies"]) + 1))
    for (_, action, fit), r in zip(shown, plan["remedies"], strict=True):
        assert action == r["action"] and int(fit.replace(",", "")) == r["requests_at_typical_length"]


def test_short_plan_text_runs_best_effort(run_cli):
    args = ("plan", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4")
    res = run_cli(*args)
    plan = json.loads(run_cli(*args, "--format", "json").stdout)
    assert res.exit_code == 1 and plan["status"] == "short"
    text = res.stdout
    assert (f"SHORT OF THE TARGET: the best plan carries {plan['carried_concurrency']:,} of "
            f"{plan['workload']['concurrency']:,} concurrent requests") in text
    assert "Remedies (each checked by planning again with it)" in text
    assert text.splitlines()[-2:] == ["Run (best effort, short of the target):", "  " + plan["serve_command"]]
