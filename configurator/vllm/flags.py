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
    Flag("enable_expert_parallel", "bool", "Spread MoE experts across ranks: each GPU holds whole experts, "
         "experts / (TP x DP) of them, instead of a TP slice of every expert."),
    Flag("prefill_context_parallel_size", "int", "Prefill context-parallel ranks (the MoE layers shard over "
         "them like DP)."),
    Flag("enable_eplb", "bool", "Expert-parallel load balancing (needs --enable-expert-parallel)."),
    Flag("eplb_config", "str", "EPLB settings, a JSON object; num_redundant_experts adds expert replicas."),
    Flag("max_cudagraph_capture_size", "int", "Largest batch captured as a CUDA graph."),
    Flag("enable_lora", "bool", "LoRA adapters: vLLM preallocates max_loras slots of max_lora_rank on every "
         "LoRA-capable layer."),
    Flag("max_loras", "int", "LoRA adapter slots on the GPU (default 1)."),
    Flag("max_lora_rank", "int", "Rank every LoRA slot is sized for (default 16)."),
    Flag("max_cpu_loras", "int", "LoRA adapters cached in host memory (no GPU memory)."),
    Flag("lora_dtype", "str", "LoRA slot dtype: auto (the model dtype), float16, bfloat16."),
    Flag("fully_sharded_loras", "bool", "Shard LoRA slots fully across tensor-parallel ranks."),
    Flag("speculative_config", "str", "Speculative decoding, a JSON object: method (ngram, eagle, eagle3, mtp, "
         "draft_model, ...), model (the draft), num_speculative_tokens."),
    Flag("limit_mm_per_prompt", "str", "Multimodal items per prompt, a JSON object ({\"image\": 0} = text-only: "
         "no encoder cache, no encoder profiling)."),
    Flag("skip_mm_profiling", "bool", "Skip the multimodal encoder's profiling (its memory is not reserved)."),
    Flag("language_model_only", "bool", "Text only: the limit of every modality is 0 (as --limit-mm-per-prompt 0 "
         "for each), so no encoder profiling, and towers of those modalities are not built."),
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


def _release_type(flag: Flag, version: str | None) -> str | None:
    """The option's argparse type in `version` (from the table read from the wheels)."""
    from configurator.vllm.args import release_args

    for o in release_args(version).options:
        if o.dest == flag.dest:
            return o.type
    return None


def _shown(raw: Any) -> str:
    s = "null" if raw is None else str(raw)
    return s[:40] + ("..." if len(s) > 40 else "")


def convert(flag: Flag, raw: Any, version: str | None = None) -> Any:
    """A flag's value (text, or a number / bool from YAML) -> its typed, range-checked value, read
    as vLLM `version` reads it (human_readable_int where that release uses it). One clear
    InputError on bad input: token counts get token-count messages, sizes size messages."""
    from configurator.units import MAX_BYTES, MAX_TOKENS, HumanIntError, human_readable_int

    name = flag.option
    if flag.type == "bool":
        if isinstance(raw, bool):
            return raw
        return str(raw).strip().lower() in ("1", "true", "yes", "on")
    if flag.type == "str":
        if raw is None or isinstance(raw, dict | list):
            raise InputError(f"{name}: expected a value, got {_shown(raw)}")
        return str(raw)
    if raw is None or isinstance(raw, bool | dict | list):
        what = {"len": "a token count such as 8192, 8k (8,000), 8K (8,192) or auto",
                "bytes": "a byte count such as 25G (25 GiB) or 25g (25e9)",
                "float": "a number", "int": "a whole number"}[flag.type]
        raise InputError(f"{name}: expected {what}, got {_shown(raw)}")
    if flag.type == "float":
        import math

        try:
            value = float(raw)
        except (TypeError, ValueError, OverflowError):
            raise InputError(f"{name}: expected a number, got '{_shown(raw)}'") from None
        if not math.isfinite(value):
            raise InputError(f"{name}: expected a finite number, got '{_shown(raw)}'")
        if value < 0 or value > MAX_BYTES:
            raise InputError(f"{name}: {_shown(raw)} is out of range")
        return value
    text = str(raw).strip() if not isinstance(raw, int) else str(raw)
    if isinstance(raw, float):
        if not raw.is_integer():
            raise InputError(f"{name}: expected an integer, got {_shown(raw)}")
        text = str(int(raw)) if abs(raw) < 1e30 else "inf"
    human = flag.type in ("len", "bytes") or _release_type(flag, version) in ("human_int", "human_int_or_auto")
    limit = MAX_BYTES if flag.type == "bytes" else MAX_TOKENS
    if flag.type == "len" and (text == "-1" or text.lower() == "auto"):
        return -1
    try:
        value = human_readable_int(text) if human else int(text)
    except HumanIntError as e:
        raise InputError(f"{name}: {e}") from None
    except ValueError:
        if flag.type == "len":
            raise InputError(f"{name}: expected a token count such as 8192, 8k (8,000), 8K (8,192) or "
                             f"auto, got '{_shown(raw)}'") from None
        if flag.type == "bytes":
            raise InputError(f"{name}: expected a byte count such as 25G (25 GiB), 25g (25e9) or "
                             f"26843545600, got '{_shown(raw)}'") from None
        raise InputError(f"{name}: expected an integer{' such as 8192 or 8k' if human else ''}, "
                         f"got '{_shown(raw)}'") from None
    if value < 0:
        raise InputError(f"{name}: must not be negative, got {_shown(raw)}")
    if value > limit:
        raise InputError(f"{name}: {_shown(raw)} is out of range (at most {limit:,})")
    return value


