"""Stage 1a / 2a, features: which optional engine features apply, and the memory each adds (with its line).

Resolves --enable-lora and its options into the LoRA adapter slots vLLM preallocates (counted in
"Model loading took", like the weights) and the LoRA kernels' buffers in the profiling run; and
--speculative-config into the draft's weights (also inside "Model loading took"), the draft's
attention layers (their KV joins the same pool) and the speculative tokens' effect on CUDA-graph
capture sizes and recurrent state. The arithmetic lives in configurator/memory/features.py; this
stage reads the model description and the release, and says in words what it added.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from configurator.errors import InputError, NotFoundError
from configurator.memory.features import (
    Linear,
    LoraSettings,
    MoEExperts,
    MoEParallel,
    csa_fit_check_bytes,
    dp_moe_gather_bytes,
    drafter_buffer_bytes,
    encoder_outputs_bytes,
    encoder_profile,
    expert_share,
    linear_lora_bytes,
    local_experts,
    lora_activation_bytes,
    moe_lora_bytes,
)
from configurator.memory.kv_dtype import DTYPE_BYTES
from configurator.memory.weights import (
    count_params,
    expert_bytes_per_param,
    expert_hidden,
    expert_intermediate,
    experts_per_token,
    mlp_gated,
    model_modalities,
    moe_layer,
    num_experts,
    shared_expert_intermediate,
    weight_bytes,
)
from configurator.model.spec import LayerGeometry, ModelSpec
from configurator.units import cdiv, human_bytes
from configurator.vllm.versions import behaviour

# vllm/config/lora.py MaxLoRARanks (0.25.0, 0.33.0): the ranks --max-lora-rank accepts
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
# Expert LoRA (vllm/lora/layers/fused_moe.py, FusedMoEWithLoRA): absent from the 0.11.0 wheel, present in
# 0.15.0, 0.20.0, 0.25.0 and 0.33.0 (the releases read); earlier releases wrap only the linear layers.
MOE_LORA_SINCE = "0.15.0"
# Models whose experts are stored fused (SupportsLoRA.is_3d_moe_weight = True) get FusedMoE3DWithLoRA:
# model_executor/models/gpt_oss.py, interns1_pro.py, qwen3_5.py, qwen3_vl_moe.py (0.25.0), and
# qwen3_omni_moe_thinker.py (0.33.0). vLLM's own class names, not model names.
MOE_3D_ARCHITECTURES = frozenset({
    "GptOssForCausalLM", "InternS1ProForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration", "Qwen3OmniMoeThinkerForConditionalGeneration",
})
# lora_extra_vocab_size (default 256): extra token rows per adapter in the embedding and lm_head slots,
# config/lora.py and lora/layers/vocal_parallel_embedding.py in 0.11.0; gone in 0.15.0.
EXTRA_VOCAB_UNTIL = "0.15.0"
LORA_EXTRA_VOCAB = 256
# Classes that declare embedding_modules {embed_tokens, lm_head} (model_executor/models/*.py, 0.33.0): their
# token embedding (VocabParallelEmbeddingWithLoRA) and lm_head (LogitsProcessorWithLoRA) get slots too.
EMBEDDING_LORA_ARCHITECTURES = frozenset({
    "ApertusForCausalLM", "DeciLMForCausalLM", "Exaone4ForCausalLM", "ExaoneForCausalLM", "ExaoneMoeForCausalLM",
    "FalconH1ForCausalLM", "GraniteForCausalLM", "GraniteMoeForCausalLM", "GraniteMoeHybridForCausalLM",
    "GraniteMoeSharedForCausalLM", "HyperCLOVAXForCausalLM", "JambaForCausalLM", "Lfm2ForCausalLM",
    "Lfm2MoeForCausalLM", "LlamaForCausalLM", "MiniCPMForCausalLM", "MixtralForCausalLM", "NemotronForCausalLM",
    "NemotronHForCausalLM", "PhiMoEForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "SolarForCausalLM",
})


@dataclass(frozen=True)
class LoraPlan:
    """--enable-lora resolved: the slot settings and the bytes they take on the tightest rank."""

    settings: LoraSettings
    max_cpu_loras: int
    weights_bytes: int  # adapter slots, allocated while loading (inside "Model loading took")
    activation_bytes: int  # LoRA kernel buffers in the profiling forward pass
    parts: tuple[tuple[str, int], ...]  # (module family, bytes) for the explanation


@dataclass(frozen=True)
class SpecPlan:
    """--speculative-config resolved (vllm/config/speculative.py SpeculativeConfig, 0.33.0)."""

    method: str  # ngram | suffix | eagle | eagle3 | mtp | draft_model | dflash | ...
    num_speculative_tokens: int
    draft: str | None  # the draft model id or path; None for ngram / suffix / MTP (the target's own layers)
    weights_bytes: int  # the drafter's weights on this rank, loaded inside "Model loading took"
    kv_layers: tuple[LayerGeometry, ...] = ()  # the drafter's attention layers: their KV joins the pool
    draft_model: ModelSpec | None = None  # the model those layers' KV shapes come from
    weights_note: str = ""
    warning: str | None = None  # the draft could not be loaded: its weights and KV are left out
    error: str | None = None  # vLLM refuses this method in this release
    unmodelled_keys: tuple[str, ...] = ()  # keys of the JSON vLLM reads and this estimate does not

    def line(self) -> str:
        k = self.num_speculative_tokens
        head = f"speculative decoding ({self.method}, {k} speculative token{'s' if k != 1 else ''}"
        head += f", draft {self.draft})" if self.draft else ")"
        if self.warning:
            return f"{head}: {self.warning}"
        if not self.weights_bytes and not self.kv_layers:
            return (f"{head}: no draft weights and no draft KV; each request may hold {k} lookahead slot"
                    f"{'s' if k != 1 else ''} and decode CUDA graphs are captured at multiples of {k + 1} tokens")
        return (f"{head}: draft weights {human_bytes(self.weights_bytes)} per GPU{self.weights_note}, counted in "
                f"'Model loading took'; the draft's {len(self.kv_layers)} attention layer"
                f"{'s keep' if len(self.kv_layers) != 1 else ' keeps'} KV in the same pool (more bytes per token); "
                f"decode CUDA graphs are captured at multiples of {k + 1} tokens")


@dataclass(frozen=True)
class ParallelPlan:
    """-dp / -pcp / --enable-expert-parallel / EPLB resolved for one GPU (fused_moe/config.py, 0.33.0)."""

    moe: MoEParallel
    num_experts: int  # routed experts per MoE layer (0: a dense model)
    local_experts: int  # experts on the most loaded GPU
    split: int  # how many ways each expert's intermediate size is split
    tp_expert_bytes: int  # the routed experts' bytes per GPU under plain TP (what the weights count assumed)
    weights_delta: int  # what DP / EP changes in 'Model loading took' (negative: fewer expert bytes)
    warning: str | None = None
    activation_bytes: int = 0  # the MoE layers' gathered tokens in the profiling run (DP x PCP > 1)
    gathered_tokens: int = 0

    def line(self) -> str:
        m = self.moe
        head = (f"data parallel {m.dp} (each DP rank is its own engine with its own KV pool, sized per GPU as "
                f"for one engine; {m.tp * m.pcp * m.dp} GPUs in all)") if m.dp > 1 else f"TP {m.tp}"
        if m.pcp > 1:
            head += f", prefill context parallel {m.pcp}"
        if not self.num_experts:
            return head + (": a dense model, the weights are as without DP" if m.dp > 1 else
                           ": a dense model, --enable-expert-parallel changes nothing")
        if m.use_ep:
            red = f" + {m.redundant_experts} redundant (EPLB)" if m.redundant_experts else ""
            how = (f"expert parallel over {m.devices} GPUs: {self.num_experts}{red} experts -> {self.local_experts} "
                   f"whole experts per GPU (expert_map_manager.py determine_expert_map)")
        else:
            how = (f"the MoE layers shard every expert over tp x dp = {m.devices} GPUs (fused_moe/config.py "
                   f"flatten_tp_across_dp_and_pcp), intermediate size / {self.split}")
        out = (f"{head}; {how}: routed-expert weights {human_bytes(self.tp_expert_bytes)} under TP {m.tp} -> "
               f"{human_bytes(self.tp_expert_bytes + self.weights_delta)} per GPU, counted in 'Model loading took'")
        if self.activation_bytes:
            out += (f"; the MoE layers all-gather every DP rank's tokens before the experts (all2all.py, the default "
                    f"backend), so the profiling run's experts see {self.gathered_tokens:,} tokens: "
                    f"+{human_bytes(self.activation_bytes)} of activation peak (gathered hidden states and fused-MoE "
                    f"workspaces; memory/features.py dp_moe_gather_bytes)")
        return out


def _eplb_redundant(flags: dict[str, Any]) -> int:
    raw = flags.get("eplb_config")
    if raw in (None, "", "{}"):
        return 0
    d = _spec_dict(raw, "--eplb-config")
    try:
        return max(int(d.get("num_redundant_experts") or 0), 0)
    except (TypeError, ValueError):
        raise InputError(f"--eplb-config: num_redundant_experts must be an integer, got "
                         f"{d.get('num_redundant_experts')!r}") from None


def plan_parallel(model: ModelSpec, flags: dict[str, Any], *, tp: int, dtype: str, layers: range,
                  base_weights_bytes: int = 0, num_tokens: int = 0, version: str = "") -> ParallelPlan | None:
    """-dp / -pcp / --enable-expert-parallel -> how the routed experts land on one GPU (None when none is set).

    Per GPU, a DP rank is a whole engine: attention, dense layers, embeddings and the KV pool are as for DP 1
    (vllm/v1/engine/core.py DPEngineCoreProc, one per rank). Only FusedMoE layers see the DP ranks:
    FusedMoEParallelConfig.make (model_executor/layers/fused_moe/config.py, 0.33.0) flattens TP x PCP x DP into
    the MoE's tp_size, and with --enable-expert-parallel makes that the ep_size with tp_size 1."""
    dp = _int(flags, "data_parallel_size", 1)
    pcp = _int(flags, "prefill_context_parallel_size", 1)
    ep = _truthy(flags.get("enable_expert_parallel", False))
    eplb = _truthy(flags.get("enable_eplb", False))
    redundant = _eplb_redundant(flags)
    if dp <= 1 and pcp <= 1 and not ep and not eplb and not redundant:
        return None
    # config/parallel.py ParallelConfig.__post_init__ (0.33.0): EPLB needs EP; redundant experts need EPLB
    if eplb and not ep:
        raise InputError("enable_expert_parallel must be True to use EPLB.")
    if redundant and not eplb:
        raise InputError(f"num_redundant_experts is set to {redundant} but EPLB is not enabled. Either enable "
                         f"EPLB or unset num_redundant_experts.")
    moe = MoEParallel(tp=tp, dp=dp, pcp=pcp, expert_parallel=ep, redundant_experts=redundant if eplb else 0)
    c = model.text_config
    n = num_experts(c)
    if not n:
        return ParallelPlan(moe=moe, num_experts=0, local_experts=0, split=1, tp_expert_bytes=0, weights_delta=0)
    local, split = local_experts(n, moe)
    p = count_params(model)
    params = sum(p.per_layer_experts[i] for i in layers if i < len(p.per_layer_experts))
    per_param = expert_bytes_per_param(model, flags.get("quantization"), dtype)  # memory/weights.py's rule
    base = weight_bytes(model, tp=tp, pp=1, quantization=flags.get("quantization"), dtype=dtype)
    scale = 1.0
    if base.source == "checkpoint":
        # the checkpoint's size replaced the count: scale the experts' count the same way
        cfg = weight_bytes(replace(model, weights_bytes=None), tp=tp, pp=1, quantization=flags.get("quantization"),
                           dtype=dtype)
        scale = base.total_bytes / max(cfg.total_bytes, 1)
    tp_bytes = int(params * per_param * scale / max(tp, 1))
    new = int(params * per_param * scale * expert_share(n, moe))
    delta = new - tp_bytes
    if base_weights_bytes:
        delta = max(delta, -base_weights_bytes)
    warning = None
    act = 0
    ranks = dp * pcp
    if ranks > 1 and num_tokens and flags.get("all2all_backend") in (None, "", "naive", "allgather_reducescatter"):
        # the default dispatch all-gathers every DP rank's tokens before the experts: NaiveAll2AllManager (0.10.1),
        # AgRsAll2AllManager (allgather_reducescatter, 0.25.0 / 0.33.0), distributed/device_communicators/all2all.py
        top_k = experts_per_token(c)
        inter = expert_intermediate(c) or model.intermediate_size
        persistent = behaviour(version).moe_workspace_persistent if version else True
        act = dp_moe_gather_bytes(num_tokens, ranks, top_k=top_k, moe_intermediate_size=inter,
                                  hidden_size=model.hidden_size, moe_tp=1 if moe.use_ep else split,
                                  persistent_workspace=persistent, act_bytes=DTYPE_BYTES.get(dtype, 2))
    # another backend (DeepEP-style buffers) is named by unmodelled_flags (UNMODELLED_FEATURE_FLAGS)
    return ParallelPlan(moe=moe, num_experts=n, local_experts=local, split=split, tp_expert_bytes=tp_bytes,
                        weights_delta=delta, warning=warning, activation_bytes=act,
                        gathered_tokens=ranks * num_tokens if act else 0)


