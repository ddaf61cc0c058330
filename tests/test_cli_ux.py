"""Issue 27's CLI items: every refusal and bad input says what to do next; one vocabulary of options across the
commands (help on every option, `-o/--output`, `--model-config` forms, the release range, a positional model,
shell completion, JSON errors); the plan's wording (target, per-token figure, headroom arithmetic)."""

from __future__ import annotations

import json
import re
import shutil
from fractions import Fraction
from pathlib import Path

import click
import jsonschema
import pytest
from click.shell_completion import ShellComplete

from configurator.cli.main import cli
from configurator.vllm.versions import NEWEST, OLDEST
from tests.admission.test_audit import api  # noqa: F401  (the recorded cluster fixture)

ROOT = Path(__file__).resolve().parents[1]
PHI4_A10G = ("estimate", "--model", "microsoft/phi-4", "--gpu", "a10g")


def _commands():
    yield from cli.commands.items()


# ---- next steps -----------------------------------------------------------------------------------------------

def _steps(text: str) -> list[str]:
    head = "What to change (each checked by estimating again unless it says not):\n"
    block = text.split(head, 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in block.splitlines()]


def test_weights_oom_leads_with_the_reason_and_checked_remedies(run_cli, estimate_json):
    res = run_cli(*PHI4_A10G)
    assert res.exit_code == 1
    lines = res.stdout.splitlines()
    assert lines[1] == "REFUSED: vLLM would not start"
    assert lines[2].startswith("vLLM: CUDA out of memory while loading the model: 27.31 GiB of weights")
    text = res.stdout
    assert text.index("What to change") < text.index("What vLLM would log")
    # vLLM dies loading the weights: it logs no available-memory line, least of all a negative one
    assert "Available KV cache memory: -" not in text and "between -" not in text
    assert "no memory line: vLLM fails while loading the weights" in text
    _, r = estimate_json(*PHI4_A10G[1:])
    assert r["vllm_log"] == [] and r["memory"]["kv_cache_bytes"] < 0
    from configurator.report.estimate_text import WEIGHTS_OOM
    from configurator.vllm import messages

    assert messages.weights_oom(1 << 30, 1 << 29, 1, 1).startswith(WEIGHTS_OOM)  # the text the renderer keys on
    steps = _steps(text)
    assert any(s.startswith("--tensor-parallel-size 2 ") for s in steps), steps
    assert any(s.startswith("--gpu ") and "a larger GPU" in s for s in steps), steps
    assert any(s.startswith("a quantized checkpoint") for s in steps), steps
    # an A10G has no FP8 hardware, yet vLLM runs -q fp8 weight-only through Marlin: offered, marked at risk here
    assert any(s.startswith("-q fp8 ") and "at risk" in s for s in steps), steps
    # each flag suggested is one that starts: estimating again with it exits 0
    for s in steps:
        if s.startswith("-"):
            flag, value = s.split(" (")[0].split()
            assert run_cli(*PHI4_A10G, flag, value).exit_code == 0, s


def test_kv_refusal_keeps_vllms_log_and_offers_fp8_kv_and_a_shorter_context(run_cli):
    args = ("estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", "--max-model-len", "40960", "--max-num-seqs", "4")
    res = run_cli(*args)
    assert res.exit_code == 1
    kv = json.loads(run_cli(*args, "--format", "json").stdout)["memory"]["kv_cache_bytes"]
    assert kv > 0 and f"Available KV cache memory: {kv / 2**30:.2f} GiB" in res.stdout  # vLLM logs it before refusing
    steps = _steps(res.stdout)
    assert steps[0].startswith("--kv-cache-dtype fp8 ")
    length = next(s for s in steps if s.startswith("--max-model-len"))
    # the longest multiple of 1,024 that starts, written as vLLM reads it (no thousands separator), and below the
    # estimated maximum model length vLLM's own refusal names
    longest = int(length.split()[1])
    vllm_says = int(re.search(r"estimated maximum model length is (\d+)", res.stdout).group(1))
    assert longest % 1024 == 0 and longest <= vllm_says < longest + 1024
    assert run_cli(*args, "--kv-cache-dtype", "fp8").exit_code == 0
    assert run_cli(*args[:-4], "--max-num-seqs", "4", "--max-model-len", str(longest)).exit_code == 0
    assert run_cli(*args[:-4], "--max-num-seqs", "4", "--max-model-len", str(longest + 1024)).exit_code == 1


