"""Issue 13, item 21: `calibrate` reads V0 logs (0.6.x / 0.7.x), names the catalog GPU whose CUDA total
the log prints, fills the measured columns the log gives, and reads a log that has only the "Free memory
on device ... Current kv cache memory in use" line.

The log texts are vLLM's own format strings (vllm==0.6.4.post1 / 0.6.6 / 0.7.3 wheels:
vllm/entrypoints/openai/api_server.py `logger.info("args: %s", args)`, vllm/worker/worker.py
determine_num_available_blocks, vllm/executor/gpu_executor.py "# GPU blocks: %d, # CPU blocks: %d",
vllm/worker/model_runner.py "Loading model weights took %.4f GB" / "Graph capturing finished in %.0f secs,
took %.2f GiB", vllm/v1/core/kv_cache_utils.py "# GPU blocks: %d") filled with the figures of real
records in data/logs (vllm-log-036, vllm-log-051, vllm-log-d2-016).
"""

import json

import pytest
import yaml

from configurator.calibration import GPU_TOTAL_TOLERANCE_BYTES
from configurator.hardware.catalog import match_cuda_total
from configurator.units import GiB
from configurator.vllm.logparse import parse_log
from tests.conftest import repo_data

# vllm-log-036 (Llama-3.1-8B-Instruct on an RTX 3090, utilization 0.90, max_model_len 20000), written as
# vLLM 0.6.6 prints it: the Namespace line, the three-line "Memory profiling takes" message (activation
# = the record's peak_torch_memory 17.06 - weights 14.99 GiB) and the blocks line.
_NS = ("Namespace(subparser='serve', model_tag='meta-llama/Llama-3.1-8B-Instruct', config='', host=None, "
       "port=8000, uvicorn_log_level='info', allow_credentials=False, allowed_origins=['*'], api_key=None, "
       "model='meta-llama/Llama-3.1-8B-Instruct', task='auto', tokenizer=None, trust_remote_code=False, "
       "dtype='auto', kv_cache_dtype='auto', max_model_len=20000, pipeline_parallel_size=1, "
       "tensor_parallel_size=1, block_size=None, swap_space=4, gpu_memory_utilization=0.9, "
       "max_num_seqs=None, quantization=None, enforce_eager=False, dispatch_function=<function serve at 0x7f1>)")
LOG_0_6_6 = f"""\
INFO 01-10 10:00:01 api_server.py:712] vLLM API server version 0.6.6
INFO 01-10 10:00:01 api_server.py:713] args: {_NS}
INFO 01-10 10:00:09 model_runner.py:1099] Loading model weights took 14.9888 GB
INFO 01-10 10:00:11 worker.py:241] Memory profiling takes 1.52 seconds
the current vLLM instance can use total_gpu_memory (23.58GiB) x gpu_memory_utilization (0.90) = 21.22GiB
model weights take 14.99GiB; non_torch_memory takes 0.35GiB; PyTorch activation peak memory takes 2.07GiB; \
the rest of the memory reserved for KV Cache is 3.81GiB.
INFO 01-10 10:00:11 gpu_executor.py:76] # GPU blocks: 1952, # CPU blocks: 2048
INFO 01-10 10:00:11 gpu_executor.py:80] Maximum concurrency for 20000 tokens per request: 1.56x
INFO 01-10 10:00:35 model_runner.py:1535] Graph capturing finished in 24 secs, took 0.31 GiB
"""


def _record(record_id: str, name: str = "vllm-startup-logs.dev.jsonl") -> dict:
    path = repo_data("logs", name)
    return next(json.loads(line) for line in path.read_text().splitlines() if f'"{record_id}"' in line)


def test_0_6_namespace_line_gives_model_and_flags():
    log = parse_log(LOG_0_6_6)
    assert (log.engine, log.vllm_version, log.model) == ("V0", "0.6.6", "meta-llama/Llama-3.1-8B-Instruct")
    assert log.namespace_args and log.non_default_args["max_model_len"] == 20000
    assert (log.max_model_len, log.gpu_memory_utilization) == (20000, 0.9)
    assert (log.num_gpu_blocks, log.num_cpu_blocks, log.graph_capture_bytes) == (1952, 2048, round(0.31 * GiB))


def test_v0_log_is_labelled_with_the_catalog_gpu_and_fills_the_measured_columns(run_cli, tmp_path):
    src = tmp_path / "v066.log"
    src.write_text(LOG_0_6_6)
    out = tmp_path / "cal.yaml"
    res = run_cli("calibrate", str(src), "-o", str(out), "--format", "json")
    assert res.exit_code == 0, res.stderr
    rep = json.loads(res.stdout)
    cal = yaml.safe_load(out.read_text())
    assert cal["gpu"] == "rtx-3090" and rep["calibration"]["gpu"] == "rtx-3090"
    rows = {label: (measured, predicted) for label, measured, predicted in rep["rows"]}
    assert rows["activation peak"][0] == round(2.07 * GiB)
    assert rows["non-torch"][0] == round(0.35 * GiB)
    assert rows["CUDA graphs (after the KV pool)"][0] == round(0.31 * GiB)
    assert rows["available KV cache"] == (round(3.81 * GiB), None)  # V0: measured, not predicted
    assert rep["predicted_kv_bytes"] is None and "V0" in rep["not_predicted"]


