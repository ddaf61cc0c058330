"""GPU lookups: names, aliases, nvidia-smi names, node-label values, MIG slices, custom sizes."""

import pytest

from configurator.errors import InputError, NotFoundError
from configurator.hardware.catalog import custom_gpu, find_gpu
from configurator.units import GiB, MiB


@pytest.mark.parametrize("name,canonical", [
    ("h100", "h100-80gb"), ("NVIDIA-H100-80GB-HBM3", "h100-80gb"), ("nvidia-h100-80gb", "h100-80gb"),
    ("a100", "a100-80gb"), ("A100-40GB", "a100-40gb"), ("NVIDIA L4", "l4"), ("rtx-4090", "rtx-4090"),
])
def test_lookup(name, canonical):
    assert find_gpu(name).name == canonical


def test_cuda_total_below_marketing_size():
    g = find_gpu("h100-80gb")
    assert 79 * GiB < g.total_bytes < 80 * GiB


def test_mig_slice_is_a_gpu_of_its_own_size():
    g = find_gpu("a100-80gb:3g.40gb")
    assert g.mig_profile == "3g.40gb" and 38 * GiB < g.total_bytes < 41 * GiB
    assert find_gpu("NVIDIA-A100-SXM4-80GB-MIG-3g.40gb").total_bytes == g.total_bytes
    with pytest.raises(InputError):
        find_gpu("nvidia.com/mig-3g.40gb")


def test_unknown_gpu_suggests():
    with pytest.raises(NotFoundError) as e:
        find_gpu("h100-80")
    assert "h100" in str(e.value)


def test_custom_memory():
    assert custom_gpu("81559MiB").total_bytes == 81559 * MiB


def test_an_integrated_gpu_says_its_host_memory_is_not_modelled():
    from configurator.estimate import EstimateRequest, estimate

    r = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu="gb10", vllm_version="0.25.0"))
    assert any(w.startswith("not-modelled: gb10 shares the host's memory") for w in r.warnings)
    exact = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu="gb10", vllm_version="0.25.0",
                                     flags={"kv_cache_memory_bytes": 20 << 30}))
    assert not any("shares the host's memory" in w for w in exact.warnings)
    discrete = estimate(EstimateRequest(model="Qwen/Qwen3-8B", gpu="h100-80gb", vllm_version="0.25.0"))
    assert not any("shares the host's memory" in w for w in discrete.warnings)


def test_a_derived_total_names_its_gpu_but_never_identifies_a_log():
    from configurator.hardware.catalog import find_gpu, match_cuda_total

    h20 = find_gpu("NVIDIA-H20-3e")  # the GPU Feature Discovery label
    assert h20.name == "h20-3e" and h20.total_source.startswith("derived")
    assert find_gpu("h20").name == "h20"  # a bare H20 is the 96 GB board
    found, near = match_cuda_total(h20.total_bytes, 6 << 20)  # the H200's observed total, the same figure
    assert found is not None and found.name == "h200" and [g.name for g in near] == ["h200"]
