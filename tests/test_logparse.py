"""parse_log: vLLM start-up logs (V0 and V1, releases 0.6 to 0.33) -> StartupLog; bad logs -> LogError.

Line texts are vLLM's own: the dev-set lines of data/logs/vllm-startup-logs.dev.jsonl (copied here
verbatim), and the format strings of vllm/v1/worker/gpu_worker.py, vllm/v1/core/kv_cache_utils.py,
vllm/v1/worker/gpu_model_runner.py and vllm/worker/worker.py for the synthetic 0.11 and 0.33 logs.
"""

from __future__ import annotations

import contextlib
import dataclasses
from decimal import Decimal

import pytest

from configurator.errors import InputError
from configurator.units import GiB
from configurator.vllm.logparse import LogError, parse_log


def gib(text: str) -> int:
    """A logged GiB figure as the integer bytes the parser returns."""
    return round(Decimal(text) * GiB)


API = "(APIServer pid=1) INFO 10-08 09:12:01 [api_server.py:1839] vLLM API server version 0.11.0"

# vLLM 0.11.0, one GPU: the worker runs inside the engine-core process (UniProcExecutor).
LOG_0_11 = """\
(APIServer pid=1) INFO 10-08 09:12:01 [api_server.py:1839] vLLM API server version 0.11.0
(APIServer pid=1) INFO 10-08 09:12:01 [utils.py:233] non-default args: {'model_tag': 'Qwen/Qwen2-7B-Instruct', \
'model': 'Qwen/Qwen2-7B-Instruct', 'max_model_len': 16384, 'gpu_memory_utilization': 0.5}
(APIServer pid=1) INFO 10-08 09:12:09 [model.py:547] Resolved architecture: Qwen2ForCausalLM
(EngineCore_DP0 pid=312) INFO 10-08 09:12:20 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: \
model='Qwen/Qwen2-7B-Instruct', speculative_config=None, tokenizer='Qwen/Qwen2-7B-Instruct', \
skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, \
dtype=torch.bfloat16, max_seq_len=16384, download_dir=None, load_format=auto, tensor_parallel_size=1, \
pipeline_parallel_size=1, data_parallel_size=1, disable_custom_all_reduce=False, quantization=None, \
enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name=Qwen/Qwen2-7B-Instruct, \
enable_prefix_caching=True, chunked_prefill_enabled=True, pooler_config=None, compilation_config={"level":3}
(EngineCore_DP0 pid=312) INFO 10-08 09:12:31 [cuda.py:362] Using Flash Attention backend on V1 engine.
(EngineCore_DP0 pid=312) INFO 10-08 09:12:41 [gpu_model_runner.py:2653] Model loading took 14.2488 GiB and \
9.870213 seconds
(EngineCore_DP0 pid=312) INFO 10-08 09:13:10 [gpu_worker.py:298] Available KV cache memory: 24.83 GiB
(EngineCore_DP0 pid=312) INFO 10-08 09:13:10 [kv_cache_utils.py:1087] GPU KV cache size: 464,848 tokens
(EngineCore_DP0 pid=312) INFO 10-08 09:13:10 [kv_cache_utils.py:1091] Maximum concurrency for 16,384 tokens \
per request: 28.37x
(EngineCore_DP0 pid=312) INFO 10-08 09:13:25 [gpu_model_runner.py:3480] Graph capturing finished in 3 secs, \
took 0.50 GiB
(EngineCore_DP0 pid=312) INFO 10-08 09:13:25 [core.py:210] init engine (profile, create kv cache, warmup model) \
took 41.92 seconds
(APIServer pid=1) INFO 10-08 09:13:26 [loggers.py:147] Engine 000: vllm cache_config_info with initialization \
after num_gpu_blocks is: 29053
"""

