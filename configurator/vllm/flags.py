"""The one table of vLLM flags that change memory: CLI spelling, type, Helm value path.

It drives the `estimate` options, the parser that reads a `vllm serve ...` command back (from a
command line, a manifest or Helm values), the `vllm serve` emitter and the chart's typed values.
Defaults are version-dependent and live in configurator.vllm.defaults.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any, Literal

from configurator.errors import InputError
from configurator.vllm.memory_options import UNMODELLED_MEMORY_OPTIONS

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
# UNMODELLED_MEMORY_OPTIONS (imported above, and importable from here): the real vLLM options that change GPU
# memory and that the memory model does not account for; one list, with the features' own, in
# configurator/vllm/memory_options.py.


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
    wrapper: str | None = None  # read under a wrapper (dynamo.vllm), whose own options of another release it may be


@dataclass(frozen=True)
class ParsedArgs:
    """A `vllm serve ...` command read the way vLLM's own parser reads it, for one release."""

    occurrences: tuple[Occurrence, ...]  # modelled flags, in order (later ones win, as in argparse)
    unmodelled: tuple[Occurrence, ...] = ()  # real options that change memory, not modelled
    unknown: tuple[UnknownArg, ...] = ()  # tokens vLLM would reject

    @property
    def flags(self) -> dict[str, Any]:
        return {o.dest: o.value for o in self.occurrences}


# Programs that run the next word as a command, and the options each takes before it (value-taking ones listed):
# exec / nohup / command (POSIX), env (coreutils: -u NAME, -C DIR, -S STRING), timeout (coreutils: DURATION after
# -s SIG / -k DUR), dumb-init (-r s:r), tini (-p SIG, -e CODE), stdbuf (-i/-o/-e MODE, joined or not), uv run
# (docs.astral.sh/uv/reference/cli/#uv-run), numactl (its options are joined: --cpunodebind=0).
_PREFIX_PROGRAMS: dict[str, tuple[str, ...]] = {
    "exec": (), "nohup": (), "command": (), "env": ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"),
    "timeout": ("-s", "--signal", "-k", "--kill-after"), "dumb-init": ("-r", "--rewrite"),
    "tini": ("-p", "-e"), "stdbuf": ("-i", "-o", "-e"), "numactl": (), "taskset": (),
    "uv": ("--with", "--with-editable", "--with-requirements", "--python", "-p", "--project", "--directory",
           "--extra", "--group", "--env-file", "--index", "--index-url", "--extra-index-url", "--package",
           "--cache-dir", "--config-file", "--only-group", "--no-group"),
}
# takes one positional word before the command: timeout DURATION, taskset MASK
_PREFIX_POSITIONAL = {"timeout": 1, "taskset": 1}
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
# CPython's options that take a value (python -X importtime, -W ignore, -c is a program of its own)
_PYTHON_VALUE_OPTIONS = ("-X", "-W", "--check-hash-based-pycs")
# vLLM's module entry points: the CLI (vllm/entrypoints/cli/main.py, then `serve`: the model may be positional)
# and the OpenAI / plain API servers (the model is --model)
VLLM_CLI_MODULE = "vllm.entrypoints.cli.main"


@dataclass(frozen=True)
class Wrapper:
    """A program that takes vLLM's engine options plus its own, read here as vLLM's command line once its own
    options are set aside. `options`: its own option -> values it takes (0, 1, or '*': all up to the next
    option); `prefixes`: option names of its own by prefix (a release newer than the list may add more);
    `model`: its options that name the model (in order of precedence)."""

    name: str
    options: dict[str, int | str]
    prefixes: tuple[str, ...] = ()
    model: tuple[str, ...] = ()
    source: str = ""


