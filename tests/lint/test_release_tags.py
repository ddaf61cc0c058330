"""Image tags that are not vLLM releases: an NGC container's year.month tag names none (release-unknown),
so it is neither read as vLLM "25.09" (a release-not-modelled warning) nor used to pick the flag parser."""

import pytest

from configurator.lint.engine import Options, evaluate
from configurator.lint.extract import image_release, ngc_tag
from configurator.lint.find import extract_all
from configurator.lint.load import parse_text


def manifest(image: str, env: str = "") -> str:
    return ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ngc}\nspec:\n  template:\n    spec:\n"
            "      containers:\n        - name: vllm\n"
            f"          image: {image}\n"
            "          command: [vllm, serve, Qwen/Qwen3-8B, --max-model-len, '8192']\n"
            f"          resources: {{limits: {{nvidia.com/gpu: 1}}}}\n{env}")


@pytest.mark.parametrize(("image", "want"), [
    ("nvcr.io/nvidia/vllm:25.09-py3", None),
    ("nvcr.io/nvidia/vllm:26.01.01-py3", None),
    ("nvcr.io/nvidia/vllm:25.09", None),
    ("vllm/vllm-openai:v0.11.0", "0.11.0"),
    ("nvcr.io/nim/vllm:v0.11.0", "0.11.0"),  # a vLLM release tag stays one, whatever the registry
    ("rocm/vllm:rocm6.3.1_vllm_0.8.5_20250521", "0.8.5"),
])
def test_release_named_by_a_tag(image, want):
    assert image_release(image)[0] == want


def test_ngc_tag_is_release_unknown_not_a_release():
    docs, _ = parse_text(manifest("nvcr.io/nvidia/vllm:25.09-py3"), "m.yaml")
    report = evaluate(docs, [], Options(gpu="h100-80gb"))
    assert [f.rule for f in report.findings] == ["release-unknown"]
    assert "NGC container release" in report.findings[0].message
    assert ngc_tag("nvcr.io/nvidia/vllm:25.09-py3") and not ngc_tag("vllm/vllm-openai:25.09")
    [s] = extract_all(docs)[0]
    assert s.flags_release is None  # the newest parser reads the command, not a "25.09" one


def test_vllm_version_names_the_release_of_an_ngc_image():
    docs, _ = parse_text(manifest("nvcr.io/nvidia/vllm:25.09-py3"), "m.yaml")
    report = evaluate(docs, [], Options(gpu="h100-80gb", vllm_version="0.11.0"))
    assert report.findings == [] and report.servers[0].vllm_version == "0.11.0"
    env = "          env: [{name: VLLM_VERSION, value: 0.10.0}]\n"
    docs, _ = parse_text(manifest("nvcr.io/nvidia/vllm:25.09-py3", env), "m.yaml")
    report = evaluate(docs, [], Options(gpu="h100-80gb"))
    assert report.servers[0].vllm_version == "0.10.0"