# vLLM 0.33.0, tensor parallel 2: worker processes log per rank, the engine core logs the pool.
_W0 = "(Worker_TP0 pid=301) INFO 05-10 14:03:"
_W1 = "(Worker_TP1 pid=302) INFO 05-10 14:03:"
LOG_0_33 = f"""\
(APIServer pid=1) INFO 05-10 14:02:11 [startup.py:38]
(APIServer pid=1) INFO 05-10 14:02:11 [startup.py:38]        █     █     █▄   ▄█
(APIServer pid=1) INFO 05-10 14:02:11 [startup.py:38]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.33.0
(APIServer pid=1) INFO 05-10 14:02:11 [startup.py:38]   █▄█▀ █     █     █     █  model   Qwen/Qwen3-32B
(APIServer pid=1) INFO 05-10 14:02:11 [startup.py:38]    ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀
(APIServer pid=1) INFO 05-10 14:02:11 [startup.py:96] non-default args: {{'model_tag': 'Qwen/Qwen3-32B', \
'model': 'Qwen/Qwen3-32B', 'max_model_len': 32768, 'tensor_parallel_size': 2, 'gpu_memory_utilization': 0.9, \
'kv_cache_dtype': 'fp8'}}
(EngineCore pid=245) INFO 05-10 14:02:20 [core.py:140] Initializing a V1 LLM engine (v0.33.0) with config: \
model='Qwen/Qwen3-32B', speculative_config=None, tokenizer='Qwen/Qwen3-32B', skip_tokenizer_init=False, \
tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, \
max_seq_len=32768, download_dir=None, load_format=auto, tensor_parallel_size=2, pipeline_parallel_size=1, \
data_parallel_size=1, decode_context_parallel_size=1, dcp_comm_backend=ag_rs, disable_custom_all_reduce=False, \
quantization=None, quantization_config=None, enforce_eager=False, aux_output_config=None, kv_cache_dtype=fp8, \
device_config=cuda, seed=0, served_model_name=Qwen/Qwen3-32B, enable_prefix_caching=True, \
enable_chunked_prefill=True, pooler_config=None, compilation_config={{'mode': 3}}, kernel_config=None
{_W0}01 [gpu_model_runner.py:5089] Model loading took 30.6 GiB memory and 21.480512 seconds
{_W1}01 [gpu_model_runner.py:5089] Model loading took 30.59 GiB memory and 21.512307 seconds
{_W0}20 [gpu_model_runner.py:6410] Estimated CUDA graph memory: 0.61 GiB total
{_W1}20 [gpu_model_runner.py:6410] Estimated CUDA graph memory: 0.61 GiB total
{_W0}20 [gpu_worker.py:772] Available KV cache memory: 34.52 GiB
{_W1}20 [gpu_worker.py:772] Available KV cache memory: 34.49 GiB
(EngineCore pid=245) INFO 05-10 14:03:21 [kv_cache_utils.py:1147] GPU KV cache size: 565,072 tokens, Maximum \
concurrency for 32,768 tokens per request: 17.24x
{_W0}30 [gpu_model_runner.py:6517] Graph capturing finished in 9 secs, took 0.58 GiB
{_W1}30 [gpu_model_runner.py:6517] Graph capturing finished in 9 secs, took 0.58 GiB
{_W0}30 [gpu_worker.py:1003] CUDA graph pool memory: 0.58 GiB (actual), 0.61 GiB (estimated), difference: \
0.03 GiB (5.2%).
{_W1}30 [gpu_worker.py:1003] CUDA graph pool memory: 0.58 GiB (actual), 0.61 GiB (estimated), difference: \
0.03 GiB (5.2%).
{_W0}31 [gpu_worker.py:1066] Free memory on device (78.57/79.18 GiB) on startup. Desired GPU memory utilization \
is (0.9, 71.26 GiB). Actual usage is 31.16 GiB for consumed memory (weights + non-torch), 5.64 GiB for peak \
activation, and 0.58 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with \
`--kv-cache-memory=36221083443` (33.73 GiB) to fit into requested memory, or `--kv-cache-memory=44070136177` \
(41.04 GiB) to fully utilize gpu memory. Current kv cache memory in use is 34.52 GiB.
{_W1}31 [gpu_worker.py:1066] Free memory on device (78.57/79.18 GiB) on startup. Desired GPU memory utilization \
is (0.9, 71.26 GiB). Actual usage is 31.13 GiB for consumed memory (weights + non-torch), 5.64 GiB for peak \
activation, and 0.58 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with \
`--kv-cache-memory=36253298851` (33.76 GiB) to fit into requested memory, or `--kv-cache-memory=44102351585` \
(41.07 GiB) to fully utilize gpu memory. Current kv cache memory in use is 34.49 GiB.
(APIServer pid=1) INFO 05-10 14:03:33 [loggers.py:352] Engine 000: vllm cache_config_info with initialization \
after num_gpu_blocks is: 35317
(APIServer pid=1) INFO 05-10 14:03:34 [launcher.py:46] Route: /v1/chat/completions, Methods: POST
"""

