"""Read a vLLM start-up log (V0 and V1, releases 0.6 to 0.33) into the numbers vLLM printed.

Pure: text in, a frozen `StartupLog` out; no I/O, no logging. Sizes become integer bytes
(GiB = 2**30; V0's "GB" in "Loading model weights took 2.6419 GB" is GiB too); anything the log
does not say is None. Each line is matched anywhere in the line, so timestamps, "[file.py:123]",
"(APIServer pid=1)" and docker/kubectl prefixes do not matter. Lines written by a worker process
("(Worker_TP1 pid=..)", "(VllmWorker rank=1 pid=..)", "[rank1]:", "(RayWorkerWrapper pid=..)",
"(EngineCore_DP0 pid=..)") are collected per rank; as vLLM does, the KV pool is the minimum over ranks.

The line texts mirror vLLM's format strings: vllm/v1/worker/gpu_worker.py ("Available KV cache
memory", "Free memory on device ..."), vllm/v1/core/kv_cache_utils.py ("GPU KV cache size",
"Maximum concurrency"), vllm/v1/worker/gpu_model_runner.py ("Model loading took", "Graph capturing
finished", "Estimated CUDA graph memory"), and for V0 vllm/worker/worker.py ("Memory profiling
results", "Memory profiling takes ...") and vllm/executor/executor_base.py ("# GPU blocks").

V0 releases 0.6 / 0.7 (read from the vllm==0.6.4.post1, 0.6.6 and 0.7.3 wheels): the API server logs
every argument as `args: Namespace(model='...', ...)` (vllm/entrypoints/openai/api_server.py
run_server); 0.6.4 prints "Memory profiling results: total_gpu_memory=T GiB ... peak_torch_memory=P
GiB ... non_torch_memory=N GiB kv_cache_size=K GiB gpu_memory_utilization=U" where P is the torch
peak *including* the weights (vllm/worker/worker.py determine_num_available_blocks); 0.6.6 and 0.7.x
print "Memory profiling takes S seconds\nthe current vLLM instance can use total_gpu_memory (T GiB) x
gpu_memory_utilization (U) = R GiB\nmodel weights take W GiB; non_torch_memory takes N GiB; PyTorch
activation peak memory takes A GiB; the rest of the memory reserved for KV Cache is K GiB." over three
lines; vllm/executor/gpu_executor.py (0.6) and executor_base.py (0.7) "# GPU blocks: G, # CPU blocks:
C"; the early V1 engine of 0.6.6 / 0.7.x (vllm/v1/core/kv_cache_utils.py) "# GPU blocks: G" alone.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from configurator.errors import InputError
from configurator.units import GiB
from configurator.vllm.linetags import tags_in


class LogError(InputError):
    """The text is not one readable vLLM start-up log: empty, another program's, truncated or mixed."""


