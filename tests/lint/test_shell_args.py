"""Command lines read as a shell and as vLLM read them (issues 26 and 30): launchers as people write them,
expansions with no value in the file, dotted JSON arguments, wrapper entry points, severity by what the file
says about the release, and what each finding rests on."""

from __future__ import annotations

import json

import pytest
import yaml

from configurator.lint.engine import Options, evaluate
from configurator.lint.find import extract_all
from configurator.lint.load import load, parse_text
from configurator.vllm.args import ArgError
from configurator.vllm.flags import argv_from_mapping, flags_from_mapping, parse_args
from tests.conftest import ROOT

REAL = ROOT / "tests" / "corpus" / "real"
LLM_D_DECODE = ROOT / "tests" / "lint" / "data" / "real" / "llm-d-wide-ep-dp-aware-decode.yaml"


def _deployment(command: list | None, args: list | None = None, env: dict | None = None,
                image: str = "vllm/vllm-openai:v0.11.0") -> str:
    c: dict = {"name": "vllm", "image": image, "resources": {"limits": {"nvidia.com/gpu": 1}}}
    if command is not None:
        c["command"] = command
    if args is not None:
        c["args"] = args
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                           "spec": {"template": {"spec": {
                               "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"}, "containers": [c]}}}})


def _servers(text: str):
    servers, _ = extract_all(parse_text(text, "d.yaml")[0])
    return servers


def _check(text: str, **opts):
    docs, problems = parse_text(text, "d.yaml")
    return evaluate(docs, problems, Options(**opts))


