"""Which containers are vLLM servers: those whose command starts one, or a vLLM server image left to its
entrypoint. A program that only mentions vLLM (this tool's webhook and audit, a router, a health probe)
is not one, whatever its image's organisation is called."""

from __future__ import annotations

import subprocess

import pytest
from click.testing import CliRunner

from configurator.cli.main import cli
from configurator.lint.extract import argv_runs_vllm, image_names_vllm
from configurator.lint.find import extract_all
from configurator.lint.load import parse_text
from tests.conftest import ROOT


def deployment(*containers: str, kind: str = "Deployment") -> str:
    body = "".join(containers)
    if kind == "CronJob":
        return ("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: audit}\nspec:\n  schedule: '0 * * * *'\n"
                "  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n"
                "          containers:\n" + "\n".join("    " * 2 + "  " + line if line else line
                                                     for line in body.splitlines()) + "\n")
    return ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app, namespace: ml}\nspec:\n  template:\n"
            "    spec:\n      containers:\n" + body)


def container(name: str, image: str, command: str | None = None, args: str | None = None) -> str:
    out = f"        - name: {name}\n          image: {image}\n"
    if command is not None:
        out += f"          command: {command}\n"
    if args is not None:
        out += f"          args: {args}\n"
    return out


VLLM = container("vllm", "vllm/vllm-openai:v0.11.0", args="[--model, Qwen/Qwen3-8B, --max-model-len, '8192']")
WEBHOOK = container("webhook", "registry.internal/platform/admission:1.4.2",
                    command="[vllm-configurator, webhook, --port=8443, --config=/etc/vllm-configurator/config.yaml]")
AUDIT = container("audit", "python:3.12-slim", command="[sh, -c]",
                  args="['pip install vllm-configurator && vllm-configurator audit --all-namespaces "
                       "--vllm-version 0.11.0 --format json']")
PROBE = container("health", "curlimages/curl:8.10.1", command="[sh, -c]",
                  args="['while true; do curl -sf http://vllm:8000/health || exit 1; sleep 30; done']")
ROUTER = container("router", "ghcr.io/vllm-project/production-stack/router:0.1.7",
                   args="[--service-discovery, k8s, --routing-logic, roundrobin, --k8s-label-selector, "
                        "'environment=test,release=vllm']")
DEBUG = container("debug", "vllm/vllm-openai:v0.11.0", command="[sleep, infinity]")


def servers(text: str):
    docs, problems = parse_text(text, "m.yaml")
    assert problems == []
    return extract_all(docs)[0]


@pytest.mark.parametrize(("others", "kind"), [
    ((WEBHOOK,), "Deployment"),  # this tool's webhook in a custom image, its config path naming vllm
    ((AUDIT,), "CronJob"),  # `vllm-configurator audit` installed and run by a shell
    ((PROBE, VLLM), "Deployment"),  # a sidecar that calls the vLLM service: only the server counts
    ((ROUTER, VLLM), "Deployment"),  # production-stack's router: vllm-project organisation, not a server
    ((DEBUG,), "Deployment"),  # a vLLM image kept asleep for debugging
])
def test_programs_that_only_mention_vllm_are_not_servers(others, kind):
    got = servers(deployment(*others, kind=kind))
    assert [s.container for s in got] == (["vllm"] if VLLM in others else [])


@pytest.mark.parametrize(("image", "command", "args"), [
    ("nvcr.io/nvidia/pytorch:24.05-py3", "[python3, -m, vllm.entrypoints.openai.api_server]",
     "[--model, Qwen/Qwen3-8B]"),
    ("ghcr.io/acme/llm:2.1", "[uv, run, vllm, serve, Qwen/Qwen3-8B]", None),
    ("ghcr.io/acme/llm:2.1", "[/opt/venv/bin/vllm]", "[serve, Qwen/Qwen3-8B]"),
    ("ghcr.io/acme/llm:2.1", "[/bin/bash, -c]", "['pip install -q flashinfer && exec vllm serve Qwen/Qwen3-8B']"),
    ("ghcr.io/acme/llm:2.1", "[python, /workspace/vllm/entrypoints/openai/api_server.py]", "[--model, Qwen/Qwen3-8B]"),
    ("vllm/vllm-openai:v0.11.0", None, "[Qwen/Qwen3-8B]"),  # the image's entrypoint is `vllm serve`
    ("rocm/vllm:rocm6.3.1_vllm_0.8.5_20250521", "[/app/start.sh]", None),  # a launcher of a vLLM image
])
def test_vllm_servers_are_found_by_command_or_image(image, command, args):
    got = servers(deployment(container("srv", image, command, args)))
    assert [s.container for s in got] == ["srv"]


@pytest.mark.parametrize(("argv", "want"), [
    (["vllm", "serve", "m"], True),
    (["python3", "-m", "vllm.entrypoints.api_server", "--model", "m"], True),
    (["sh", "-c", "cd /w; vllm serve m --port 8000"], True),
    (["vllm-configurator", "check", "--vllm-version", "0.11.0", "serve"], False),
    (["python", "-m", "vllm_router.app", "--backend", "vllm"], False),
    (["vllm"], False),  # the CLI without `serve` (bench, collect-env) is not a server
])
def test_argv_runs_vllm(argv, want):
    assert argv_runs_vllm(argv) is want


@pytest.mark.parametrize(("image", "want"), [
    ("vllm/vllm-openai:v0.11.0", True), ("lmcache/vllm-openai:2025-05-27", True), ("kserve/vllmserver:latest", True),
    ("nvcr.io/nvidia/vllm:25.09-py3", True), ("ghcr.io/vllm-configurator/vllm-configurator:1.0", False),
    ("ghcr.io/vllm-project/production-stack/router:0.1.7", False), ("vllm/vllm-router:0.1", False),
    ("ghcr.io/vllm-project/aibrix/controller-manager:v0.3.0", False),
])
def test_image_names_a_vllm_server(image, want):
    assert image_names_vllm(image) is want


def test_rendered_webhook_chart_in_a_custom_image_holds_no_server(tmp_path):
    """The webhook chart of this repository, rendered by the real helm with the image moved to a private
    registry whose name says nothing of vLLM: its Deployment runs `webhook ...`, not a server."""
    from tests.emit_support import tools

    chart = ROOT / "charts" / "vllm-configurator-webhook"
    out = subprocess.run([tools().helm, "template", "adm", str(chart), "--set",
                          "image.repository=registry.internal/platform/admission"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert "registry.internal/platform/admission" in out
    res = CliRunner().invoke(cli, ["check", "-", "--format", "json"], input=out)
    import json

    report = json.loads(res.stdout)
    assert report["servers"] == [] and res.exit_code == 0
    assert not [f for f in report["findings"] if f["severity"] != "info"]