@dataclass(frozen=True)
class StartupLog:
    """What one vLLM start-up logged. Bytes are integers; None where the log does not say."""

    engine: str | None = None                   # "V0" or "V1"
    vllm_version: str | None = None
    model: str | None = None
    non_default_args: dict[str, Any] | None = None  # "non-default args: {...}", as logged
    # engine config: the "Initializing ... LLM engine (vX) with config:" line, else non-default args
    max_model_len: int | None = None            # the config line's max_seq_len
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    enforce_eager: bool | None = None
    block_size: int | None = None               # "Setting attention block size to N", else the args
    # weights, KV pool and capacity
    model_loading_bytes: int | None = None      # "Model loading took X GiB" / V0 "Loading model weights took X GB"
    available_kv_bytes: int | None = None       # min over ranks, as vLLM sizes the pool
    kv_tokens: int | None = None                # "GPU KV cache size: N tokens", min over ranks
    max_concurrency: float | None = None        # "Maximum concurrency for L tokens per request: C x"
    max_concurrency_tokens: int | None = None   # the L of that line
    num_gpu_blocks: int | None = None
    num_cpu_blocks: int | None = None           # V0 only
    namespace_args: bool = False                # non_default_args is 0.6/0.7's full `args: Namespace(...)`
    # the budget, from "Free memory on device ..." (V1) or "Memory profiling ..." (V0)
    free_memory_bytes: int | None = None
    total_memory_bytes: int | None = None
    requested_util: float | None = None
    requested_bytes: int | None = None
    consumed_bytes: int | None = None           # weights + non-torch, as one number (0.19+)
    weights_usage_bytes: int | None = None
    peak_activation_bytes: int | None = None
    peak_torch_bytes: int | None = None         # 0.6.4 "peak_torch_memory=": torch peak, weights included
    non_torch_bytes: int | None = None
    cudagraph_bytes: int | None = None          # "C GiB for CUDAGraph memory"
    kv_in_use_bytes: int | None = None          # "Current kv cache memory in use is D GiB"
    suggested_kv_cache_memory_bytes: tuple[int, ...] | None = None  # (fits requested, fills the GPU)
    # CUDA graphs
    cudagraph_estimate_bytes: int | None = None  # "Estimated CUDA graph memory: X GiB total"
    cudagraph_pool_bytes: int | None = None      # "CUDA graph pool memory: X GiB (actual)"
    graph_capture_secs: float | None = None
    graph_capture_bytes: int | None = None       # "Graph capturing finished in N secs, took X GiB"
    # refusals, word for word from the trigger phrase to the end of the line, first seen first
    errors: tuple[str, ...] = ()
    # per rank: labels such as "main", "DP0", "TP1", "rank1" in the order they first logged memory
    ranks: tuple[str, ...] = ()
    per_rank_available_kv_bytes: dict[str, int] = field(default_factory=dict)
    # every "[basename.py:LINE]" tag, first seen first: which releases could have written the log
    # (configurator/vllm/linetags.py releases_from_tags) when it prints no version
    line_tags: tuple[tuple[str, int], ...] = ()


# --- the line table ------------------------------------------------------------------------------

# 1,234,567 or 5.73 or -0.42: thousands separators only in groups of three, so "5517, # CPU" stays 5517
_NUM = r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_FLOAT_FIELDS = frozenset({"max_concurrency", "requested_util", "graph_capture_secs"})
# every value of these is kept; the result is their minimum (vLLM takes the min over workers)
_MIN_FIELDS = frozenset({"kv_tokens", "max_concurrency", "num_gpu_blocks", "num_cpu_blocks"})
_GLOBAL_FIELDS = _MIN_FIELDS | {"max_concurrency_tokens", "block_size"}


def _g(name: str) -> str:
    """A number captured under the StartupLog field it fills."""
    return rf"(?P<{name}>{_NUM})"


@dataclass(frozen=True)
class _Rule:
    """One log line vLLM prints: a cheap substring gate, the regex, and the engine that prints it."""

    needle: str
    pattern: re.Pattern[str]
    engine: str = ""  # "V0" / "V1" when only that engine prints the line


def _rule(needle: str, pattern: str, engine: str = "") -> _Rule:
    return _Rule(needle, re.compile(pattern), engine)