# vLLM 0.6.4.post1, V0 (dev record vllm-log-052, microsoft/phi-1_5): "GB" in the weights line is GiB.
LOG_0_6 = """\
INFO 12-06 10:02:11 api_server.py:585] vLLM API server version 0.6.4.post1
INFO 12-06 10:02:17 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) with config: \
model='microsoft/phi-1_5', speculative_config=None, tokenizer='microsoft/phi-1_5', skip_tokenizer_init=False, \
tokenizer_mode=auto, revision=None, override_neuron_config=None, tokenizer_revision=None, trust_remote_code=False, \
dtype=torch.float16, max_seq_len=2048, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=1, \
pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, \
kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda, seed=0, served_model_name=microsoft/phi-1_5
INFO 12-06 10:02:25 model_runner.py:1077] Loading model weights took 2.6419 GB
INFO 12-06 10:02:26 worker.py:232] Memory profiling results: total_gpu_memory=7.92GiB \
initial_memory_usage=3.09GiB peak_torch_memory=3.12GiB memory_usage_post_profile=3.12GiB \
non_torch_memory=0.47GiB kv_cache_size=3.54GiB gpu_memory_utilization=0.90
INFO 12-06 10:02:26 gpu_executor.py:113] # GPU blocks: 1207, # CPU blocks: 1365
INFO 12-06 10:02:26 gpu_executor.py:117] Maximum concurrency for 2048 tokens per request: 9.43x
INFO 12-06 10:02:40 model_runner.py:1518] Graph capturing finished in 14 secs, took 0.54 GiB
"""


def test_v1_0_11_log_reads_the_banner_the_config_and_every_memory_line():
    log = parse_log(LOG_0_11)
    assert (log.engine, log.vllm_version, log.model) == ("V1", "0.11.0", "Qwen/Qwen2-7B-Instruct")
    assert log.non_default_args == {"model_tag": "Qwen/Qwen2-7B-Instruct", "model": "Qwen/Qwen2-7B-Instruct",
                                    "max_model_len": 16384, "gpu_memory_utilization": 0.5}
    assert (log.max_model_len, log.tensor_parallel_size, log.pipeline_parallel_size) == (16384, 1, 1)
    assert (log.gpu_memory_utilization, log.kv_cache_dtype, log.quantization, log.enforce_eager) == \
        (0.5, "auto", None, False)
    assert log.model_loading_bytes == gib("14.2488")
    assert log.available_kv_bytes == gib("24.83") == 26_661_009_490
    assert (log.kv_tokens, log.max_concurrency, log.max_concurrency_tokens) == (464_848, 28.37, 16_384)
    assert log.num_gpu_blocks == 29_053
    assert (log.graph_capture_secs, log.graph_capture_bytes) == (3.0, gib("0.50"))
    assert log.ranks == ("DP0",) and log.errors == ()
    assert log.free_memory_bytes is None and log.block_size is None


def test_v1_0_33_log_reads_the_logo_the_one_line_pool_and_the_free_memory_breakdown():
    log = parse_log(LOG_0_33)
    assert (log.engine, log.vllm_version, log.model) == ("V1", "0.33.0", "Qwen/Qwen3-32B")
    assert (log.max_model_len, log.tensor_parallel_size, log.kv_cache_dtype) == (32768, 2, "fp8")
    assert (log.kv_tokens, log.max_concurrency, log.max_concurrency_tokens) == (565_072, 17.24, 32_768)
    assert (log.free_memory_bytes, log.total_memory_bytes) == (gib("78.57"), gib("79.18"))
    assert (log.requested_util, log.requested_bytes) == (0.9, gib("71.26"))
    assert (log.peak_activation_bytes, log.cudagraph_bytes) == (gib("5.64"), gib("0.58"))
    assert (log.cudagraph_estimate_bytes, log.cudagraph_pool_bytes) == (gib("0.61"), gib("0.58"))
    assert (log.graph_capture_secs, log.graph_capture_bytes) == (9.0, gib("0.58"))
    assert log.num_gpu_blocks == 35_317


