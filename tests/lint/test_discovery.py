"""Issue 26: parallelism read where the controller reads it, generic discovery of vLLM servers in any
document, GPU names the catalog lacks, and the not-understood noise. Real files from tests/corpus/real."""

from __future__ import annotations

from pathlib import Path

import pytest

from configurator.lint.engine import Options, evaluate
from configurator.lint.find import extract_all
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


def test_llmisvc_dp_32_ep_on_4_pods_of_8_gpus():
    # issue 26's case: data 32, dataLocal 8, expert: 4 pods of 8 GPUs serve one replica
    text = (CORPUS / "kserve-kserve/llmisvc-dp-ep-multi-qwen-gpu-simple.yaml").read_text()
    text = text.replace("data: 16", "data: 32")
    docs, _ = parse_text(text, "x.yaml")
    s = extract_all(docs)[0][0]
    assert (s.flags["data_parallel_size"], s.dp_local, s.pods, s.gpu_count) == (32, 8, 4, 8)
    assert "parallelism-gpu-mismatch" not in _rules(evaluate(docs, [], Options()))


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


# -- item 4: generic discovery first, plugins second ------------------------------------------------------

def _servers(rel: str):
    docs, _ = load([str(CORPUS / rel)])
    return extract_all(docs)


def _view(s) -> tuple:
    return (s.flags.get("model"), s.gpu_count, s.flags.get("tensor_parallel_size", 1),
            s.flags.get("max_model_len"), s.flags.get("gpu_memory_utilization"))


def test_compose_command_list_image_entrypoint_and_device_count():
    # vllm/vllm-openai's entrypoint runs vLLM: `command` is its arguments; count: all narrowed by
    # CUDA_VISIBLE_DEVICES=0 (environment as a list)
    servers, nu = _servers("cloud-linuxer-gpt-oss/docker-compose.gpt-oss-20b.yml")
    assert [_view(s) for s in servers] == [("openai/gpt-oss-20b", 1, 1, 128000, 0.9)] and nu == []
    assert servers[0].kind == "compose service" and servers[0].name == "vllm"
    assert servers[0].shm_bytes == 16 << 30  # shm_size: '16gb'


def test_compose_defaults_are_taken_with_an_info_finding():
    # every value is `${VAR:-default}`: taken at its default, and said so
    rel = "cloud-linuxer-gpt-oss/vllm-docker-compose.yml"
    servers, _ = _servers(rel)
    assert [_view(s) for s in servers] == [("facebook/opt-125m", 1, 1, 4096, 0.9)]
    report = _check_file(rel)
    assumed = [f for f in report.findings if f.rule == "value-assumed"]
    assert assumed and all(f.severity == "info" for f in assumed)
    assert any("taken as 'facebook/opt-125m'" in f.message for f in assumed)


def test_compose_entrypoint_list_and_a_model_left_to_the_environment():
    servers, _ = _servers("napthaai-node/DeepSeek-R1-Distill-Qwen-32B.yml")
    assert [_view(s) for s in servers] == [("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", None, 2, 131072, 0.98)]
    assert servers[0].shm_bytes == 0  # ipc: host
    servers, nu = _servers("sko00o-playground/vllm-docker-compose.yml")  # --model $MODEL, no value in the file
    assert servers == [] and len(nu) == 1 and "$MODEL" in nu[0].reason


def test_a_variable_value_is_left_out_not_an_invalid_flag():
    # dstack: `--tensor-parallel $DSTACK_GPUS_NUM` is the GPU count dstack sets (resources.gpu MI300X:8)
    servers, _ = _servers("dstackai-dstack/120b.dstack.yml")
    assert [_view(s) for s in servers] == [("openai/gpt-oss-120b", 8, 8, None, None)]
    report = _check_file("dstackai-dstack/120b.dstack.yml")
    assert "invalid-flag" not in _rules(report) and "parallelism-gpu-mismatch" not in _rules(report)


def test_skypilot_accelerators_and_run_block():
    servers, _ = _servers("skypilot-org-skypilot/kimi-k2.sky.yaml")  # H100:8 x 2 nodes, TP/PP from its env
    s = servers[0]
    assert _view(s)[:3] == ("moonshotai/Kimi-K2-Instruct", 8, 8) and s.flags["pipeline_parallel_size"] == 2
    from configurator.hardware.labels import gpu_from_labels

    assert gpu_from_labels(s.gpu_labels)[0].name == "h100-80gb"


