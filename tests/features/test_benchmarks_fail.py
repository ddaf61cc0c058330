"""The speed benchmarks exit 1 when their own stated target is missed and when the tool crashed or answered
wrongly (a crash is fast: it must never pass for speed). Each is run with one repetition."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import load_benchmark

CRASH = [sys.executable, "-c", "import sys; print('Traceback'); sys.exit(3)"]


@pytest.fixture(scope="module")
def cold_start():
    return load_benchmark("cold_start")


@pytest.fixture(scope="module")
def plan_speed():
    return load_benchmark("plan_speed")


@pytest.fixture(scope="module")
def webhook_load():
    return load_benchmark("webhook_load")


def test_cold_start_fails_when_a_case_crashes_or_changes_its_answer(cold_start, monkeypatch, capsys):
    first = next(iter(cold_start.CASES))
    monkeypatch.setattr(cold_start, "CASES", {first: cold_start.CASES[first]})
    monkeypatch.setattr(cold_start, "tool_command", lambda: [sys.executable, "-m", "configurator.cli.main"])
    assert cold_start.main(["--runs", "1", "--target-cpu-s", "30", "--max-catalog-ratio", "100"]) == 0
    # the same case, expected to refuse: its answer changed
    args, _, _ = cold_start.CASES[first]
    monkeypatch.setattr(cold_start, "CASES", {"changed": (args, 1, "REFUSED")})
    assert cold_start.main(["--runs", "1", "--target-cpu-s", "30"]) == 1
    assert "FAILED: changed" in capsys.readouterr().out
    # the tool crashes
    monkeypatch.setattr(cold_start, "CASES", {"crash": ([], 0, "FITS")})
    monkeypatch.setattr(cold_start, "tool_command", lambda: CRASH)
    assert cold_start.main(["--runs", "1"]) == 1
    assert "exit 3" in capsys.readouterr().out


def test_cold_start_fails_when_the_catalog_costs_more_than_its_claim(cold_start, monkeypatch, capsys):
    first = next(iter(cold_start.CASES))
    monkeypatch.setattr(cold_start, "CASES", {first: cold_start.CASES[first]})
    assert cold_start.main(["--runs", "1", "--target-cpu-s", "30", "--max-catalog-ratio", "0.01"]) == 1
    assert f"FAILED: {first} (catalog)" in capsys.readouterr().out


def test_cold_start_fails_over_its_target(cold_start, monkeypatch, capsys):
    first = next(iter(cold_start.CASES))
    monkeypatch.setattr(cold_start, "CASES", {first: cold_start.CASES[first]})
    assert cold_start.main(["--runs", "1", "--target-cpu-s", "0.0001"]) == 1
    assert "MISSED" in capsys.readouterr().out


def test_plan_speed_fails_over_its_targets_and_on_a_wrong_plan(plan_speed, monkeypatch, capsys):
    monkeypatch.setattr(plan_speed, "TARGET_CPU_S", dict.fromkeys(plan_speed.TARGET_CPU_S, 1e-9))
    assert plan_speed.main(["--runs", "1"]) == 1
    assert "FAILED: over target: estimate" in capsys.readouterr().out
    real = plan_speed.plan

    def broken(req):  # every plan comes back without a command
        import dataclasses

        p = real(req)
        return dataclasses.replace(p, serve_command="") if dataclasses.is_dataclass(p) else \
            p.model_copy(update={"serve_command": ""})

    monkeypatch.setattr(plan_speed, "plan", broken)
    assert plan_speed.main(["--runs", "1"]) == 1
    assert "no command" in capsys.readouterr().out


def test_plan_speed_fails_when_the_cli_crashes(plan_speed, monkeypatch, capsys):
    monkeypatch.setattr(plan_speed, "tool_command", lambda: CRASH)
    assert plan_speed.main(["--runs", "1"]) == 1
    assert "exit 3" in capsys.readouterr().out


def test_webhook_load_fails_when_the_webhook_does_not_start(webhook_load, monkeypatch, capsys):
    real = subprocess.Popen
    monkeypatch.setattr(webhook_load.subprocess, "Popen",
                        lambda cmd, **kw: real(CRASH, **kw) if "webhook" in cmd else real(cmd, **kw))
    assert webhook_load.main(["--seconds", "1", "--saturate-seconds", "0"]) == 1
    assert "did not become ready (exit code 3)" in capsys.readouterr().out


def test_webhook_load_fails_over_its_p99_target(webhook_load, capsys):
    assert webhook_load.main(["--seconds", "1", "--rate", "20", "--saturate-seconds", "0", "--p99-ms", "0.001"]) == 1
    out = capsys.readouterr().out
    assert "FAILED: p99" in out and "errors 0" in out


def test_make_bench_runs_every_benchmark_and_fails_when_one_does(tmp_path):
    import re
    import shutil

    from tests.conftest import ROOT

    make = (ROOT / "Makefile").read_text()
    listed = re.search(r"^BENCHMARKS = (.+)$", make, re.M).group(1).split()
    scripts = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py") if not p.stem.startswith("_"))
    assert sorted(listed) == scripts
    if shutil.which("make") is None:
        pytest.fail("make is needed to run the Makefile's bench target")
    # the target itself, on stand-in scripts: one fails, the others still run, make exits non-zero
    (tmp_path / "benchmarks").mkdir()
    for name in listed:
        code = 1 if name == listed[1] else 0
        (tmp_path / "benchmarks" / f"{name}.py").write_text(f"print('ran {name}')\nraise SystemExit({code})\n")
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    res = subprocess.run(["make", "-s", "bench", f"PYTHON={sys.executable}"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode != 0 and f"FAILED: {listed[1]}" in res.stdout
    assert all(f"ran {name}" in res.stdout for name in listed)
    (tmp_path / "benchmarks" / f"{listed[1]}.py").write_text("raise SystemExit(0)\n")
    res = subprocess.run(["make", "-s", "bench", f"PYTHON={sys.executable}"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0 and f"all {len(listed)} benchmarks met their targets" in res.stdout


def test_cold_start_decides_on_cpu_scaled_to_the_reference_speed_and_prints_both(cold_start, monkeypatch, capsys):
    """A machine running at twice the reference's CPU seconds (a busy host) halves the CPU the target is decided
    on; --raw decides on the CPU measured; the factor and both figures are printed."""
    from _timing import GAUGE_CMD, Speed, Timing

    first = next(iter(cold_start.CASES))
    monkeypatch.setattr(cold_start, "CASES", {first: cold_start.CASES[first]})
    ref = Speed(0).reference_s
    slow = {"factor": 2.0}

    def fake(cmd, runs, **kw):  # the gauge at `factor` x the reference, the tool at 400 ms
        return Timing(0.5, slow["factor"] * ref if cmd == GAUGE_CMD else 0.4)

    monkeypatch.setattr(cold_start, "time_process", fake)
    monkeypatch.setattr(sys.modules["_timing"], "time_process", fake)
    monkeypatch.setattr(cold_start, "catalog_ratio", lambda *a: (1.0, 1.0))
    assert cold_start.main(["--runs", "3", "--target-cpu-s", "0.25"]) == 0  # 400 ms at 2x: 200 ms
    out = capsys.readouterr().out
    assert "400 ms CPU; machine 2.00x the reference" in out and "200 ms CPU at the reference speed" in out
    assert cold_start.main(["--runs", "3", "--target-cpu-s", "0.25", "--raw"]) == 1
    slow["factor"] = 0.5
    assert cold_start.main(["--runs", "3", "--target-cpu-s", "0.25"]) == 1  # a faster machine: 800 ms