def test_several_ranks_give_the_minimum_pool_and_the_limiting_ranks_own_numbers():
    log = parse_log(LOG_0_33)
    assert log.ranks == ("TP0", "TP1")
    assert log.per_rank_available_kv_bytes == {"TP0": gib("34.52"), "TP1": gib("34.49")}
    assert log.available_kv_bytes == gib("34.49")
    # TP1 holds the smaller pool, so the breakdown that explains it is TP1's
    assert (log.model_loading_bytes, log.consumed_bytes, log.kv_in_use_bytes) == \
        (gib("30.59"), gib("31.13"), gib("34.49"))
    assert log.suggested_kv_cache_memory_bytes == (36_253_298_851, 44_102_351_585)


def test_kv_tokens_and_blocks_are_the_minimum_over_engines():
    text = """\
(EngineCore_DP0 pid=310) INFO 09-01 08:00:05 [gpu_worker.py:298] Available KV cache memory: 23.74 GiB
(EngineCore_DP1 pid=311) INFO 09-01 08:00:05 [gpu_worker.py:298] Available KV cache memory: 23.71 GiB
(EngineCore_DP0 pid=310) INFO 09-01 08:00:05 [kv_cache_utils.py:1087] GPU KV cache size: 1,037,152 tokens
(EngineCore_DP1 pid=311) INFO 09-01 08:00:05 [kv_cache_utils.py:1087] GPU KV cache size: 1,035,840 tokens
"""
    log = parse_log(text)
    assert (log.available_kv_bytes, log.kv_tokens) == (gib("23.71"), 1_035_840)
    assert log.per_rank_available_kv_bytes == {"DP0": gib("23.74"), "DP1": gib("23.71")}


@pytest.mark.parametrize(("line", "expected"), [
    # vllm-log-017 (0.28): consumed = weights + non-torch, with the dev set's own "..." elision
    ("Free memory on device (17.06/22.04 GiB) on startup. Desired GPU memory utilization is (0.62, 13.66 GiB). "
     "Actual usage is 10.29 GiB for consumed memory (weights + non-torch), 0.27 GiB for peak activation, and "
     "0.78 GiB for CUDAGraph memory. ... Current kv cache memory in use is 3.1 GiB.",
     {"free_memory_bytes": gib("17.06"), "total_memory_bytes": gib("22.04"), "requested_util": 0.62,
      "requested_bytes": gib("13.66"), "consumed_bytes": gib("10.29"), "weights_usage_bytes": None,
      "peak_activation_bytes": gib("0.27"), "cudagraph_bytes": gib("0.78"), "kv_in_use_bytes": gib("3.1"),
      "suggested_kv_cache_memory_bytes": None}),
    # vllm-log-051: weight, peak activation, non-torch and CUDAGraph apart
    ("Free memory on device (15.32/15.55 GiB) on startup. Desired GPU memory utilization is (0.9, 13.99 GiB). "
     "Actual usage is 0.93 GiB for weight, 1.06 GiB for peak activation, 0.07 GiB for non-torch memory, and 0.4 "
     "GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=12227975783` "
     "(11.39 GiB) to fit into requested memory, or `--kv-cache-memory=13651129344` (12.71 GiB) to fully utilize "
     "gpu memory. Current kv cache memory in use is 11.94 GiB.",
     {"weights_usage_bytes": gib("0.93"), "consumed_bytes": None, "peak_activation_bytes": gib("1.06"),
      "non_torch_bytes": gib("0.07"), "cudagraph_bytes": gib("0.4"), "kv_in_use_bytes": gib("11.94"),
      "suggested_kv_cache_memory_bytes": (12_227_975_783, 13_651_129_344)}),
    # vllm-log-027: the parenthesis-less transcription
    ("Free memory on device 77.64/79.18 GiB on startup; desired 0.9 (71.26 GiB); "
     "suggested --kv-cache-memory=34644505703 / 41499086336",
     {"free_memory_bytes": gib("77.64"), "total_memory_bytes": gib("79.18"), "requested_util": 0.9,
      "requested_bytes": gib("71.26"), "suggested_kv_cache_memory_bytes": (34_644_505_703, 41_499_086_336)}),
])
def test_free_memory_line_variants(line, expected):
    log = parse_log(f"(EngineCore_DP0 pid=77) INFO 08-02 10:11:12 [gpu_worker.py:857] {line}")
    assert {name: getattr(log, name) for name in expected} == expected
    assert log.engine == "V1"