SERVE = "vllm serve Qwen/Qwen3-8B --max-model-len 4096"
LAUNCHERS = {
    "bash -c": (["bash", "-c", SERVE], None),
    "bash -lc": (["bash", "-lc", SERVE], None),
    "bash -ec": (["/bin/bash", "-ec", SERVE], None),
    "sh -xc": (["sh", "-xc", SERVE], None),
    "sh -l -e -x -c": (["sh", "-l", "-e", "-x", "-c", SERVE], None),
    "bash -o pipefail -c": (["bash", "-o", "pipefail", "-c", SERVE], None),
    "bash --login -c": (["bash", "--login", "-c", SERVE], None),
    "bash -lc in command, script in args": (["/bin/bash", "-lc"], [SERVE]),
    "python -u -m api_server": (["python", "-u", "-m", "vllm.entrypoints.openai.api_server", "--model",
                                 "Qwen/Qwen3-8B", "--max-model-len", "4096"], None),
    "python3.12 -X -O -m api_server": (["python3.12", "-X", "importtime", "-O", "-m",
                                        "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen3-8B",
                                        "--max-model-len", "4096"], None),
    "python3 -m cli.main serve": (["python3", "-m", "vllm.entrypoints.cli.main", "serve", "Qwen/Qwen3-8B",
                                   "--max-model-len", "4096"], None),
    "uv run": (["uv", "run", "--with", "hf_transfer", "vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len",
                "4096"], None),
    "env A=1": (["env", "A=1", "B=2", "vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "4096"], None),
    "VAR=1 in a script": (["sh", "-c", "VLLM_LOGGING_LEVEL=DEBUG " + SERVE], None),
    "nohup": (["nohup", "vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "4096"], None),
    "timeout 1d": (["timeout", "-s", "KILL", "1d", "vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len",
                    "4096"], None),
    "exec in a script": (["bash", "-c", "set -e; exec " + SERVE], None),
    "dumb-init --": (["dumb-init", "--", "vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "4096"], None),
    "tini --": (["tini", "-g", "--", "vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "4096"], None),
    "tini -- bash -lc": (["tini", "--", "bash", "-lc", SERVE], None),
}


@pytest.mark.parametrize("name", LAUNCHERS)
def test_launchers_as_people_write_them(name):
    command, args = LAUNCHERS[name]
    text = _deployment(command, args)
    [s] = _servers(text)
    assert s.flags.get("model") == "Qwen/Qwen3-8B", (name, s.flags)
    assert s.flags.get("max_model_len") == 4096, (name, s.flags)
    assert not s.unknown and not s.notes, (name, s.unknown, s.notes)
    rules = {f.rule for f in _check(text).findings}
    assert not rules & {"unknown-flag", "invalid-flag", "removed-flag", "unresolved-value"}, (name, rules)


def test_kubernetes_env_expansion_runs_the_command_in_the_env():
    """issue 30: `command: ["/bin/sh","-c","$(CMD)"]` with CMD="vllm serve ..." in env: Kubernetes expands $(CMD)
    before the shell runs it."""
    text = _deployment(["/bin/sh", "-c", "$(CMD)"], env={"CMD": "vllm serve Qwen/Qwen3-8B --max-model-len 2048"})
    [s] = _servers(text)
    assert s.flags["model"] == "Qwen/Qwen3-8B" and s.flags["max_model_len"] == 2048
    assert s.basis["max_model_len"] == "env var CMD in the file"


def test_llm_d_wide_ep_shell_arithmetic_is_never_split_into_flags():
    """issue 26, a real llm-d file (guides/wide-ep-lws, LeaderWorkerSet): `--data-parallel-size $((LWS_GROUP_SIZE *
    DP_SIZE_LOCAL))` was read as the flags `*` and `DP_SIZE_LOCAL))` (unrecognized arguments), `$START_RANK` as an
    invalid int."""
    report = evaluate(*load([str(LLM_D_DECODE)]), Options())
    msgs = [(f.rule, f.severity, f.message) for f in report.findings]
    assert not [m for m in msgs if m[0] in ("unknown-flag", "invalid-flag", "removed-flag")], msgs
    assert not any("DP_SIZE_LOCAL))" in m[2] and m[0] != "unresolved-value" for m in msgs), msgs
    unresolved = [m[2] for m in msgs if m[0] == "unresolved-value"]
    assert any(m.startswith("--data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL))") for m in unresolved)
    assert any("${LWS_LEADER_ADDRESS}" in m for m in unresolved)
    # START_RANK=$(( ${LWS_WORKER_INDEX:-0} * DP_SIZE_LOCAL )) in the script: the default, said as such
    assert any(m.startswith("--data-parallel-start-rank: script variable START_RANK (default of "
                            "${LWS_WORKER_INDEX:-0}") for m in unresolved)
    [server] = report.servers
    assert server.model == "deepseek-ai/DeepSeek-R1-0528" and server.flags["max_model_len"] == 65536
    assert server.basis["data_parallel_size"].startswith("unresolved")


def test_templating_inside_a_quoted_string_is_not_an_invalid_number():
    """issue 26: a leftover `"{{ .Values.maxModelLen }}"` was an `invalid human_readable_int value`."""
    for argv in (["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "{{ .Values.maxModelLen }}"],
                 ["sh", "-c", 'vllm serve Qwen/Qwen3-8B --max-model-len "{{ .Values.maxModelLen }}"']):
        report = _check(_deployment(argv))
        rules = [f.rule for f in report.findings]
        assert "invalid-flag" not in rules and "unresolved-value" in rules, report.findings


def test_unset_variable_is_unresolved_and_default_is_taken():
    text = _deployment(["sh", "-c", "vllm serve Qwen/Qwen3-8B --max-model-len ${LEN:-3000} "
                                    "--data-parallel-start-rank $START_RANK --max-num-seqs $SEQS"], env={"SEQS": "7"})
    [s] = _servers(text)
    assert s.flags["max_model_len"] == 3000 and s.flags["max_num_seqs"] == 7
    assert s.basis["max_model_len"].startswith("default of ${LEN:-3000}")
    assert s.basis["max_num_seqs"] == "env var SEQS in the file"
    assert [(o, v) for o, v, _ in s.unresolved] == [("--data-parallel-start-rank", "$START_RANK")]
    assert not s.notes and not s.unknown


def test_dotted_json_arguments_merge_as_vllms_parser_merges_them():
    """vllm/utils/argparse_utils.py FlexibleArgumentParser.parse_args: dotted keys of one option merge into one
    dict, appended at the end as `--option '<json>'`."""
    p = parse_args(["vllm", "serve", "m", "--limit-mm-per-prompt.image", "4", "--limit-mm-per-prompt.video=0",
                    "--compilation-config.cudagraph_mode", "PIECEWISE", "--speculative_config.method", "ngram",
                    "--speculative-config.num_speculative_tokens", "3"])
    assert json.loads(p.flags["limit_mm_per_prompt"]) == {"image": 4, "video": 0}
    assert p.flags["speculative_config"] in ('{"method": "ngram", "num_speculative_tokens": 3}',
                                             {"method": "ngram", "num_speculative_tokens": 3})
    assert not p.unknown
    # list elements with +, split at commas
    p = parse_args(["vllm", "serve", "m", "--compilation-config.cudagraph_capture_sizes+", "1,2"])
    assert not p.unknown
    # the dotted values come last, as vLLM appends them: they replace a JSON value given before
    p = parse_args(["vllm", "serve", "m", "--limit-mm-per-prompt.image", "2", "--limit-mm-per-prompt",
                    '{"image": 9}'])
    assert json.loads(p.flags["limit_mm_per_prompt"]) == {"image": 2}


def test_dotted_json_arguments_are_not_invalid_flags_in_check():
    text = _deployment(["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "4096", "--limit-mm-per-prompt.image",
                        "4", "--compilation-config.cudagraph_mode", "PIECEWISE"], image="vllm/vllm-openai:v0.11.0")
    rules = {f.rule for f in _check(text).findings}
    assert not rules & {"invalid-flag", "unknown-flag"}, rules


def test_dynamo_wrapper_own_flags_are_accepted_and_vllm_flags_checked():
    p = parse_args(["python3", "-m", "dynamo.vllm", "--model", "Qwen/Qwen3-0.6B", "--is-decode-worker",
                    "--dyn-tool-call-parser", "hermes", "--dyn-reasoning-parser", "qwen3", "--connector", "nixl",
                    "lmcache", "--max-model-len", "4096"])
    assert p.flags == {"model": "Qwen/Qwen3-0.6B", "max_model_len": 4096} and not p.unknown
    with pytest.raises(ArgError, match="max-model-len"):  # its vLLM flags are still vLLM's
        parse_args(["python3", "-m", "dynamo.vllm", "--model", "m", "--max-model-len", "lots"])


def test_dynamo_in_a_shell_service_reads_the_model_not_the_shell():
    """issue 26: in a Dynamo `command: [/bin/sh, -c]` service the model was read as /bin/sh."""
    text = _deployment(["/bin/sh", "-c"], ["python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B --is-prefill-worker "
                                           "--dyn-tool-call-parser hermes --max-model-len 4096"],
                       image="nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0")
    [s] = _servers(text)
    assert s.flags["model"] == "Qwen/Qwen3-0.6B" and s.flags["max_model_len"] == 4096
    assert not s.unknown and not s.notes


def test_dynamo_real_files_have_no_flag_findings():
    for path in sorted((REAL / "ai-dynamo-dynamo").glob("*.yaml")):
        report = evaluate(*load([str(path)]), Options())
        assert not [f for f in report.findings if f.rule in ("unknown-flag", "invalid-flag", "removed-flag")], path
        assert all(s.model == "Qwen/Qwen3-0.6B" for s in report.servers), path


def test_kserve_huggingface_server_own_flags():
    p = parse_args(["python", "-m", "huggingfaceserver", "--model_name=llama", "--model_id=meta-llama/Llama-3.1-8B",
                    "--backend=vllm", "--max-model-len", "4096", "--dtype", "bfloat16"])
    assert p.flags["model"] == "meta-llama/Llama-3.1-8B" and p.flags["max_model_len"] == 4096 and not p.unknown


@pytest.mark.parametrize("key", ["max_model_len", "maxModelLen", "max-model-len", "--max-model-len"])
def test_engine_args_mapping_in_any_case_style(key):
    p = flags_from_mapping({key: 8192, "gpuMemoryUtilization": 0.8, "enable_prefix_caching": False,
                            "speculative_config": {"method": "ngram", "num_speculative_tokens": 2}})
    assert p.flags["max_model_len"] == 8192 and p.flags["gpu_memory_utilization"] == 0.8
    assert p.flags["enable_prefix_caching"] is False and not p.unknown
    assert argv_from_mapping({"enforceEager": True, "tensor_parallel_size": 2}) == [
        "--enforce-eager", "--tensor-parallel-size", "2"]


def _flag_findings(text: str, **opts):
    return {(f.rule, f.severity) for f in _check(text, **opts).findings
            if f.rule in ("unknown-flag", "invalid-flag", "removed-flag")}


@pytest.mark.parametrize("flags", [["--swap-space", "4"], ["--num-scheduler-steps", "8"],
                                   ["--max-seq-len-to-capture", "8192"], ["--enable-chunked-prefill=false"]])
def test_removed_flags_warn_where_the_release_is_not_known_and_fail_where_it_is(flags):
    """issue 26: a flag a later release removed is an error only where the file names the release that refuses it;
    where a controller or an untagged image chooses the release, a warning naming the releases that refuse it."""
    argv = ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "4096", *flags]
    unknown = _flag_findings(_deployment(argv, image="registry.example.com/team/vllm-server:prod"))
    assert unknown == {("removed-flag", "warning")}, unknown
    warning = next(f for f in _check(_deployment(argv, image="registry.example.com/team/vllm-server:prod")).findings
                   if f.rule == "removed-flag")
    assert "releases " in warning.message and "refuse it" in warning.message
    assert warning.basis["release"] == "assumed newest 0.33.0"
    known = _flag_findings(_deployment(argv, image="vllm/vllm-openai:v0.33.0"))
    assert {sev for _, sev in known} == {"error"}, known
    assert _flag_findings(_deployment(argv, image="vllm/vllm-openai:v0.8.0")) == set()  # 0.8.0 has them all


def test_basis_in_json_and_sarif():
    from configurator.report.check_formats import sarif

    text = _deployment(["sh", "-c", "vllm serve Qwen/Qwen3-8B --max-model-len $LEN --max-num-seqs 1000000"],
                       env={"LEN": "40000"})
    report = _check(text)
    [server] = report.servers
    assert server.basis["release"] == "image tag vllm/vllm-openai:v0.11.0"
    assert server.basis["max_model_len"] == "env var LEN in the file"
    assert server.basis["max_num_seqs"] == "literal"
    assert report.findings and all(f.basis.get("release") for f in report.findings)
    results = sarif(report)["runs"][0]["results"]
    assert results[0]["properties"]["basis"]["release"] == "image tag vllm/vllm-openai:v0.11.0"


@pytest.mark.parametrize("value", ['{"image": 1e400}', '{"image": NaN}', "[" * 5000 + "]" * 5000,
                                   '{"a": ' * 100 + "1" + "}" * 100])
def test_hostile_json_values_are_refused_in_one_line(value):
    """issue 30: 1e400 (OverflowError) and 5,000-deep values (RecursionError) passed the server as an internal
    error; they are an invalid-flag error in check and exit 2 in estimate."""
    for flag in ("--limit-mm-per-prompt", "--speculative-config", "--eplb-config"):
        with pytest.raises(ArgError):
            parse_args(["vllm", "serve", "Qwen/Qwen3-8B", flag, value])
        text = _deployment(["vllm", "serve", "Qwen/Qwen3-8B", "--gpu-memory-utilization", "0.5", flag, value],
                           image="vllm/vllm-openai:v0.33.0")
        report = _check(text)
        rules = {(f.rule, f.severity) for f in report.findings}
        assert ("invalid-flag", "error") in rules, (flag, rules)
        assert "not-understood" not in {r for r, _ in rules}


def test_hostile_json_value_in_estimate_exits_2():
    from click.testing import CliRunner

    from configurator.cli.main import cli

    res = CliRunner().invoke(cli, ["estimate", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", "--",
                                   "vllm", "serve", "Qwen/Qwen3-8B", "--speculative-config", "[" * 5000])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output


DYNAMO_SHELL = """\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: d}
spec:
  services:
    VllmWorker:
      componentType: worker
      resources: {limits: {gpu: "1"}}
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0
          command: [/bin/sh, -c]
          args:
            - "python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B --is-decode-worker --dyn-tool-call-parser hermes
              --max-model-len 4096"
"""


def test_dynamo_graph_shell_service_reads_the_model_not_the_shell():
    """issue 26: a DynamoGraphDeployment service with `command: [/bin/sh, -c]` read its model as /bin/sh, and its
    image tag (Dynamo's release) as vLLM 0.4.0."""
    report = _check(DYNAMO_SHELL)
    [server] = report.servers
    assert server.model == "Qwen/Qwen3-0.6B" and server.flags["max_model_len"] == 4096
    assert not [f for f in report.findings if f.rule in ("unknown-flag", "invalid-flag", "release-not-modelled")]


def test_wrapper_image_tags_name_the_wrappers_release_not_vllms():
    from configurator.lint.extract import image_release

    assert image_release("nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0")[0] is None
    assert image_release("kserve/huggingfaceserver:v0.15.2")[0] is None
    assert image_release("vllm/vllm-openai:v0.11.0")[0] == "0.11.0"
