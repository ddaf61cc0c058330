"""The Helm and production-stack emitters as pure functions of a plan (no helm binary here): the
values follow the chart's schema, the derivations (shape, GPU nodes, start-up budget) hold their
worked numbers, production-stack values stay within that chart's documented keys and pass each planned
flag once; and the CLI's --emit / --output / --force."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from configurator.emit.helm import (
    DeployOptions,
    Shape,
    chart_values,
    checkpoint_bytes,
    default_name,
    deployment_warnings,
    gpu_nodes,
    helm_values,
    shape,
    startup_budget,
)
from configurator.emit.production_stack import production_stack_values, vllm_config
from configurator.emit.values_model import ChartValues, camel
from configurator.errors import InputError
from configurator.plan import PlanRequest, plan
from configurator.startup import ROLLOUT_MARGIN_S
from configurator.units import GiB
from configurator.vllm.flags import parse_serve_args
from configurator.workloads import load_workload
from tests.emit_support import (
    CHART,
    MULTI_NODE,
    PLANS,
    flag_counts,
    plan_for,
    planned,
    production_stack_command,
    production_stack_validator,
)

SCHEMA = json.loads((CHART / "values.schema.json").read_text())
PLAN_ARGS = ["--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "h100", "--gpus", "4"]


@pytest.mark.parametrize("name", PLANS)
def test_helm_values_follow_the_charts_schema_and_carry_the_plan(name):
    p = plan_for(name)
    values = helm_values(p)
    jsonschema.Draft202012Validator(SCHEMA).validate(values)
    assert values["model"] == {"name": p.model}
    assert values["image"]["tag"] == f"v{p.vllm_version}"
    assert values["vllm"] == {camel(k): v for k, v in p.flags.items() if v is not None}
    assert values["nodes"] * values["gpusPerNode"] == p.gpus
    assert list(values) == [k for k in ChartValues.model_fields if k in values]  # the chart's key order


def test_the_defaults_follow_the_schema_and_unknown_keys_are_refused():
    validator = jsonschema.Draft202012Validator(SCHEMA)
    validator.validate(yaml.safe_load((CHART / "values.yaml").read_text()))
    assert not validator.is_valid({"vllm": {"gpuMemoryUtilization": "high"}})
    assert not validator.is_valid({"vllm": {"maxModelLenn": 1}})
    assert not validator.is_valid({"probes": {"startup": {"failureThreshold": 0}}})
    assert validator.is_valid({"vllm": {"maxModelLen": "auto"}}) and validator.is_valid({"vllm": {"maxModelLen": -1}})
    assert not validator.is_valid({"vllm": {"maxModelLen": 0}})


@pytest.mark.parametrize(("gpus", "per_node", "expected"), [
    (1, 8, Shape(1, 1)), (4, 8, Shape(1, 4)), (8, 8, Shape(1, 8)), (16, 8, Shape(2, 8)), (32, 8, Shape(4, 8)),
    (8, 4, Shape(2, 4))])
def test_shape(gpus, per_node, expected):
    assert shape(gpus, per_node) == expected


def test_a_gpu_count_nodes_cannot_split_is_refused():
    with pytest.raises(InputError, match="12 GPUs, which 8-GPU nodes cannot split evenly"):
        shape(12, 8)


@pytest.mark.parametrize(("gpu", "resource", "label", "products"), [
    ("h100-80gb", "nvidia.com/gpu", "nvidia.com/gpu.product", ("NVIDIA-H100-80GB-HBM3",)),
    ("l4", "nvidia.com/gpu", "nvidia.com/gpu.product", ("NVIDIA-L4",)),
    ("a100-40gb", "nvidia.com/gpu", "nvidia.com/gpu.product",
     ("NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB", "A100-SXM4-40GB", "A100-PCIE-40GB")),
    ("a100-80gb:3g.40gb", "nvidia.com/mig-3g.40gb", "nvidia.com/gpu.product",
     ("NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe")),
    ("mi300x", "amd.com/gpu", "amd.com/gpu.product-name", ("AMD_Instinct_MI300X_OAM",)),
    ("custom", "nvidia.com/gpu", "nvidia.com/gpu.product", ())])
def test_gpu_nodes(gpu, resource, label, products):
    n = gpu_nodes(gpu)
    assert (n.resource, n.label, n.products) == (resource, label, products)


def test_several_products_render_affinity_and_one_a_selector():
    assert chart_values(plan_for("a100-40gb")).gpu.products[1] == "NVIDIA-A100-PCIE-40GB"
    assert chart_values(plan_for("mig-slice")).gpu.resource == "nvidia.com/mig-3g.40gb"


def test_startup_budget_worked_example():
    """Llama-3.1-8B on an L4: 15 GiB at 200 MiB/s = 77 s, + 120 s start + 240 s compile = 437 s -> 44 x 10 s."""
    b = startup_budget(plan_for("l4-1gpu"))
    assert (b.load_s, b.fixed_s, b.compile_s, b.multi_node_s, b.total_s) == (77, 120, 240, 0, 437)
    assert (b.failure_threshold, b.period_s) == (44, 10)


def test_startup_budget_grows_with_the_weights_and_nodes_and_respects_the_rate():
    small, big, nodes = (startup_budget(plan_for(n)) for n in ("l4-1gpu", "h100-tp4", "405b-2-nodes"))
    assert small.total_s < big.total_s < nodes.total_s and nodes.multi_node_s == 120
    fast = startup_budget(plan_for("h100-tp4"), DeployOptions(weight_load_bytes_per_s=2 * GiB))
    assert fast.load_s == 66 and fast.failure_threshold == 43
    tiny = startup_budget(plan_for("mig-slice"))
    assert tiny.total_s == 120 + 17 + 240 and tiny.failure_threshold == 38  # 3.2 GiB of Qwen3-1.7B


def test_online_quantization_downloads_the_16_bit_checkpoint():
    p = plan_for("online-fp8")
    assert checkpoint_bytes(p) == 2 * p.estimate.memory.weights_bytes
    assert checkpoint_bytes(plan_for("hybrid-qwen3.6")) == plan_for("hybrid-qwen3.6").estimate.memory.weights_bytes


def test_resources_shm_and_annotation():
    v = chart_values(plan_for("h100-tp8"))
    assert v.resources.requests == {"cpu": "16", "memory": "64Gi"}  # 16 + 4 x 8 + 16 GiB of /dev/shm
    assert v.shm.sizeLimit == "16Gi"
    assert v.podAnnotations == {"vllm-configurator.io/gpu": "h100-80gb"}
    assert chart_values(plan_for("l4-1gpu")).resources.requests == {"cpu": "4", "memory": "22Gi"}


@pytest.mark.parametrize(("model", "name"), [("meta-llama/Llama-3.3-70B-Instruct", "vllm-llama-3-3-70b-instruct"),
                                             ("Qwen/Qwen3.6-27B-FP8", "vllm-qwen3-6-27b-fp8"),
                                             ("01-ai/Yi-34B", "vllm-yi-34b"), ("/models/My_Model/", "vllm-my-model"),
                                             ("org/" + "x" * 80, "vllm-" + "x" * 35)])
def test_default_name_is_a_dns_label(model, name):
    assert default_name(model) == name


def test_options_reach_the_values():
    v = helm_values(plan_for("l4-1gpu"), DeployOptions(image_repository="my/vllm", image_tag="v0.11.0", replicas=3,
                                                       hf_token_secret="hf", cache_pvc=True, storage_class="ssd"))
    assert v["image"] == {"repository": "my/vllm", "tag": "v0.11.0"} and v["replicaCount"] == 3
    assert v["hfToken"] == {"secretName": "hf"}
    assert v["modelCache"] == {"persistence": {"enabled": True, "size": "20Gi", "storageClass": "ssd"}}


def test_an_infeasible_plan_has_nothing_to_deploy():
    p = plan(PlanRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="l4", workload=load_workload("chat")))
    assert not p.feasible
    with pytest.raises(InputError, match="nothing to deploy"):
        helm_values(p)


def test_warning_when_tensor_parallelism_spans_nodes():
    assert deployment_warnings(plan_for("405b-2-nodes")) == []
    (w,) = deployment_warnings(plan_for("405b-tp16"))
    assert "--tensor-parallel-size 8 --pipeline-parallel-size 2" in w


# ---- production-stack ---------------------------------------------------------------------------

SINGLE_NODE = [n for n in PLANS if n not in MULTI_NODE]


@pytest.mark.parametrize("name", SINGLE_NODE)
def test_production_stack_values_use_only_documented_keys_and_pass_each_flag_once(name):
    p = plan_for(name)
    values = production_stack_values(p)
    production_stack_validator().validate(values)
    (spec,) = values["servingEngineSpec"]["modelSpec"]
    assert "tensorParallelSize" in spec["vllmConfig"]  # production-stack mounts /dev/shm only then
    cmd = production_stack_command(spec)
    parsed, unknown = parse_serve_args(cmd)
    # prefix caching as the estimate assumed it (production-stack renders --no-... when the key is absent)
    assert parsed == {"enable_prefix_caching": p.estimate.flags["enable_prefix_caching"], **planned(p)}
    assert spec["hf_token"] == {"secretName": "hf-token", "secretKey": "token"}  # gated models download
    assert all(n == 1 for n in flag_counts(cmd).values()), cmd
    assert unknown == ["--host", "0.0.0.0", "--port", "8000"]
    assert spec["requestGPU"] == p.gpus and spec["shmSize"] == f"{2 * p.gpus}Gi"
    budget = startup_budget(p)
    assert values["servingEngineSpec"]["startupProbe"] == {"periodSeconds": 10,
                                                           "failureThreshold": budget.failure_threshold}


def test_production_stack_keyed_values_and_extra_args():
    flags = plan_for("online-fp8").flags
    config = vllm_config(flags)
    assert flags["max_num_seqs"] > 1  # the planned figure, whatever the overhead fit makes it
    assert config == {"gpuMemoryUtilization": 0.9, "maxNumSeqs": flags["max_num_seqs"], "maxModelLen": 8192,
                      "tensorParallelSize": 1,
                      "extraArgs": ["--kv-cache-dtype", "auto", "--pipeline-parallel-size", "1",
                                    "--max-num-batched-tokens", "2048", "--quantization", "fp8"]}
    assert vllm_config({"max_model_len": 4096}) == {"maxModelLen": 4096, "tensorParallelSize": 1}
    assert vllm_config({"enforce_eager": True, "enable_prefix_caching": False})["extraArgs"] == ["--enforce-eager"]
    assert vllm_config({"enforce_eager": True, "enable_prefix_caching": False})["enablePrefixCaching"] is False


def test_production_stack_mig_and_node_selection():
    (spec,) = production_stack_values(plan_for("mig-slice"))["servingEngineSpec"]["modelSpec"]
    assert spec["requestGPUType"] == "nvidia.com/mig-3g.40gb"
    assert spec["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["NVIDIA-A100-SXM4-80GB",
                                                                             "NVIDIA-A100-80GB-PCIe"]


def test_production_stack_refuses_multi_node():
    with pytest.raises(InputError, match="raySpec"):
        production_stack_values(plan_for("405b-2-nodes"))


# ---- the CLI ------------------------------------------------------------------------------------

def _docs(text: str):
    return [d for d in yaml.safe_load_all(text) if d is not None]


def test_cli_emit_helm_to_stdout(run_cli):
    res = run_cli("plan", *PLAN_ARGS, "--emit", "helm")
    assert res.exit_code == 0, res.stderr
    assert res.stdout.splitlines()[0] == ("# vllm-configurator plan: meta-llama/Llama-3.3-70B-Instruct on 4 x "
                                          "h100-80gb, vLLM 0.33.0 (helm)")
    assert _docs(res.stdout) == [helm_values(plan_for("h100-tp4"))]
    assert res.stdout == run_cli("plan", *PLAN_ARGS, "--emit", "helm").stdout


def test_cli_emit_production_stack(run_cli):
    res = run_cli("plan", *PLAN_ARGS, "--emit", "production-stack")
    assert res.exit_code == 0, res.stderr
    assert _docs(res.stdout) == [production_stack_values(plan_for("h100-tp4"))]


def test_cli_production_stack_multi_node_is_one_line_and_exit_2(run_cli):
    res = run_cli("plan", "--model", "meta-llama/Meta-Llama-3.1-405B", "--gpu", "h100", "--gpus", "16", "-tp", "8",
                  "-pp", "2", "--emit", "production-stack")
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.startswith("error: the plan spans 2 nodes of 8 GPUs") and res.stderr.count("\n") == 1


def test_cli_output_never_overwrites_without_force(run_cli, tmp_path):
    out = tmp_path / "values.yaml"
    res = run_cli("plan", *PLAN_ARGS, "--emit", "helm", "--output", str(out))
    assert res.exit_code == 0 and res.stdout == ""
    first = out.read_text()
    assert _docs(first) == [helm_values(plan_for("h100-tp4"))]
    out.write_text("mine\n")
    res = run_cli("plan", *PLAN_ARGS, "--emit", "manifest", "-o", str(out))
    assert res.exit_code == 2 and res.stderr == f"error: {out}: exists: not overwritten (pass --force to replace it)\n"
    assert out.read_text() == "mine\n"
    res = run_cli("plan", *PLAN_ARGS, "--emit", "helm", "-o", str(out), "--force")
    assert res.exit_code == 0 and out.read_text() == first


def test_cli_infeasible_plan_writes_no_file(run_cli, tmp_path):
    out = tmp_path / "values.yaml"
    res = run_cli("plan", "--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "l4", "--emit", "helm",
                  "-o", str(out))
    assert res.exit_code == 1 and not out.exists()
    assert "error: no plan carries the workload" in res.stderr


def test_cli_existing_emits_unchanged(run_cli, tmp_path):
    res = run_cli("plan", *PLAN_ARGS, "--emit", "args")
    assert json.loads(res.stdout) == plan_for("h100-tp4").serve_args
    assert run_cli("plan", *PLAN_ARGS, "--emit", "serve").stdout == plan_for("h100-tp4").serve_command + "\n"
    out = tmp_path / "plan.json"
    assert run_cli("plan", *PLAN_ARGS, "--format", "json", "-o", str(out)).exit_code == 0
    assert json.loads(out.read_text())["flags"] == plan_for("h100-tp4").flags


@pytest.mark.parametrize("name", PLANS)
def test_helm_values_carry_the_progress_deadline_of_a_deployment(name):
    """A Deployment's rollout outlasts its start-up budget; a LeaderWorkerSet has no such deadline."""
    p = plan_for(name)
    values = helm_values(p)
    budget = startup_budget(p)
    if name in MULTI_NODE:
        assert "progressDeadlineSeconds" not in values
    else:
        assert values["progressDeadlineSeconds"] == budget.failure_threshold * budget.period_s + ROLLOUT_MARGIN_S
        assert values["progressDeadlineSeconds"] > budget.total_s


