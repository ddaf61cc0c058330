"""--max-cudagraph-capture-size sets the capture ceiling (vLLM 0.33.0 config/vllm.py _set_cudagraph_sizes): it was a
flag the estimate accepted and ignored."""

from __future__ import annotations

from configurator.hardware.catalog import find_gpu
from configurator.vllm.defaults import cudagraph_capture_sizes
from configurator.vllm.versions import behaviour


def test_the_ceiling_replaces_the_default_and_adds_no_decode_size():
    b, gpu = behaviour("0.33.0"), find_gpu("h100-80gb")
    default = cudagraph_capture_sizes(b, gpu, 256, 8192)
    assert default[-1] == 512 and len(default) == 51
    sizes = cudagraph_capture_sizes(b, gpu, 100, 8192, max_capture_size=64)
    assert sizes == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]  # no max_num_seqs (100) appended
    assert cudagraph_capture_sizes(b, gpu, 256, 1024, max_capture_size=4096)[-1] == 1024  # still <= mnbt


def test_a_lower_ceiling_means_less_graph_memory(estimate_json):
    base = ("--model", "Qwen/Qwen3-8B", "--gpu", "h100-80gb")
    _, default = estimate_json(*base)
    _, low = estimate_json(*base, "--max-cudagraph-capture-size", "64")
    _, high = estimate_json(*base, "--max-cudagraph-capture-size", "2048")
    assert low["memory"]["cudagraph_bytes"] < default["memory"]["cudagraph_bytes"] < high["memory"]["cudagraph_bytes"]
