"""A calibration carries over to other flags (issue 16, item 4).

From the dev logs (data/logs/vllm-startup-logs.dev.jsonl and dev2.jsonl), records of the same model,
GPU and printed vLLM release whose flags differ are grouped by their fields (never by a model name or a
record id): `calibrate` reads a start-up log made of one record's lines, and `estimate --calibration`
predicts each other record of its group with that record's flags. The predicted "Available KV cache
memory" must land within:

- SAME_LAYOUT_GIB (0.02 GiB) when the parallel layout is the same (other --gpu-memory-utilization,
  --max-model-len): measured 0.0075 GiB at most (2026-12-02);
- across a --tensor-parallel-size change, the band the estimate reports: the calibrated run did not
  measure the new layout's communication memory (NCCL, custom all-reduce), which the overhead model
  predicts only roughly, so the estimate widens its band to the dev logs' error for that era and
  class instead of the calibrated 0.125 GiB. Measured after the last 2026-12-02 refit: 0.09-0.10 GiB off
  for a TP 1 <-> 2 change of Qwen2-7B on an A100 (0.10.1), 0.77-0.88 GiB for the larger Qwen3 pair
  on an H100 that prints no release; each inside its band.

A record that prints no release is calibrated and predicted as the tool does (`calibrate` assumes the
newest modelled release and says so; `estimate` defaults to it). Evaluated as 0.10.1 instead, the same
TP-change pair misses by 0.27 GiB: the carry-over is only as good as the release is right.
docs/testing.md quotes these figures.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

from configurator.errors import ConfiguratorError
from configurator.hardware.catalog import find_gpu
from configurator.model.resolve import resolve_model
from configurator.units import GiB
from tests.conftest import repo_data

SAME_LAYOUT_GIB = 0.02

# the record's flags and the `vllm serve` option each one is
FLAGS = (("max_model_len", "--max-model-len"), ("gpu_memory_utilization", "--gpu-memory-utilization"),
         ("tensor_parallel_size", "--tensor-parallel-size"), ("pipeline_parallel_size", "--pipeline-parallel-size"),
         ("block_size", "--block-size"), ("max_num_seqs", "--max-num-seqs"))


def _model(record: dict) -> str | None:
    """The record's Hugging Face id when the tool knows it offline (built-in profile or catalog)."""
    m = re.search(r"[\w.-]+/[\w.-]+", str(record.get("model") or ""))
    if not m:
        return None
    try:
        spec = resolve_model(m.group(0), allow_hub=False)
    except ConfiguratorError:
        return None
    return spec.hf_id or spec.name


def _gpu(record: dict) -> str | None:
    try:
        return find_gpu(str(record.get("gpu_family") or "")).name
    except ConfiguratorError:
        return None


def _groups() -> list[list[dict]]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for name in ("vllm-startup-logs.dev.jsonl", "vllm-startup-logs.dev2.jsonl"):
        for line in repo_data("logs", name).read_text().splitlines():
            r = json.loads(line)
            if (r.get("engine") != "V1" or r.get("status") != "ok" or r.get("available_kv_cache_gib") is None
                    or r.get("model_loading_gib") is None or r.get("quantization") or r.get("pipeline_parallel_size")
                    not in (None, 1)):
                continue
            model, gpu = _model(r), _gpu(r)
            if model and gpu:
                r["_model"], r["_gpu"] = model, gpu
                key = (model, gpu, r.get("vllm_version"), r.get("kv_cache_dtype") or "auto", r.get("dtype"))
                groups[key].append(r)
    return [g for g in groups.values() if len({tuple(r.get(k) for k, _ in FLAGS) for r in g}) > 1]


def _log(r: dict) -> str:
    """A V1 start-up log holding the record's own lines (the prefixes vLLM prints)."""
    args = {"model": r["_model"], **{k: r[k] for k, _ in FLAGS if r.get(k) and not (k.endswith("parallel_size")
                                                                                     and r[k] == 1)}}
    worker = "(EngineCore_DP0 pid=7) INFO 12-02 10:11:12 [gpu_worker.py:1] "
    lines = [f"INFO 12-02 10:11:10 [api_server.py:1] vLLM API server version {r['vllm_version']}"] \
        if r.get("vllm_version") else []
    lines += [f"INFO 12-02 10:11:10 [utils.py:1] non-default args: {args!r}",
              f"{worker}Model loading took {r['model_loading_gib']} GiB and 6.27 seconds",
              f"{worker}Available KV cache memory: {r['available_kv_cache_gib']} GiB"]
    return "\n".join(lines) + "\n"