# vllm/config/multimodal.py (0.33.0): a modality --limit-mm-per-prompt leaves out keeps count 999
MM_DEFAULT_LIMIT = 999


@dataclass(frozen=True)
class MultimodalPlan:
    """The multimodal encoder's share of the profiling run (gpu_model_runner.py profile_run, 0.33.0)."""

    modalities: tuple[str, ...]  # the model's non-text modalities still enabled (limit > 0)
    tokens_per_item: int  # the largest item's tokens when the config gives them (0: unknown)
    items: int
    tokens: int
    activation_bytes: int  # encoder outputs held in encoder_cache during the decoder's dummy pass
    skipped: str = ""  # why nothing is profiled (text-only limits, --skip-mm-profiling)
    warning: str | None = None

    def line(self) -> str:
        if self.skipped:
            return f"multimodal encoder: {self.skipped}; the profiling run adds nothing for it"
        per = (f"{self.items} dummy item{'s' if self.items != 1 else ''} of {self.tokens_per_item:,} tokens"
               if self.tokens_per_item else "items of unknown size filling the encoder budget")
        return (f"multimodal encoder budget ({', '.join(self.modalities)}): the profiling run encodes {per} "
                f"(encoder_budget.py, compute_mm_encoder_budget) and keeps their {self.tokens:,} output tokens "
                f"in the encoder cache while the decoder's dummy pass runs: +{human_bytes(self.activation_bytes)} "
                f"activation peak; --limit-mm-per-prompt '{{\"image\":0}}' (every modality 0) removes it")