# ai-dynamo/dynamo components/backends/vllm/src/dynamo/vllm/args.py parse_args (a FlexibleArgumentParser with
# AsyncEngineArgs.add_cli_args): its own options, across the releases read (--is-prefill-worker ... --mm-prompt-
# template, add_config_dump_args' --dump-config-to; later --endpoint, --disaggregation-mode, --use-vllm-tokenizer,
# --request-plane, --event-plane); "dyn-" is the prefix it adopted for its own options ("To avoid name conflicts
# with different backends, adopted prefix 'dyn-' for dynamo specific args")
DYNAMO = Wrapper("dynamo.vllm", {
    "--is-prefill-worker": 0, "--is-decode-worker": 0, "--migration-limit": 1, "--dynamo-port-min": 1,
    "--dynamo-port-max": 1, "--connector": "*", "--custom-jinja-template": 1, "--multimodal-processor": 0,
    "--multimodal-encode-worker": 0, "--multimodal-worker": 0, "--multimodal-encode-prefill-worker": 0,
    "--mm-prompt-template": 1, "--dump-config-to": 1, "--version": 0, "--endpoint": 1, "--disaggregation-mode": 1,
    "--use-vllm-tokenizer": 0, "--no-use-vllm-tokenizer": 0, "--request-plane": 1, "--event-plane": 1,
    "--store-kv": 1, "--enable-local-indexer": 0, "--headless": 0,
}, prefixes=("--dyn-",), source="ai-dynamo/dynamo components/backends/vllm/src/dynamo/vllm/args.py")
# kserve/kserve python/huggingfaceserver/huggingfaceserver/__main__.py and python/kserve/kserve/model_server.py:
# the runtime's options (underscored), vLLM's engine options beside them when the vLLM backend serves
HF_SERVER = Wrapper("huggingfaceserver", {
    "--model_name": 1, "--model_dir": 1, "--model_id": 1, "--model_revision": 1, "--tokenizer_revision": 1,
    "--max_length": 1, "--tensor_input_names": 1, "--backend": 1, "--task": 1, "--predictor_protocol": 1,
    "--predictor_host": 1, "--http_port": 1, "--grpc_port": 1, "--workers": 1, "--max_threads": 1,
    "--max_asyncio_workers": 1, "--log_config_file": 1, "--access_log_format": 1, "--disable_lower_case": 0,
    "--disable_special_tokens": 0, "--return_token_type_ids": 0, "--return_offsets_mapping": 0,
    "--return_probabilities": 0, "--return_raw_logits": 0, "--disable_vllm": 0, "--enable_docs_url": 0,
    "--dtype": 1, "--trust_remote_code": 0, "--enable_latency_logging": 0, "--configure_logging": 0,
}, model=("--model_id", "--model_dir"),
    source="kserve/kserve python/huggingfaceserver/huggingfaceserver/__main__.py")
WRAPPERS = {"dynamo.vllm": DYNAMO, "huggingfaceserver": HF_SERVER, "huggingface_server": HF_SERVER}


@dataclass(frozen=True)
class Launch:
    """How a command line starts vLLM: where vLLM's arguments start, whether the model may be positional,
    and the wrapper (Dynamo, KServe's Hugging Face server) whose own options are among them."""

    start: int
    positional: bool = True
    wrapper: Wrapper | None = None


def skip_prefix(words: list[str], i: int = 0) -> int:
    """Past the programs that run the next word as a command (`tini --`, `dumb-init --`, `env A=1`, `A=1`,
    `nohup`, `exec`, `timeout 1d`): where the command they run starts."""
    while i < len(words):
        base = words[i].rsplit("/", 1)[-1]
        if _ASSIGNMENT.match(words[i]):
            i += 1
        elif base in _PREFIX_PROGRAMS and base != "uv":
            i = _skip_options(words, i + 1, _PREFIX_PROGRAMS[base]) + _PREFIX_POSITIONAL.get(base, 0)
        else:
            break
    return i


def _skip_options(tokens: list[str], i: int, valued: tuple[str, ...]) -> int:
    while i < len(tokens) and tokens[i].startswith("-") and tokens[i] != "--":
        opt = tokens[i]
        i += 2 if opt in valued else 1
    if i < len(tokens) and tokens[i] == "--":
        i += 1
    return i


