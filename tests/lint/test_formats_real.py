"""`check` on real published manifests (tests/corpus/real): issue 10's targets, and what each new
format reads, at the line it is written on."""

import re
from pathlib import Path

import pytest
import yaml

from configurator.lint.find import extract_all
from configurator.lint.render import Tools, load_paths
from tests.conftest import ROOT, load_benchmark

CORPUS = ROOT / "tests" / "corpus" / "real"


def _extract(rel: str):
    docs, problems = load_paths([str(CORPUS / rel)], tools=Tools(None, None))
    servers, not_understood = extract_all(docs)
    return servers, not_understood, problems


def _line(rel: str, pattern: str) -> int:
    """1-based line of the first match of `pattern` in a corpus file."""
    text = (CORPUS / rel).read_text()
    return text[: re.search(pattern, text, re.M).start()].count("\n") + 1


def test_corpus_meets_issue_10_targets():
    bench = load_benchmark("real_corpus")
    results = bench.evaluate()
    s = bench.summary(results)
    wrong = [f"{r.file}: {w}" for r in results for w in r.wrong]
    assert s["share"] >= bench.TARGET_RIGHT, wrong
    assert s["silent"] == []
    assert s["not_understood_mismatch"] == []


def test_corpus_provenance_is_complete():
    files = sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.suffix in (".yaml", ".yml", ".json")
                   and p.name != "expected.yaml")
    expected = yaml.safe_load((CORPUS / "expected.yaml").read_text())["files"]
    sources = (CORPUS / "SOURCES.md").read_text()
    assert sorted(expected) == files
    assert all(f"`{f}`" in sources for f in files)
    assert len(files) >= 80 and len({f.split("/")[0] for f in files}) >= 30  # issue 26
    assert len(re.findall(r"`[0-9a-f]{40}`", sources)) == len(files)  # a commit per file
    assert sum(p.stat().st_size for p in CORPUS.rglob("*")) < 512 << 10


def test_kubeai_flags_and_profile_at_their_lines():
    rel = "substratusai-kubeai/qwen2.5-7b-instruct-l4.yaml"
    [s], _, _ = _extract(rel)
    assert s.flag_locs["kv_cache_dtype"].line == _line(rel, r"--kv-cache-dtype")
    assert s.flag_locs["model"].line == _line(rel, r"^  url:")
    assert s.gpu_loc.line == _line(rel, r"resourceProfile")
    assert s.env["VLLM_ATTENTION_BACKEND"] == "FLASHINFER"


def test_llminferenceservice_unresolved_baseref_is_reported_at_its_line():
    rel = "kserve-kserve/llmisvc-gpt-oss-inference_default.yaml"
    servers, nu, _ = _extract(rel)
    assert [s.flags["model"] for s in servers] == ["RedHatAI/gpt-oss-20b"]
    [ref] = [n for n in nu if "LLMInferenceServiceConfig" in n.reason]
    assert "llmisvc-intelligent-inference-scheduling" in ref.reason
    assert ref.loc.line == _line(rel, r"- name: llmisvc-intelligent")


def test_llminferenceservice_additional_args_and_speculator():
    rel = "kserve-kserve/llmisvc-dp-ep-multi-qwen-gpu-simple.yaml"
    [s], _, _ = _extract(rel)
    assert s.flags["gpu_memory_utilization"] == 0.85 and s.flags["max_model_len"] == 8192
    assert s.flag_locs["max_model_len"].line == _line(rel, r"VLLM_ADDITIONAL_ARGS") + 1
    assert s.flags["data_parallel_size"] == 16 and s.pods == 2  # data 16 over dataLocal 8: two pods
    [s], _, _ = _extract("kserve-kserve/llmisvc-A10-ngram.yaml")
    assert [u for u, _ in s.unmodelled] == ["--speculative-config"]


def test_runtime_options_are_not_read_as_vllm_flags():
    for rel in ("kserve-website/hf-vllm_runtime.yaml", "ai-dynamo-dynamo/vllm-disagg.yaml"):
        servers, _, _ = _extract(rel)
        assert servers and all(not s.unknown and not s.notes for s in servers), rel


@pytest.mark.parametrize(("rel", "reason"), [
    ("kserve-kserve/kserve-vllmserver.yaml", "is a template"),
    ("awslabs-ai-on-eks/values.yaml", "inference.framework: not set"),
    ("kserve-website/hf-python_runtime.yaml", "mentions vLLM"),
])
def test_no_server_is_said_with_a_reason(rel, reason):
    servers, nu, _ = _extract(rel)
    assert servers == [] and any(reason in n.reason for n in nu), [n.reason for n in nu]


@pytest.mark.parametrize("rel", ["substratusai-kubeai/gemma-27b-ollama-l4.yaml",
                                 "kaito-project-kaito/kaito_workspace_gpt_oss_20b.yaml",
                                 "kserve-kserve/hf_isvc.yaml"])
def test_other_engines_are_neither_servers_nor_findings(rel):
    assert _extract(rel)[:2] == ([], [])


def test_ray_serve_config_flags_point_into_the_file():
    rel = "ray-project-kuberay/ray-service.llm-serve.yaml"
    [s], _, _ = _extract(rel)
    assert s.flag_locs["max_model_len"].line == _line(rel, r"max_model_len:")
    assert s.flag_locs["model"].line == _line(rel, r"model_source:")
    rel = "ray-project-kuberay/ray-service.vllm.yaml"
    [s], _, _ = _extract(rel)
    assert s.flag_locs["tensor_parallel_size"].line == _line(rel, r"TENSOR_PARALLELISM:")


def test_instance_types_name_the_gpu():
    from configurator.hardware.labels import gpu_from_labels

    [s], _, _ = _extract("awslabs-ai-on-eks/values-llama-4-scout-17b-lws-vllm-efa.yaml")
    assert gpu_from_labels(s.gpu_labels)[0].name == "l4" and s.pods == 2
    [s], _, _ = _extract("kaito-project-kaito/kaito_workspace_llama-3.1_8b_instruct.yaml")
    assert gpu_from_labels(s.gpu_labels)[0].name == "a100-80gb" and s.gpu_count == 4


def test_raw_template_in_the_corpus_is_not_a_parse_error():
    _, _, problems = _extract("awslabs-ai-on-eks/templates-lws-deployment.yaml")
    assert [getattr(p, "rule", "parse-error") for p in problems] == ["template-not-rendered"]


def test_real_corpus_runs_through_check_without_parse_errors():
    from click.testing import CliRunner

    from configurator.cli.main import cli

    result = CliRunner().invoke(cli, ["check", str(CORPUS), "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    assert "parse-error" not in result.output and "Traceback" not in result.output
    assert Path(CORPUS).is_dir()