def flag_mm_limits(flags: dict[str, Any]) -> dict[str, int]:
    """The per-modality limits the flags set: --limit-mm-per-prompt, or 0 for every modality with
    --language-model-only (vllm==0.33.0 config/multimodal.py MultiModalConfig.get_limit_per_prompt returns 0
    for every modality when language_model_only is set: "Equivalent to setting --limit-mm-per-prompt to 0 for
    every modality")."""
    if _truthy(flags.get("language_model_only", False)):
        return {"image": 0, "video": 0, "audio": 0}
    return mm_limits(flags.get("limit_mm_per_prompt"))


def mm_limits(raw: Any) -> dict[str, int]:
    """--limit-mm-per-prompt: JSON {"image": 2, "video": {"count": 1, ...}} (0.33.0 config/multimodal.py, the
    legacy count-only form too) or the old image=2,video=1 form."""
    if raw in (None, ""):
        return {}
    if isinstance(raw, dict):
        d = raw
    else:
        text = str(raw).strip()
        try:
            d = json.loads(text)
        except ValueError:
            try:
                d = {k.strip(): int(v) for k, v in (x.split("=", 1) for x in text.split(",") if x.strip())}
            except ValueError:
                raise InputError(f"--limit-mm-per-prompt: expected a JSON object, got {text[:60]!r}") from None
    if not isinstance(d, dict):
        raise InputError(f"--limit-mm-per-prompt: expected a JSON object, got {str(raw)[:60]!r}")
    out = {}
    for k, v in d.items():
        n = v.get("count", MM_DEFAULT_LIMIT) if isinstance(v, dict) else v
        try:
            out[str(k)] = int(n)
        except (TypeError, ValueError):
            raise InputError(f"--limit-mm-per-prompt: {k}: expected a count, got {n!r}") from None
    return out


def _tokens_per_image(model: ModelSpec) -> int:
    """The tokens one image becomes, when the config states it: mm_tokens_per_image (Gemma 3),
    vision_config.default_output_length (Gemma 4), image_seq_length; else 0 (the processor decides)."""
    c = model.full_config
    vision = c.get("vision_config") if isinstance(c.get("vision_config"), dict) else {}
    for v in (c.get("mm_tokens_per_image"), vision.get("default_output_length"), c.get("image_seq_length")):
        if isinstance(v, int) and v > 0:
            return v
    return 0


def plan_multimodal(model: ModelSpec, flags: dict[str, Any], *, dtype: str, num_tokens: int, max_num_seqs: int,
                    max_model_len: int, chunked: bool = True) -> MultimodalPlan | None:
    """The encoder's dummy batch in the profiling run (None for a text-only model)."""
    mods = model_modalities(model)
    if not mods:
        return None
    limits = flag_mm_limits(flags)
    on = tuple(m for m in mods if limits.get(m, MM_DEFAULT_LIMIT) > 0)
    if not on:
        return MultimodalPlan(modalities=(), tokens_per_item=0, items=0, tokens=0, activation_bytes=0,
                              skipped="every modality limited to 0 (text-only), so compute_mm_encoder_budget "
                                      "returns 0 and no encoder cache is initialized")
    if _truthy(flags.get("skip_mm_profiling", False)):
        return MultimodalPlan(modalities=on, tokens_per_item=0, items=0, tokens=0, activation_bytes=0,
                              skipped="--skip-mm-profiling: the encoder is not profiled (its memory at serving "
                                      "time then comes out of the KV headroom)")
    t = _tokens_per_image(model) if on == ("image",) else 0
    limit = min(limits.get(m, MM_DEFAULT_LIMIT) for m in on)
    p = encoder_profile(t, max_num_batched_tokens=num_tokens, max_num_seqs=max_num_seqs, max_model_len=max_model_len,
                        limit=limit, chunked_prefill=chunked)
    act = encoder_outputs_bytes(p, model.hidden_size, DTYPE_BYTES.get(dtype, 2))
    warn = ("the multimodal encoder's own transient peak in the profiling run (the vision / audio tower run on "
            f"{p.tokens:,} tokens of dummy input) depends on the tower and processor and is not modelled; only "
            "the encoder outputs it leaves in the encoder cache are counted")
    if flags.get("mm_processor_kwargs"):
        warn += "; --mm-processor-kwargs may change the tokens per item"
    return MultimodalPlan(modalities=on, tokens_per_item=t, items=p.items, tokens=p.tokens, activation_bytes=act,
                          warning=warn)