_RULES: tuple[_Rule, ...] = (
    # weights
    _rule("Model loading took", rf"Model loading took {_g('model_loading_bytes')} GiB"),
    _rule("Loading model weights took", rf"Loading model weights took {_g('model_loading_bytes')} GB", "V0"),
    # KV pool and capacity
    _rule("Available KV cache memory", rf"Available KV cache memory: {_g('available_kv_bytes')} GiB", "V1"),
    _rule("KV cache size:", rf"KV cache size: {_g('kv_tokens')} tokens", "V1"),
    _rule("Maximum concurrency for",
          rf"Maximum concurrency for {_g('max_concurrency_tokens')} tokens per request: {_g('max_concurrency')}x"),
    _rule("CPU blocks:", rf"\w+ blocks: {_g('num_gpu_blocks')}, # CPU blocks: {_g('num_cpu_blocks')}", "V0"),
    # the early V1 engine (0.6.6-0.7.x, vllm/v1/core/kv_cache_utils.py): "# GPU blocks: N" alone
    _rule("# GPU blocks:", rf"# GPU blocks: {_g('num_gpu_blocks')}(?!,? # CPU)\s*$"),
    _rule("num_gpu_blocks is:", rf"num_gpu_blocks is: {_g('num_gpu_blocks')}", "V1"),
    _rule("block size to", rf"Setting (?:attention|kv cache) block size to {_g('block_size')}"),
    # V1 "Free memory on device (F/T GiB) on startup. Desired GPU memory utilization is (U, R GiB). ..."
    # also its refusal form ("Free memory on device cuda:0 (F/T GiB) on startup is less than desired
    # GPU memory utilization (U, R GiB)") and a transcription without parentheses ("desired U (R GiB)")
    _rule("Free memory on device", rf"Free memory on device (?:[A-Za-z][\w:]*\s+)?\(?{_g('free_memory_bytes')}"
                                   rf"\s*/\s*{_g('total_memory_bytes')} GiB", "V1"),
    _rule("esired", rf"[Dd]esired(?: GPU memory utilization(?: is)?)? \(?{_g('requested_util')},? "
                    rf"\(?{_g('requested_bytes')} GiB\)"),
    _rule("Actual usage is", rf"Actual usage is {_g('consumed_bytes')} GiB for consumed memory"),
    _rule("Actual usage is", rf"Actual usage is {_g('weights_usage_bytes')} GiB for weight"),
    _rule("for peak activation", rf"{_g('peak_activation_bytes')} GiB for peak activation"),
    _rule("for non-torch memory", rf"{_g('non_torch_bytes')} GiB for non-torch memory"),
    _rule("for CUDAGraph memory", rf"{_g('cudagraph_bytes')} GiB for CUDAGraph memory"),
    _rule("kv cache memory in use", rf"Current kv cache memory in use is {_g('kv_in_use_bytes')} GiB"),
    # V0 "Memory profiling takes X seconds; the current vLLM instance can use total_gpu_memory (T GiB)
    # x gpu_memory_utilization (U) = R GiB; model weights take W GiB; ..." (one line or several)
    _rule("total_gpu_memory (", rf"total_gpu_memory \({_g('total_memory_bytes')}\s*GiB\) x gpu_memory_utilization "
                                rf"\({_g('requested_util')}\) = {_g('requested_bytes')}\s*GiB", "V0"),
    _rule("model weights take", rf"model weights take {_g('weights_usage_bytes')}\s*GiB", "V0"),
    _rule("non_torch_memory takes", rf"non_torch_memory takes {_g('non_torch_bytes')}\s*GiB", "V0"),
    _rule("activation peak memory takes",
          rf"PyTorch activation peak memory takes {_g('peak_activation_bytes')}\s*GiB", "V0"),
    _rule("reserved for KV Cache", rf"the rest of the memory reserved for KV Cache is {_g('available_kv_bytes')}"
                                   rf"\s*GiB", "V0"),
    # V0 0.6 "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=... kv_cache_size=..."
    _rule("Memory profiling results", rf"total_gpu_memory={_g('total_memory_bytes')}\s*GiB", "V0"),
    _rule("Memory profiling results", rf"\bnon_torch_memory={_g('non_torch_bytes')}\s*GiB", "V0"),
    _rule("Memory profiling results", rf"kv_cache_size={_g('available_kv_bytes')}\s*GiB", "V0"),
    _rule("peak_torch_memory=", rf"peak_torch_memory={_g('peak_torch_bytes')}\s*GiB", "V0"),
    _rule("Memory profiling results", rf"gpu_memory_utilization={_g('requested_util')}", "V0"),
    # V1 profiling result (logged at DEBUG): "torch peak memory increase: X GiB; ..."
    _rule("torch peak memory increase", rf"torch peak memory increase: {_g('peak_activation_bytes')}\s*GiB", "V1"),
    _rule("non-torch forward increase", rf"non-torch forward increase memory: {_g('non_torch_bytes')}\s*GiB", "V1"),
    _rule("total consumed (from", rf"total consumed \(from mem_get_info\): {_g('consumed_bytes')}\s*GiB", "V1"),
    _rule("Total non KV cache memory", rf"\bweights memory: {_g('weights_usage_bytes')}\s*GiB", "V1"),
    # CUDA graphs
    _rule("Estimated CUDA graph memory", rf"Estimated CUDA graph memory: {_g('cudagraph_estimate_bytes')} GiB", "V1"),
    _rule("CUDA graph pool memory", rf"CUDA graph pool memory: {_g('cudagraph_pool_bytes')} GiB"
                                    rf"(?: \(actual\),? {_g('cudagraph_estimate_bytes')} GiB \(estimated\))?", "V1"),
    _rule("Graph capturing finished",
          rf"Graph capturing finished in {_g('graph_capture_secs')} secs?, took {_g('graph_capture_bytes')} GiB"),
)

