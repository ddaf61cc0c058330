"""Rules, one line per case (yamllint style): a manifest built with `deployment(...)`, the rule, and the
lines it must report (empty: the rule must stay silent). The meta-test in test_corpus.py counts these
cases with the corpus's: every rule has a failing and a passing case."""

from __future__ import annotations

import dataclasses
import json

import pytest

from configurator.lint.engine import Options, evaluate
from configurator.lint.load import parse_text

ARGS_LINE = 13  # the line of `args:` in deployment(); list items written inline sit on it


def deployment(args: list[str] | None = None, *, command: list[str] | None = None,
               image: str = "vllm/vllm-openai:v0.33.0", label: str | None = "NVIDIA-L4", gpus: int = 1,
               annotations: dict[str, str] | None = None, shm: str | None = None, name: str = "vllm") -> str:
    """A Deployment with one vLLM container: the container on line 9, `args` on 13, the shm volume on 16."""
    meta = json.dumps({"name": name, **({"annotations": annotations} if annotations else {})})
    selector = json.dumps({"nvidia.com/gpu.product": label} if label else {})
    cmd = json.dumps(command) if command is not None else "null"
    lines = [
        "apiVersion: apps/v1",                                            # 1
        "kind: Deployment",                                               # 2
        f"metadata: {meta}",                                              # 3
        "spec:",                                                          # 4
        "  template:",                                                    # 5
        "    spec:",                                                      # 6
        f"      nodeSelector: {selector}",                                # 7
        "      containers:",                                              # 8
        "        - name: vllm",                                          # 9
        f"          image: {image}",                                      # 10
        f"          command: {cmd}",                                      # 11
        f"          resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}",   # 12
        f"          args: {json.dumps(args or [])}",                      # 13
        "          volumeMounts: [{name: dshm, mountPath: /dev/shm}]",    # 14
    ]
    if shm is not None:
        lines += ["      volumes:",                                                  # 15
                  "        - name: dshm",                                            # 16
                  "          emptyDir:",                                             # 17
                  "            medium: Memory",                                     # 18
                  f"            sizeLimit: {shm}"]                                   # 19
    return "\n".join(lines) + "\n"


def run(text: str, **opts):
    docs, problems = parse_text(text, "case.yaml")
    return evaluate(docs, problems, Options(**opts))


def lines_of(report, rule: str) -> list[int]:
    return sorted(f.line for f in report.findings if f.rule == rule)


SERVE = ["vllm", "serve", "Qwen/Qwen3-0.6B", "--max-model-len", "8192"]
TP2 = [*SERVE, "-tp", "2"]