@dataclass(frozen=True)
class FeatureMemory:
    """What the optional features add, per GPU on the tightest rank, and how it is explained."""

    lora: LoraPlan | None = None
    spec: SpecPlan | None = None
    cpu_offload_bytes: int = 0  # decoder-layer parameters kept in host memory (--cpu-offload-gb)
    cpu_offload_requested: float = 0.0
    parallel: ParallelPlan | None = None  # -dp / --enable-expert-parallel: the routed experts per GPU
    mm: MultimodalPlan | None = None  # the multimodal encoder's dummy batch in the profiling run
    # a KV layout whose per-request reservation the tool does not reproduce: its 'fits' is not a promise
    unmodelled_layout: str | None = None
    unmodelled_flags: tuple[str, ...] = ()  # memory-changing options given and not modelled, with what they do
    # a model-based drafter's persistent input buffers (memory/features.py drafter_buffer_bytes): allocated before
    # profiling, so outside "Model loading took" and the profiled peak; they count where vLLM subtracts the
    # free-memory drop since start-up (the 'consumed' accounting, 0.27+)
    drafter_buffers_bytes: int = 0
    # buffers the model class allocates while loading, sized by the scheduler (inside "Model loading took")
    model_buffers_bytes: int = 0
    model_buffers_line: str = ""

    @property
    def weights_bytes(self) -> int:
        """What the features add to (LoRA, draft) or take from (CPU offload) 'Model loading took'."""
        return (self.lora.weights_bytes if self.lora else 0) + (self.spec.weights_bytes if self.spec else 0) \
            - self.cpu_offload_bytes + (self.parallel.weights_delta if self.parallel else 0) + self.model_buffers_bytes

    @property
    def activation_bytes(self) -> int:
        return (self.lora.activation_bytes if self.lora else 0) + (self.mm.activation_bytes if self.mm else 0) \
            + (self.parallel.activation_bytes if self.parallel else 0)

    def warnings(self) -> list[str]:
        """What a modelled feature still leaves out, for the result's warnings."""
        out = [f"not-modelled: {p.warning}" for p in (self.parallel, self.mm) if p is not None and p.warning]
        if self.spec is not None and self.spec.unmodelled_keys:
            out.append(f"not-modelled: --speculative-config {', '.join(self.spec.unmodelled_keys)}: vLLM reads "
                       f"{'these keys' if len(self.spec.unmodelled_keys) > 1 else 'this key'} (vllm/config/"
                       f"speculative.py SpeculativeConfig) and may allocate differently; the estimate ignores "
                       f"{'them' if len(self.spec.unmodelled_keys) > 1 else 'it'}")
        out += [f"not-modelled: {f}" for f in self.unmodelled_flags]
        return out + ([f"not-modelled: {self.unmodelled_layout}"] if self.unmodelled_layout else [])

    def lines(self) -> list[str]:
        """One line per modelled feature, for the derivation."""
        out = []
        if self.parallel:
            out.append(self.parallel.line())
        if self.lora:
            s = self.lora.settings
            parts = ", ".join(f"{name} {human_bytes(b)}" for name, b in self.lora.parts if b)
            out.append(f"LoRA buffers: {s.max_loras} adapters x rank {s.max_lora_rank} x {s.dtype_bytes} B "
                       f"preallocated on every LoRA-capable layer ({parts}) = "
                       f"{human_bytes(self.lora.weights_bytes)} per GPU, "
                       f"counted in 'Model loading took'; the profiling run's LoRA kernel buffers add "
                       f"{human_bytes(self.lora.activation_bytes)}; --max-cpu-loras {self.lora.max_cpu_loras} "
                       f"is host memory only")
        if self.spec:
            out.append(self.spec.line())
            if self.drafter_buffers_bytes:
                out.append(f"drafter input buffers: {human_bytes(self.drafter_buffers_bytes)} per GPU (max_num_batched_"
                           f"tokens x the draft's hidden size, twice, plus ids and positions: llm_base_proposer.py), "
                           f"allocated before profiling, so outside 'Model loading took' and the profiled peak; vLLM "
                           f"takes them from the KV pool only where it subtracts the free-memory drop (0.27+)")
        if self.mm:
            out.append(self.mm.line())
        if self.model_buffers_line:
            out.append(self.model_buffers_line)
        if self.cpu_offload_bytes:
            out.append(f"--cpu-offload-gb {self.cpu_offload_requested:g}: {human_bytes(self.cpu_offload_bytes)} of "
                       f"decoder-layer parameters stay in host memory, read over PCIe each step (UVA), so the GPU "
                       f"weights shrink by that much (whole parameters, until the budget is reached)")
        return out


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".")[:3] if x.isdigit())


