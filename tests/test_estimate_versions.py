"""Issue 12 item 2: version-table mismatches, each from the source's behaviour at the release it cites."""

import pytest

from configurator.estimate import EstimateRequest, estimate
from configurator.units import GiB


def _est(model, gpu, version, **flags):
    return estimate(EstimateRequest(model=model, gpu=gpu, vllm_version=version, flags=flags))


@pytest.mark.parametrize("model,concurrency", [("microsoft/Phi-3.5-mini-instruct", 8),
                                               ("microsoft/Phi-4-mini-instruct", 20)])
def test_longrope_defaults_to_original_max_position_embeddings_from_0_11_1(model, concurrency):
    # vllm/config/model.py::_get_and_verify_max_len (0.11.1+): no --max-model-len -> the top-level
    # original_max_position_embeddings (4096); the limit a user length is checked against stays 131,072
    r = _est(model, "l4", "0.15.0")
    assert r.flags["max_model_len"] == 4096 and r.verdict == "fits"
    assert r.kv_cache.max_concurrency > concurrency
    assert _est(model, "l4", "0.11.0").flags["max_model_len"] == 131072  # before: max_position_embeddings
    longer = _est(model, "l4", "0.33.0", max_model_len=16384)
    assert not any("User-specified max_model_len" in e for e in longer.errors)


def _pp_case(version):
    # a length one PP stage's half of the layers holds, but not the whole model
    return _est("Qwen/Qwen3-14B", "l4", version, pipeline_parallel_size=2, enforce_eager=True,
                max_model_len=40960, kv_cache_memory_bytes=int(4.5 * GiB))


def test_pp_fit_check_is_per_worker_in_0_10_and_0_11():
    # get_kv_cache_configs (0.11.0): check_enough_kv_cache_memory per worker, on that worker's layers
    for version in ("0.10.0", "0.11.0"):
        r = _pp_case(version)
        assert not any("To serve at least one request" in e for e in r.errors), version


def test_pp_fit_check_is_whole_model_vs_smallest_worker_in_0_15_to_0_17():
    # get_kv_cache_configs (0.15.0): the global groups (all layers) against min(available_memory)
    for version in ("0.15.0", "0.17.0"):
        r = _pp_case(version)
        assert any("To serve at least one request" in e for e in r.errors), version
        assert r.verdict == "refused"