def test_a_revision_is_pinned_in_the_values_and_the_args():
    p = plan_for("l4-1gpu")
    assert "revision" not in helm_values(p)["model"]
    rev = "0e9e39f249a16976918f6564b8830bc894c89659"
    values = helm_values(p, DeployOptions(revision=rev))
    assert values["model"] == {"name": p.model, "revision": rev}
    from configurator.emit.manifest import manifests

    (deployment,) = [o for o in manifests(p, DeployOptions(revision=rev)) if o["kind"] == "Deployment"]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--revision") + 1] == rev


@pytest.mark.parametrize("name", [n for n in PLANS if n not in MULTI_NODE])
def test_check_reads_production_stack_values_with_the_prefix_caching_production_stack_renders(name):
    """Without enablePrefixCaching production-stack passes --no-enable-prefix-caching while check assumed
    vLLM's default: the emitted values say it, so the command and check agree, and the values fit."""
    from click.testing import CliRunner

    from configurator.cli.main import cli
    from configurator.emit.manifest import to_yaml

    values = production_stack_values(plan_for(name))
    res = CliRunner().invoke(cli, ["check", "-", "--format", "json"], input=to_yaml(values))
    report = json.loads(res.stdout)
    (server,) = report["servers"]
    (spec,) = values["servingEngineSpec"]["modelSpec"]
    rendered, _ = parse_serve_args(production_stack_command(spec))
    assert server["flags"]["enable_prefix_caching"] is rendered["enable_prefix_caching"]
    assert res.exit_code == 0 and server["verdict"] == "fits", report