@pytest.mark.parametrize(("line", "expected"), [
    # vllm-log-011 (0.7.2): "Memory profiling takes ... the rest of the memory reserved for KV Cache"
    ("Memory profiling takes 5.61 seconds; the current vLLM instance can use total_gpu_memory (14.56GiB) x "
     "gpu_memory_utilization (0.50) = 7.28GiB; model weights take 2.89GiB; non_torch_memory takes 0.01GiB; "
     "PyTorch activation peak memory takes 2.02GiB; the rest of the memory reserved for KV Cache is 2.36GiB.",
     {"total_memory_bytes": gib("14.56"), "requested_util": 0.5, "requested_bytes": gib("7.28"),
      "weights_usage_bytes": gib("2.89"), "non_torch_bytes": gib("0.01"), "peak_activation_bytes": gib("2.02"),
      "available_kv_bytes": gib("2.36"), "gpu_memory_utilization": 0.5}),
    # vllm-log-036 (0.6.4 format): "Memory profiling results: ... kv_cache_size=..."
    ("Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB "
     "peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB "
     "kv_cache_size=3.81GiB gpu_memory_utilization=0.90",
     {"total_memory_bytes": gib("23.58"), "non_torch_bytes": gib("0.35"), "available_kv_bytes": gib("3.81"),
      "requested_util": 0.9, "peak_activation_bytes": None}),
])
def test_v0_memory_profiling_lines(line, expected):
    log = parse_log(f"INFO 02-11 16:40:02 worker.py:269] {line}")
    assert {name: getattr(log, name) for name in expected} == expected
    assert log.engine == "V0"


def test_v0_0_6_log_reads_gb_weights_blocks_and_unseparated_concurrency():
    log = parse_log(LOG_0_6)
    assert (log.engine, log.vllm_version, log.model, log.max_model_len) == ("V0", "0.6.4.post1",
                                                                            "microsoft/phi-1_5", 2048)
    assert log.model_loading_bytes == gib("2.6419")
    assert (log.available_kv_bytes, log.non_torch_bytes) == (gib("3.54"), gib("0.47"))
    assert (log.num_gpu_blocks, log.num_cpu_blocks) == (1207, 1365)
    assert (log.max_concurrency, log.max_concurrency_tokens) == (9.43, 2048)
    assert log.graph_capture_bytes == gib("0.54")


def test_bare_continuation_lines_belong_to_the_rank_above():
    # vLLM 0.7-0.10 V0 writes the profiling message over three lines
    text = """\
(VllmWorkerProcess pid=412) INFO 02-11 16:40:02 worker.py:269] Memory profiling takes 5.61 seconds
the current vLLM instance can use total_gpu_memory (14.56GiB) x gpu_memory_utilization (0.50) = 7.28GiB
model weights take 2.89GiB; non_torch_memory takes 0.01GiB; PyTorch activation peak memory takes 2.02GiB; \
the rest of the memory reserved for KV Cache is 2.36GiB.
"""
    log = parse_log(text)
    assert log.per_rank_available_kv_bytes == {"VllmWorkerProcess pid=412": gib("2.36")}
    assert log.requested_bytes == gib("7.28")