def test_engine_arguments_in_any_case_style():
    # a `vllm serve --config` file in kebab case; Ray Serve LLM engine_kwargs in snake case; camelCase
    servers, _ = _servers("runpod-workers-worker-vllm/qwen3_8b.yaml")
    assert [_view(s) for s in servers] == [("Qwen/Qwen3-8B", None, 1, 8192, 0.95)]
    assert servers[0].flags["kv_cache_dtype"] == "fp8"
    servers, _ = _servers("anyscale-examples/wide_ep_fault_tolerance-service.yaml")
    assert _view(servers[0])[:2] == ("microsoft/Phi-tiny-MoE-instruct", 1)
    docs, _ = parse_text("platform:\n  model: Qwen/Qwen3-8B\n"
                         "  vllmConfig: {maxModelLen: 4096, gpuMemoryUtilization: 0.8}\n"
                         "  resources: {accelerators: 'L4:1'}\n", "p.yaml")
    servers, _ = extract_all(docs)
    assert [_view(s) for s in servers] == [("Qwen/Qwen3-8B", 1, 1, 4096, 0.8)]


def test_yaml_held_in_a_string_is_read_at_its_lines():
    # Dynamo SDK graph configs in a values string: one server per GPU worker (workers: 2 -> two)
    rel = "tkestack-tke-ai-playbook/qwen3-32b-dynamo-vllm-pd-values.yaml"
    servers, _ = _servers(rel)
    assert [(_view(s)[:3]) for s in servers] == [("/data/models/Qwen/Qwen3-32B", 4, 4)] * 4
    text = (CORPUS / rel).read_text().splitlines()
    assert "model: /data/models/Qwen/Qwen3-32B" in text[servers[0].flag_locs["model"].line - 1]


def test_instance_type_names_the_gpu():
    docs, _ = parse_text("cluster:\n  instance_type: g6e.12xlarge\n  run: vllm serve Qwen/Qwen3-8B\n", "x.yaml")
    from configurator.hardware.labels import gpu_from_labels

    assert gpu_from_labels(extract_all(docs)[0][0].gpu_labels)[0].name == "l40s"


def test_github_workflow_steps_and_docker_run():
    servers, _ = _servers("deepset-ai-haystack-core-integrations/github-workflow-vllm.yml")  # ${{ env.X }} models
    assert [s.flags.get("model") for s in servers] == ["Qwen/Qwen3-0.6B", "sentence-transformers/all-MiniLM-L6-v2",
                                                       "BAAI/bge-reranker-base"]
    assert "unknown-flag" not in _rules(_check_file("deepset-ai-haystack-core-integrations/github-workflow-vllm.yml"))
    servers, _ = _servers("meta-llama-llama-stack/setup-vllm-action.yml")  # docker run <vllm image> --model ...
    assert [s.flags.get("model") for s in servers] == ["/root/.cache/Llama-3.2-1B-Instruct"]


def test_prose_that_names_the_command_is_not_a_server():
    docs, _ = parse_text("description: 'Run vllm serve Qwen/Qwen3-8B to start it'\n", "x.yaml")
    assert extract_all(docs)[0] == []
    docs, _ = parse_text("run: |\n  CUDA_VISIBLE_DEVICES=0,1 nohup uv run vllm serve Qwen/Qwen3-8B -tp 2 &\n", "x.yaml")
    assert [s.flags for s in extract_all(docs)[0]] == [{"model": "Qwen/Qwen3-8B", "tensor_parallel_size": 2}]


def test_embedded_objects_go_to_their_plugin():
    # an OpenShift Template holding a KServe ServingRuntime on /mnt/models: the runtime plugin's finding
    servers, nu = _servers("opendatahub-io-odh-model-controller/vllm-cuda-template.yaml")
    assert servers == [] and len(nu) == 1
    servers, _ = _servers("jkwong888-gke-kueue-dws/llama3-knative-service.yaml")  # a Knative Service's pod
    assert [s.flags.get("model") for s in servers] == ["meta-llama/Meta-Llama-3.1-8B-Instruct"]


def test_mappings_that_merely_look_like_flags_are_not_servers():
    # expected.yaml's own `flags:` mappings beside a `model:` are not engine arguments
    docs, _ = load([str(CORPUS / "expected.yaml")])
    assert extract_all(docs)[0] == []
    docs, _ = parse_text("defaults:\n  max_model_len: 4096\n  gpu_memory_utilization: 0.9\n", "x.yaml")
    assert extract_all(docs) == ([], [])


# -- item 5: the catalog, labels it lacks, accelerators it does not model -----------------------------------

