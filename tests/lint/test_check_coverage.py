"""Issue 10's Done-when cases for `check`: release, unknown-flag and not-modelled findings at their lines,
the fits-on finding, the default-GPU config, model names never read from this machine, and `check` on this
repository (the pre-commit hook's way too)."""

import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.lint.test_check_cli import deployment

QWEN = ROOT / "profiles" / "models" / "Qwen__Qwen3-8B.json"


def _line(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def _check(run_cli, tmp_path, text: str, *args: str, name: str = "m.yaml") -> dict:
    f = tmp_path / name
    f.write_text(text)
    res = run_cli("check", str(f), "--format", "json", *args)
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)


def _rules(report: dict, rule: str) -> list[dict]:
    return [f for f in report["findings"] if f["rule"] == rule]


# -- releases, unknown flags, unmodelled options, each at its line -----------------------------------

def test_image_before_the_oldest_modelled_release_is_named_at_the_container(run_cli, tmp_path):
    text = deployment("Qwen/Qwen3-8B", ["--max-model-len", "8192"], "NVIDIA-L4", image="vllm/vllm-openai:v0.7.3")
    report = _check(run_cli, tmp_path, text)
    [f] = _rules(report, "release-not-modelled")
    assert f["line"] == _line(text, "- name: vllm") and "0.7.3" in f["message"] and "0.8.0" in f["message"]
    assert report["servers"][0]["vllm_version"] == "0.8.0"  # evaluated as the oldest, with its defaults
    assert report["servers"][0]["flags"]["gpu_memory_utilization"] == 0.9


@pytest.mark.parametrize("image,unknown", [
    ("vllm/vllm-openai:v0.9.2", True),  # --kv-cache-memory-bytes arrived in 0.10.2 (profiles/vllm-args)
    ("vllm/vllm-openai:v0.10.2", False),
])
def test_flags_are_read_by_the_servers_own_release(run_cli, tmp_path, image, unknown):
    text = deployment("Qwen/Qwen3-8B", ["--max-model-len", "8192", "--kv-cache-memory-bytes", "8G"], "NVIDIA-L4",
                      image=image)
    report = _check(run_cli, tmp_path, text)
    hits = _rules(report, "unknown-flag")
    assert bool(hits) == unknown
    if unknown:
        assert hits[0]["line"] == _line(text, "--kv-cache-memory-bytes")
        assert "vLLM 0.9.2 exits" in hits[0]["message"] and "--kv-cache-memory-bytes" in hits[0]["message"]


def test_typo_flag_is_an_error_at_its_line_with_the_nearest_flag(run_cli, tmp_path):
    text = deployment("Qwen/Qwen3-8B", ["--max-modle-len", "8192"], "NVIDIA-L4")
    [f] = _rules(_check(run_cli, tmp_path, text), "unknown-flag")
    assert f["severity"] == "error" and f["line"] == _line(text, "--max-modle-len")
    assert "--max-model-len" in f["message"]


@pytest.mark.parametrize("flags,option", [
    (["--kv-transfer-config", '{"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}'], "--kv-transfer-config"),
    (["--kv-offloading-size", "8"], "--kv-offloading-size"),
])
def test_unmodelled_memory_flags_are_not_modelled_warnings_at_their_line(run_cli, tmp_path, flags, option):
    text = deployment("Qwen/Qwen3-8B", ["--max-model-len", "8192", *flags], "NVIDIA-L4")
    hits = [f for f in _rules(_check(run_cli, tmp_path, text), "not-modelled") if f["message"].startswith(option)]
    assert hits and hits[0]["severity"] == "warning" and hits[0]["line"] == _line(text, option)


@pytest.mark.parametrize("flags", [
    ["--enable-lora", "--max-loras", "4", "--max-lora-rank", "64"],
    ["--speculative-config", '{"model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 4}'],
])
def test_lora_and_speculative_flags_are_modelled_not_warned(run_cli, tmp_path, flags):
    """LoRA and speculative decoding are in the estimate now (configurator/estimate/features.py): no
    not-modelled warning, and the server's memory need grows."""
    base = _check(run_cli, tmp_path, deployment("Qwen/Qwen3-8B", ["--max-model-len", "8192"], "NVIDIA-L4"))
    report = _check(run_cli, tmp_path, deployment("Qwen/Qwen3-8B", ["--max-model-len", "8192", *flags], "NVIDIA-L4"))
    assert not _rules(report, "not-modelled")
    kv = [s["kv_cache_bytes"] for s in (base["servers"][0], report["servers"][0])]
    assert kv[1] < kv[0]