def test_weights_beyond_a_node_say_how_many_gpus_they_need(run_cli):
    res = run_cli("estimate", "--model", "deepseek-ai/DeepSeek-V3", "--gpu", "l4")
    assert res.exit_code == 1
    (step,) = _steps(res.stdout)  # an fp8 checkpoint, and 8 L4s are too few: no checked change
    m = re.search(r"the weights alone need at least (\d+) of these \(([\d,.]+) GiB against ([\d.]+) GiB each", step)
    assert m and int(m.group(1)) == -(-float(m.group(2).replace(",", "")) // float(m.group(3)))
    assert "plan deepseek-ai/DeepSeek-V3 --gpu l4 --gpus N" in step and "not checked" in step


def test_fp8_weights_are_not_offered_below_compute_capability_8(run_cli):
    res = run_cli("estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "t4", "--dtype", "half")
    assert res.exit_code == 1 and "CUDA out of memory while loading" in res.stdout
    steps = _steps(res.stdout)
    assert steps and not any(s.startswith("-q fp8") for s in steps)  # vLLM's fp8 Marlin needs 8.0


def test_a_low_utilization_is_named_even_when_it_was_given(run_cli):
    args = ("estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "h100-80gb", "--gpu-memory-utilization", "0.1")
    res = run_cli(*args)
    assert res.exit_code == 1
    assert _steps(res.stdout)[0].startswith("--gpu-memory-utilization 0.95 ")
    assert run_cli(*args[:-1], "0.95").exit_code == 0


def test_a_fitting_estimate_has_no_next_steps(run_cli):
    res = run_cli("estimate", "--model", "Qwen/Qwen3-0.6B", "--gpu", "l4")
    assert res.exit_code == 0 and "What to change" not in res.stdout


def test_unknown_model_names_the_ways_to_give_its_config(run_cli, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    res = run_cli("estimate", "--model", "acme/shiny-13b-chat", "--gpu", "l40s")
    assert res.exit_code == 2
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: unknown model 'acme/shiny-13b-chat'; nearest: ")
    for way in ("--model /path/to/config.json", "model's folder", "--model-config acme/shiny-13b-chat=PATH",
                "HF_TOKEN"):
        assert way in err, way
    # plan says the same
    res = run_cli("plan", "acme/shiny-13b-chat", "--gpu", "l40s")
    assert res.exit_code == 2 and "--model-config acme/shiny-13b-chat=PATH" in res.stderr


def test_a_workload_longer_than_the_model_names_the_override(run_cli):
    res = run_cli("plan", "microsoft/phi-4", "--gpu", "h100", "--workload", "rag")
    assert res.exit_code == 2
    assert "needs 32,768 tokens" in res.stderr and "--max-context 16384" in res.stderr
    again = run_cli("plan", "microsoft/phi-4", "--gpu", "h100", "--workload", "rag", "--max-context", "16384")
    assert again.exit_code in (0, 1), again.stderr  # the override is taken


def test_options_and_the_serve_command_must_agree(run_cli):
    res = run_cli("estimate", "--model", "A", "--max-model-len", "16384", "--", "vllm", "serve", "B",
                  "--max-model-len", "8192")
    assert res.exit_code == 2
    for both in ("--model A", "vllm serve B", "--max-model-len 16384", "--max-model-len 8192"):
        assert both in res.stderr, both
    res = run_cli("estimate", "--gpu", "l4", "--max-model-len", "16384", "--", "vllm", "serve", "Qwen/Qwen3-8B",
                  "--max-model-len", "8192")
    assert res.exit_code == 2 and "16384" in res.stderr and "8192" in res.stderr
    # the same value twice, or the same model, is no conflict
    ok = run_cli("estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", "--max-model-len", "8192", "--", "vllm",
                 "serve", "Qwen/Qwen3-8B", "--max-model-len", "8192")
    assert ok.exit_code == 0, ok.stderr


def test_calibrate_refuses_two_models_too(run_cli, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text("INFO 08-21 10:11:10 [api_server.py:1] vLLM API server version 0.28.0\n"
                   "(EngineCore_DP0 pid=7) INFO 08-21 10:11:12 [gpu_worker.py:1] Available KV cache memory: "
                   "11.57 GiB\n")
    res = run_cli("calibrate", str(log), "--gpu", "l40s", "--model", "Qwen/Qwen3-14B", "-o", str(tmp_path / "c.yaml"),
                  "--", "vllm", "serve", "Qwen/Qwen3-8B")
    assert res.exit_code == 2 and "--model Qwen/Qwen3-14B" in res.stderr and "vllm serve Qwen/Qwen3-8B" in res.stderr
    assert not (tmp_path / "c.yaml").exists()


def test_a_vllm_option_before_the_double_dash_says_where_it_goes(run_cli):
    res = run_cli("estimate", "--gpu", "l4", "--mm-processor-cache-gb", "8")
    assert res.exit_code == 2
    assert "Did you mean" not in res.stderr
    assert "--mm-processor-cache-gb is a vLLM option" in res.stderr and "after `--`" in res.stderr
    after = run_cli("estimate", "--gpu", "l4", "--", "vllm", "serve", "Qwen/Qwen3-0.6B", "--mm-processor-cache-gb",
                    "8")
    assert after.exit_code == 0, after.stderr
    typo = run_cli("estimate", "--gpu", "l4", "--max-model-lenn", "8")  # not a vLLM option: click's own hint
    assert typo.exit_code == 2 and "No such option" in typo.stderr


# ---- one vocabulary -----------------------------------------------------------------------------------------

def test_every_option_of_every_command_has_help(run_cli):
    missing = [f"{name} {'/'.join(p.opts)}" for name, cmd in _commands() for p in cmd.params
               if isinstance(p, click.Option) and not p.hidden and not (p.help or "").strip()]
    assert missing == []
    for name, _ in _commands():
        res = run_cli(name, "--help")
        assert res.exit_code == 0 and "Options:" in res.stdout, name


def test_output_is_dash_o_everywhere_and_calibrate_keeps_out(run_cli, tmp_path):
    for name, cmd in _commands():
        for p in cmd.params:
            if isinstance(p, click.Option) and "-o" in p.opts:
                assert "--output" in p.opts, name
    calibrate = cli.commands["calibrate"]
    assert not re.search(r"--out\b(?!put)", calibrate.get_help(click.Context(calibrate)))
    log = tmp_path / "vllm.log"
    log.write_text("INFO 08-21 10:11:10 [api_server.py:1] vLLM API server version 0.28.0\n"
                   "INFO 08-21 10:11:10 [utils.py:1] non-default args: {'model': 'Qwen/Qwen3-14B', "
                   "'max_model_len': 40960}\n"
                   "(EngineCore_DP0 pid=7) INFO 08-21 10:11:12 [gpu_worker.py:1] Model loading took 27.52 GiB and "
                   "6.27 seconds\n"
                   "(EngineCore_DP0 pid=7) INFO 08-21 10:11:12 [gpu_worker.py:1] Available KV cache memory: "
                   "11.57 GiB\n")
    for spelling in ("-o", "--output", "--out"):
        out = tmp_path / f"cal{spelling}.yaml"
        res = run_cli("calibrate", str(log), "--gpu", "l40s", spelling, str(out))
        assert res.exit_code == 0 and out.is_file(), (spelling, res.output)


def test_audit_takes_the_formats_of_check(api, run_cli, monkeypatch):  # noqa: F811 (a fixture)
    from configurator.cli.check import FORMAT_NAMES

    fmt = next(p for p in cli.commands["audit"].params if p.name == "fmt")
    assert tuple(fmt.type.choices) == FORMAT_NAMES and "junit" in fmt.help
    monkeypatch.setenv("KUBECONFIG", str(api[0]))  # a recorded cluster (tests/admission/test_audit.py)
    res = run_cli("audit", "--format", "junit")
    assert res.exit_code == 1 and res.stdout.startswith("<?xml") and "<testsuite" in res.stdout
    import xml.etree.ElementTree as ET

    failures = ET.fromstring(res.stdout).iter("failure")
    assert next(failures, None) is not None  # the error findings `--format json` reports


def test_model_config_folder_or_name_path_on_estimate_plan_and_check(run_cli, tmp_path):
    folder = tmp_path / "configs"
    folder.mkdir()
    shutil.copy(ROOT / "data" / "model-configs" / "Qwen__Qwen3-0.6B.json", folder / "acme__tiny.json")
    for form in (str(folder), f"acme/tiny={folder / 'acme__tiny.json'}"):
        res = run_cli("estimate", "--model", "acme/tiny", "--model-config", form, "--gpu", "l4", "--format", "json")
        assert res.exit_code == 0, res.stderr
        assert json.loads(res.stdout)["model"]["num_hidden_layers"] == 28
        res = run_cli("plan", "acme/tiny", "--model-config", form, "--gpu", "l4", "--format", "json")
        assert res.exit_code == 0, res.stderr
    res = run_cli("estimate", "--model", "acme/other", "--model-config", str(folder), "--gpu", "l4")
    assert res.exit_code == 2 and "acme__other.json" in res.stderr
    for name in ("estimate", "plan", "check"):
        opt = next(p for p in cli.commands[name].params if "--model-config" in p.opts)
        assert opt.metavar == "NAME=PATH|FOLDER" and "FOLDER" in opt.help.upper(), name


def test_the_release_range_is_stated_once_and_true():
    want = f"{OLDEST.rsplit('.', 1)[0]} to {NEWEST.rsplit('.', 1)[0]}"
    for name in ("estimate", "plan", "check", "calibrate"):
        opt = next(p for p in cli.commands[name].params if "--vllm-version" in p.opts)
        assert want in opt.help, name
    readme = (ROOT / "README.md").read_text()
    stated = re.findall(r"\b0\.\d+ to 0\.\d+\b", readme)
    assert stated == [want], stated


def test_plan_takes_the_model_positionally(run_cli):
    a = run_cli("plan", "Qwen/Qwen3-8B", "--gpu", "l4", "--emit", "serve", "--concurrency", "4")
    b = run_cli("plan", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", "--emit", "serve", "--concurrency", "4")
    assert a.exit_code == b.exit_code == 0 and a.stdout == b.stdout and a.stdout.startswith("vllm serve Qwen/Qwen3-8B")
    both = run_cli("plan", "Qwen/Qwen3-8B", "--model", "Qwen/Qwen3-14B", "--gpu", "l4")
    assert both.exit_code == 2 and "Qwen/Qwen3-8B" in both.stderr and "Qwen/Qwen3-14B" in both.stderr
    assert run_cli("plan", "--gpu", "l4").exit_code == 2


def test_vllm_flag_defaults_say_they_depend_on_the_release():
    est = cli.commands["estimate"]
    seqs = next(p for p in est.params if "--max-num-seqs" in p.opts)
    assert "per release" in seqs.help
    assert "differ" in est.help and "--vllm-version" in est.help


def _complete(args: list[str], incomplete: str) -> list[str]:
    comp = ShellComplete(cli, {}, "vllm-configurator", "_VLLM_CONFIGURATOR_COMPLETE")
    return [c.value for c in comp.get_completions(args, incomplete)]


def test_shell_completion_of_commands_gpus_and_models():
    assert _complete([], "es") == ["estimate"]
    assert "plan" in _complete([], "p")
    gpus = _complete(["estimate", "--gpu"], "h10")
    assert "h100" in gpus and all(g.startswith("h10") for g in gpus)
    assert "l40s" in _complete(["check", "--gpu"], "l40")
    assert "Qwen/Qwen3-8B" in _complete(["estimate", "--model"], "Qwen/Qwen3-8")
    assert "Qwen/Qwen3-8B" in _complete(["plan"], "Qwen/Qwen3-8")  # the positional model
    assert "Qwen/Qwen3-8B" in _complete(["estimate"], "Qwen/Qwen3-8")
    readme = (ROOT / "README.md").read_text()
    assert "_VLLM_CONFIGURATOR_COMPLETE=bash_source vllm-configurator" in readme


def test_errors_that_exit_2_have_a_json_form(run_cli, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    schema = json.loads((ROOT / "schemas" / "error.schema.json").read_text())
    for args in (("estimate", "--model", "acme/shiny-13b-chat", "--gpu", "l40s", "--format", "json"),
                 ("plan", "Qwen/Qwen3-8B", "--gpu", "h1000", "--format", "json"),
                 ("estimate", "--gpu", "l4", "--mm-processor-cache-gb", "8", "--format", "json"),
                 ("models", "nothing-like-this-at-all", "--format", "json")):
        res = run_cli(*args)
        assert res.exit_code == 2, args
        body = json.loads(res.stdout)
        jsonschema.validate(body, schema)
        assert body["error"]["exit_code"] == 2 and body["error"]["message"], args
        assert "error" in res.stderr.lower()  # the line for people stays
    text = run_cli("estimate", "--model", "acme/shiny-13b-chat", "--gpu", "l40s")
    assert text.exit_code == 2 and text.stdout == ""  # without --format json nothing goes to standard output


# ---- wording ----------------------------------------------------------------------------------------------------

def _plan(run_cli, *args) -> dict:
    res = run_cli("plan", *args, "--format", "json")
    return json.loads(res.stdout)


def test_the_summary_says_what_the_pool_holds_against_the_target(run_cli):
    p = _plan(run_cli, "Qwen/Qwen3-8B", "--gpu", "h100", "--concurrency", "32")
    assert p["status"] == "carries" and p["capacity"]["requests_at_typical_length"] > 32
    assert "We can only batch" not in p["summary"]
    held = p["capacity"]["requests_at_typical_length"]
    assert p["summary"].startswith(f"The KV pool holds {held:,} requests of 1,536 tokens at once")
    assert "against a target of 32" in p["summary"]
    assert "B per token in every layer" in p["summary"]  # all of Qwen3-8B's layers keep every token


def test_the_per_token_figure_says_which_layers_it_covers(run_cli):
    p = _plan(run_cli, "google/gemma-3-27b-it", "--gpu", "h100")
    kv = p["estimate"]["kv_cache"]
    assert kv["window_bytes_per_sequence"] > 0
    per_token = f"{kv['bytes_per_token']:,} B per token x 1,536 = "
    assert per_token in p["summary"] and "in the layers that keep every token, plus " in p["summary"]
    assert "for the sliding-window layers' window and in-flight tokens" in p["summary"]


def test_headroom_arithmetic_is_exact_and_shown():
    from configurator.plan import less_headroom, with_headroom

    assert less_headroom(275, 0.10) == 250  # int(275 / 1.1) is 249
    assert with_headroom(10, 0.10) == 11  # math.ceil(10 * 1.1) is 12
    assert less_headroom(274, 0.10) == 249 and with_headroom(32, 0.10) == 36


def test_max_num_seqs_reason_shows_its_division(run_cli):
    for args in (("Qwen/Qwen3-8B", "--gpu", "h100", "--concurrency", "32"),
                 ("Qwen/Qwen3-8B", "--gpu", "l4"),
                 ("Qwen/Qwen3.6-27B-FP8", "--gpu", "h100-nvl", "--workload", "long-context", "--concurrency", "8",
                  "--max-gpu-memory-utilization", "0.75")):
        p = _plan(run_cli, *args)
        why = next(r for r in p["reasons"] if r["flag"] == "max_num_seqs")
        m = re.search(r"the pool holds ([\d,]+) requests of [\d,]+ tokens; keeping 10% headroom, ([\d,]+) / 1\.1 = "
                      r"([\d,.]+), rounded down ([\d,]+)", why["why"])
        assert m, why
        held, again, quotient, floor = (m.group(i).replace(",", "") for i in (1, 2, 3, 4))
        assert held == again and int(floor) == int(Fraction(int(held)) / Fraction(11, 10))
        assert abs(float(quotient) - int(held) / 1.1) < 0.01
        if "capped" not in why["why"] and "kept from" not in why["why"] and "raised" not in why["why"]:
            assert why["value"] == int(floor), why


@pytest.mark.parametrize("name", ["estimate", "plan", "check", "calibrate"])
def test_gpu_options_complete(name):
    opt = next(p for p in cli.commands[name].params if "--gpu" in p.opts)
    assert opt._custom_shell_complete is not None
