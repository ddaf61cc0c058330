"""Issue 26: parallelism read where the controller reads it, generic discovery of vLLM servers in any
document, GPU names the catalog lacks, and the not-understood noise. Real files from tests/corpus/real."""

from __future__ import annotations

import pytest

from configurator.lint.engine import Options, evaluate
from configurator.lint.extract import extract_all
from configurator.lint.load import load, parse_text
from tests.conftest import ROOT
from tests.lint.test_rules import deployment

CORPUS = ROOT / "tests" / "corpus" / "real"


def _check(text: str, name: str = "x.yaml", **opts):
    docs, problems = parse_text(text, name)
    return evaluate(docs, problems, Options(**opts))


def _check_file(rel: str, **opts):
    docs, problems = load([str(CORPUS / rel)])
    return evaluate(docs, problems, Options(**opts))


def _rules(report) -> list[str]:
    return [f.rule for f in report.findings]


# -- item 3: parallelism from where the controller reads it -----------------------------------------------

def test_llmisvc_data_parallel_expert_group_is_not_a_gpu_mismatch():
    # data 16, dataLocal 8, expert: true, tensor 1, on 2 pods of 8 GPUs: every pod runs 8 local DP ranks
    # (kserve config-llm-worker-data-parallel.yaml); before: "TP 1 x PP 1 = 1 GPU, but 16 are available"
    report = _check_file("kserve-kserve/llmisvc-dp-ep-multi-qwen-gpu-simple.yaml")
    assert "parallelism-gpu-mismatch" not in _rules(report)
    servers, _ = extract_all(load([str(CORPUS / "kserve-kserve/llmisvc-dp-ep-multi-qwen-gpu-simple.yaml")])[0])
    s = servers[0]
    assert (s.flags["data_parallel_size"], s.dp_local, s.pods, s.gpu_count) == (16, 8, 2, 8)
    assert s.flags.get("enable_expert_parallel") is True


def test_llmisvc_data_parallel_with_too_few_gpus_is_still_an_error():
    text = (CORPUS / "kserve-kserve/llmisvc-dp-ep-multi-qwen-gpu-simple.yaml").read_text()
    text = text.replace('nvidia.com/gpu: "8"', 'nvidia.com/gpu: "4"')
    assert "parallelism-gpu-mismatch" in _rules(_check(text))


def test_llm_d_vllm_serve_takes_tensor_parallel_size_from_parallelism():
    # the chart writes --tensor-parallel-size <parallelism.tensor> itself (vllmServeModelCommand); the file's
    # own `--tensor-parallel-size 4` args removed, the server is still TP 4 on 4 derived GPUs
    text = (CORPUS / "llm-d-llm-d/ms-pd-values.yaml").read_text()
    text = text.replace('      - "--tensor-parallel-size"\n      - "4"\n', "")
    docs, _ = parse_text(text, "ms-pd-values.yaml")
    servers, _ = extract_all(docs)
    prefill = next(s for s in servers if s.name == "prefill")
    assert prefill.flags["tensor_parallel_size"] == 4 and prefill.gpu_count == 4
    assert "parallelism-gpu-mismatch" not in _rules(evaluate(docs, [], Options()))


def test_llm_d_data_local_parallelism_derives_gpus_and_flags():
    text = (CORPUS / "llm-d-llm-d/ms-pd-values.yaml").read_text()
    text = text.replace("    tensor: 4\n    data: 1\n", "    tensor: 2\n    data: 8\n    dataLocal: 4\n")
    text = text.replace('      - "--tensor-parallel-size"\n      - "4"\n', "")
    docs, _ = parse_text(text, "ms-pd-values.yaml")
    prefill = next(s for s in extract_all(docs)[0] if s.name == "prefill")
    assert (prefill.flags["tensor_parallel_size"], prefill.flags["data_parallel_size"], prefill.dp_local,
            prefill.gpu_count) == (2, 8, 4, 4)
    # the chart keeps the user's nvidia.com/gpu: "4" ("Accelerator mismatch ... Using 4"): 8 local GPUs needed
    assert "parallelism-gpu-mismatch" in _rules(evaluate(docs, [], Options()))
    text = text.replace('        nvidia.com/gpu: "4"\n', "")  # no limits: the chart requests tensor x dataLocal
    docs, _ = parse_text(text, "ms-pd-values.yaml")
    prefill = next(s for s in extract_all(docs)[0] if s.name == "prefill")
    assert prefill.gpu_count == 8 and "llm-d" in prefill.gpu_count_source
    assert "parallelism-gpu-mismatch" not in _rules(evaluate(docs, [], Options()))


@pytest.mark.parametrize("args,gpus,bad", [
    (["--data-parallel-size", "8"], 8, False),                      # DP 8 in one pod: 8 GPUs
    (["--data-parallel-size", "4", "--tensor-parallel-size", "2"], 8, False),
    (["--data-parallel-size", "4", "--enable-expert-parallel"], 4, False),  # EP adds no GPUs
    (["--data-parallel-size", "4", "--enable-expert-parallel"], 8, True),
    (["--data-parallel-size", "16", "--data-parallel-size-local", "8"], 8, False),  # one node of two
    (["--data-parallel-size", "4", "--data-parallel-rank", "$(RANK)"], 1, False),  # external LB, a rank a pod
    (["--tensor-parallel-size", "2"], 8, True),
    (["--data-parallel-size", "$((LWS_GROUP_SIZE * DP_SIZE_LOCAL))"], 8, False),  # not known here: not judged
])
def test_gpus_per_replica_is_tp_x_pp_x_dp(args, gpus, bad):
    report = _check(deployment(["--model", "Qwen/Qwen3-0.6B", *args], gpus=gpus, shm="1Gi"))
    assert ("parallelism-gpu-mismatch" in _rules(report)) is bad, [f.message for f in report.findings]


def test_kaito_data_parallel_preset_is_not_a_gpu_mismatch():
    for path in sorted((CORPUS / "kaito-project-kaito").glob("*.yaml")):
        assert "parallelism-gpu-mismatch" not in _rules(_check_file(str(path.relative_to(CORPUS))))