# -- a verdict without a GPU label ------------------------------------------------------------------

BARE = deployment("Qwen/Qwen3-8B", ["--max-model-len", "32768"], "x").replace(
    "nodeSelector: {nvidia.com/gpu.product: x}", "nodeSelector: {}")


def test_without_a_gpu_type_the_fits_on_finding_names_the_need_and_the_gpus(run_cli, tmp_path):
    report = _check(run_cli, tmp_path, BARE)
    [f] = _rules(report, "gpu-type-unknown")
    assert "needs about" in f["message"] and "GiB per GPU" in f["message"]
    assert "fits data-centre" in f["message"] and "refused on" in f["message"]
    catalog = report["servers"][0]["catalog"]
    assert "h100-80gb" in catalog["fits"] and "t4" in catalog["refused"]  # 16 GiB of weights on a 16 GB T4
    assert report["servers"][0]["verdict"] == "not-checked"


def test_a_default_gpu_in_the_config_checks_the_budget(run_cli, tmp_path):
    (tmp_path / ".vllm-configurator.yaml").write_text("gpu: l40s\n")
    report = _check(run_cli, tmp_path, BARE)
    s = report["servers"][0]
    assert s["gpu"] == "l40s" and s["verdict"] != "not-checked" and "gpu" in s["gpu_source"]
    assert not _rules(report, "gpu-type-unknown")


# -- model names: the annotation, the config map, never this machine's files -------------------------

def _served(name: str, annotations: dict | None = None) -> str:
    text = deployment(name, ["--max-model-len", "8192"], "NVIDIA-L40S")
    if annotations:
        text = text.replace("metadata: {name: vllm}", "metadata: " + json.dumps({"name": "vllm",
                                                                                  "annotations": annotations}))
    return text


def test_the_model_annotation_maps_a_local_path(run_cli, tmp_path):
    plain = _check(run_cli, tmp_path, _served("/mnt/models"))
    assert plain["servers"][0]["verdict"] == "not-checked" and _rules(plain, "unknown-model")
    mapped = _check(run_cli, tmp_path, _served("/mnt/models", {"vllm-configurator.io/model": "Qwen/Qwen3-8B"}))
    assert mapped["servers"][0]["verdict"] == "fits" and not _rules(mapped, "unknown-model")
    assert mapped["servers"][0]["model"] == "/mnt/models"  # the served name is still what the manifest says


def test_a_folder_of_the_same_name_on_this_machine_is_never_read(run_cli, tmp_path, monkeypatch):
    config = json.loads(QWEN.read_text())["config"]
    (tmp_path / "acme" / "private-8b").mkdir(parents=True)
    (tmp_path / "acme" / "private-8b" / "config.json").write_text(json.dumps(config))
    monkeypatch.chdir(tmp_path)  # `acme/private-8b` now names a real folder where check runs
    report = _check(run_cli, tmp_path, _served("acme/private-8b"))
    [f] = _rules(report, "unknown-model")
    assert "not read from this machine" in f["message"] and report["servers"][0]["verdict"] == "not-checked"
    # the repository's own config may point at a local config.json (relative to the config file)
    (tmp_path / ".vllm-configurator.yaml").write_text("models: {acme/private-8b: ./acme/private-8b/config.json}\n")
    report = _check(run_cli, tmp_path, _served("acme/private-8b"))
    assert report["servers"][0]["verdict"] == "fits" and not _rules(report, "unknown-model")


# -- this repository: `check .`, `check charts/vllm` and the pre-commit hook --------------------------

