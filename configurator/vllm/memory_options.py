"""The vLLM options that change GPU memory and that the estimate does not model: the one list (issue 29)."""

from __future__ import annotations

from typing import Any

# configurator/vllm/flags.py marks a command's option that is in UNMODELLED_MEMORY_OPTIONS as not modelled;
# configurator/estimate/features.py names a feature option of UNMODELLED_FEATURE_FLAGS given with a value other
# than the modelled one. UNMODELLED_MEMORY_OPTIONS takes the feature options from that table's keys, so each
# option is listed once.

# vLLM's default lora_extra_vocab_size (config/lora.py, releases up to 0.11.0)
LORA_EXTRA_VOCAB = 256

# Options of the features' families (LoRA, parallelism, MoE kernels) that change GPU memory and are not modelled,
# by EngineArgs name (vllm/engine/arg_utils.py 0.25.0 / 0.33.0; the LoRA pair in releases up to 0.11.0), with the value
# that leaves memory as modelled and what they do.
UNMODELLED_FEATURE_FLAGS: dict[str, tuple[Any, str]] = {  # key: (value(s) that leave memory as modelled, text)
    "decode_context_parallel_size": (1, "--decode-context-parallel-size: the KV cache of a request is split over "
                                        "the DCP ranks (parallel_config.decode_context_parallel_size), so each GPU "
                                        "holds more tokens than shown"),
    "enable_tower_connector_lora": (False, "--enable-tower-connector-lora: LoRA slots on the vision tower and "
                                           "connector (config/lora.py) are not counted"),
    "moe_backend": ("auto", "--moe-backend: the chosen MoE kernel's weight layout and workspaces (e.g. DeepGEMM "
                            "MegaMoE's symmetric buffers) are not modelled; the automatic choice is assumed"),
    "all2all_backend": (("allgather_reducescatter", "naive"),
                        "--all2all-backend: this backend's dispatch buffers are not modelled (the default gather, "
                        "allgather_reducescatter or 0.10's naive, is)"),
    "enable_dbo": (False, "--enable-dbo: dual-batch overlap's second micro-batch is not modelled"),
    "lora_extra_vocab_size": (LORA_EXTRA_VOCAB, "--lora-extra-vocab-size: the extra vocabulary rows per adapter "
                                                "are taken at vLLM's default 256"),
    "enable_lora_bias": (False, "--enable-lora-bias: the LoRA bias slots (max_loras x output size per module) are "
                                "not counted"),
}
# spellings of those options besides --<key> (vllm/engine/arg_utils.py 0.33.0)
_FEATURE_SHORT = {"decode_context_parallel_size": ("-dcp",)}

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
# The feature options of UNMODELLED_FEATURE_FLAGS belong to it: decode context parallel (the KV of a request split
# over ranks), LoRA on towers / connector, bias slots and extra vocabulary, the MoE kernel choice, EP communication
# buffers and dual-batch overlap (0.25.0 / 0.33.0 arg_utils.py; the LoRA pair up to 0.11.0).
UNMODELLED_MEMORY_OPTIONS: frozenset[str] = frozenset({
    "--num-speculative-tokens", "--speculative-model",
    "--kv-transfer-config", "--kv-events-config", "--mm-processor-kwargs",
    "--swap-space", "--kv-offloading-size", "--kv-offloading-backend", "--compilation-config", "-O",
    "--cuda-graph-sizes",
    "--long-prefill-token-threshold", "--max-num-partial-prefills", "--max-seq-len-to-capture",
    "--hf-overrides", "--rope-scaling", "--override-generation-config",
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
}) | frozenset("--" + key.replace("_", "-") for key in UNMODELLED_FEATURE_FLAGS) \
    | frozenset(s for spellings in _FEATURE_SHORT.values() for s in spellings)