def parse_serve_args(argv: list[str] | str) -> tuple[dict[str, Any], list[str]]:
    """Read a `vllm serve MODEL --flag value ...` command (or its arguments) into {dest: value}.

    Read as vLLM's parser reads it (parse_args). Returns the modelled flags and every other
    token after the launcher (other real options with their values, and what vLLM would reject),
    which the memory maths ignores. Later occurrences win, as with argparse.
    """
    tokens = shlex.split(argv) if isinstance(argv, str) else list(argv)
    if len(tokens) == 1 and " " in tokens[0]:
        tokens = shlex.split(tokens[0])
    parsed = parse_args(tokens)
    start, _ = _launcher(tokens)
    used = {i for o in parsed.occurrences for i in range(o.index, max(o.end, o.index + 1))}
    return parsed.flags, [t for i, t in enumerate(tokens) if i >= start and i not in used]


LAUNCHERS = ("vllm", "python", "python3")

# Real vLLM options that change GPU memory but that the memory model does not (yet) account for.
# A server that sets one is still estimated, with a `not-modelled` warning naming the option; an
# entry leaves this set when configurator/estimate models it. LoRA (--enable-lora, --max-loras,
# --max-lora-rank, --max-cpu-loras, --lora-dtype, --fully-sharded-loras) is modelled in
# configurator/estimate/features.py; --lora-modules only names adapters loaded into those slots.
# --speculative-config is modelled there too; the pre-0.8 spellings (--speculative-model,
# --num-speculative-tokens) are not. Data / expert parallelism (-dp, --enable-expert-parallel, -pcp,
# --enable-eplb, --eplb-config num_redundant_experts) is modelled there as well, and so are
# --limit-mm-per-prompt and --skip-mm-profiling (the encoder's profiling batch); --mm-processor-kwargs
# (tokens per item) is not.
UNMODELLED_MEMORY_OPTIONS: frozenset[str] = frozenset({
    "--num-speculative-tokens", "--speculative-model",
    "--kv-transfer-config", "--kv-events-config", "--mm-processor-kwargs",
    "--swap-space", "--kv-offloading-size", "--kv-offloading-backend", "--compilation-config", "-O",
    "--cuda-graph-sizes",
    "--long-prefill-token-threshold", "--max-num-partial-prefills", "--max-seq-len-to-capture",
    "--hf-overrides", "--rope-scaling", "--override-generation-config",
    "--all2all-backend", "--enable-dbo",  # EP communication buffers, dual-batch overlap (0.33.0 arg_utils.py)
    # decode context parallel (the KV of a request split over ranks), LoRA on towers / connector, bias slots and
    # extra vocabulary, the MoE kernel choice (0.25.0 / 0.33.0 arg_utils.py; the LoRA pair up to 0.11.0)
    "--decode-context-parallel-size", "-dcp", "--enable-tower-connector-lora", "--moe-backend",
    "--enable-lora-bias", "--lora-extra-vocab-size",
    # vLLM 0.33.0 options that change GPU memory, found by reading where each is consumed (engine/arg_utils.py and
    # the code it feeds): the optimization level (O0 captures no CUDA graphs, O1 piecewise only; -O3 / -O 3 are
    # its spellings), the 0.33 capture-size list, the speculative shorthands merged into --speculative-config,
    # micro-batching, a kernel / attention / engram / diffusion config, a YAML --config the tool does not read,
    # performance mode (doubled batch defaults), sliding windows turned off, KV layers kept out of fp8, pooling
    # runners (no LM head), online quantization, layer offloading and its prefetch pool, memory reserved for
    # multimodal IPC or GPU video decoding, encoder-only instances, data-parallel encoders, LoRA module and MoE
    # variants, per-LoRA-count graphs, ReplaySSM ring buffers (not --attention-backend: a FlashInfer workspace of
    # ~0.4 GiB where another backend is the default, within the error band)
    "--optimization-level", "--cudagraph-capture-sizes", "--spec-method", "--spec-model", "--spec-tokens",  # folded
    "--ubatch-size", "--kernel-config", "--attention-config", "-ac", "--engram-config", "--diffusion-config", "-dc",
    "--performance-mode", "--disable-sliding-window", "--kv-cache-dtype-skip-layers", "--runner",
    "--convert", "--quantization-config", "--offload-backend", "--offload-group-size", "--offload-num-in-group",
    "--offload-prefetch-step", "--offload-params", "--cpu-offload-params", "--mm-ipc-gpu-memory-gb",
    "--media-io-kwargs", "--mm-encoder-only", "--ec-transfer-config", "--mm-encoder-tp-mode",
    "--lora-target-modules", "--enable-moe-shared-loras", "--enable-mixed-moe-lora-format",
    "--specialize-active-lora", "--use-replayssm", "--replayssm-buffer-len", "--video-pruning-rate",
})