# (rule, manifest, lines reported)
CASES = [
    ("invalid-quantity", deployment(TP2, gpus=2, shm="2GB"), [16]),
    ("invalid-quantity", deployment(TP2, gpus=2, shm="1e9"), []),
    ("invalid-quantity", deployment(TP2, gpus=2, shm="'+2Gi'"), []),
    ("shm-missing", deployment(TP2, gpus=2, shm="2GB"), []),  # an unreadable size is not "no shm"
    ("stray-serve-arg", deployment(["serve", "Qwen/Qwen3-0.6B", "--max-model-len", "8192"]), [ARGS_LINE]),
    ("stray-serve-arg", deployment(["Qwen/Qwen3-0.6B", "--max-model-len", "8192"]), []),
    ("stray-serve-arg", deployment(["serve", "Qwen/Qwen3-0.6B"], command=["vllm"]), []),
    ("stray-serve-arg", deployment(["serve", "Qwen/Qwen3-0.6B"], image="myorg/llm:1"), []),
    ("release-not-modelled", deployment(SERVE, image="vllm/vllm-openai:v0.6.6"), [9]),
    ("release-not-modelled", deployment(SERVE, image="vllm/vllm-openai:v9.0.0"), [9]),
    ("release-not-modelled", deployment(SERVE, image="vllm/vllm-openai:v0.33.0"), []),
    ("release-unknown", deployment(SERVE, image="myorg/vllm-build:prod-blue"), [9]),
    ("release-unknown", deployment(SERVE, image="vllm/vllm-openai:latest"), []),
    ("release-unknown", deployment(SERVE, image="vllm/vllm-openai"), []),
    ("release-unknown", deployment(SERVE, image="rocm/vllm:rocm6.3.1_vllm_0.10.1_20250101"), []),
    ("not-modelled", deployment([*SERVE, "--kv-transfer-config", "{}", "--mm-processor-kwargs", "{}"]),
     [ARGS_LINE, ARGS_LINE]),
    ("not-modelled", deployment([*SERVE, "--enable-lora", "--max-loras", "4"]), []),  # LoRA is modelled
    ("not-modelled", deployment(SERVE), []),
    # what the estimate names as not modelled reaches check too: an integrated GPU's host memory (GB10)
    ("estimate-not-modelled", deployment(SERVE, label="NVIDIA-GB10"), [ARGS_LINE]),
    ("estimate-not-modelled", deployment(SERVE), []),
    ("duplicate-flag", deployment([*SERVE, "--max-model-len", "4096"]), [ARGS_LINE]),
    ("duplicate-flag", deployment(["python3 -m vllm.entrypoints.openai.api_server --port 8080 "
                                   "--model Qwen/Qwen3-0.6B --max-model-len 8192"], command=["/bin/sh", "-c"]), []),
    ("duplicate-flag", deployment(["pip install x && python3 -m vllm.entrypoints.openai.api_server --port 8080 "
                                   "--model Qwen/Qwen3-0.6B"], command=["sh", "-c"]), []),
    # a refusal the estimate reproduces and no narrower rule names: --quantization awq on a 16-bit checkpoint
    ("vllm-refuses", deployment([*SERVE, "--quantization", "awq"]), [ARGS_LINE]),
    ("vllm-refuses", deployment([*SERVE, "--quantization", "fp8"]), []),  # online FP8 of a 16-bit checkpoint
    ("vllm-refuses", deployment([*SERVE, "--max-model-len", "1000000"]), []),  # max-model-len-over-limit's
    ("gpu-type-unknown", deployment(SERVE, label=None), [9]),
    ("gpu-type-unknown", deployment(SERVE), []),
]

PASSING = {rule for rule, _, want in CASES if not want}
FAILING = {rule for rule, _, want in CASES if want}