def launch(tokens: list[str]) -> Launch:
    """Read the launcher of a command (what comes before vLLM's arguments) as people write it: `exec`, `nohup`,
    `env A=1`, `A=1`, `timeout 1d`, `dumb-init --`, `tini --`, `uv run`, any `python*` with interpreter options
    (-u, -O, -X opt), then `vllm serve`, `-m vllm.entrypoints.cli.main serve`, `-m
    vllm.entrypoints.openai.api_server`, or a known wrapper (`-m dynamo.vllm`, `-m huggingfaceserver`). A command
    that starts with none of these starts with vLLM's arguments (container args under the image's entrypoint)."""
    i = 0
    n = len(tokens)
    while i < n:
        w = tokens[i]
        base = w.rsplit("/", 1)[-1]
        if _ASSIGNMENT.match(w):
            i += 1
        elif base in _PREFIX_PROGRAMS:
            if base == "uv":
                if i + 1 < n and tokens[i + 1] == "run":
                    i += 1
                else:
                    break
            i = _skip_options(tokens, i + 1, _PREFIX_PROGRAMS[base])
            i += _PREFIX_POSITIONAL.get(base, 0)
        elif base == "serve":  # `serve MODEL` as args under the image's `vllm serve` (stray-serve-arg says so)
            return Launch(i + 1)
        elif base == "vllm":
            i += 1
            if i < n and tokens[i] == "serve":
                return Launch(i + 1)
            return Launch(i)
        elif _PYTHON.match(base):
            i = _skip_python(tokens, i + 1)
            if i >= n:
                return Launch(i)
            if tokens[i].endswith(".py"):  # python .../vllm/entrypoints/openai/api_server.py
                return Launch(i + 1, positional=False)
            if not tokens[i].startswith("-m"):
                break
        elif w == "-m" or (w.startswith("-m") and len(w) > 2):
            module = tokens[i + 1] if w == "-m" and i + 1 < n else w[2:]
            i += 2 if w == "-m" else 1
            if module == VLLM_CLI_MODULE:
                return Launch(i + 1 if i < n and tokens[i] == "serve" else i)
            if module in WRAPPERS:
                return Launch(i, positional=False, wrapper=WRAPPERS[module])
            return Launch(i, positional=not module.startswith("vllm.entrypoints"))
        elif w.startswith("vllm.entrypoints"):
            return Launch(i + 1, positional=False)
        else:
            break
    return Launch(i)


def _skip_python(tokens: list[str], i: int) -> int:
    """Past CPython's own options (-u, -O, -OO, -B, -X opt, -W arg, -Xopt), up to -m or a script."""
    while i < len(tokens):
        w = tokens[i]
        if w.startswith("-m") or not w.startswith("-") or w == "-":
            return i
        i += 2 if w in _PYTHON_VALUE_OPTIONS else 1
    return i


def _launcher(tokens: list[str]) -> tuple[int, bool]:
    """Where a command's arguments start, and whether it takes the model positionally:
    `vllm serve MODEL ...` does, `python -m vllm.entrypoints.openai.api_server --model M` does not."""
    found = launch(tokens)
    return found.start, found.positional


def _wrapper_own(tokens: list[str], start: int, wrapper: Wrapper) -> tuple[list[int], dict[str, tuple[str, int]]]:
    """The indices of vLLM's arguments (the wrapper's own options and their values set aside), and the wrapper's
    own options given (name -> (value, index))."""
    keep: list[int] = []
    own: dict[str, tuple[str, int]] = {}
    i = start
    while i < len(tokens):
        name, eq, value = tokens[i].partition("=")
        norm = name if name in wrapper.options else name.replace("_", "-")
        takes = wrapper.options.get(name, wrapper.options.get(norm))
        if takes is None and norm.startswith(wrapper.prefixes or ("\0",)):
            takes = 1
        if takes is None or not name.startswith("--"):
            keep.append(i)
            i += 1
            continue
        at = i
        i += 1
        if eq:
            own[name] = (value, at)
            continue
        if takes == "*" or takes == 1:
            got: list[str] = []
            while i < len(tokens) and not tokens[i].startswith("--") and (takes == "*" or not got):
                got.append(tokens[i])
                i += 1
            own[name] = (" ".join(got), at)
        else:
            own[name] = ("true", at)
    return keep, own


