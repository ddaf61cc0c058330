"""The one table of vLLM flags that change memory: CLI spelling, type, Helm value path.

It drives the `estimate` options, the parser that reads a `vllm serve ...` command back (from a
command line, a manifest or Helm values), the `vllm serve` emitter and the chart's typed values.
Defaults are version-dependent and live in configurator.vllm.defaults.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Literal

from configurator.errors import InputError
from configurator.units import parse_human_int

FlagType = Literal["float", "int", "len", "str", "bool", "bytes"]


@dataclass(frozen=True)
class Flag:
    """One vLLM engine argument."""

    dest: str  # EngineArgs field name
    type: FlagType
    help: str
    short: tuple[str, ...] = ()  # extra spellings: -tp, -q
    helm: str | None = None  # production-stack servingEngineSpec.modelSpec[].vllmConfig key
    negatable: bool = False  # has --no-<flag>

    @property
    def option(self) -> str:
        return "--" + self.dest.replace("_", "-")


FLAGS: tuple[Flag, ...] = (
    Flag("gpu_memory_utilization", "float", "Fraction of the GPU's total memory vLLM may use (0, 1].",
         helm="gpuMemoryUtilization"),
    Flag("kv_cache_dtype", "str", "KV-cache element type: auto, fp8, fp8_e4m3, fp8_e5m2, bfloat16, ..."),
    Flag("max_num_seqs", "int", "Maximum sequences per iteration.", helm="maxNumSeqs"),
    Flag("max_model_len", "len", "Context length; 'auto' or -1 fits it to memory.", helm="maxModelLen"),
    Flag("max_num_batched_tokens", "int", "Maximum tokens per iteration (sizes the profiling run)."),
    Flag("tensor_parallel_size", "int", "Tensor-parallel GPUs.", short=("-tp",), helm="tensorParallelSize"),
    Flag("pipeline_parallel_size", "int", "Pipeline-parallel stages.", short=("-pp",)),
    Flag("data_parallel_size", "int", "Data-parallel replicas (each has its own KV pool).", short=("-dp",)),
    Flag("block_size", "int", "Tokens per KV block (default chosen by the attention backend)."),
    Flag("enforce_eager", "bool", "Disable CUDA graphs (no graph memory)."),
    Flag("quantization", "str", "Weight quantization method (e.g. fp8, awq, gptq).", short=("-q",)),
    Flag("dtype", "str", "Model dtype: auto, half, float16, bfloat16, float32.", helm="dtype"),
    Flag("kv_cache_memory_bytes", "bytes", "KV-cache bytes per GPU; skips profiling (e.g. 25G)."),
    Flag("enable_prefix_caching", "bool", "Automatic prefix caching.", helm="enablePrefixCaching",
         negatable=True),
    Flag("enable_chunked_prefill", "bool", "Chunked prefill.", helm="enableChunkedPrefill", negatable=True),
    Flag("num_gpu_blocks_override", "int", "Force the number of KV blocks."),
    Flag("cpu_offload_gb", "float", "GiB of weights per GPU kept in CPU memory."),
    Flag("mamba_cache_dtype", "str", "Mamba/linear-attention conv state dtype (auto, float32, ...)."),
    Flag("mamba_ssm_cache_dtype", "str", "Mamba/linear-attention SSM state dtype (auto, float32, ...)."),
    Flag("disable_hybrid_kv_cache_manager", "bool", "Give every layer full-length KV."),
    Flag("enable_expert_parallel", "bool", "Spread MoE experts across ranks."),
    Flag("max_cudagraph_capture_size", "int", "Largest batch captured as a CUDA graph."),
    Flag("model", "str", "Model (Hugging Face id, profile name, or path)."),
)
BY_DEST = {f.dest: f for f in FLAGS}


def _spellings() -> dict[str, Flag]:
    out: dict[str, Flag] = {}
    for f in FLAGS:
        for s in (f.option, "--" + f.dest, *f.short):
            out[s] = f
    out["--kv-cache-memory"] = BY_DEST["kv_cache_memory_bytes"]  # vLLM's own suggestion line uses it
    return out


SPELLINGS = _spellings()


def convert(flag: Flag, raw: Any) -> Any:
    """A flag's text value -> its typed value (one clear InputError on bad input)."""
    name = flag.option
    try:
        if flag.type == "float":
            return float(raw)
        if flag.type == "int":
            return int(str(raw).replace("_", ""))
        if flag.type == "len":
            s = str(raw).strip().lower()
            return -1 if s in ("auto", "-1") else parse_human_int(s, what=name)
        if flag.type == "bytes":
            return parse_human_int(raw, what=name)
        if flag.type == "bool":
            if isinstance(raw, bool):
                return raw
            return str(raw).strip().lower() in ("1", "true", "yes", "on")
    except ValueError:
        raise InputError(f"{name}: expected {'a number' if flag.type != 'int' else 'an integer'}, "
                         f"got '{raw}'") from None
    return str(raw)


def parse_serve_args(argv: list[str] | str) -> tuple[dict[str, Any], list[str]]:
    """Read a `vllm serve MODEL --flag value ...` command (or its arguments) into {dest: value}.

    Accepts dashes or underscores, `--flag=value`, `--no-<flag>`, and a single shell string.
    Returns the known flags and the tokens it did not recognise (ignored by memory maths).
    Later occurrences win, as with argparse.
    """
    tokens = shlex.split(argv) if isinstance(argv, str) else list(argv)
    if len(tokens) == 1 and " " in tokens[0]:
        tokens = shlex.split(tokens[0])
    occurrences, unknown = parse_tokens(tokens)
    return {dest: value for dest, value, _ in occurrences}, unknown