_SUGGESTED = re.compile(r"--kv-cache-memory=(\d+)(?:`?\s*/\s*(\d+))?")

# refusals: (regex from the trigger to the end of the line, engine, printed by vLLM itself)
_ERRORS: tuple[tuple[re.Pattern[str], str, bool], ...] = (
    (re.compile(r"To serve at least one request.*"), "V1", True),
    (re.compile(r"No available memory for the cache blocks.*"), "", True),
    (re.compile(r"Free memory on device.*? is less than .*"), "V1", True),
    (re.compile(r"max_num_seqs \(\d+\) exceeds available Mamba cache blocks.*"), "V1", True),
    (re.compile(r"The model's max seq len \(\d+\) is larger than the maximum number of tokens that can be "
                r"stored in KV cache.*"), "V0", True),
    # PyTorch's, not vLLM's: on its own it does not make a text a vLLM log
    (re.compile(r"CUDA out of memory.*"), "", False),
)

# start banners
_API_VERSION = re.compile(r"vLLM API server version (?P<version>[^\s,]+)")
_SERVER_VERSION = re.compile(r"vLLM server version (?P<version>[^\s,]+), serving model (?P<model>\S+)")
# 0.15+ draws a logo instead: "... █ ▀▄▀ █  version 0.33.0" / "... █     █  model   Qwen/Qwen3-8B"
_LOGO_VERSION = re.compile(r"[█▀▄]\s+version\s+(?P<version>\S+)\s*$")
_LOGO_MODEL = re.compile(r"[█▀▄]\s+model\s+(?P<model>\S+)\s*$")
_ENGINE = re.compile(r"Initializing an? (?:(?P<engine>V[01]) )?LLM engine \(v(?P<version>[^)\s]+)\)"
                     r"(?: with config: (?P<config>.*))?")
_ARGS = re.compile(r"non-default args: (?P<args>\{.*\})")
# 0.6 / 0.7: every argument, as argparse prints it ("args: Namespace(subparser='serve', model='...', ...)")
_NAMESPACE = re.compile(r"\bargs: Namespace\((?P<args>.*)\)\s*$")
_NS_PAIR = re.compile(r"(?:^|,\s)(?P<key>\w+)="
                      r"(?P<value>'[^']*'|\"[^\"]*\"|-?\d+(?:\.\d+)?(?:[eE]-?\d+)?|True|False|None)(?=,\s|$)")
_ARG_PAIR = re.compile(r"'(?P<key>\w+)':\s*(?P<value>'[^']*'|\"[^\"]*\"|-?\d+(?:\.\d+)?(?:[eE]-?\d+)?|True|False|None)")