def _truthy(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    return v is not None and str(v).strip().lower() in ("1", "true", "yes", "on", "")


def _int(f: dict[str, Any], key: str, default: int) -> int:
    v = f.get(key)
    if v is None:
        return default
    try:
        return int(v)
    except (TypeError, ValueError):
        raise InputError(f"--{key.replace('_', '-')}: expected an integer, got {v!r}") from None


def is_moe_layer(c: dict, i: int) -> bool:
    """Whether decoder layer i has routed experts (the same layer walk as the weights count)."""
    if not num_experts(c):
        return False
    pattern = c.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return i < len(pattern) and pattern[i] == "E"
    return moe_layer(c, i)


def _mlp(h: int, inter: int, gated: bool) -> list[Linear]:
    """gate_up_proj (MergedColumnParallelLinear, 2 slices) or up_proj, then down_proj (row)."""
    return [Linear(h, (inter, inter) if gated else (inter,), "column"), Linear(inter, (h,), "row")]


def lora_modules(model: ModelSpec, layers: range, moe_lora: bool, tp: int, ep: int = 1,
                 moe: MoEParallel | None = None) -> dict[str, list]:
    """The LoRA-wrapped modules of the given decoder layers, by family: attention / mixer, dense MLP,
    MoE router and shared experts (linear), MoE routed experts, embeddings. Only the language model:
    vision / audio towers get LoRA only with enable_tower_connector_lora (off by default). `ep` > 1 (expert
    parallelism over tp x dp ranks): each rank holds E / ep whole experts (fused_moe.py local_num_experts; the
    MoE tp_size collapses to 1, so the intermediate size is not split). `moe` (the DP / PCP / EP layout, which
    FusedMoEWithLoRA takes from the base layer's moe_parallel_config, lora/layers/fused_moe.py 0.33.0) overrides
    `ep`: without EP the expert intermediate size is split over tp x pcp x dp."""
    c, h = model.text_config, model.hidden_size
    heads = model.num_attention_heads
    gated = mlp_gated(c)
    by_index: dict[int, list] = {}
    for g in model.layers:
        by_index.setdefault(g.index, []).append(g)
    fam: dict[str, list] = {"attention": [], "mlp": [], "experts": [], "embeddings": []}
    experts = num_experts(c)
    moe_inter = expert_intermediate(c) or model.intermediate_size
    eh = expert_hidden(c, h)  # a latent MoE's experts work at the latent width
    shared_inter = shared_expert_intermediate(c)
    for i in layers:
        for g in by_index.get(i, [])[:1]:
            if g.kind == "mamba" and g.mamba is not None:
                m = g.mamba
                if m.variant == "gdn":
                    qk, v = m.num_k_heads * m.k_head_dim, m.num_heads * m.head_dim
                    # qwen3_5.py packed_modules_mapping (0.33.0): in_proj_qkvz = [in_proj_qkv, in_proj_z],
                    # in_proj_ba = [in_proj_b, in_proj_a], then out_proj
                    fam["attention"] += [Linear(h, (2 * qk + v, v), "column"), Linear(h, (m.num_heads,) * 2, "column"),
                                         Linear(v, (h,), "row")]
                elif m.variant in ("mamba1", "mamba2"):
                    inner = m.intermediate_size
                    fam["attention"] += [Linear(h, (inner, inner), "column"), Linear(inner, (h,), "row")]
            elif model.is_mla:
                rope = int(c.get("qk_rope_head_dim") or 64)
                nope = int(c.get("qk_nope_head_dim") or 128)
                vd = int(c.get("v_head_dim") or 128)
                kv_rank = int(c.get("kv_lora_rank") or 512)
                q_rank = int(c.get("q_lora_rank") or 0)
                mods = [Linear(h, (kv_rank + rope,), "replicated"),
                        Linear(kv_rank, (heads * (nope + vd),), "column"), Linear(heads * vd, (h,), "row")]
                mods += [Linear(h, (q_rank,), "replicated"), Linear(q_rank, (heads * (nope + rope),), "column")] \
                    if q_rank else [Linear(h, (heads * (nope + rope),), "column")]
                fam["attention"] += mods
            else:
                kv = max(g.num_kv_heads, tp)  # fewer KV heads than TP ranks: one (replicated) head per rank
                hv = g.head_size_v or g.head_size
                fam["attention"] += [Linear(h, (heads * g.head_size, kv * g.head_size, kv * hv), "column"),
                                     Linear(heads * hv, (h,), "row")]
        if experts and is_moe_layer(c, i):
            fam["mlp"].append(Linear(h, (experts,), "replicated"))  # the router gate
            if shared_inter:
                fam["mlp"] += _mlp(h, shared_inter, gated)
            if c.get("enable_moe_block") or str(c.get("model_type", "")).startswith("gemma4"):
                fam["mlp"] += _mlp(h, model.intermediate_size, gated)  # Gemma 4: a dense MLP beside the experts
            if moe_lora:
                if moe is not None:
                    n_local, split = local_experts(experts, moe)
                    fam["experts"].append(MoEExperts(n_local, eh, cdiv(moe_inter, split), gated))
                else:
                    fam["experts"].append(MoEExperts(cdiv(experts, ep), eh, moe_inter, gated) if ep > 1
                                          else MoEExperts(experts, eh, cdiv(moe_inter, tp), gated))
        else:
            fam["mlp"] += _mlp(h, model.intermediate_size, gated)
    return fam


def plan_lora(model: ModelSpec, flags: dict[str, Any], *, version: str, dtype: str, tp: int, layers: range,
              num_tokens: int) -> LoraPlan | None:
    """--enable-lora and its options -> the adapter slots' bytes on one rank (None without --enable-lora)."""
    if not _truthy(flags.get("enable_lora", False)):
        return None
    rank = _int(flags, "max_lora_rank", 16)
    if rank not in LORA_RANKS:
        raise InputError(f"--max-lora-rank {rank} is not one of {', '.join(map(str, LORA_RANKS))}")
    loras = _int(flags, "max_loras", 1)
    if loras < 1:
        raise InputError(f"--max-loras must be at least 1, got {loras}")
    cpu = _int(flags, "max_cpu_loras", loras)
    if cpu < loras:
        raise InputError(f"max_cpu_loras ({cpu}) must be >= max_loras ({loras}).")
    ld = str(flags.get("lora_dtype") or "auto").lower()
    if ld not in ("auto", "float16", "bfloat16", "half", "bf16", "fp16"):
        raise InputError(f"--lora-dtype must be auto, float16 or bfloat16, got {ld}")
    dtype_bytes = DTYPE_BYTES.get(dtype, 2) if ld == "auto" else 2
    c = model.text_config
    is_moe = bool(num_experts(c))
    moe_lora = is_moe and _key(version) >= _key(MOE_LORA_SINCE)
    s = LoraSettings(max_loras=loras, max_lora_rank=rank, dtype_bytes=dtype_bytes,
                     fully_sharded=_truthy(flags.get("fully_sharded_loras", False)), tp=tp, moe_lora=moe_lora,
                     moe_3d=any(a in MOE_3D_ARCHITECTURES for a in model.architectures))
    moe = MoEParallel(tp=tp, dp=_int(flags, "data_parallel_size", 1),
                      pcp=_int(flags, "prefill_context_parallel_size", 1),
                      expert_parallel=_truthy(flags.get("enable_expert_parallel", False)),
                      redundant_experts=_eplb_redundant(flags) if _truthy(flags.get("enable_eplb", False)) else 0)
    fam = lora_modules(model, layers, moe_lora, tp, moe=moe)
    if any(a in EMBEDDING_LORA_ARCHITECTURES for a in model.architectures):
        # VocabParallelEmbeddingWithLoRA (vocab x rank + H x rank) and LogitsProcessorWithLoRA (rank x H + vocab x rank)
        extra = LORA_EXTRA_VOCAB if _key(version) < _key(EXTRA_VOCAB_UNTIL) else 0
        fam["embeddings"] = [Linear(model.vocab_size + extra, (h := model.hidden_size,), "replicated"),
                             Linear(h, (model.vocab_size,), "replicated")]

    parts = tuple((name, sum(moe_lora_bytes(m, s) if isinstance(m, MoEExperts) else linear_lora_bytes(m, s)
                             for m in mods)) for name, mods in fam.items())
    if any(a in EMBEDDING_LORA_ARCHITECTURES for a in model.architectures) and \
            _key(version) < _key(EXTRA_VOCAB_UNTIL):
        # embeddings_tensors (max_loras, extra vocab, H) in the model dtype, in the embedding and the lm_head slots
        parts += (("extra vocab", 2 * loras * LORA_EXTRA_VOCAB * model.hidden_size * DTYPE_BYTES.get(dtype, 2)),)
    total = sum(b for _, b in parts)
    top_k = experts_per_token(c)
    act = lora_activation_bytes(num_tokens, s, top_k, DTYPE_BYTES.get(dtype, 2))
    return LoraPlan(settings=s, max_cpu_loras=cpu, weights_bytes=total, activation_bytes=act, parts=parts)


def cpu_offload_bytes(requested_gib: float, base_weights_bytes: int) -> int:
    """--cpu-offload-gb: vLLM moves whole decoder-layer parameters to host memory until the total reaches the
    budget (model_executor/offloader/uva.py UVAOffloader._maybe_offload_to_cpu, 0.33.0; models/utils.py
    maybe_offload_to_cpu before): at most the weights the rank holds."""
    return min(int(requested_gib * (1 << 30)), base_weights_bytes)


def plan_features(model: ModelSpec, flags: dict[str, Any], *, version: str, dtype: str, tp: int, layers: range,
                  num_tokens: int, spec: SpecPlan | None = None, base_weights_bytes: int = 0, max_num_seqs: int = 256,
                  max_model_len: int = 0, chunked: bool = True, first_stage: bool = True) -> FeatureMemory:
    """Every modelled feature for one rank holding `layers` (`spec` was resolved with the inputs). The encoder
    budget applies on the first pipeline stage, which runs the encoder (`first_stage`)."""
    gib = float(flags.get("cpu_offload_gb") or 0)
    par = plan_parallel(model, flags, tp=tp, dtype=dtype, layers=layers, base_weights_bytes=base_weights_bytes,
                        num_tokens=num_tokens, version=version)
    base = base_weights_bytes + (par.weights_delta if par else 0)
    buf, buf_line = model_load_buffers(model, num_tokens, dtype)  # the last PP stage's (the rank planned here)
    return FeatureMemory(lora=plan_lora(model, flags, version=version, dtype=dtype, tp=tp, layers=layers,
                                        num_tokens=num_tokens), spec=spec, parallel=par,
                         mm=plan_multimodal(model, flags, dtype=dtype, num_tokens=num_tokens, max_num_seqs=max_num_seqs,
                                            max_model_len=max_model_len or num_tokens, chunked=chunked)
                         if first_stage else None,
                         cpu_offload_bytes=cpu_offload_bytes(gib, base), cpu_offload_requested=gib,
                         unmodelled_layout=unmodelled_layout(model, flags, max_model_len=max_model_len or num_tokens,
                                                             num_tokens=num_tokens),
                         unmodelled_flags=unmodelled_flags(flags), model_buffers_bytes=buf, model_buffers_line=buf_line,
                         drafter_buffers_bytes=spec_buffer_bytes(spec, num_tokens, dtype))


# drafters built on SpecDecodeBaseProposer (v1/spec_decode/eagle.py, draft_model.py, dflash.py, 0.25.0)
PROPOSER_METHODS = frozenset({"eagle", "eagle3", "mtp", "draft_model", "dflash"})


def spec_buffer_bytes(spec: SpecPlan | None, num_tokens: int, dtype: str) -> int:
    """The drafter's persistent input buffers for max_num_batched_tokens `num_tokens` (0 without a model-based
    drafter, or when the draft could not be loaded)."""
    if spec is None or spec.method not in PROPOSER_METHODS or spec.draft_model is None:
        return 0
    dm = spec.draft_model
    c = dm.text_config
    rope = c.get("rope_parameters") if isinstance(c.get("rope_parameters"), dict) else {}
    mrope = "mrope_section" in rope or "mrope_section" in (c.get("rope_scaling") or {})
    mult = int(c.get("hc_mult") or 1) if isinstance(c.get("compress_ratios"), list) else 1
    return drafter_buffer_bytes(num_tokens, dm.hidden_size, dm.hidden_size, DTYPE_BYTES.get(dtype, 2), mrope=mrope,
                                hidden_mult=mult)


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


def unmodelled_flags(flags: dict[str, Any]) -> tuple[str, ...]:
    """The memory-changing feature options given with a value other than the modelled one, as warning text."""
    out = []
    for key, (neutral, what) in UNMODELLED_FEATURE_FLAGS.items():
        v = flags.get(key)
        quiet = neutral if isinstance(neutral, tuple) else (neutral,)
        if v is None or any(v == q or str(v).strip().lower() == str(q).lower() for q in quiet):
            continue
        if isinstance(neutral, bool) and not _truthy(v):
            continue
        out.append(f"{what} (given: {v})")
    return tuple(out)


def model_load_buffers(model: ModelSpec, num_tokens: int, dtype: str) -> tuple[int, str]:
    """Buffers a model class allocates in __init__, so inside "Model loading took", sized by the scheduler: a
    compressed-sparse-attention model with hyper-connections (config compress_ratios and hc_mult) keeps the
    pre-hc_head residual stream for an MTP draft, (max_num_batched_tokens, hc_mult x H) in the model dtype, on
    the last PP rank, with or without speculative decoding (models/deepseek_v4/nvidia/model.py
    DeepseekV4Model._mtp_hidden_buffer, 0.25.0)."""
    c = model.text_config
    hc = int(c.get("hc_mult") or 0)
    if not (hc and isinstance(c.get("compress_ratios"), list) and num_tokens):
        return 0, ""
    b = num_tokens * hc * model.hidden_size * DTYPE_BYTES.get(dtype, 2)
    return b, (f"residual-stream buffer for an MTP draft: {num_tokens:,} tokens x {hc} x {model.hidden_size:,} x "
               f"{DTYPE_BYTES.get(dtype, 2)} B = {human_bytes(b)}, allocated while the model loads (DeepseekV4Model "
               f"_mtp_hidden_buffer), so counted in 'Model loading took'")


def unmodelled_layout(model: ModelSpec, flags: dict[str, Any] | None = None, *, max_model_len: int = 0,
                      num_tokens: int = 0) -> str | None:
    """Why the KV layout is only approximated, or None. Compressed sparse attention (config compress_ratios with
    o_lora_rank, vllm/models/deepseek_v4/, 0.25.0): every KV group is a UniformTypeKVCacheSpecs and vLLM's fit
    check reserves, per group, its pages times the global number of layer tuples times a whole tuple's page
    bytes (v1/core/kv_cache_utils.py _max_memory_usage_bytes_from_groups, 'only DeepseekV4 for now'); the
    compressors keep fp32 state caches (compressor.py CompressorStateCache) and the sparse-MLA metadata
    builders max_model_len-wide buffers (sparse_mla.py). The layout stages do not reproduce that; the warning
    gives what 0.25.0's check asks for one request (memory/features.py csa_fit_check_bytes)."""
    c = model.text_config
    ratios = c.get("compress_ratios")
    if not (isinstance(ratios, list) and c.get("o_lora_rank")):
        return None
    text = ("compressed sparse attention (compress_ratios): vLLM pads every KV group to a shared layer-tuple "
            "layout and reserves whole tuples per group in its fit check (v1/core/kv_cache_utils.py "
            "_max_memory_usage_bytes_from_groups), keeps fp32 compressor states and max_model_len-wide "
            "sparse-attention buffers; the layout shown does not reproduce that")
    f = flags or {}
    if max_model_len and num_tokens:
        fp8 = str(f.get("kv_cache_dtype") or "auto").startswith("fp8")
        need = csa_fit_check_bytes([int(r or 0) for r in ratios], num_layers=model.num_hidden_layers,
                                   sliding_window=int(c.get("sliding_window") or 128),
                                   head_dim=int(c.get("head_dim") or 512),
                                   index_head_dim=int(c.get("index_head_dim") or 128), max_model_len=max_model_len,
                                   max_num_batched_tokens=num_tokens, block_size=int(f.get("block_size") or 256),
                                   fp8_ds_mla=fp8)
        text += (f"; by vLLM 0.25.0's rule its start-up check asks {human_bytes(need)} of KV for one request of "
                 f"{max_model_len:,} tokens (max_num_batched_tokens {num_tokens:,}; "
                 f"{'fp8_ds_mla rows' if fp8 else 'bf16 rows'}), which the verdict here does not use: a 'fits' "
                 f"is at risk")
    else:
        text += "; a 'fits' here is at risk"
    return text


# vllm/config/speculative.py MTPModelTypes (0.33.0): a draft config of one of these types is the target's
# own multi-token-prediction layers; every *_mtp type maps to method "mtp".
# A separate draft model (method "draft_model"): the V1 engine refuses it in 0.10.1.1 and 0.11.0
# (engine/arg_utils.py _is_v1_supported_oracle raises NotImplementedError); 0.15.0 has
# v1/spec_decode/draft_model.py. 0.12-0.14 were not read; they are taken to behave like 0.15.
DRAFT_MODEL_SINCE = "0.12.0"
DRAFT_MODEL_REFUSED = ("Draft model speculative decoding is not supported yet. Please consider using other "
                       "speculative decoding methods such as ngram, medusa, eagle, or mtp.")
NO_WEIGHT_METHODS = frozenset({"ngram", "ngram_gpu", "suffix", "extract_hidden_states", "custom_class"})


def _spec_dict(raw: Any, flag: str = "--speculative-config") -> dict:
    """A JSON-object option (--speculative-config, --eplb-config) as vLLM takes it (argparse type json.loads)."""
    if isinstance(raw, dict):
        return raw
    try:
        d = json.loads(str(raw))
    except ValueError:
        raise InputError(f"{flag}: expected a JSON object, got {str(raw)[:60]!r}") from None
    if not isinstance(d, dict):
        raise InputError(f"{flag}: expected a JSON object, got {str(raw)[:60]!r}")
    return d


def _mtp_layers(model: ModelSpec) -> int:
    """How many MTP layers the checkpoint has: num_nextn_predict_layers (DeepSeek, GLM, MiMo) or
    mtp_num_hidden_layers (Qwen3-Next / Qwen3.5), as vllm/config/speculative.py reads n_predict."""
    c = model.text_config
    return int(c.get("num_nextn_predict_layers") or c.get("mtp_num_hidden_layers") or 0)


def _last_attention_layer(model: ModelSpec) -> LayerGeometry | None:
    attn = [g for g in model.layers if g.kind in ("full", "mla")] or [g for g in model.layers if g.kind != "mamba"]
    return attn[-1] if attn else None


# SpeculativeConfig fields (vllm/config/speculative.py, 0.25.0 / 0.33.0) this estimate reads, and those that
# allocate nothing on the GPU: the checkpoint's revision, the n-gram window (proposed on the CPU), suffix
# decoding's tree (arctic-inference, host memory), synthetic acceptance (benchmarking). Any other key is named.
SPEC_KEYS_READ = frozenset({"method", "model", "num_speculative_tokens", "draft_tensor_parallel_size",
                            "quantization"})
SPEC_KEYS_NO_GPU = frozenset({"revision", "code_revision", "prompt_lookup_max", "prompt_lookup_min",
                              "suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
                              "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob",
                              "synthetic_acceptance_rates", "synthetic_acceptance_length"})


def plan_speculative(model: ModelSpec, flags: dict[str, Any], *, tp: int, dtype: str, quantization: str | None,
                     resolve: Any, version: str = "0.33.0") -> SpecPlan | None:
    """--speculative-config -> the drafter (None without it). `resolve` loads a draft model by id or path
    (configurator.model.resolve.resolve_model); a draft it cannot load raises InputError. Keys the estimate
    does not read (and that may change GPU memory) are kept in `unmodelled_keys`, to be named."""
    raw = flags.get("speculative_config")
    if raw in (None, "", "{}"):
        return None
    d = _spec_dict(raw)
    if not d:
        return None
    plan = _plan_speculative(model, d, tp=tp, dtype=dtype, quantization=quantization, resolve=resolve,
                             version=version)
    unread = tuple(sorted(str(k) for k in d if k not in SPEC_KEYS_READ | SPEC_KEYS_NO_GPU))
    return replace(plan, unmodelled_keys=unread) if unread else plan


def _plan_speculative(model: ModelSpec, d: dict, *, tp: int, dtype: str, quantization: str | None, resolve: Any,
                      version: str) -> SpecPlan:
    method = str(d.get("method") or "").lower() or None
    draft = d.get("model")
    k = d.get("num_speculative_tokens")
    # SpeculativeConfig.__post_init__ (0.33.0): no method -> "ngram" for model "ngram", else by the draft's name
    # ("eagle-" -> eagle, "eagle3" -> eagle3) or config model_type (*_mtp -> mtp), else "draft_model"
    if method is None and draft in ("ngram", "[ngram]"):
        method = "ngram"
    if method and method.endswith("_mtp"):
        method = "mtp"  # deprecated spellings, "replaced with mtp"
    if method in NO_WEIGHT_METHODS:
        if not isinstance(k, int) or k < 1:
            raise InputError(f"--speculative-config: {method} needs num_speculative_tokens >= 1")
        return SpecPlan(method=method, num_speculative_tokens=k, draft=None, weights_bytes=0)
    if method == "mtp" or (method is None and draft is None):
        n = _mtp_layers(model)
        if n == 0:
            raise InputError("--speculative-config: method mtp needs a checkpoint with MTP layers "
                             "(num_nextn_predict_layers / mtp_num_hidden_layers); this config declares none")
        k = int(k or n)
        p = count_params(model)
        w = weight_bytes(model, tp=tp, pp=1, quantization=quantization, dtype=dtype)
        layer = max(p.per_layer_linear) + max(p.per_layer_other) + 2 * model.hidden_size * model.hidden_size
        per_param = w.total_bytes / max(p.total, 1)
        if w.source == "checkpoint":
            # the checkpoint's tensor size already holds its MTP layers (e.g. DeepSeek-V3 model.layers.61)
            mtp_bytes, note = 0, " (already inside the checkpoint size the weights come from)"
        else:
            mtp_bytes, note = int(n * layer * per_param / tp), f" ({n} MTP layer{'s' if n > 1 else ''} like the " \
                                                              f"target's last, plus eh_proj 2H x H; embeddings and " \
                                                              f"lm_head shared)"
        last = _last_attention_layer(model)
        layers = tuple(replace(last, index=model.num_hidden_layers + i) for i in range(n)) if last else ()
        return SpecPlan(method="mtp", num_speculative_tokens=k, draft=None, weights_bytes=mtp_bytes,
                        kv_layers=layers, draft_model=model, weights_note=note)
    if not draft:
        raise InputError(f"--speculative-config: method {method} needs a draft \"model\"")
    if not isinstance(k, int) or k < 1:
        raise InputError("--speculative-config: num_speculative_tokens must be a positive integer")
    try:
        dm = resolve(str(draft))
    except NotFoundError as e:
        return SpecPlan(method=method or "draft_model", num_speculative_tokens=k, draft=str(draft), weights_bytes=0,
                        warning=f"the draft model could not be loaded ({e}): its weights and KV are not counted; "
                                f"pass a config.json path or a cached model as \"model\"")
    name = str(draft).lower()
    if method is None:
        method = "eagle" if "eagle-" in name else "eagle3" if "eagle3" in name else \
            "mtp" if dm.model_type.endswith("_mtp") else "draft_model"
    dtp = int(d.get("draft_tensor_parallel_size") or tp)
    dw = weight_bytes(dm, tp=dtp, pp=1, quantization=d.get("quantization"), dtype=dtype)
    bytes_ = dw.per_rank_bytes
    note = ""
    if method in ("eagle", "eagle3", "dflash") and dw.source == "config":
        # llm_base_proposer.py _maybe_share_embeddings / _maybe_share_lm_head (0.33.0): an EAGLE head without its own
        # embed_tokens (or with the target's) uses the target's; EAGLE-1 also shares lm_head
        dt = DTYPE_BYTES.get(dtype, 2)
        vocab = cdiv(dm.vocab_size, 64) * 64
        shared = vocab * dm.hidden_size * dt // dtp
        if method == "eagle" and not dm.tie_word_embeddings:
            shared *= 2
        h = dm.hidden_size
        extra = 0
        if method == "eagle3":
            # llama_eagle3.py (0.33.0): its own lm_head of draft_vocab_size rows (not vocab_size), and fc from
            # 3 target hidden states (num_aux_hidden_states) to H
            draft_vocab = int(dm.text_config.get("draft_vocab_size") or dm.vocab_size)
            shared += (vocab - cdiv(draft_vocab, 64) * 64) * h * dt // dtp
            extra = 3 * h * h * dt
        elif method == "eagle":
            extra = 2 * h * h * dt  # llama_eagle.py: fc from [embedding; hidden state] (2H) to H
        bytes_ = max(bytes_ - shared, 0) + extra
        note = " (embeddings shared with the target)"
    error = DRAFT_MODEL_REFUSED if method == "draft_model" and _key(version) < _key(DRAFT_MODEL_SINCE) else None
    return SpecPlan(method=method, num_speculative_tokens=k, draft=str(draft), weights_bytes=bytes_,
                    kv_layers=tuple(dm.layers), draft_model=dm, weights_note=note, error=error)


def spec_capture_sizes(sizes: list[int], num_speculative_tokens: int) -> list[int]:
    """CompilationConfig.adjust_cudagraph_sizes_for_spec_decode (vllm/config/compilation.py 0.33.0, model
    runner V1 with FULL decode graphs): every size rounded up to a multiple of 1 + k, kept when it stays
    within the largest; none left -> [1 + k]."""
    q = 1 + num_speculative_tokens
    if not sizes or q <= 1:
        return sizes
    top = max(sizes)
    out = sorted({cdiv(n, q) * q for n in sizes if cdiv(n, q) * q <= top})
    return out or ([q] if q <= top else [])


# Features that made vLLM fall back to its V0 engine (engine/arg_utils.py _is_v1_supported_oracle):
# LoRA "is experimental on VLLM_USE_V1=1. Falling back to V0 Engine." in 0.8.0 and 0.8.2 (read), not in 0.8.5;
# speculative decoding: every method in 0.8.0 / 0.8.2 / 0.8.5 (ngram and EAGLE as experimental); in 0.9.0 all but
# ngram, medusa, eagle, eagle3, deepseek_mtp (judged on the "method" key as given, or model "ngram"). 0.10.1.1
# refuses draft_model instead (DRAFT_MODEL_REFUSED).
LORA_ON_V1_SINCE = "0.8.5"
SPEC_ON_V1_SINCE = "0.9.0"
SPEC_V0_FALLBACK_UNTIL = "0.10.1"
V1_SPEC_METHODS_0_9 = frozenset({"ngram", "[ngram]", "medusa", "eagle", "eagle3", "deepseek_mtp"})


def v0_fallback(version: str, flags: dict[str, Any]) -> str | None:
    """Why this release would run a feature on its V0 engine (not modelled), or None. VLLM_USE_V1=1 is not read."""
    v = _key(version)
    if _truthy(flags.get("enable_lora", False)) and v < _key(LORA_ON_V1_SINCE):
        return (f"vLLM {version} logs 'LORA is experimental on VLLM_USE_V1=1. Falling back to V0 Engine.' "
                f"(engine/arg_utils.py _is_v1_supported_oracle); V0 is not modelled")
    raw = flags.get("speculative_config")
    if raw in (None, "", "{}") or v >= _key(SPEC_V0_FALLBACK_UNTIL):
        return None
    d = _spec_dict(raw)
    method = d.get("method")
    on_v1 = v >= _key(SPEC_ON_V1_SINCE) and (
        method in V1_SPEC_METHODS_0_9 if method else d.get("model") in ("ngram", "[ngram]"))
    if on_v1:
        return None
    return (f"vLLM {version} logs 'Speculative Decoding is not supported by the V1 Engine. Falling back to V0.' "
            f"(engine/arg_utils.py _is_v1_supported_oracle); V0 is not modelled")