def test_the_closed_production_stack_schema_refuses_undocumented_keys():
    v = production_stack_validator()
    assert v.is_valid({"servingEngineSpec": {"modelSpec": [{"name": "m", "vllmConfig": {"maxNumSeqs": 8}}]}})
    assert not v.is_valid({"servingEngineSpec": {"modelSpec": [{"name": "m", "vllmConfig": {"kvCacheDtype": "fp8"}}]}})
    assert not v.is_valid({"servingEngineSpec": {"modelSpec": [{"name": "m", "hfToken": "x"}]}})


def test_production_stack_pins_the_revision_and_names_the_token_secret():
    p = plan_for("l4-1gpu")
    (spec,) = production_stack_values(p, DeployOptions(revision="v1.0", hf_token_secret="hf"))[
        "servingEngineSpec"]["modelSpec"]
    assert spec["modelRevision"] == "v1.0" and spec["hf_token"] == {"secretName": "hf", "secretKey": "token"}
    assert production_stack_command(spec)[-2:] == ["--revision", "v1.0"]
    (public,) = production_stack_values(p, DeployOptions(hf_token_secret=""))["servingEngineSpec"]["modelSpec"]
    assert "hf_token" not in public  # an empty Secret name: no token at all


def test_without_helm_kubectl_and_npm_the_chart_tests_skip_with_the_reason(tmp_path, monkeypatch):
    from tests.emit_support import NO_NPM, find_tools

    monkeypatch.setenv("PATH", str(tmp_path))  # no helm, kubectl or npm anywhere
    with pytest.raises(pytest.skip.Exception, match="npm is missing") as skipped:
        find_tools(tmp_path / "no-tools")
    assert str(skipped.value) == NO_NPM