@pytest.mark.parametrize("label,name", [("NVIDIA-A40", "a40"), ("NVIDIA-A30", "a30"), ("NVIDIA-RTX-A6000", "rtx-a6000"),
                                        ("NVIDIA-L20", "l20"), ("NVIDIA-H800", "h800"),
                                        ("NVIDIA-A800-SXM4-80GB", "a800-80gb"), ("NVIDIA-H200-NVL", "h200-nvl"),
                                        ("NVIDIA-GeForce-RTX-5080", "rtx-5080")])
def test_new_catalog_gpus_are_found_by_their_gfd_label(label, name):
    report = _check(deployment(["--model", "Qwen/Qwen3-0.6B"], label=label))
    assert report.servers[0].gpu == name and report.servers[0].verdict != "not-checked"


def test_amd_gpus_by_name():
    from configurator.hardware.catalog import find_gpu

    assert find_gpu("mi250").total_bytes == 68702699520  # rocm-smi per GCD
    assert find_gpu("AMD Instinct MI355X").compute_capability == "gfx950"


def test_a_label_the_catalog_lacks_is_named():
    report = _check(deployment(["--model", "Qwen/Qwen3-0.6B"], label="NVIDIA-A16"))
    f = next(f for f in report.findings if f.rule == "gpu-type-unknown")
    assert f.message.startswith("GPU NVIDIA-A16 is not in the catalog; map it in the config's gpus: or pass "
                                "--gpu-memory") and "no GPU type given" not in f.message
    assert f.line == 7  # the nodeSelector that names it


@pytest.mark.parametrize("resource", ["google.com/tpu", "habana.ai/gaudi"])
def test_tpu_and_gaudi_are_not_judged_as_gpus(resource):
    text = deployment(["--model", "Qwen/Qwen3-0.6B", "--tensor-parallel-size", "8"], label=None, shm="1Gi")
    text = text.replace("nvidia.com/gpu: 1", f"{resource}: 4")
    report = _check(text)
    rules = _rules(report)
    assert "accelerator-not-modelled" in rules and "gpu-type-unknown" not in rules
    assert report.servers[0].catalog is None and report.servers[0].verdict == "not-checked"
    assert not [f for f in report.findings if f.severity == "error"]


# -- item 6: the noise items ----------------------------------------------------------------------------------

def test_objects_that_merely_name_vllm_say_nothing():
    # a Service and a router's ConfigMap that name vLLM; this repository's own webhook chart values (its image is
    # vllm-configurator) and pre-commit hooks: none deploys vLLM, so none is not-understood
    text = ("apiVersion: v1\nkind: Service\nmetadata: {name: vllm}\nspec: {selector: {app: vllm}}\n---\n"
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: router}\ndata: {backend: 'http://vllm:8000'}\n")
    assert _check(text).findings == []
    docs, problems = load([str(ROOT / "charts/vllm-configurator-webhook/values.yaml"),
                           str(ROOT / ".pre-commit-hooks.yaml")])
    report = evaluate(docs, problems, Options())
    assert [f for f in report.findings if f.rule == "not-understood"] == []


def test_a_config_map_that_holds_a_vllm_command_is_still_reported():
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: start}\n"
            "data: {run.sh: 'vllm serve Qwen/Qwen3-8B --max-model-len 4096'}\n")
    assert _rules(_check(text)) == ["not-understood"]


def test_not_understood_once_per_file():
    text = "a: {image: vllm/vllm-openai:v0.9.0}\n---\nb: {image: vllm/vllm-openai:v0.9.0}\n"
    report = _check(text)
    assert _rules(report) == ["not-understood"] and report.summary.not_understood == 1


@pytest.mark.parametrize("mml,want", [("32768", "typical request of 33,792"), ("65536", "longest request of 131,072"),
                                      ("131072", None)])
def test_long_context_workload_checks_max_model_len(mml, want):
    report = _check(deployment(["--model", "Qwen/Qwen3-8B", "--max-model-len", mml], label="NVIDIA-H100-80GB-HBM3"),
                    workload="long-context")
    hits = [f for f in report.findings if f.rule == "context-below-workload"]
    assert [want in f.message for f in hits] == ([True] if want else [])
    assert all(f.severity == "warning" and f.line == 13 for f in hits)


# -- item 7: every error on the corpus is recorded, with its evidence -------------------------------------------