# fields of the engine config line (vllm/config/vllm.py VllmConfig.__str__)
_CONFIG_FIELDS: dict[str, re.Pattern[str]] = {
    "model": re.compile(r"\bmodel=(['\"])(?P<v>.*?)\1"),
    "max_model_len": re.compile(r"\bmax_seq_len=(?P<v>\d+)"),
    "tensor_parallel_size": re.compile(r"\btensor_parallel_size=(?P<v>\d+)"),
    "pipeline_parallel_size": re.compile(r"\bpipeline_parallel_size=(?P<v>\d+)"),
    "quantization": re.compile(r"\bquantization=(?P<v>[\w.-]+)"),
    "enforce_eager": re.compile(r"\benforce_eager=(?P<v>True|False)"),
    "kv_cache_dtype": re.compile(r"\bkv_cache_dtype=(?P<v>[\w.]+)"),
}
# the same settings among the non-default args, with the type each must have
_ARG_TYPES: dict[str, type] = {
    "max_model_len": int, "tensor_parallel_size": int, "pipeline_parallel_size": int,
    "gpu_memory_utilization": float, "kv_cache_dtype": str, "quantization": str, "enforce_eager": bool,
    "block_size": int,
}

# line prefixes: ANSI colours (also their remains once the ESC is lost), docker/kubectl timestamps,
# a compose service column, "(Name pid=N[, ip=...])" and "[rankN]:"
_ANSI = re.compile(r"\x1b?\[[0-9;]*m")
_LEAD = re.compile(r"^\s*(?:\d{4}-\d{2}-\d{2}[T ][\d:.,]+Z?\s+|[\w.-]+\s+\|\s)")
_PROC = re.compile(r"^\s*\((?P<name>[^()]*?)\s+pid=(?P<pid>\d+)[^()]*\)\s*")
_RANK_TAG = re.compile(r"^\s*\[rank(?P<rank>\d+)\]:\s*")
_LEVEL = re.compile(r"^\s*(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}")
_PARALLEL = re.compile(r"(?<![A-Za-z])(DP|PP|PCP|TP|DCP|EP)(\d+)")
MAIN = "main"


# --- scanning ------------------------------------------------------------------------------------

