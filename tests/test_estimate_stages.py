"""Each stage of the estimate pipeline alone: inputs -> budget -> KV layout -> verdict -> explanation."""

import ast
from pathlib import Path

from configurator.estimate import EstimateRequest, estimate
from configurator.estimate.budget import plan_budget, requested_bytes
from configurator.estimate.explain import explain
from configurator.estimate.inputs import resolve_inputs
from configurator.estimate.layout import plan_kv_layout
from configurator.estimate.pipeline import with_band
from configurator.estimate.verdict import decide
from configurator.units import GiB

ROOT = Path(__file__).resolve().parents[1] / "configurator"


def _req(**kw):
    return EstimateRequest(model=kw.pop("model", "meta-llama/Llama-3.1-8B-Instruct"), gpu=kw.pop("gpu", "h100-80gb"),
                           vllm_version=kw.pop("version", "0.33.0"), flags=kw)


def test_inputs_fill_the_release_defaults():
    inp = resolve_inputs(_req())
    assert (inp.util, inp.max_num_seqs, inp.mnbt, inp.max_len) == (0.92, 1024, 8192, 131072)
    assert inp.v2 and inp.mcb == 2  # runner V2, PP 1: pp + 1 batches in flight
    old = resolve_inputs(_req(version="0.11.0"))
    assert (old.util, old.mcb) == (0.9, 1)


def test_budget_subtracts_every_term_from_the_request():
    inp = resolve_inputs(_req())
    b = plan_budget(inp, _req())
    ov = b.overheads
    assert b.requested_bytes == requested_bytes(inp.gpu.total_bytes, 0.92, "ceil")
    assert b.available_bytes == (b.requested_bytes - b.weights_bytes - ov.activation_bytes - ov.non_torch_bytes
                                 - ov.cudagraph_bytes - b.other_bytes)
    fixed = plan_budget(resolve_inputs(_req(kv_cache_memory_bytes=10 * GiB)), _req(kv_cache_memory_bytes=10 * GiB))
    assert fixed.available_bytes == 10 * GiB


def test_layout_and_verdict_alone():
    inp = resolve_inputs(_req(max_model_len=4096))
    kvp = plan_kv_layout(inp)
    assert kvp.block_size == 16 and len(kvp.layout.groups) == 1
    assert kvp.layout.bytes_per_block() == 32 * 16 * 2 * 8 * 128 * 2  # 32 layers x bs 16 x K+V x 8 heads x 128 x 2 B
    b = plan_budget(inp, _req(max_model_len=4096))
    v = decide(inp, kvp, b)
    assert v.capacity.num_blocks == b.available_bytes // kvp.layout.bytes_per_block()
    assert v.capacity.blocks_per_request == 4096 // 16 and not v.errors
    r = explain(inp, kvp, b, v)
    assert with_band(r, inp, kvp, b, v) == estimate(_req(max_model_len=4096))


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_no_calibration_estimate_cycle_and_version_data_is_plain():
    for p in (ROOT / "estimate").glob("*.py"):
        assert not any(m.startswith("configurator.calibration") for m in _imports(p)), p
    for name in ("versions.py", "defaults.py", "overhead_data.py", "messages.py"):
        assert not any(m.startswith("configurator.memory") for m in _imports(ROOT / "vllm" / name)), name


def test_band_from_the_table_and_verdict_across_it():
    from configurator.estimate.band import band_for, stratum_keys

    r = estimate(_req(max_model_len=8192))
    inp = resolve_inputs(_req(max_model_len=8192))
    band = band_for(stratum_keys(inp.model, "0.33.0", inp.flags, inp.gpu), r.memory.requested_bytes)
    assert r.kv_cache_bytes_low == r.memory.kv_cache_bytes - band.below
    assert r.kv_cache_bytes_high == r.memory.kv_cache_bytes + band.above
    assert r.band_basis == band.basis and ("validated by" in band.basis or "no log of this kind" in band.basis)
    assert r.verdict == "fits" and any(line.startswith("error band:") for line in r.derivation)
    exact = estimate(_req(max_model_len=8192, kv_cache_memory_bytes=4 * GiB))
    assert exact.kv_cache_bytes_low == exact.kv_cache_bytes_high == 4 * GiB


def test_at_risk_when_the_length_fits_only_at_the_optimistic_end():
    # the KV one request of this length needs sits inside the band: neither fits nor refused
    base = estimate(_req(model="Qwen/Qwen3-8B", gpu="l4", max_model_len=4096))
    per_token = base.kv_cache.bytes_per_token
    avail = base.memory.kv_cache_bytes
    below = avail - base.kv_cache_bytes_low
    inside = (avail - below // 2) // per_token // 16 * 16  # needs more than the pessimistic end holds
    r = estimate(_req(model="Qwen/Qwen3-8B", gpu="l4", max_model_len=int(inside)))
    assert r.verdict == "at-risk" and r.fits
    far = estimate(_req(model="Qwen/Qwen3-8B", gpu="l4", max_model_len=40960))
    assert far.verdict == "refused"  # refused even at the optimistic end