@dataclass(frozen=True)
class Occurrence:
    """One flag in a command: its EngineArgs name (or, for unmodelled options, the option as
    written), its typed value, and the index of the flag's token."""

    dest: str
    value: Any
    index: int
    end: int = 0  # the index after the flag's last token (its value)


@dataclass(frozen=True)
class UnknownArg:
    """A token vLLM's argument parser would reject ("unrecognized arguments"), with the nearest
    real option when there is one."""

    token: str
    index: int
    suggestion: str | None = None
    values: tuple[str, ...] = ()  # the tokens after it that argparse also leaves over


@dataclass(frozen=True)
class ParsedArgs:
    """A `vllm serve ...` command read the way vLLM's own parser reads it, for one release."""

    occurrences: tuple[Occurrence, ...]  # modelled flags, in order (later ones win, as in argparse)
    unmodelled: tuple[Occurrence, ...] = ()  # real options that change memory, not modelled
    unknown: tuple[UnknownArg, ...] = ()  # tokens vLLM would reject

    @property
    def flags(self) -> dict[str, Any]:
        return {o.dest: o.value for o in self.occurrences}


def _launcher(tokens: list[str]) -> tuple[int, bool]:
    """Where a command's arguments start, and whether it takes the model positionally:
    `vllm serve MODEL ...` does, `python -m vllm.entrypoints.openai.api_server --model M` does not."""
    start = 0
    positional = True
    while start < len(tokens) and not tokens[start].startswith("-") and (
            tokens[start].rsplit("/", 1)[-1] in LAUNCHERS or tokens[start] in ("serve", "exec")
            or tokens[start].startswith("vllm.entrypoints")):
        if tokens[start].startswith("vllm.entrypoints"):
            positional = False
        start += 1
    if tokens[start:start + 1] == ["-m"]:
        if start + 1 < len(tokens) and tokens[start + 1].startswith("vllm.entrypoints"):
            positional = False
        start += 2
    return start, positional


def parse_args(tokens: list[str], version: str | None = None) -> ParsedArgs:
    """Tokens of a `vllm serve` / `python -m vllm.entrypoints.openai.api_server` command ->
    ParsedArgs for vLLM `version` (None: the newest modelled), read as that release's own argument
    parser reads them (configurator.vllm.args). Raises InputError (vLLM's wording) where vLLM's
    parser would exit: a value outside an option's choices, a wrong type, a missing value, an
    ambiguous abbreviation; and for a modelled flag whose value is out of range."""
    from configurator.vllm.args import ArgError, scan

    tokens = [str(t) for t in tokens]
    start, positional = _launcher(tokens)
    s = scan(tokens[start:], version, positional=positional)
    occurrences: list[Occurrence] = []
    unmodelled: list[Occurrence] = []
    if s.model is not None:
        occurrences.append(Occurrence("model", s.model[0], s.model[1] + start, s.model[1] + start + 1))
    for g in s.given:
        at = g.index + start
        flag = BY_DEST.get(g.option.dest)
        if flag is not None:
            value = g.value
            if flag.type != "bool" or not isinstance(value, bool):
                try:
                    value = convert(flag, value, version)
                except InputError as e:
                    raise ArgError(str(e), at) from None
            if flag.dest == "quantization" and value is not None:
                _check_quantization(g.option, value, at)
            occurrences.append(Occurrence(flag.dest, value, at, g.end + start))
            continue
        if any(o in UNMODELLED_MEMORY_OPTIONS for o in g.option.opts):
            unmodelled.append(Occurrence(g.option.opts[0], g.value, at, g.end + start))
    occurrences, unmodelled = _fold_spec_shorthands(occurrences, unmodelled)
    occurrences, unmodelled = _optimization_level(occurrences, unmodelled)
    from configurator.vllm.args import release_args

    rel = release_args(version)
    unknown = tuple(UnknownArg(x.token, x.index + start, rel.nearest(x.token) if x.token.startswith("-") else None,
                               x.values) for x in s.leftovers)
    return ParsedArgs(tuple(occurrences), tuple(unmodelled), unknown)