@dataclass
class _Scan:
    """What the line loop gathered; `_assemble` turns it into a StartupLog."""

    recognised: bool = False
    banner: bool = False
    banner_engines: list[str] = field(default_factory=list)
    marks: set[str] = field(default_factory=set)
    versions: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    config_models: list[str] = field(default_factory=list)
    args: dict[str, Any] | None = None
    namespace_args: bool = False
    arg_models: list[str] = field(default_factory=list)
    served_models: list[str] = field(default_factory=list)
    per_rank: dict[str, dict[str, Any]] = field(default_factory=dict)
    kv_values: dict[str, list[int]] = field(default_factory=dict)
    global_values: dict[str, list[Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def _add(values: list[Any], value: Any) -> None:
    if value not in values:
        values.append(value)


MAX_LOGGED_BYTES = 1 << 50  # 1 PiB: no GPU memory figure vLLM logs comes near it
MAX_LOGGED_COUNT = 10**13


def _convert(name: str, raw: str) -> int | float:
    """A captured number -> the field's unit: GiB -> integer bytes, counts -> int. An absurd number (past
    any GPU's memory, or a negative weight / token / block count) is not a log vLLM wrote: LogError."""
    value = _convert_raw(name, raw)
    limit = MAX_LOGGED_BYTES if name.endswith("_bytes") else MAX_LOGGED_COUNT
    negative_ok = name.endswith("_bytes") and name != "model_loading_bytes"  # a refusal logs a negative KV size
    if abs(value) > limit or (value < 0 and not negative_ok):
        raise LogError(f"the log gives {name.removesuffix('_bytes').replace('_', ' ')} as {raw[:40]}"
                       f"{'...' if len(raw) > 40 else ''}: not a figure vLLM logs")
    return value


def _convert_raw(name: str, raw: str) -> int | float:
    s = raw.replace(",", "")
    if name.endswith("_bytes"):
        # Decimal, not float: "5.01" GiB is exactly 5,379,447,275.52 B -> 5,379,447,276 B
        return int((Decimal(s) * GiB).to_integral_value(rounding=ROUND_HALF_EVEN))
    if name in _FLOAT_FIELDS:
        return float(s)
    return int(Decimal(s))


def _rank_label(name: str, pid: str) -> tuple[str, str]:
    """(rank label, engine mark) of a "(name pid=N)" prefix."""
    mark = "V0" if name.startswith("VllmWorkerProcess") else ""
    if name.startswith(("EngineCore", "DPEngineCore", "Worker", "VllmWorker ")):
        mark = "V1"
    if m := re.search(r"\brank=(\d+)", name):
        return f"rank{m.group(1)}", mark
    if parts := _PARALLEL.findall(name):
        return "_".join(a + b for a, b in parts), mark
    if m := re.fullmatch(r"(?:DP)?EngineCore_(\d+)", name):
        return f"DP{m.group(1)}", mark
    if "Worker" in name:
        return f"{name} pid={pid}", mark
    return MAIN, mark


def _split_prefix(line: str) -> tuple[str | None, str, str]:
    """(rank label or None for a bare continuation line, engine mark, the line without its prefix)."""
    rest = _LEAD.sub("", line, count=1)
    label: str | None = None
    mark = ""
    while True:
        if m := _PROC.match(rest):
            got, got_mark = _rank_label(m.group("name").strip(), m.group("pid"))
            if label is None or label == MAIN:
                label = got
            mark = mark or got_mark
        elif m := _RANK_TAG.match(rest):
            if label is None or label == MAIN:
                label = f"rank{m.group('rank')}"
        else:
            break
        rest = rest[m.end():]
    if label is None and _LEVEL.match(rest):
        label = MAIN
    return label, mark, rest


def _parse_args(text: str) -> dict[str, Any]:
    """The non-default args dict; values that are not Python literals are read pair by pair."""
    try:
        value = ast.literal_eval(text)
        if isinstance(value, dict):
            return value
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    out: dict[str, Any] = {}
    for m in _ARG_PAIR.finditer(text):
        try:
            out.setdefault(m.group("key"), ast.literal_eval(m.group("value")))
        except (ValueError, SyntaxError):
            continue
    return out


def _read_config(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, pattern in _CONFIG_FIELDS.items():
        if m := pattern.search(text):
            v = m.group("v")
            if name in ("max_model_len", "tensor_parallel_size", "pipeline_parallel_size"):
                out[name] = int(v)
            elif name == "enforce_eager":
                out[name] = v == "True"
            elif v != "None":
                out[name] = v
    return out


def _scan_banners(scan: _Scan, line: str) -> None:
    for pattern in (_API_VERSION, _SERVER_VERSION, _LOGO_VERSION):
        if m := pattern.search(line):
            scan.recognised = scan.banner = True
            _add(scan.versions, m.group("version"))
            if "model" in m.groupdict():
                _add(scan.served_models, m.group("model"))
    if m := _LOGO_MODEL.search(line):
        _add(scan.served_models, m.group("model"))
    if "LLM engine (v" in line and (m := _ENGINE.search(line)):
        scan.recognised = scan.banner = True
        _add(scan.versions, m.group("version"))
        scan.banner_engines.append(m.group("engine") or "V0")
        if m.group("config"):
            config = _read_config(m.group("config"))
            if "model" in config:
                _add(scan.config_models, config["model"])
            for k, v in config.items():
                scan.config.setdefault(k, v)
    if "non-default args:" in line and (m := _ARGS.search(line)):
        scan.recognised = scan.banner = True
        args = _parse_args(m.group("args"))
        if scan.args is None:
            scan.args = args
        model = args.get("model", args.get("model_tag"))
        if isinstance(model, str):
            _add(scan.arg_models, model)
    if "args: Namespace(" in line and (m := _NAMESPACE.search(line)):
        scan.recognised = scan.banner = True
        ns: dict[str, Any] = {}
        for pair in _NS_PAIR.finditer(m.group("args")):
            try:
                ns.setdefault(pair.group("key"), ast.literal_eval(pair.group("value")))
            except (ValueError, SyntaxError):
                continue
        if scan.args is None:
            scan.args, scan.namespace_args = ns, True
        if isinstance(ns.get("model"), str):
            _add(scan.arg_models, ns["model"])


# vLLM's memory lines are a few hundred characters and name each figure once. A longer line, or one that
# repeats a rule's needle, is not one of them: skipping it keeps the scan linear in the log's size (a
# regular expression tried at each of 50,000 repeats of "Free memory on device " backtracks quadratically).
MAX_LINE_CHARS = 8192
MAX_NEEDLES_PER_LINE = 4


def _scan_numbers(scan: _Scan, rank: str, line: str) -> None:
    values = scan.per_rank.get(rank, {})
    if len(line) > MAX_LINE_CHARS:
        return
    for rule in _RULES:
        if rule.needle not in line or line.count(rule.needle) > MAX_NEEDLES_PER_LINE \
                or not (m := rule.pattern.search(line)):
            continue
        scan.recognised = True
        if rule.engine:
            scan.marks.add(rule.engine)
        for name, raw in m.groupdict().items():
            if raw is None:
                continue
            value = _convert(name, raw)
            if name in _GLOBAL_FIELDS:
                _add(scan.global_values.setdefault(name, []), value)
                continue
            if name == "available_kv_bytes":
                _add(scan.kv_values.setdefault(rank, []), value)
            values.setdefault(name, value)
    if "--kv-cache-memory=" in line and (found := _SUGGESTED.findall(line)):
        numbers = tuple(int(n) for pair in found for n in pair if n)
        values.setdefault("suggested_kv_cache_memory_bytes", numbers)
    if values:
        scan.per_rank[rank] = values


def _scan_errors(scan: _Scan, line: str) -> None:
    for pattern, engine, own in _ERRORS:
        if m := pattern.search(line):
            scan.recognised = scan.recognised or own
            if engine:
                scan.marks.add(engine)
            _add(scan.errors, m.group(0).rstrip())


def _scan(text: str) -> _Scan:
    scan = _Scan()
    rank = MAIN
    for raw in text.splitlines():
        if len(raw) > MAX_LINE_CHARS:  # not a line vLLM writes at start-up (see MAX_LINE_CHARS)
            continue
        line = _ANSI.sub("", raw)
        if not line.strip():
            continue
        label, mark, line = _split_prefix(line)
        rank = label if label is not None else rank  # a bare line continues the message above it
        if mark:
            scan.marks.add(mark)
        _scan_banners(scan, line)
        _scan_numbers(scan, rank, line)
        _scan_errors(scan, line)
    return scan


# --- checks and assembly -------------------------------------------------------------------------

def _check_one_startup(scan: _Scan) -> None:
    reasons: list[str] = []
    if len(scan.versions) > 1:
        reasons.append("vLLM " + ", ".join(scan.versions))
    for models in (scan.config_models, scan.arg_models, scan.served_models):
        if len(models) > 1:
            reasons.append("models " + ", ".join(models))
            break
    for rank, values in scan.kv_values.items():
        if len(values) > 1:
            sizes = ", ".join(f"{v / GiB:.2f} GiB" for v in values)
            reasons.append(f"rank '{rank}' logs KV cache memory {sizes}")
    if reasons:
        n = max(len(scan.versions), len(scan.config_models), len(scan.arg_models), len(scan.served_models),
                *(len(v) for v in scan.kv_values.values()))
        raise LogError(f"the log mixes {n} start-ups; split it ({'; '.join(reasons)})")


def _typed_arg(args: dict[str, Any] | None, name: str) -> Any:
    """A non-default arg when it has the setting's type (bools are not ints, ints are floats)."""
    if not args or name not in args:
        return None
    value, want = args[name], _ARG_TYPES[name]
    if want is bool:
        return value if isinstance(value, bool) else None
    if isinstance(value, bool):
        return None
    if want is float and isinstance(value, int | float):
        return float(value)
    if want is int and isinstance(value, str) and value.isdigit():
        return int(value)
    return value if isinstance(value, want) else None


def _engine(scan: _Scan) -> str | None:
    if scan.banner_engines:
        return scan.banner_engines[0]
    if scan.marks == {"V1"} or scan.marks == {"V0"}:
        return next(iter(scan.marks))
    return None


def _assemble(scan: _Scan) -> StartupLog:
    per_rank = scan.per_rank
    kv = {rank: v["available_kv_bytes"] for rank, v in per_rank.items() if "available_kv_bytes" in v}
    # the rank with the smallest pool bounds the engine; its own numbers explain that pool
    limiting = min(kv, key=kv.__getitem__) if kv else None

    def pick(name: str) -> Any:
        if limiting is not None and name in per_rank[limiting]:
            return per_rank[limiting][name]
        return next((v[name] for v in per_rank.values() if name in v), None)

    def smallest(name: str) -> Any:
        values = scan.global_values.get(name)
        return min(values) if values else None

    def first(name: str) -> Any:
        values = scan.global_values.get(name)
        return values[0] if values else None

    args, config = scan.args, scan.config

    def setting(name: str) -> Any:
        return config[name] if name in config else _typed_arg(args, name)

    model = config.get("model") or next(iter(scan.arg_models + scan.served_models), None)
    gpu_util = _typed_arg(args, "gpu_memory_utilization")
    return StartupLog(
        engine=_engine(scan),
        vllm_version=scan.versions[0] if scan.versions else None,
        model=model,
        non_default_args=args,
        namespace_args=scan.namespace_args,
        max_model_len=setting("max_model_len"),
        tensor_parallel_size=setting("tensor_parallel_size"),
        pipeline_parallel_size=setting("pipeline_parallel_size"),
        gpu_memory_utilization=gpu_util if gpu_util is not None else pick("requested_util"),
        kv_cache_dtype=setting("kv_cache_dtype"),
        quantization=setting("quantization"),
        enforce_eager=setting("enforce_eager"),
        block_size=first("block_size") if first("block_size") is not None else _typed_arg(args, "block_size"),
        model_loading_bytes=pick("model_loading_bytes"),
        available_kv_bytes=kv[limiting] if limiting is not None else None,
        kv_tokens=smallest("kv_tokens"),
        max_concurrency=smallest("max_concurrency"),
        max_concurrency_tokens=first("max_concurrency_tokens"),
        num_gpu_blocks=smallest("num_gpu_blocks"),
        num_cpu_blocks=smallest("num_cpu_blocks"),
        free_memory_bytes=pick("free_memory_bytes"),
        total_memory_bytes=pick("total_memory_bytes"),
        requested_util=pick("requested_util"),
        requested_bytes=pick("requested_bytes"),
        consumed_bytes=pick("consumed_bytes"),
        weights_usage_bytes=pick("weights_usage_bytes"),
        peak_activation_bytes=pick("peak_activation_bytes"),
        peak_torch_bytes=pick("peak_torch_bytes"),
        non_torch_bytes=pick("non_torch_bytes"),
        cudagraph_bytes=pick("cudagraph_bytes"),
        kv_in_use_bytes=pick("kv_in_use_bytes"),
        suggested_kv_cache_memory_bytes=pick("suggested_kv_cache_memory_bytes"),
        cudagraph_estimate_bytes=pick("cudagraph_estimate_bytes"),
        cudagraph_pool_bytes=pick("cudagraph_pool_bytes"),
        graph_capture_secs=pick("graph_capture_secs"),
        graph_capture_bytes=pick("graph_capture_bytes"),
        errors=tuple(scan.errors),
        ranks=tuple(per_rank),
        per_rank_available_kv_bytes=kv,
    )


def parse_log(text: str) -> StartupLog:
    """Read one vLLM start-up log; raise LogError when it is empty, not vLLM's, truncated or mixed."""
    if not text or not text.strip():
        raise LogError("empty log: there is nothing to read")
    scan = _scan(text)
    if not scan.recognised:
        raise LogError("not a vLLM start-up log: no line such as 'vLLM API server version', "
                       "'Initializing a V1 LLM engine' or 'Available KV cache memory' was found")
    _check_one_startup(scan)
    if scan.banner and not scan.per_rank and not scan.global_values and not scan.errors:
        raise LogError("truncated: no memory lines ('Model loading took', 'Available KV cache memory', "
                       "'GPU KV cache size') after the start banner; the log ends before vLLM profiled memory")
    return replace(_assemble(scan), line_tags=tuple(tags_in(text)))