LAUNCHERS = ("vllm", "python", "python3")

# Real vLLM options that change GPU memory but that the memory model does not (yet) account for.
# A server that sets one is still estimated, with a `not-modelled` warning naming the option; an
# entry leaves this set when configurator/estimate models it.
UNMODELLED_MEMORY_OPTIONS: frozenset[str] = frozenset({
    "--enable-lora", "--max-loras", "--max-lora-rank", "--max-cpu-loras", "--fully-sharded-loras",
    "--lora-modules", "--speculative-config", "--num-speculative-tokens", "--speculative-model",
    "--kv-transfer-config", "--kv-events-config", "--limit-mm-per-prompt", "--mm-processor-kwargs",
    "--swap-space", "--kv-offloading-size", "--kv-offloading-backend", "--enable-eplb",
    "--eplb-config", "--compilation-config", "-O", "--cuda-graph-sizes",
    "--long-prefill-token-threshold", "--max-num-partial-prefills", "--max-seq-len-to-capture",
    "--hf-overrides", "--rope-scaling", "--override-generation-config",
})


@dataclass(frozen=True)
class Occurrence:
    """One flag in a command: its EngineArgs name (or, for unmodelled options, the option as
    written), its typed value, and the index of the flag's token."""

    dest: str
    value: Any
    index: int


@dataclass(frozen=True)
class UnknownArg:
    """A token vLLM's argument parser would reject ("unrecognized arguments"), with the nearest
    real option when there is one."""

    token: str
    index: int
    suggestion: str | None = None


@dataclass(frozen=True)
class ParsedArgs:
    """A `vllm serve ...` command read the way vLLM's own parser reads it, for one release."""

    occurrences: tuple[Occurrence, ...]  # modelled flags, in order (later ones win, as in argparse)
    unmodelled: tuple[Occurrence, ...] = ()  # real options that change memory, not modelled
    unknown: tuple[UnknownArg, ...] = ()  # tokens vLLM would reject

    @property
    def flags(self) -> dict[str, Any]:
        return {o.dest: o.value for o in self.occurrences}


def parse_args(tokens: list[str], version: str | None = None) -> ParsedArgs:
    """Tokens of a `vllm serve` / `python -m vllm.entrypoints.openai.api_server` command ->
    ParsedArgs for vLLM `version` (None: the newest modelled). Raises InputError for a modelled
    flag with a value vLLM would reject (wrong type, not one of its choices, missing)."""
    occ, _unknown = parse_tokens(tokens)  # the release's argument table replaces this
    unmodelled = tuple(Occurrence(t.partition("=")[0], None, i) for i, t in enumerate(tokens)
                       if t.partition("=")[0] in UNMODELLED_MEMORY_OPTIONS)
    return ParsedArgs(tuple(Occurrence(d, v, i) for d, v, i in occ), unmodelled, ())


def parse_tokens(tokens: list[str]) -> tuple[list[tuple[str, Any, int]], list[str]]:
    """Tokens of a command -> [(dest, typed value, index of the flag token)] in order, and the
    unrecognised tokens. The model may be positional (`vllm serve MODEL`) or `--model`."""
    start = 0
    # skip a leading launcher: vllm serve | python -m vllm.entrypoints.openai.api_server
    while start < len(tokens) and not tokens[start].startswith("-") and (
            tokens[start].rsplit("/", 1)[-1] in LAUNCHERS or tokens[start] in ("serve", "exec")
            or tokens[start].startswith("vllm.entrypoints")):
        start += 1
    if tokens[start:start + 1] == ["-m"]:
        start += 2
    out: list[tuple[str, Any, int]] = []
    unknown: list[str] = []
    # with an explicit --model, a bare word is never the model: it is the value of an option this table does
    # not know (`--port 8080 --model X` gave model 8080, then X: a false duplicate-flag)
    seen_model = any(t == "--model" or t.startswith("--model=") for t in tokens[start:])
    i = start
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("-"):
            if not seen_model:
                out.append(("model", tok, i))
                seen_model = True
            else:
                unknown.append(tok)
            i += 1
            continue
        name, eq, val = tok.partition("=")
        neg = False
        flag = SPELLINGS.get(name) or SPELLINGS.get(name.replace("_", "-"))
        if flag is None and name.startswith("--no-"):
            flag = SPELLINGS.get("--" + name[5:]) or SPELLINGS.get("--" + name[5:].replace("_", "-"))
            neg = flag is not None and flag.negatable
            if not neg:
                flag = None
        if flag is None:
            unknown.append(tok)
            i += 1
            continue
        at = i
        if flag.type == "bool":
            out.append((flag.dest, (not neg) if not eq else convert(flag, val), at))
            i += 1
            continue
        if not eq:
            if i + 1 >= len(tokens):
                raise InputError(f"{name} needs a value")
            val = tokens[i + 1]
            i += 1
        out.append((flag.dest, convert(flag, val), at))
        if flag.dest == "model":
            seen_model = True
        i += 1
    return out, unknown