def _cli(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    """The CLI as a fresh process in the repository root (the config is found from `.` upwards)."""
    return subprocess.run([sys.executable, "-m", "configurator.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def repo_check():
    return _cli("check", ".", "--format", "json")


def test_check_dot_on_this_repository_exits_0(repo_check):
    assert repo_check.returncode == 0, repo_check.stdout[-2000:] + repo_check.stderr
    report = json.loads(repo_check.stdout)
    files = {f["file"] for f in report["findings"]}
    assert not any(f.startswith(("tests/manifests/", "tests/corpus/")) for f in files)  # the fixtures, ignored
    assert not [f for f in report["findings"] if f["rule"] == "parse-error"]
    assert any(f.startswith("charts/vllm") for f in files)  # the chart is rendered or reported, not hidden


def test_check_the_chart_exits_0_rendered_or_reported(repo_check):
    done = _cli("check", "charts/vllm", "--format", "json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    assert "parse-error" not in done.stdout


def test_the_pre_commit_hook_passes_on_this_repository(repo_check):
    """pre-commit runs the hook's entry with every tracked YAML / JSON file named on the command line."""
    import yaml

    if not (ROOT / ".git").exists() or not shutil.which("git"):
        pytest.skip("not a git checkout")
    [hook] = [h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
              if h["id"] == "vllm-configurator-check"]
    names = subprocess.run(["git", "ls-files", "*.yaml", "*.yml", "*.json"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    assert any(n.startswith("tests/manifests/") for n in names)
    done = _cli(*hook["entry"].split()[1:], *names)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr


def test_ignored_fixtures_are_still_checked_when_named_and_other_findings_are_not_hidden(run_cli, tmp_path):
    named = run_cli("check", str(ROOT / "tests" / "manifests" / "docs-example-too-long.yaml"))
    assert named.exit_code == 1  # named on the command line: read, as ruff reads an excluded file it is given
    forced = run_cli("check", "--force-exclude", str(ROOT / "tests" / "manifests" / "docs-example-too-long.yaml"))
    assert forced.exit_code == 0 and "0 vLLM server(s) found" in forced.stdout
    # the same config in another repository: a bad manifest outside the ignored folders is reported
    repo = tmp_path / "repo"
    (repo / "tests" / "manifests").mkdir(parents=True)
    (repo / "deploy").mkdir()
    shutil.copy(ROOT / ".vllm-configurator.yaml", repo / ".vllm-configurator.yaml")
    bad = (ROOT / "tests" / "manifests" / "docs-example-too-long.yaml").read_text()
    (repo / "tests" / "manifests" / "bad.yaml").write_text(bad)
    (repo / "deploy" / "bad.yaml").write_text(bad)
    res = run_cli("check", str(repo), "--format", "json")
    report = json.loads(res.stdout)
    assert res.exit_code == 1 and {s["file"].split("repo/", 1)[1] for s in report["servers"]} == {"deploy/bad.yaml"}


def test_files_of_one_chart_named_together_render_it_once(run_cli):
    chart = ROOT / "charts" / "vllm"
    files = [str(chart / "Chart.yaml"), str(chart / "values.yaml"), str(chart / "templates" / "service.yaml")]
    report = json.loads(run_cli("check", *files, "--format", "json").stdout)
    notes = [f for f in report["findings"] if f["rule"] == "template-not-rendered"]
    assert len(notes) <= 1  # one note (or one rendering) for the chart, not one per file pre-commit names
    assert len({(s["file"], s["line"]) for s in report["servers"]}) == len(report["servers"])


@pytest.mark.parametrize("args,unknown", [((), False), (("--vllm-version", "0.9.2"), True)])
def test_vllm_version_reads_the_flags_of_an_image_that_names_no_release(run_cli, tmp_path, args, unknown):
    text = deployment("Qwen/Qwen3-8B", ["--max-model-len", "8192", "--kv-cache-memory-bytes", "8G"], "NVIDIA-L4",
                      image="vllm/vllm-openai:latest")
    report = _check(run_cli, tmp_path, text, *args)
    assert bool(_rules(report, "unknown-flag")) == unknown
    assert report["servers"][0]["vllm_version"] == ("0.9.2" if unknown else report["servers"][0]["vllm_version"])