@pytest.mark.parametrize(("prefix", "rank"), [
    ("(VllmWorker rank=1 pid=123) INFO 08-21 10:11:12 [gpu_worker.py:276] ", "rank1"),
    ("(VllmWorker TP1 pid=123) INFO 08-21 10:11:12 [gpu_worker.py:276] ", "TP1"),
    ("(Worker_TP1 pid=4567) INFO 10-08 09:13:10 [gpu_worker.py:298] ", "TP1"),
    ("(Worker_DP1_TP0 pid=4567) INFO 05-10 14:03:20 [gpu_worker.py:772] ", "DP1_TP0"),
    ("(EngineCore_DP0 pid=312) INFO 10-08 09:13:10 [gpu_worker.py:298] ", "DP0"),
    ("[rank1]: INFO 08-21 10:11:12 [gpu_worker.py:276] ", "rank1"),
    ("(RayWorkerWrapper pid=8912, ip=10.0.0.7) INFO 08-21 10:11:12 [gpu_worker.py:276] ",
     "RayWorkerWrapper pid=8912"),
    ("INFO 08-21 10:11:12 [gpu_worker.py:276] ", "main"),
])
def test_worker_prefixes_name_the_rank(prefix, rank):
    log = parse_log(f"{prefix}Available KV cache memory: 5.01 GiB")
    assert log.per_rank_available_kv_bytes == {rank: gib("5.01")}


@pytest.mark.parametrize("prefix", [
    "",
    "INFO 08-21 10:11:12 [gpu_worker.py:276] ",
    "INFO 08-21 10:11:12 gpu_worker.py:276] ",
    "2025-08-21T10:11:12.123456789Z (APIServer pid=1) INFO 08-21 10:11:12 [gpu_worker.py:276] ",
    "vllm-1  | \x1b[0;36m(EngineCore_DP0 pid=312)\x1b[0;0m \x1b[32mINFO\x1b[0m 08-21 10:11:12 [gpu_worker.py:276] ",
    "[1;36m(EngineCore_DP0 pid=312)[0;0m INFO 08-21 10:11:12 [gpu_worker.py:276] ",
])
def test_timestamps_and_prefixes_do_not_matter(prefix):
    log = parse_log(f"{prefix}Available KV cache memory: 5.01 GiB\n{prefix}GPU KV cache size: 93,872 tokens")
    assert (log.available_kv_bytes, log.kv_tokens) == (gib("5.01"), 93_872)


@pytest.mark.parametrize(("line", "tokens", "concurrency"), [
    ("GPU KV cache size: 1,234 tokens", 1234, None),
    ("CUDA KV cache size: 1,204,133 tokens", 1_204_133, None),
    ("GPU KV cache size: 1,204,133 tokens, Maximum concurrency for 131,072 tokens per request: 9.19x",
     1_204_133, 9.19),
    ("GPU + host KV cache size: 99,840 tokens, Maximum concurrency for 4,096 tokens per request: 24.38x",
     99_840, 24.38),
])
def test_kv_cache_size_forms(line, tokens, concurrency):
    log = parse_log(f"(EngineCore pid=245) INFO 05-10 14:03:21 [kv_cache_utils.py:1147] {line}")
    assert (log.kv_tokens, log.max_concurrency) == (tokens, concurrency)


@pytest.mark.parametrize(("line", "gib_text"), [
    ("Model loading took 14.2488 GiB and 9.870213 seconds", "14.2488"),
    ("Model loading took 13.72 GiB memory and 62.336108 seconds", "13.72"),
    ("Loading model weights took 2.8884 GB", "2.8884"),
])
def test_model_loading_forms(line, gib_text):
    assert parse_log(f"INFO 04-28 04:07:11 [gpu_model_runner.py:1] {line}").model_loading_bytes == gib(gib_text)


@pytest.mark.parametrize(("line", "field", "value"), [
    ("Estimated CUDA graph memory: 0.66 GiB total", "cudagraph_estimate_bytes", gib("0.66")),
    ("CUDA graph pool memory: 0.42 GiB", "cudagraph_pool_bytes", gib("0.42")),
    ("CUDA graph pool memory: 0.3 GiB (actual), 0.69 GiB (estimated), difference: 0.39 GiB (130.0%).",
     "cudagraph_estimate_bytes", gib("0.69")),
    ("Graph capturing finished in 5 secs, took -0.03 GiB", "graph_capture_bytes", -gib("0.03")),
])
def test_cuda_graph_lines(line, field, value):
    log = parse_log(f"(EngineCore_DP0 pid=9) INFO 03-01 12:00:00 [gpu_worker.py:1] {line}")
    assert getattr(log, field) == value