@pytest.mark.parametrize("rule,text,want", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rule_case(rule, text, want):
    report = run(text)
    assert lines_of(report, rule) == want, [(f.rule, f.line, f.message) for f in report.findings]


def test_shm_size_limit_1e9_is_one_gigabyte():
    from configurator.lint.find import extract

    docs, _ = parse_text(deployment(TP2, gpus=2, shm="1e9"), "case.yaml")
    (server,) = extract(docs)
    assert server.shm_bytes == 10**9 and server.shm_error is None
    report = run(deployment(TP2, gpus=2, shm="1e9"))
    # 1e9 B is below the 1 GiB minimum: the warning quotes the size as read, never "unlimited"
    (warn,) = [f for f in report.findings if f.rule == "shm-missing"]
    assert "0.93 GiB" in warn.message


def test_older_image_uses_the_oldest_release_and_its_defaults():
    from configurator.vllm.versions import OLDEST, behaviour

    report = run(deployment(SERVE, image="vllm/vllm-openai:v0.6.6"))
    (server,) = report.servers
    assert server.vllm_version == OLDEST
    assert server.flags["gpu_memory_utilization"] == behaviour(OLDEST).default_gpu_memory_utilization
    (f,) = [f for f in report.findings if f.rule == "release-not-modelled"]
    assert "0.6.6" in f.message and OLDEST in f.message


def test_unknown_flag_reports_vllms_words_and_the_nearest_flag(monkeypatch):
    """Server.unknown (filled by flags.parse_args from the release's option table) becomes an error at its line."""
    import configurator.lint.command as command_mod
    from configurator.vllm.flags import ParsedArgs, UnknownArg, parse_args

    def with_unknown(tokens, version=None):
        parsed = parse_args(tokens, version)
        bad = [UnknownArg(t, i, "--max-model-len") for i, t in enumerate(tokens) if t == "--max-modle-len"]
        return ParsedArgs(parsed.occurrences, parsed.unmodelled, tuple(bad))

    monkeypatch.setattr(command_mod, "parse_args", with_unknown)
    report = run(deployment(["vllm", "serve", "Qwen/Qwen3-0.6B", "--max-modle-len", "8192"]))
    (f,) = [f for f in report.findings if f.rule == "unknown-flag"]
    assert f.severity == "error" and f.line == ARGS_LINE
    assert "unrecognized arguments: --max-modle-len" in f.message and "did you mean --max-model-len" in f.message
    assert lines_of(run(deployment(SERVE)), "unknown-flag") == []


def test_not_understood_objects_become_info_findings_and_are_counted(monkeypatch):
    import configurator.lint.engine as engine
    from configurator.lint.extract import NotUnderstood
    from configurator.lint.find import extract
    from configurator.lint.load import Loc

    def extract_all(docs, assumed_release=None):
        return extract(docs), [NotUnderstood(Loc("case.yaml", 3), "RayService", "llm", "no vLLM app in serveConfigV2")]

    monkeypatch.setattr(engine, "extract_all", extract_all)
    report = run(deployment(SERVE))
    (f,) = [f for f in report.findings if f.rule == "not-understood"]
    assert f.severity == "info" and f.line == 3 and "serveConfigV2" in f.message
    assert f.object.kind == "RayService"
    assert report.summary.not_understood == 1 and report.summary.servers_found == 1
    monkeypatch.undo()
    assert lines_of(run(deployment(SERVE)), "not-understood") == []


def test_a_verdict_inside_the_band_is_a_warning_not_an_error(monkeypatch):
    """estimate's verdict: refused -> the refusal rules' errors; at-risk -> one memory-at-risk warning with the band."""
    import configurator.lint.engine as engine

    args = ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "40960", "--gpu-memory-utilization", "0.9"]
    refused = run(deployment(args))
    assert refused.servers[0].verdict == "refused"
    assert lines_of(refused, "kv-cache-too-small") and not lines_of(refused, "memory-at-risk")

    real = engine.estimate
    gib = 1 << 30

    def banded(req):
        r = real(req)
        return dataclasses.replace(r, verdict="at-risk", kv_cache_bytes_low=r.memory.kv_cache_bytes - gib,
                                   kv_cache_bytes_high=r.memory.kv_cache_bytes + 3 * gib)

    monkeypatch.setattr(engine, "estimate", banded)
    risky = run(deployment(args))
    assert risky.servers[0].verdict == "at-risk"
    assert not [f for f in risky.findings if f.severity == "error"]
    (w,) = [f for f in risky.findings if f.rule == "memory-at-risk"]
    assert w.severity == "warning" and w.line == ARGS_LINE and "between" in w.message and "GiB" in w.message
    assert risky.servers[0].kv_cache_bytes_high - risky.servers[0].kv_cache_bytes_low == 4 * gib
    monkeypatch.undo()
    assert lines_of(run(deployment(SERVE)), "memory-at-risk") == []


