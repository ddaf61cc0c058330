"""`plan --emit manifest`: plain Kubernetes objects that validate against Kubernetes' schemas, carry
exactly the planned flags, read back through the real kubectl, and are written as deterministic YAML."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from configurator.emit.helm import DeployOptions, default_name, startup_budget
from configurator.emit.manifest import go_text, manifests, to_yaml
from tests.emit_support import (
    MULTI_NODE,
    PLANS,
    assert_args_carry_plan,
    plan_for,
    tools,
    validate_object,
    vllm_containers,
)

CLI = {"l4-1gpu": ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "l4", "--concurrency", "8"],
       "405b-2-nodes": ["--model", "meta-llama/Meta-Llama-3.1-405B", "--gpu", "h100", "--gpus", "16", "-tp", "8",
                        "-pp", "2"]}


@pytest.mark.parametrize("name", PLANS)
def test_manifests_validate_and_carry_exactly_the_planned_flags(name):
    p = plan_for(name)
    objects = manifests(p)
    for obj in objects:
        validate_object(obj)
    kinds = [o["kind"] for o in objects]
    assert kinds == (["Service", "LeaderWorkerSet"] if name in MULTI_NODE else ["Service", "Deployment"])
    (server,) = vllm_containers(objects)
    assert_args_carry_plan(server, p)
    assert server["command"][-1] == "vllm"  # the image's entrypoint is `vllm serve`: args start at `serve`
    assert all(o["metadata"]["name"] == default_name(p.model) for o in objects)


def test_multi_node_leader_starts_ray_then_vllm_and_workers_join():
    objects = manifests(plan_for("405b-2-nodes"))
    group = objects[1]["spec"]["leaderWorkerTemplate"]
    leader, = group["leaderTemplate"]["spec"]["containers"]
    worker, = group["workerTemplate"]["spec"]["containers"]
    assert leader["command"][:2] == ["/bin/bash", "-c"] and "leader --ray_cluster_size=$LWS_GROUP_SIZE" in \
        leader["command"][2] and 'exec vllm "$@"' in leader["command"][2]
    assert "worker --ray_address=$LWS_LEADER_ADDRESS" in worker["command"][2]
    assert "args" not in worker and "startupProbe" not in worker  # the worker only runs Ray
    assert group["size"] == 2
    assert leader["resources"]["limits"]["nvidia.com/gpu"] == worker["resources"]["limits"]["nvidia.com/gpu"] == "8"
    service = objects[0]
    assert service["spec"]["selector"]["role"] == "leader"
    assert leader["startupProbe"]["failureThreshold"] == startup_budget(plan_for("405b-2-nodes")).failure_threshold


def test_model_cache_claim_for_one_node_and_claim_templates_across_nodes():
    one = manifests(plan_for("h100-tp4"), DeployOptions(cache_pvc=True, storage_class="fast"))
    assert [o["kind"] for o in one] == ["PersistentVolumeClaim", "Service", "Deployment"]
    claim = one[0]
    assert claim["spec"]["storageClassName"] == "fast"
    assert claim["spec"]["resources"]["requests"]["storage"] == "170Gi"  # 131.5 GiB x 1.25, in 10 GiB steps
    volumes = one[2]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "model-cache", "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}} in volumes
    many = manifests(plan_for("405b-2-nodes"), DeployOptions(cache_pvc=True))
    group = many[1]["spec"]["leaderWorkerTemplate"]
    assert group["volumeClaimTemplates"][0]["metadata"]["name"] == "model-cache"
    for obj in one + many:
        validate_object(obj)


def test_kubectl_reads_the_manifests(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text(to_yaml(*manifests(plan_for("h100-tp8"))) + "---\n" + to_yaml(*manifests(plan_for("405b-2-nodes"))))
    run = subprocess.run([tools().kubectl, "label", "--local", "-f", str(f), "checked=yes", "-o", "name"],
                         capture_output=True, text=True, timeout=60, env={"KUBECONFIG": "/dev/null", "PATH": ""})
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["service/vllm-llama-3-3-70b-instruct", "deployment.apps/vllm-llama-3-3-70b-instruct",
                                  "service/vllm-meta-llama-3-1-405b",
                                  "leaderworkerset.leaderworkerset.x-k8s.io/vllm-meta-llama-3-1-405b"]


def test_yaml_is_deterministic_block_style_without_aliases():
    objects = manifests(plan_for("405b-2-nodes"))
    text = to_yaml(*objects)
    assert text == to_yaml(*manifests(plan_for("405b-2-nodes")))
    assert list(yaml.safe_load_all(text)) == objects
    assert "&id" not in text and "*id" not in text  # the tolerations and labels used twice are written twice
    assert all(not line.rstrip().endswith("{") and ": {" not in line.replace(": {}", "") for line in text.splitlines())
    assert text.index("apiVersion") < text.index("kind") < text.index("metadata")  # insertion order, not sorted


@pytest.mark.parametrize(("value", "text"), [(0.9, "0.9"), (0.92, "0.92"), (4.0, "4"), (4.5, "4.5"), (1e6, "1e+06"),
                                             (123456.0, "123456"), (1e-05, "1e-05"), (0.0001, "0.0001"), (7, "7")])
def test_numbers_are_written_as_helm_writes_them(value, text):
    assert go_text(value) == text


@pytest.mark.parametrize("name", CLI)
def test_cli_emit_manifest(run_cli, name):
    res = run_cli("plan", *CLI[name], "--emit", "manifest")
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("# vllm-configurator plan: ")
    assert [d for d in yaml.safe_load_all(res.stdout) if d] == manifests(plan_for(name))
    assert res.stdout == run_cli("plan", *CLI[name], "--emit", "manifest").stdout


def test_cli_warns_when_tensor_parallelism_spans_nodes(run_cli):
    # plan keeps tensor parallelism within a node by itself ...
    res = run_cli("plan", "--model", "meta-llama/Meta-Llama-3.1-405B", "--gpu", "h100", "--gpus", "16",
                  "--emit", "manifest")
    assert res.exit_code == 0 and "warning" not in res.stderr
    assert "--tensor-parallel-size" in res.stdout and "--pipeline-parallel-size" in res.stdout
    # ... and warns when told to span nodes
    res = run_cli("plan", "--model", "meta-llama/Meta-Llama-3.1-405B", "--gpu", "h100", "--gpus", "16",
                  "-tp", "16", "-pp", "1", "--emit", "manifest")
    assert res.exit_code == 0
    assert "warning: tensor parallelism (16) spans nodes of 8 GPUs" in res.stderr
    assert "--tensor-parallel-size 8 --pipeline-parallel-size 2" in res.stderr


def test_cli_refuses_a_gpu_count_nodes_cannot_split(run_cli):
    res = run_cli("plan", "--model", "meta-llama/Meta-Llama-3.1-405B", "--gpu", "h100", "--gpus", "12",
                  "--emit", "manifest")
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.strip() == ("error: the plan uses 12 GPUs, which 8-GPU nodes cannot split evenly; plan a "
                                  "multiple of 8")