@pytest.mark.parametrize(("line", "expected"), [
    # vllm-log-014
    ("ValueError: To serve at least one request with the model's max seq len (32768), (1.75 GiB KV cache is "
     "needed, which is larger than the available KV cache memory (1.1 GiB). Based on the available memory, the "
     "estimated maximum model length is 20512.",
     "To serve at least one request with the model's max seq len (32768), (1.75 GiB KV cache is needed, which is "
     "larger than the available KV cache memory (1.1 GiB). Based on the available memory, the estimated maximum "
     "model length is 20512."),
    # vllm-log-042
    ("ValueError: To serve at least one request with the model's max seq len (1048576), 22.5 GiB KV cache is "
     "needed, which is larger than the available KV cache memory (17.39 GiB). Based on the available memory, the "
     "estimated maximum model length is 810208.",
     "To serve at least one request with the model's max seq len (1048576), 22.5 GiB KV cache is needed, which "
     "is larger than the available KV cache memory (17.39 GiB). Based on the available memory, the estimated "
     "maximum model length is 810208."),
    # vllm-log-037 (V0)
    ("ValueError: The model's max seq len (29000) is larger than the maximum number of tokens that can be stored "
     "in KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
     "initializing the engine.",
     "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache "
     "(23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
     "engine."),
    ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
     "initializing the engine.",
     "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the "
     "engine."),
    ("ValueError: Free memory on device cuda:0 (10.5/79.18 GiB) on startup is less than desired GPU memory "
     "utilization (0.9, 71.26 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
     "Free memory on device cuda:0 (10.5/79.18 GiB) on startup is less than desired GPU memory utilization (0.9, "
     "71.26 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."),
    ("ValueError: max_num_seqs (256) exceeds available Mamba cache blocks (180). Each decode sequence requires "
     "one Mamba cache block, so CUDA graph capture cannot proceed. Please lower max_num_seqs to at most 180 or "
     "increase gpu_memory_utilization.",
     "max_num_seqs (256) exceeds available Mamba cache blocks (180). Each decode sequence requires one Mamba "
     "cache block, so CUDA graph capture cannot proceed. Please lower max_num_seqs to at most 180 or increase "
     "gpu_memory_utilization."),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total capacity of "
     "79.18 GiB of which 3.33 GiB is free.",
     "CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total capacity of 79.18 GiB of which 3.33 GiB "
     "is free."),
])
def test_refusals_are_kept_word_for_word_without_the_exception_name(line, expected):
    log = parse_log(f"{API}\n(EngineCore_DP0 pid=312) ERROR 10-08 09:13:10 [core.py:708] {line}")
    assert log.errors == (expected,)