def parse_args(tokens: list[str], version: str | None = None) -> ParsedArgs:
    """Tokens of a `vllm serve` / `python -m vllm.entrypoints.openai.api_server` command ->
    ParsedArgs for vLLM `version` (None: the newest modelled), read as that release's own argument
    parser reads them (configurator.vllm.args). Raises InputError (vLLM's wording) where vLLM's
    parser would exit: a value outside an option's choices, a wrong type, a missing value, an
    ambiguous abbreviation; and for a modelled flag whose value is out of range."""
    from configurator.vllm.args import ArgError, Given, scan

    tokens = [str(t) for t in tokens]
    how = launch(tokens)
    start, positional = how.start, how.positional
    own: dict[str, tuple[str, int]] = {}
    if how.wrapper is not None:  # the wrapper's own options are its, not vLLM's
        keep, own = _wrapper_own(tokens, start, how.wrapper)
    else:
        keep = list(range(start, len(tokens)))
    def back(i: int) -> int:  # an index of the scanned words -> the index in `tokens`
        return keep[i] if 0 <= i < len(keep) else len(tokens)

    try:
        s = scan([tokens[i] for i in keep], version, positional=positional)
    except ArgError as e:
        raise ArgError(str(e), back(e.index) if e.index is not None else None) from None

    occurrences: list[Occurrence] = []
    unmodelled: list[Occurrence] = []
    if s.model is not None:
        occurrences.append(Occurrence("model", s.model[0], back(s.model[1]), back(s.model[1]) + 1))
    if how.wrapper is not None:
        named = next((own[m] for m in how.wrapper.model if m in own), None)
        if named is not None and named[0]:
            occurrences.append(Occurrence("model", named[0], named[1], named[1] + 2))
    for g in s.given:
        at = back(g.index)
        g = Given(g.option, g.written, g.value, at, back(g.end - 1) + 1 if g.end else at + 1)
        flag = BY_DEST.get(g.option.dest)
        if flag is not None and g.value is None and g.option.optional:
            continue  # '' or 'None' for an optional option: vLLM's default (optional_type)
        if flag is not None:
            value = g.value
            if flag.type != "bool" or not isinstance(value, bool):
                try:
                    value = convert(flag, value, version)
                except InputError as e:
                    raise ArgError(str(e), at) from None
            if flag.dest == "quantization" and value is not None:
                _check_quantization(g.option, value, at)
            occurrences.append(Occurrence(flag.dest, value, at, g.end))
            continue
        if any(o in UNMODELLED_MEMORY_OPTIONS for o in g.option.opts):
            unmodelled.append(Occurrence(g.option.opts[0], g.value, at, g.end))
    occurrences, unmodelled = _fold_spec_shorthands(occurrences, unmodelled)
    occurrences, unmodelled = _optimization_level(occurrences, unmodelled)
    from configurator.vllm.args import release_args

    rel = release_args(version)
    unknown = tuple(UnknownArg(x.token, back(x.index), rel.nearest(x.token) if x.token.startswith("-") else None,
                               x.values, how.wrapper.name if how.wrapper else None) for x in s.leftovers)
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


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def option_name(key: str) -> str:
    """An engine argument's key in any case style as vLLM's option: max_model_len, maxModelLen, max-model-len and
    --max-model-len are all --max-model-len."""
    return "--" + _CAMEL.sub("-", str(key).strip().lstrip("-")).replace("_", "-").lower()


def argv_from_mapping(mapping: dict, version: str | None = None) -> list[str]:
    """A mapping of vLLM engine arguments (Ray Serve LLM's engine_kwargs, a values file's vllm args, a --config
    file) as the command line vLLM would be given, the way vLLM's FlexibleArgumentParser.load_config_file turns
    its YAML config into arguments (vllm/utils/argparse_utils.py): true -> --key, false -> --no-key where the
    release has it (else nothing), a list -> --key item item, a mapping -> --key '<json>', anything else
    -> --key value. Keys in any case style (option_name)."""
    import json

    from configurator.vllm.args import release_args

    strings = release_args(version).strings
    out: list[str] = []
    for key, value in mapping.items():
        name = option_name(key)
        if isinstance(value, bool):
            if value:
                out.append(name)
            elif "--no-" + name[2:] in strings:
                out.append("--no-" + name[2:])
        elif value is None:
            continue
        elif isinstance(value, list):
            if value:
                out += [name, *(json.dumps(v) if isinstance(v, dict | list) else str(v) for v in value)]
        elif isinstance(value, dict):
            out += [name, json.dumps(value, default=str)]
        else:
            out += [name, str(value)]
    return out


def flags_from_mapping(mapping: dict, version: str | None = None) -> ParsedArgs:
    """An engine-args mapping in any case style (`max_model_len`, `maxModelLen`, `max-model-len`) read as the
    same flags the command line would give (parse_args of argv_from_mapping): the same modelled values, the
    same unknown options, the same refusals (InputError)."""
    return parse_args(argv_from_mapping(mapping, version), version)
