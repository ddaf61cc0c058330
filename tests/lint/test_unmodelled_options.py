"""vLLM 0.33 options that change GPU memory but are not modelled are never silent: each is a not-modelled finding
(estimate: a warning), whatever its spelling, and a --config file the input does not hold says its options were
not read."""

from __future__ import annotations

import pytest

from configurator.lint.engine import Options, evaluate
from configurator.lint.load import load
from configurator.vllm.flags import parse_args

SERVE = ["vllm", "serve", "Qwen/Qwen3-8B"]


@pytest.mark.parametrize(("extra", "option"), [
    (["-O1"], "--optimization-level"),
    (["-O", "1"], "--optimization-level"),  # vLLM's FlexibleArgumentParser reads `-O <n>` too
    (["--optimization-level", "1"], "--optimization-level"),
    (["--cudagraph-capture-sizes", "1", "2", "4"], "--cudagraph-capture-sizes"),
    (["--performance-mode", "throughput"], "--performance-mode"),
    (["--disable-sliding-window"], "--disable-sliding-window"),
    (["--runner", "pooling"], "--runner"),
    (["--mm-encoder-tp-mode", "data"], "--mm-encoder-tp-mode"),
])
def test_a_memory_option_is_reported_not_dropped(extra, option):
    parsed = parse_args([*SERVE, *extra], "0.33.0")
    assert not parsed.unknown, parsed.unknown
    assert option in [o.dest for o in parsed.unmodelled]


@pytest.mark.parametrize("spelling", [["-O0"], ["-O", "0"], ["--optimization-level", "0"], ["-O=0"]])
def test_optimization_level_0_is_eager_and_2_3_are_the_default(spelling):
    """vLLM 0.33 OPTIMIZATION_LEVEL_00 sets cudagraph_mode NONE (no graphs, as --enforce-eager); O2 (the default)
    and O3 capture FULL_AND_PIECEWISE graphs, which the estimate assumes; only O1 (piecewise only) is reported."""
    parsed = parse_args([*SERVE, *spelling], "0.33.0")
    assert parsed.flags.get("enforce_eager") is True and not parsed.unmodelled
    for level in ("-O2", "-O3"):
        p = parse_args([*SERVE, level], "0.33.0")
        assert not p.unmodelled and "enforce_eager" not in p.flags


def test_the_speculative_shorthands_become_the_speculative_config():
    """vLLM 0.33 merges --spec-method / --spec-model / --spec-tokens into --speculative-config (and refuses a key
    set both ways), so they are modelled as that config, not reported."""
    from configurator.vllm.args import ArgError

    parsed = parse_args([*SERVE, "--spec-method", "ngram", "--spec-tokens", "4"], "0.33.0")
    assert parsed.flags["speculative_config"] == {"method": "ngram", "num_speculative_tokens": 4}
    assert not parsed.unmodelled
    merged = parse_args([*SERVE, "--speculative-config", '{"method": "ngram"}', "--spec-tokens", "3"], "0.33.0")
    assert merged.flags["speculative_config"] == {"method": "ngram", "num_speculative_tokens": 3}
    with pytest.raises(ArgError, match="mutually exclusive"):
        parse_args([*SERVE, "--speculative-config", '{"method": "ngram"}', "--spec-method", "eagle"], "0.33.0")


def _check(tmp_path, text):
    m = tmp_path / "m.yaml"
    m.write_text(text)
    docs, problems = load([str(m)])
    return evaluate(docs, problems, Options()).findings


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: from-config}
spec:
  template:
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          args: ["vllm", "serve", "Qwen/Qwen3-8B", "--config", "/etc/vllm/config.yaml", "--max-model-len", "8192"]
          resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_a_config_file_not_in_the_input_is_a_finding(tmp_path):
    found = [f for f in _check(tmp_path, DEPLOYMENT) if f.rule == "not-modelled"]
    assert len(found) == 1 and "/etc/vllm/config.yaml" in found[0].message and "not read" in found[0].message


def test_an_unmodelled_option_inside_a_config_file_is_a_finding(tmp_path):
    configmap = """apiVersion: v1
kind: ConfigMap
metadata: {name: vllm-config}
data:
  config.yaml: |
    performance-mode: throughput
---
"""
    mounted = DEPLOYMENT.replace(
        "          resources: {limits: {nvidia.com/gpu: 1}}\n",
        "          resources: {limits: {nvidia.com/gpu: 1}}\n"
        "          volumeMounts: [{name: cfg, mountPath: /etc/vllm}]\n"
        "      volumes: [{name: cfg, configMap: {name: vllm-config}}]\n")
    found = [f for f in _check(tmp_path, configmap + mounted) if f.rule == "not-modelled"]
    assert [f.message.split(" ", 1)[0] for f in found] == ["--performance-mode"]