def test_a_refusal_repeated_by_several_processes_is_listed_once():
    error = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`."
    log = parse_log(f"{API}\n[rank0]: {error}\n(EngineCore_DP0 pid=312) ERROR 10-08 09:13:10 [core.py:708] {error}")
    assert log.errors == ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.",)


def test_free_memory_refusal_also_gives_the_budget():
    log = parse_log(f"{API}\nValueError: Free memory on device (10.5/79.18 GiB) on startup is less than desired "
                    "GPU memory utilization (0.9, 71.26 GiB). Decrease GPU memory utilization or reduce GPU memory "
                    "used by other processes.")
    assert (log.free_memory_bytes, log.total_memory_bytes, log.requested_util, log.requested_bytes) == \
        (gib("10.5"), gib("79.18"), 0.9, gib("71.26"))


def test_non_default_args_that_are_not_literals_are_read_pair_by_pair():
    log = parse_log("(APIServer pid=1) INFO 10-08 09:12:01 [utils.py:233] non-default args: {'model': "
                    "'Qwen/Qwen3-8B', 'block_size': 32, 'compilation_config': CompilationConfig(level=3), "
                    "'enforce_eager': True}\n"
                    "INFO 10-08 09:13:10 [gpu_worker.py:298] Available KV cache memory: 8.0 GiB")
    assert log.non_default_args == {"model": "Qwen/Qwen3-8B", "block_size": 32, "enforce_eager": True}
    assert (log.model, log.block_size, log.enforce_eager) == ("Qwen/Qwen3-8B", 32, True)


def test_block_size_from_the_hybrid_alignment_line():
    log = parse_log("(EngineCore_DP0 pid=312) INFO 03-01 12:00:00 [config.py:377] Setting attention block size "
                    "to 784 tokens to ensure that attention page size is >= mamba page size.\n"
                    "(EngineCore_DP0 pid=312) INFO 03-01 12:00:10 [gpu_worker.py:298] Available KV cache memory: "
                    "31.24 GiB")
    assert log.block_size == 784


def test_vllm_server_version_line_names_version_and_model():
    log = parse_log("(APIServer pid=1) INFO 05-10 14:02:11 [startup.py:38] vLLM server version 0.33.0, serving "
                    "model Qwen/Qwen3-8B\n(Worker pid=9) INFO 05-10 14:03:20 [gpu_worker.py:772] Available KV cache "
                    "memory: 40.82 GiB")
    assert (log.vllm_version, log.model, log.engine) == ("0.33.0", "Qwen/Qwen3-8B", "V1")


@pytest.mark.parametrize(("text", "engine"), [
    ("Available KV cache memory: 5.01 GiB", "V1"),
    ("GPU blocks: 1952, # CPU blocks: 2048", "V0"),  # vllm-log-036, prefix stripped by its author
    ("Model loading took 1.12 GiB and 16.54 seconds", None),  # both engines print it
])
def test_engine_without_a_banner_comes_from_the_lines_only_one_engine_prints(text, engine):
    assert parse_log(text).engine == engine


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty log"),
    (" \n\n\t\n", "empty log"),
    ("127.0.0.1 - - [21/Aug/2025:10:11:12 +0000] \"GET / HTTP/1.1\" 200 612", "not a vLLM start-up log"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB", "not a vLLM start-up log"),
    (f"{API}\n(APIServer pid=1) INFO 10-08 09:12:09 [model.py:547] Resolved architecture: Qwen2ForCausalLM",
     "truncated: no memory lines"),
    (LOG_0_11 + LOG_0_33, "the log mixes 2 start-ups; split it"),
    (LOG_0_11 + LOG_0_11.replace("Qwen/Qwen2-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct"),
     "the log mixes 2 start-ups; split it"),
])
def test_bad_logs_raise_one_line_log_errors(text, message):
    with pytest.raises(LogError, match=f"^{message}") as err:
        parse_log(text)
    assert isinstance(err.value, InputError)
    assert "\n" not in str(err.value)


def test_same_rank_with_two_kv_values_names_the_rank():
    text = ("(EngineCore_DP0 pid=312) INFO 10-08 09:13:10 [gpu_worker.py:298] Available KV cache memory: 24.83 GiB\n"
            "(EngineCore_DP0 pid=313) INFO 10-08 10:40:52 [gpu_worker.py:298] Available KV cache memory: 5.01 GiB\n")
    with pytest.raises(LogError, match=r"mixes 2 start-ups; split it \(rank 'DP0' logs KV cache memory 24\.83"):
        parse_log(text)


def test_startup_log_is_frozen():
    log = parse_log(LOG_0_11)
    with pytest.raises(dataclasses.FrozenInstanceError):
        log.available_kv_bytes = 0  # type: ignore[misc]


def test_a_megabyte_line_of_repeated_needles_parses_fast():
    """Issue 15: one 1.1 MB line of repeated "Free memory on device " took 219 s (regex backtracking)."""
    import time

    from configurator.errors import ConfiguratorError
    from configurator.vllm import logparse

    text = "Free memory on device " * 50_000 + "\nAvailable KV cache memory: 5.0 GiB\n"
    start = time.monotonic()
    with contextlib.suppress(ConfiguratorError):
        logparse.parse_log(text)
    assert time.monotonic() - start < 5


def test_absurd_numbers_in_a_log_are_one_clear_error():
    """Issue 15: a 400-digit "Model loading took" gave an OverflowError traceback in calibrate."""
    import pytest

    from configurator.vllm import logparse

    big = "9" * 400
    text = f"INFO Available KV cache memory: 5.0 GiB\nINFO Model loading took {big} GiB\n"
    with pytest.raises(logparse.LogError, match="not a figure vLLM logs"):
        logparse.parse_log(text)