# vLLM 0.33.0 engine/arg_utils.py create_speculative_config: --spec-method / --spec-model / --spec-tokens are
# merged into the speculative config dict, and refused when it sets the same key
SPEC_SHORTHANDS = {"--spec-method": "method", "--spec-model": "model", "--spec-tokens": "num_speculative_tokens"}


def _fold_spec_shorthands(occurrences: list[Occurrence], unmodelled: list[Occurrence]
                          ) -> tuple[list[Occurrence], list[Occurrence]]:
    """The speculative shorthands as the speculative_config they make (modelled there), vLLM's way."""
    import json

    from configurator.vllm.args import ArgError

    short = [o for o in unmodelled if o.dest in SPEC_SHORTHANDS]
    if not short:
        return occurrences, unmodelled
    base = next((o for o in reversed(occurrences) if o.dest == "speculative_config"), None)
    d: dict = {}
    if base is not None:
        try:
            d = dict(base.value) if isinstance(base.value, dict) else json.loads(str(base.value) or "{}")
        except ValueError:
            return occurrences, unmodelled  # a malformed --speculative-config is reported where it is read
        if not isinstance(d, dict):
            return occurrences, unmodelled
    for o in short:
        key = SPEC_SHORTHANDS[o.dest]
        if key in d and base is not None:
            raise ArgError(f"{o.dest} and --speculative-config['{key}'] are mutually exclusive", o.index)
        value = o.value
        if key == "num_speculative_tokens":
            try:
                value = int(value)
            except (TypeError, ValueError):
                raise ArgError(f"{o.dest}: expected an integer, got {value!r}", o.index) from None
        d[key] = value
    at = base or short[0]
    rest = [o for o in occurrences if o.dest != "speculative_config"]
    return [*rest, Occurrence("speculative_config", d, at.index, at.end)], \
        [o for o in unmodelled if o.dest not in SPEC_SHORTHANDS]


def _optimization_level(occurrences: list[Occurrence], unmodelled: list[Occurrence]
                        ) -> tuple[list[Occurrence], list[Occurrence]]:
    """-O / --optimization-level as far as memory goes (vLLM 0.33.0 config/vllm.py OPTIMIZATION_LEVEL_00..03):
    O0 captures no CUDA graphs and compiles nothing (cudagraph_mode NONE: what --enforce-eager models); O2, the
    default, and O3 capture FULL_AND_PIECEWISE graphs as the estimate assumes; O1 (piecewise graphs only) and any
    other value stay a not-modelled warning."""
    levels = [o for o in unmodelled if o.dest == "--optimization-level"]
    if not levels:
        return occurrences, unmodelled
    last = levels[-1]
    level = str(last.value).upper().removeprefix("O")
    if level not in ("0", "2", "3"):
        return occurrences, unmodelled
    rest = [o for o in unmodelled if o.dest != "--optimization-level"]
    if level == "0" and not any(o.dest == "enforce_eager" for o in occurrences):
        occurrences = [*occurrences, Occurrence("enforce_eager", True, last.index, last.end)]
    return occurrences, rest


def _check_quantization(option: Any, value: str, index: int) -> None:
    """vLLM's ModelConfig._verify_quantization: a method outside its list is refused with this text
    (vllm/config/model.py) in releases whose argparse lists no choices for -q (0.20+)."""
    from configurator.vllm.args import ArgError

    if option.choices is None and option.known and value not in option.known:
        raise ArgError(f"Unknown quantization method: {value}. Must be one of {list(option.known)}.", index)


def unrecognized_message(unknown: tuple[UnknownArg, ...] | list[UnknownArg]) -> str:
    """vLLM's exit text for left-over tokens, plus the nearest real option of each typo."""
    from configurator.vllm.args import unrecognized

    text = unrecognized([t for u in unknown for t in (u.token, *u.values)])
    hints = [f"{u.token.split('=', 1)[0]} -> {u.suggestion}" for u in unknown if u.suggestion]
    return text + (f" (did you mean: {', '.join(hints)}?)" if hints else "")