def test_every_error_on_the_corpus_is_recorded_with_its_evidence():
    import yaml

    from configurator.lint.render import Tools, load_paths

    docs, problems = load_paths([str(CORPUS)], tools=Tools(None, None))
    report = evaluate(docs, problems, Options())
    found = {(str(Path(f.file).resolve().relative_to(CORPUS.resolve())), f.rule, f.line)
             for f in report.findings if f.severity == "error"}
    files = yaml.safe_load((CORPUS / "expected.yaml").read_text())["files"]
    listed = {(rel, e["rule"], e["line"]): e for rel, want in files.items() for e in (want or {}).get("errors", [])}
    assert found <= set(listed), found - set(listed)  # no error the corpus record does not judge
    assert all(len(e["evidence"]) > 80 and isinstance(e["right"], bool) for e in listed.values())
    # a right error stays (its evidence holds); every error check makes on the corpus is right: the false errors
    # recorded from before issue 26 (a flag a later release removed, where the file names no release) are gone
    assert {k for k, e in listed.items() if e["right"]} <= found
    assert [k for k in found if not listed[k]["right"]] == []
    assert all("issue 26" in e["evidence"].lower() for e in listed.values() if not e["right"])
    assert not [f for f in report.findings if f.file.endswith("expected.yaml")]


def test_dstack_command_lines_and_a_gpu_given_by_memory():
    # `commands: [pip install vllm, vllm serve $MODEL_ID ...]` is a list of command lines, not an argv; `gpu: 24GB`
    # is one GPU of at least 24 GB (dstack's run plan prints `1xGPU (24GB)`), so -tp $DSTACK_GPUS_NUM is 1
    servers, _ = _servers("dstackai-dstack/inference-vllm.dstack.yml")
    assert [(s.flags.get("model"), s.gpu_count, s.flags.get("tensor_parallel_size")) for s in servers] == [
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", 1, 1)]
    assert not servers[0].gpu_labels  # a memory size names no GPU
    docs, _ = parse_text("resources: {gpu: 40GB..48GB}\ncommands: [vllm serve Qwen/Qwen3-8B]\n", "x.yaml")
    assert [s.gpu_count for s in extract_all(docs)[0]] == [1]
    # an argv whose first word is a program stays an argv
    docs, _ = parse_text("command: [vllm, serve, Qwen/Qwen3-8B, --max-model-len, '4096']\n", "x.yaml")
    assert [s.flags.get("max_model_len") for s in extract_all(docs)[0]] == [4096]


def test_a_shell_c_start_command_and_a_named_accelerator_count_one():
    # Baseten Truss: start_command `sh -c "HF_TOKEN=$(cat ...) vllm serve ..."`, accelerator H100_40GB (no count)
    servers, _ = _servers("basetenlabs-truss-examples/vllm_server-config.yaml")
    s = servers[0]
    assert (s.flags.get("model"), s.gpu_count, s.flags.get("max_model_len")) == (
        "meta-llama/Llama-3.1-8B-Instruct", 1, 65536)
    rules = _rules(_check_file("basetenlabs-truss-examples/vllm_server-config.yaml"))
    assert "invalid-flag" not in rules and "unknown-flag" not in rules
    docs, _ = parse_text("resources: {accelerators: A100}\nrun: vllm serve Qwen/Qwen3-8B\n", "x.yaml")
    assert [s.gpu_count for s in extract_all(docs)[0]] == [1]  # SkyPilot: "simply <name>, short for a count of 1"


def test_triton_model_json_is_engine_arguments_beside_a_model():
    servers, _ = _servers("triton-inference-server-vllm_backend/vllm_model-model.json")
    assert [(s.flags.get("model"), s.flags.get("gpu_memory_utilization"), s.gpu_count) for s in servers] == [
        ("facebook/opt-125m", 0.5, None)]


def test_skypilot_sets_of_alternatives_without_counts_and_a_bare_family_name():
    from configurator.hardware.labels import gpu_from_labels

    # `{L4, A10g, A10, L40, A40, A100, A100-80GB}`: names without counts, one GPU each (TP from it: 1)
    s = _servers("skypilot-org-skypilot/qwen25-7b.yaml")[0][0]
    assert (s.gpu_count, s.flags.get("tensor_parallel_size")) == (1, 1)
    # `{A100:8, A100-80GB:4, A100-80GB:8}`: beside A100-80GB the bare A100 is the 40 GB part, the smallest judged
    s = _servers("skypilot-org-skypilot/qwen25-72b.yaml")[0][0]
    assert (s.gpu_count, gpu_from_labels(s.gpu_labels)[0].name) == (8, "a100-40gb")
    docs, _ = parse_text("resources: {accelerators: A100:8}\nrun: vllm serve Qwen/Qwen3-8B\n", "x.yaml")
    assert gpu_from_labels(extract_all(docs)[0][0].gpu_labels)[0].name == "a100-80gb"  # alone: the catalog's reading