def test_v0_text_says_once_and_exactly_what_stays_unsupported(run_cli, tmp_path):
    src = tmp_path / "v066.log"
    src.write_text(LOG_0_6_6)
    res = run_cli("calibrate", str(src), "-o", str(tmp_path / "c.yaml"))
    assert res.exit_code == 0
    assert "rtx-3090" in res.stdout.splitlines()[0]
    assert res.stdout.count("not predicted: vLLM 0.6.6 runs the V0 engine") == 1
    assert "cannot apply this file" in res.stdout and "0.00 GiB" not in res.stdout


def test_0_6_4_profiling_results_line_from_a_real_record(run_cli, tmp_path):
    r = _record("vllm-log-036")
    text = (f"INFO 12-06 10:02:25 model_runner.py:1077] Loading model weights took {r['model_loading_gib']} GB\n"
            f"INFO 12-06 10:02:27 worker.py:232] {r['memory_profiling_line']}\n"
            f"INFO 12-06 10:02:27 gpu_executor.py:113] # GPU blocks: {r['gpu_blocks']}, # CPU blocks: "
            f"{r['cpu_blocks']}\n")
    log = parse_log(text)
    assert log.engine == "V0" and log.peak_torch_bytes == round(17.06 * GiB)
    src = tmp_path / "v064.log"
    src.write_text(text)
    res = run_cli("calibrate", str(src), "--model", "meta-llama/Llama-3.1-8B-Instruct", "-o",
                  str(tmp_path / "c.yaml"), "--format", "json")
    assert res.exit_code == 0, res.stderr
    rep = json.loads(res.stdout)
    rows = {label: measured for label, measured, _ in rep["rows"]}
    # 0.6.4's peak_torch_memory holds the weights: the activation peak is 17.06 - 14.9888 GiB
    assert abs(rows["activation peak"] / GiB - (17.06 - 14.9888)) < 0.01
    assert rows["available KV cache"] == round(3.81 * GiB)
    assert rep["calibration"]["gpu"] == "rtx-3090"
    assert rep["calibration"]["vllm_version"] == "V0 (version not logged)"
    assert any("V0 engine's and does not print the vLLM version" in w for w in rep["warnings"])


def test_a_log_with_only_the_free_memory_line_is_read(run_cli, tmp_path):
    r = _record("vllm-log-051")  # Qwen2.5-0.5B on a 15.55 GiB GPU, only the free-memory line
    src = tmp_path / "free.log"
    src.write_text(f"(EngineCore_DP0 pid=7) INFO 08-21 10:11:12 [gpu_worker.py:1] {r['free_memory_line']}\n")
    res = run_cli("calibrate", str(src), "--model", "Qwen/Qwen2.5-0.5B", "--vllm-version", "0.28.0",
                  "-o", str(tmp_path / "c.yaml"), "--format", "json")
    assert res.exit_code == 0, res.stderr
    rep = json.loads(res.stdout)
    rows = {label: measured for label, measured, _ in rep["rows"]}
    assert rep["logged_kv_bytes"] == round(11.94 * GiB)
    assert rows["weights"] == round(0.93 * GiB) and rows["activation peak"] == round(1.06 * GiB)
    assert rows["non-torch"] == round(0.07 * GiB) and rows["CUDA graphs"] == round(0.4 * GiB)
    assert rep["calibration"]["gpu"] == "custom"  # 15.55 GiB is no catalog GPU's CUDA total
    assert abs(rep["calibrated_kv_bytes"] - rep["logged_kv_bytes"]) <= 0.01 * GiB


def test_early_v1_blocks_only_line_is_read():
    r = _record("vllm-log-d2-016", "vllm-startup-logs.dev2.jsonl")
    log = parse_log(r["log_excerpt"])
    assert log.num_gpu_blocks == 1381 and log.num_cpu_blocks is None
    assert log.max_concurrency == 10.79 and log.model_loading_bytes == round(67.7229 * GiB)


@pytest.mark.parametrize("total_gib,expected", [
    (23.58, "rtx-3090"),   # V0 total_gpu_memory of vllm-log-036
    (22.04, "l4"),         # V1 "Free memory on device (17.06/22.04 GiB)" of vllm-log-017
    (79.18, "h100-80gb"),
    (22.05, None),         # between L4 (22.040) and A10G (22.058): neither within the tolerance
    (15.55, None),         # no catalog GPU
])
def test_logged_total_matches_one_catalog_gpu_or_none(total_gib, expected):
    found, _ = match_cuda_total(round(total_gib * GiB), GPU_TOTAL_TOLERANCE_BYTES)
    assert (found.name if found else None) == expected


def test_a_total_two_catalog_gpus_share_stays_custom_with_a_warning():
    found, near = match_cuda_total(round(95.00 * GiB), GPU_TOTAL_TOLERANCE_BYTES)
    assert found is None and {g.name for g in near} == {"gh200", "h20"}