def test_no_gpu_type_is_judged_on_the_catalog():
    from configurator.estimate import EstimateRequest, estimate
    from configurator.hardware.catalog import find_gpu, list_gpus

    report = run(deployment(["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "8192"], label=None))
    (server,) = report.servers
    cat = server.catalog
    assert server.verdict == "not-checked" and cat is not None
    every = {g.name for g in list_gpus()}
    assert set(cat.fits) | set(cat.at_risk) | set(cat.refused) == every
    assert not set(cat.fits) & set(cat.refused)
    # each verdict is what `estimate` says on that GPU
    for name in ("l4", "t4", "h100-80gb"):
        r = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu=name, vllm_version=server.vllm_version,
                                     flags={"max_model_len": 8192}))
        assert (name in cat.fits) == (r.verdict == "fits")
    # the memory needed is no more than the smallest GPU it fits on holds
    smallest = min((find_gpu(n) for n in cat.fits), key=lambda g: g.total_bytes)
    assert 0 < cat.needs_bytes_per_gpu <= smallest.total_bytes
    (f,) = [f for f in report.findings if f.rule == "gpu-type-unknown"]
    assert f"{smallest.name}" in f.message and "refused on" in f.message and "data-centre" in f.message
    assert "workstation / consumer" in f.message  # the RTX cards are grouped apart


def test_catalog_evaluation_is_cached_across_identical_servers():
    text = "---\n".join(deployment(SERVE, label=None, name=f"s{i}") for i in range(3))
    report = run(text)
    assert len(report.servers) == 3 and all(s.catalog is not None for s in report.servers)


def test_a_problem_that_names_its_rule_is_reported_under_it():
    """lint/render.py reports unrendered templates as Problems carrying rule = template-not-rendered (info)."""
    from dataclasses import dataclass

    from configurator.lint.load import Loc, Problem

    @dataclass(frozen=True)
    class Note(Problem):
        rule: str = "template-not-rendered"

    report = evaluate([], [Note(Loc("chart/templates/x.yaml", 1), "a template"),
                           Problem(Loc("bad.yaml", 2), "not valid YAML")], Options())
    assert [(f.rule, f.severity) for f in report.findings] == [("parse-error", "error"),
                                                                ("template-not-rendered", "info")]


def _affinity_deployment(products: list[str], args: list[str]) -> str:
    """A Deployment whose pod may land on any of `products` (a required node affinity `In [...]`)."""
    text = deployment(args, label=None)
    affinity = ("      affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
                "[{matchExpressions: [{key: nvidia.com/gpu.product, operator: In, values: "
                + json.dumps(products) + "}]}]}}}\n")
    return text.replace("      nodeSelector: {}\n", "      nodeSelector: {}\n" + affinity)


def test_a_refusal_only_on_the_smallest_allowed_gpu_is_a_warning_and_on_all_an_error():
    """An error means vLLM surely refuses: where the scheduler may pick a GPU it starts on, a memory refusal on the
    smallest allowed GPU is the gpu-choice-refused warning (the SkyPilot {L4, ..., A100-80GB} set of the real
    corpus: tests/corpus/real/skypilot-org-skypilot/gemma-serve.yaml); where it refuses on every one, an error."""
    args = ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "40960", "--max-num-seqs", "4"]
    either = run(_affinity_deployment(["NVIDIA-L4", "NVIDIA-A100-SXM4-80GB"], args))
    rules = {f.rule: f for f in either.findings}
    assert "kv-cache-too-small" not in rules and "gpu-choice-refused" in rules
    assert rules["gpu-choice-refused"].severity == "warning" and "a100-80gb" in rules["gpu-choice-refused"].message
    assert not any(f.severity == "error" for f in either.findings)
    only_small = run(_affinity_deployment(["NVIDIA-L4", "NVIDIA-A10G"], args))
    assert "kv-cache-too-small" in {f.rule for f in only_small.findings if f.severity == "error"}
    assert "gpu-choice-refused" not in {f.rule for f in only_small.findings}


def test_the_official_image_names_the_profiling_sampler_of_0_9_to_0_11():
    """vLLM 0.9.0-0.11.0 profiles with FlashInfer's sampler where FlashInfer is installed: the official image
    ships it (its figure is then the estimate), a custom image may not (the native sampler's figure, with the
    band's high end reaching FlashInfer's)."""
    args = ["vllm", "serve", "Qwen/Qwen3-8B"]
    official = run(deployment(args, image="vllm/vllm-openai:v0.10.2", label="NVIDIA-H100-80GB-HBM3")).servers[0]
    custom = run(deployment(args, image="myorg/vllm:v0.10.2", label="NVIDIA-H100-80GB-HBM3")).servers[0]
    assert official.vllm_version == custom.vllm_version == "0.10.2"
    assert official.kv_cache_bytes > custom.kv_cache_bytes  # FlashInfer's sampler peaks lower: more KV
    assert "FlashInfer" in (custom.band_basis or "") and "FlashInfer" not in (official.band_basis or "")
    assert official.kv_cache_bytes_high == custom.kv_cache_bytes_high
