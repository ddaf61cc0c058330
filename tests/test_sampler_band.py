"""Where the install decides vLLM's profiling sampler (0.9.0-0.11.0: FlashInfer's by default when it is importable,
v1/sample/ops/topk_topp_sampler.py; the wheels do not require it), the band is asymmetric: the low end counts the
PyTorch-native sampler's peak, the high end FlashInfer's, both from the same overhead model; a known install (the
official image) makes it one figure; the accuracy harness scores a residual as held when low <= logged <= high."""

import pytest

from configurator.estimate import EstimateRequest, estimate
from configurator.vllm.versions import behaviour, image_ships_flashinfer, sampler_uncertain
from tests.conftest import load_benchmark

QWEN = dict(model="Qwen/Qwen3-8B", gpu="a100-80gb", flags={"max_model_len": 4096})


def _run(version: str, installed: bool | None = None):
    return estimate(EstimateRequest(vllm_version=version, flashinfer_installed=installed, **QWEN))


def test_the_high_end_reaches_flashinfers_sampler_where_the_install_is_unknown():
    unknown, native, fi = _run("0.11.0"), _run("0.11.0", False), _run("0.11.0", True)
    spread = fi.memory.kv_cache_bytes - native.memory.kv_cache_bytes
    # FlashInfer's sampler (2.5 fp32 copies of the logits) holds less than the sort-based one (256 rows on an A100)
    assert spread > 128 * 2**20
    # unknown install: the estimate and the low end are the native sampler's; the high end adds the spread
    assert unknown.memory.kv_cache_bytes == native.memory.kv_cache_bytes
    assert unknown.kv_cache_bytes_low == native.kv_cache_bytes_low
    assert unknown.kv_cache_bytes_high - native.kv_cache_bytes_high == spread
    assert "FlashInfer's profiling sampler" in unknown.band_basis
    # a named install: one sampler, a symmetric band around its own figure
    for r in (native, fi):
        assert r.kv_cache_bytes_high - r.memory.kv_cache_bytes == r.memory.kv_cache_bytes - r.kv_cache_bytes_low
        assert "FlashInfer's profiling sampler" not in r.band_basis
    assert any("as in the official vllm/vllm-openai image" in w for w in fi.warnings)


@pytest.mark.parametrize("version", ["0.8.5", "0.11.1", "0.13.0"])
def test_releases_whose_sampler_does_not_depend_on_the_install_keep_a_symmetric_band(version):
    assert not sampler_uncertain(behaviour(version))
    r = _run(version)
    assert r.kv_cache_bytes_high - r.memory.kv_cache_bytes == r.memory.kv_cache_bytes - r.kv_cache_bytes_low


def test_the_official_image_ships_flashinfer_and_no_other_image_is_assumed_to():
    assert image_ships_flashinfer("vllm/vllm-openai:v0.11.0") is True
    assert image_ships_flashinfer("docker.io/vllm/vllm-openai@sha256:abc") is True
    assert image_ships_flashinfer("registry.example.com:5000/vllm/vllm-openai:v0.11.0") is None
    assert image_ships_flashinfer("ghcr.io/acme/vllm:0.11.0") is None


def test_a_residual_is_held_when_the_logged_kv_lies_between_the_low_and_the_high_end():
    eb = load_benchmark("error_band")
    gib = 2**30
    # under-predicted by 5 GiB where the high end already reaches 4 GiB above: 1 GiB of width is needed
    assert eb._need({"residual": -5 * gib, "above": 4 * gib}, "gib") == pytest.approx(1.0)
    # inside the sampler's reach: no width needed
    assert eb._need({"residual": -3 * gib, "above": 4 * gib}, "gib") == 0
    # over-predicted: the low end is the native sampler's, the reach above does not help
    assert eb._need({"residual": 2 * gib, "above": 4 * gib}, "gib") == pytest.approx(2.0)