def test_calibrating_on_one_record_predicts_the_others_of_its_model_and_gpu(run_cli, tmp_path):
    groups = _groups()
    # the dev data holds at least a 3-record group and two 2-record ones: the test cannot pass empty
    assert len(groups) >= 3 and sum(len(g) * (len(g) - 1) for g in groups) >= 10
    misses, seen_tp_change = [], False
    for group in groups:
        for src in group:
            log = tmp_path / f"{src['id']}.log"
            log.write_text(_log(src))
            cal = tmp_path / f"{src['id']}.yaml"
            res = run_cli("calibrate", str(log), "--gpu", src["_gpu"], "-o", str(cal))
            assert res.exit_code == 0, res.output
            if not src.get("vllm_version"):
                assert "newest modelled release" in res.output
            for dst in group:
                if dst is src:
                    continue
                args = ["estimate", "--model", dst["_model"], "--gpu", dst["_gpu"], "--calibration", str(cal),
                        "--format", "json"]
                if dst.get("vllm_version"):
                    args += ["--vllm-version", dst["vllm_version"]]
                args += [tok for k, opt in FLAGS if dst.get(k) for tok in (opt, str(dst[k]))]
                out = json.loads(run_cli(*args).stdout)
                assert not any("calibration ignored" in w for w in out["warnings"]), out["warnings"]
                predicted_gib = out["memory"]["kv_cache_bytes"] / GiB
                tp_change = (src.get("tensor_parallel_size") or 1) != (dst.get("tensor_parallel_size") or 1)
                seen_tp_change |= tp_change
                error = predicted_gib - dst["available_kv_cache_gib"]
                if tp_change:  # inside the band the estimate gives, and the band is the uncalibrated one
                    low, high = out["kv_cache_bytes_low"] / GiB, out["kv_cache_bytes_high"] / GiB
                    assert high - low > 0.25, (low, high)
                    if not low - 0.005 <= dst["available_kv_cache_gib"] <= high + 0.005:
                        misses.append(f"{src['id']} -> {dst['id']}: {error:+.3f} GiB outside [{low:.2f}, {high:.2f}]")
                elif abs(error) > SAME_LAYOUT_GIB:
                    misses.append(f"{src['id']} -> {dst['id']}: {error:+.3f} GiB (tolerance {SAME_LAYOUT_GIB})")
    assert seen_tp_change
    assert not misses, misses


def test_a_calibration_changes_the_prediction(run_cli, tmp_path):
    """The carry-over is the calibration's doing: it moves the prediction, and on the records of the same
    parallel layout it lands closer to the log than the uncalibrated estimate (across a layout change the
    uncalibrated model may be as close: the calibration did not measure the new layout)."""
    group = max(_groups(), key=len)
    src, *others = group
    log = tmp_path / "src.log"
    log.write_text(_log(src))
    cal = tmp_path / "cal.json"
    assert run_cli("calibrate", str(log), "--gpu", src["_gpu"], "-o", str(cal)).exit_code == 0
    moved, same_layout = [], []
    for dst in others:
        args = ["estimate", "--model", dst["_model"], "--gpu", dst["_gpu"], "--format", "json",
                *(["--vllm-version", dst["vllm_version"]] if dst.get("vllm_version") else []),
                *[tok for k, opt in FLAGS if dst.get(k) for tok in (opt, str(dst[k]))]]
        with_cal, without = (json.loads(run_cli(*args, *extra).stdout)["memory"]["kv_cache_bytes"] / GiB
                             for extra in (["--calibration", str(cal)], []))
        moved.append(abs(with_cal - without))
        if all((src.get(k) or 1) == (dst.get(k) or 1) for k in ("tensor_parallel_size", "pipeline_parallel_size")):
            logged = dst["available_kv_cache_gib"]
            same_layout.append((abs(with_cal - logged), abs(without - logged)))
    assert max(moved) > 0.01
    assert same_layout, "the largest group has no record of the calibrated record's layout"
    assert all(w <= SAME_LAYOUT_GIB and w <= wo for w, wo in same_layout), same_layout
