"""Reproduce the logged KV-cache tokens and concurrency of real vLLM start-up logs.

For every dev and dev2 record that logs a vLLM version, its "Available KV cache memory" and its
"GPU KV cache size", run `estimate` with --kv-cache-memory-bytes set to the logged GiB (no
profiling) and the record's flags, and compare tokens and concurrency. Target: every record within
1% (the logged GiB is rounded to 0.01, which alone moves small pools by up to ~0.1%); no record is
set aside: any miss makes the script exit 1. Records that cannot run are listed with the reason (no
config offline, V0, not stock vLLM, a GPU with neither a catalog entry nor a logged CUDA total).

Usage: python benchmarks/kv_reproduction.py [LOGS.jsonl ...] [--out benchmarks/kv_reproduction.md]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import replace
from pathlib import Path

from configurator.errors import ConfiguratorError
from configurator.estimate import EstimateRequest, estimate
from configurator.hardware.catalog import find_gpu, list_gpus
from configurator.model.hf_config import read_model_spec
from configurator.model.resolve import resolve_model
from configurator.units import GiB

LOG_DATA = Path(__file__).resolve().parents[1] / "data" / "logs"  # the repository's own copy (data/README.md)
DEFAULT_LOGS = LOG_DATA / "vllm-startup-logs.dev.jsonl"
DEV_LOGS = (DEFAULT_LOGS, LOG_DATA / "vllm-startup-logs.dev2.jsonl")
FOUND_LOGS = LOG_DATA / "vllm-startup-logs.found.jsonl"  # collected for issue 25; `split` train / test
ALL_LOGS = (*DEV_LOGS, FOUND_LOGS)
# how a quantized release is usually named after its base model; the base's geometry is the same
QUANT_SUFFIX = re.compile(r"[-_.](AWQ(-4bit)?|GPTQ(-Int[48])?|FP8(-dynamic)?|NVFP4|MXFP4|W4A16|W8A8|INT4|"
                          r"quantized\.w8a8|qat-w4a16-ct|AutoRound)$", re.I)
TOLERANCE = 0.01
PATH_PREFIXES = (".", "~", "/")
SIZED_NAME = re.compile(r"\d.*?-\d+(\.\d+)?[bm]\b|-(e\d+b|\d+b-a\d+b)\b", re.I)


def _candidates(text: str) -> list[str]:
    """Names to try for a record's model string, most specific first: its leading token (an HF id
    or a bare name), the id's name part, then each with a quantization suffix removed and with
    trailing '-segments' dropped ('gemma-4-26b-a4b-it' -> 'gemma-4-26b-a4b')."""
    words = [w.strip("'\",;()") for w in text.split()]
    lead = words[0] if words else ""
    if not lead or lead.startswith(PATH_PREFIXES):
        return []
    out = [lead]
    if len(words) > 1 and re.fullmatch(r"\d+(\.\d+)?[BbMm](-A\d+(\.\d+)?[Bb])?", words[1]):
        out.insert(0, f"{lead}-{words[1]}")  # 'Gemma-4 26B-A4B' -> 'Gemma-4-26B-A4B'
    if "/" in lead:
        out.append(lead.split("/", 1)[1])
    for name in list(out):
        base = QUANT_SUFFIX.sub("", name)
        while base != name:
            out.append(base)
            name, base = base, QUANT_SUFFIX.sub("", base)
    for name in list(out):
        parts = name.split("/")[-1].split("-")
        while len(parts) > 2:
            parts.pop()
            out.append("-".join(parts))
    seen: list[str] = []
    for c in out:
        # a name must carry its family's version before the size ('Qwen3-32B', 'gemma-4-26b'):
        # 'Mistral-7B' names several checkpoints with different geometry (sliding window or not)
        if c and c not in seen and ("/" in c or SIZED_NAME.search(c)):
            seen.append(c)
    return seen


# The quantization_config a checkpoint the record describes carries, for records whose model
# resolves to the base model's geometry (the record names the format, not the config). An NVFP4 build is
# taken as NVIDIA ModelOpt's export, whose KV cache is FP8 unless its maker opted out: examples/llm_ptq/
# hf_ptq.py in NVIDIA/TensorRT-Model-Optimizer, `--kv_cache_qformat` default "fp8" (later "fp8_cast"); vLLM's
# auto KV dtype follows it (configurator/vllm/versions.py checkpoint_kv_auto).
CHECKPOINT_QUANT = (
    (re.compile(r"nvfp4", re.I), {"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}),
    (re.compile(r"mxfp4", re.I), {"quant_method": "mxfp4"}),
    (re.compile(r"auto_?round|autoround", re.I), {"quant_method": "auto-round", "bits": 4, "group_size": 128}),
    (re.compile(r"\bawq\b", re.I), {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}),
    (re.compile(r"\bgptq\b", re.I), {"quant_method": "gptq", "bits": 4, "group_size": 128}),
    (re.compile(r"\bfp8\b", re.I), {"quant_method": "fp8"}),
)


def with_checkpoint_quant(spec, record: dict):
    """The base geometry with the quantization the record says its checkpoint carries (a checkpoint
    is quantized when the record's `quantization` says '(checkpoint)' or the model string names the
    format); unchanged when the spec already declares one or the record's checkpoint is 16-bit."""
    q = str(record.get("quantization") or "")
    lead = str(record.get("model") or "").split(" ")[0]
    if spec.quant.method or not q or not ("checkpoint" in q or "checkpoint" in str(record.get("model"))
                                          or QUANT_SUFFIX.search(lead)):
        return spec
    for pat, qc in CHECKPOINT_QUANT:
        if pat.search(q):
            cfg = dict(spec.full_config) | {"quantization_config": qc}
            return read_model_spec(cfg, name=spec.name) if cfg else spec
    return spec


def model_for(record: dict):
    """The record's model as (ModelSpec, label): its Hugging Face id if built in; else the first
    built-in name its leading token reduces to (a quantized variant takes its base's geometry; the
    quantization comes from the record's `quantization`)."""
    text = str(record.get("model") or "")
    cands = _candidates(text)
    for i, name in enumerate(cands):
        try:
            spec = resolve_model(name, allow_hub=False)
        except (ConfiguratorError, ValueError):
            continue
        spec = with_checkpoint_quant(spec, record)
        return spec, name if i == 0 else f"{spec.hf_id or name} (geometry for '{cands[0]}')"
    if not cands:
        raise LookupError(f"'{text[:40]}': no Hugging Face id, and no name with a family version and size "
                          f"(the identity, and so the geometry, is ambiguous)")
    raise LookupError(f"{cands[0]}: no built-in profile (config.json not available offline)")


def gpu_for(record: dict) -> dict:
    """The record's GPU, with the memory other processes held on it when the record states it."""
    gpu = _gpu_for(record)
    m = re.search(r"another process (?:held|holds|using|used)\s+([\d.,]+)\s*(MiB|GiB)",
                  " ".join(str(record.get(k) or "") for k in ("gpu", "notes")), re.I)
    if m:  # --gpu-memory-used: memory in use before vLLM starts
        n = float(m.group(1).replace(",", ""))
        gpu["gpu_memory_used"] = int(n * (1 << 20 if m.group(2).lower() == "mib" else 1 << 30))
    return gpu


def _gpu_for(record: dict) -> dict:
    """The record's GPU: a catalog entry by its family name, else the CUDA total vLLM logged
    ('free/total GiB' or 'N GiB'); a capacity class ('24 GB GPU') is not a CUDA total: left out."""
    fam = str(record.get("gpu_family") or "")
    for cand in (fam, fam.split(" ")[0], fam.replace(" ", "-"), fam.split("/")[0]):
        if not cand:
            continue
        try:
            return {"gpu": find_gpu(cand).name}
        except ConfiguratorError:
            continue
    logged = str(record.get("gpu_total_memory_logged") or "")
    m = re.search(r"[\d.]+\s*/\s*([\d.]+)\s*GiB", logged) or re.match(r"\s*([\d.]+)\s*GiB", logged)
    if m:
        return {"gpu_memory": f"{m.group(1)}GiB"}
    # a total the device reported, quoted in the GPU description ('15.55 GiB total per vLLM',
    # 'torch reports 7.6 GB total': torch prints GiB; '97,887 MiB total')
    m = re.search(r"([\d.,]+)\s*(GiB|GB|MiB)\s+total", str(record.get("gpu") or ""))
    if m:
        n = float(m.group(1).replace(",", ""))
        return {"gpu_memory": f"{n / 1024:.3f}GiB" if m.group(2) == "MiB" else f"{n}GiB"}
    raise LookupError(f"GPU '{str(record.get('gpu'))[:50]}' not in the catalog and no CUDA total logged")


STATED_CC = re.compile(r"compute capability (?:of )?(\d{1,2})\.(\d)|\bsm_?(\d{2,3})\b", re.I)
CONSUMER = re.compile(r"\bconsumer\b|\bGeForce\b|\bRTX\b", re.I)
CLASS_TEXT = ("gpu", "gpu_family", "notes")


def gpu_class_for(record: dict, model, version: str) -> tuple[dict, str]:
    """For a record whose GPU is not named: a stand-in catalog GPU of the class its log implies, and why.

    The token count at a given KV memory needs no GPU memory, only what decides the layout: the attention
    block size and the default batch limits. A stated compute capability ('compute capability 8.9', 'sm89')
    picks the smallest catalog GPU of that capability (the < 70 GiB batch tier). A consumer card of no stated
    capability is evaluated as the smallest-tier desktop card when the release's layout for this model does not
    depend on the compute capability (no MLA, whose block size does; no hybrid alignment that does: 0.12-0.17
    head-256 on Blackwell, 0.33 Gated DeltaNet on FlashInfer). Raises LookupError otherwise."""
    from configurator.vllm.versions import behaviour
    text = " ".join(str(record.get(k) or "") for k in CLASS_TEXT)
    gpus = [g for g in list_gpus() if g.vendor == "nvidia" and g.sm > 0]
    m = STATED_CC.search(text)
    if m:
        sm = int(m.group(1)) * 10 + int(m.group(2)) if m.group(1) else int(m.group(3))
        same = sorted((g for g in gpus if g.sm == sm), key=lambda g: g.total_bytes)
        if same:
            return {"gpu": same[0].name}, f"compute capability {sm // 10}.{sm % 10} stated: evaluated as {same[0].name}"
    b = behaviour(version)
    cc_dependent = model.is_mla or (model.has_mamba and (
        (b.hybrid_align == "backend" and b.hybrid_hd256_blackwell_32 != "none" and model.head_dim == 256)
        or b.mamba_checkpoint_block))
    if CONSUMER.search(text) and not cc_dependent:
        desk = sorted((g for g in gpus if g.gpu_class == "desktop" and g.sm >= 80 and not g.integrated),
                      key=lambda g: (-g.sm, g.total_bytes))
        if desk:
            return {"gpu": desk[0].name}, (f"consumer GPU, not named: evaluated as {desk[0].name} (the layout of this "
                                           f"model at {b.version} does not depend on the compute capability)")
    raise LookupError(f"GPU '{str(record.get('gpu'))[:50]}' not in the catalog, no CUDA total logged, and no GPU "
                      f"class that fixes the layout")


def quantization_for(record: dict) -> str | None:
    """The `--quantization` the record passed: None for a quantized checkpoint (vLLM reads the
    method from its config; see with_checkpoint_quant), else the method its description starts with
    (online quantization of a 16-bit checkpoint: 'fp8')."""
    text = str(record.get("quantization") or "").lower()
    model = str(record.get("model") or "")
    if not text or "checkpoint" in text or "checkpoint" in model.lower() or QUANT_SUFFIX.search(model.split(" ")[0]):
        return None
    return text.split(" ")[0]


def parallel_for(record: dict) -> dict:
    """TP / PP as logged; a multi-GPU record that names no layout (no TP, PP or DP) is evaluated as
    TP over all its GPUs (the notes of such records point at TP ranks)."""
    f = {}
    for key in ("tensor_parallel_size", "pipeline_parallel_size"):
        if record.get(key):
            f[key] = int(record[key])
    n = int(record.get("num_gpus") or 1)
    if n > 1 and not (f or record.get("data_parallel_size")):
        f["tensor_parallel_size"] = n
    return f


def flags_for(record: dict) -> dict:
    f = {"kv_cache_memory_bytes": round(record["available_kv_cache_gib"] * GiB)}
    for key in ("max_model_len", "max_num_seqs", "max_num_batched_tokens", "block_size"):
        if record.get(key):
            f[key] = int(record[key])
    f |= parallel_for(record)
    kvd = str(record.get("kv_cache_dtype") or "")
    if kvd.startswith("fp8"):
        f["kv_cache_dtype"] = kvd.split()[0]
    if "mamba_ssm_cache_dtype=float32" in kvd:
        f["mamba_ssm_cache_dtype"] = "float32"
    if record.get("enforce_eager"):
        f["enforce_eager"] = True
    if record.get("enable_prefix_caching") is not None:
        f["enable_prefix_caching"] = bool(record["enable_prefix_caching"])
    return f


SPEC_NO_DRAFT = {"mtp", "ngram", "ngram_gpu", "suffix"}  # methods whose drafter is the target or no model


def speculative_for(record: dict) -> dict | None:
    """The record's --speculative-config as its other_flags spell it (benchmarks/accuracy.py feature_flags), or
    None. A drafter's attention layers take blocks from the same pool, so a record whose drafter cannot be
    loaded offline cannot be reproduced: LookupError, as for a target without a config."""
    from accuracy import feature_flags  # accuracy imports this module: imported here, not at the top
    try:
        spec = feature_flags(record).get("speculative_config")
    except LookupError as e:
        if "speculative" in str(e):
            raise
        return None
    if not spec:
        return None
    draft, method = spec.get("model"), str(spec.get("method") or "").lower()
    if draft and method not in SPEC_NO_DRAFT:
        try:
            resolve_model(str(draft), allow_hub=False)
        except (ConfiguratorError, ValueError):
            raise LookupError(f"speculative draft '{draft}': no built-in profile (config.json not available "
                              f"offline), so its KV layers cannot be counted") from None
    return spec


NOT_STOCK = re.compile(r"not stock vLLM|vllm-omni|Unsloth|\bpatched build\b", re.I)


def not_stock(record: dict) -> str | None:
    """Why a record is not stock vLLM (its notes say it runs patched or wrapped), else None."""
    text = " ".join(str(record.get(k) or "") for k in ("notes", "source_note"))
    m = NOT_STOCK.search(text)
    return f"not stock vLLM (notes: '{m.group(0)}')" if m else None


def _records(paths) -> list[dict]:
    out = []
    for path in paths:
        out += [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    return out


def run(paths=ALL_LOGS) -> tuple[list[dict], list[dict]]:
    """Every record that logs a vLLM version, its available KV memory and its token count:
    reproduced (done) or, with the reason, not run (skipped)."""
    if isinstance(paths, (str, Path)):
        paths = (paths,)
    done, skipped = [], []
    for r in _records(paths):
        if not (r.get("vllm_version") and r.get("available_kv_cache_gib") and r.get("kv_cache_tokens")):
            continue
        # the release as printed, pre-release tags included (0.16.1rc1.dev111: versions.normalize)
        version = re.match(r"\d+\.\d+(\.\d+)*((\.?(rc|dev|post|a|b)\d*)+)?", str(r["vllm_version"]))
        try:
            if r.get("engine") != "V1":
                raise LookupError("V0 engine log (not modelled)")
            if not version:
                raise LookupError(f"version '{r['vllm_version']}' names no release")
            if not_stock(r):
                raise LookupError(not_stock(r))
            model, used = model_for(r)
            flags = flags_for(r)
            if spec := speculative_for(r):
                flags["speculative_config"] = spec
            if quantization_for(r):
                flags["quantization"] = quantization_for(r)
            try:
                gpu, gpu_note = gpu_for(r), ""
            except LookupError:
                gpu, gpu_note = gpu_class_for(r, model, version.group(0))
            req = EstimateRequest(model=model, vllm_version=version.group(0), flags=flags, **gpu)
            res = estimate(req)
        except (LookupError, ConfiguratorError) as e:
            skipped.append({"id": r["id"], "model": r["model"][:50], "reason": str(e)[:160]})
            continue
        tok_err = (res.kv_cache.tokens - r["kv_cache_tokens"]) / r["kv_cache_tokens"]
        conc = r.get("max_concurrency")
        conc_err = (res.kv_cache.max_concurrency - conc) / conc if conc else None
        # vLLM prints the KV memory to 0.01 GiB: a whole block more or less lies within that rounding on a small
        # pool of large blocks. Where the central figure misses, the logged values are compared with the range
        # the estimate gives over [GiB - 0.005, GiB + 0.005) (error 0 inside it).
        span = None
        if abs(tok_err) > TOLERANCE or abs(conc_err or 0) > TOLERANCE:
            ends = [estimate(replace(req, flags=req.flags | {"kv_cache_memory_bytes": round((
                r["available_kv_cache_gib"] + d) * GiB)})).kv_cache for d in (-ROUNDING, ROUNDING - 1e-6)]
            span = (min(e.tokens for e in ends), max(e.tokens for e in ends),
                    min(e.max_concurrency for e in ends), max(e.max_concurrency for e in ends))
            tok_err = _range_err(r["kv_cache_tokens"], span[0], span[1])
            conc_err = _range_err(conc, span[2], span[3]) if conc else None
        done.append({"id": r["id"], "set": str(r.get("split") or "dev"), "version": res.vllm_version, "model": used,
                     "printed": str(r["vllm_version"]).split()[0], "gpu_note": gpu_note,
                     "kv_gib": r["available_kv_cache_gib"], "logged_tokens": r["kv_cache_tokens"],
                     "tokens": res.kv_cache.tokens, "tok_err": tok_err, "logged_conc": conc,
                     "conc": res.kv_cache.max_concurrency, "conc_err": conc_err,
                     "block": res.kv_cache.block_size, "span": span,
                     "mm_sliding": model.is_multimodal and any(g.kind == "sliding" for g in model.layers)})
    return done, skipped


ROUNDING = 0.005  # GiB: half the last printed digit of "Available KV cache memory: %.2f GiB"


def _range_err(logged: float, lo: float, hi: float) -> float:
    """0 when the logged value is in [lo, hi]; else the relative distance to the nearer end."""
    if lo <= logged <= hi:
        return 0.0
    return (lo - logged) / logged if logged < lo else (hi - logged) / logged


def misses(done: list[dict], tolerance: float = TOLERANCE) -> list[dict]:
    """Records whose tokens or concurrency are off by more than the tolerance (no exclusions)."""
    return [d for d in done if abs(d["tok_err"]) > tolerance or abs(d["conc_err"] or 0) > tolerance]


def _count(rows: list[dict], sets: tuple[str, ...]) -> int:
    return sum(d.get("set", "dev") in sets for d in rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs="*", type=Path, default=list(ALL_LOGS))
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("kv_reproduction.md"))
    a = ap.parse_args(argv)
    done, skipped = run(a.logs)
    rows = ["| record | vLLM | model | KV GiB | block | logged tokens | predicted | error | logged conc. "
            "| predicted | error |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for d in done:
        ce = f"{d['conc_err']:+.2%}" if d["conc_err"] is not None else "n/a"
        if d.get("span"):  # the central figure missed; the error is against the range the printed GiB allows
            d = d | {"tokens_shown": f"{d['tokens']:,} ({d['span'][0]:,}-{d['span'][1]:,} over +-0.005 GiB)"}
        printed = d.get("printed") or d["version"]
        ver = d["version"] if printed.startswith(d["version"]) else f"{d['version']} (printed {printed})"
        model = d["model"] + (" (GPU class)" if d.get("gpu_note") else "")
        rows.append(f"| {d['id']} | {ver} | {model} | {d['kv_gib']} | {d['block']} | {d['logged_tokens']:,} | "
                    f"{d.get('tokens_shown') or format(d['tokens'], ',')} | {d['tok_err']:+.2%} | {d['logged_conc']} | "
                    f"{d['conc']:.2f} | {ce} |")
    off = misses(done)
    worst = max((max(abs(d["tok_err"]), abs(d["conc_err"] or 0)) for d in done), default=0.0)
    out = ["# KV-cache reproduction on the dev, dev2 and found log sets", "",
           "`python benchmarks/kv_reproduction.py`: `estimate --kv-cache-memory-bytes <logged GiB>` "
           "with each record's flags, against the logged 'GPU KV cache size' and 'Maximum concurrency', on "
           "every record that logs a version, its available KV memory and its tokens. Target: every record "
           f"within {TOLERANCE:.0%}; the script exits 1 on any miss. vLLM prints the KV memory to 0.01 GiB: where the "
           "central figure misses, the error is against the range the estimate gives over the printed GiB +- 0.005 "
           "(a whole block more or less on a small pool of large blocks).", "",
           f"Within {TOLERANCE:.0%}: {len(done) - len(off)} of {len(done)} records run; worst error {worst:.2%}.",
           "",
           *(f"- {name}: {_count(done, sets) - _count(off, sets)} of {_count(done, sets)} within {TOLERANCE:.0%}"
                 for name, sets in (("dev + dev2", ("dev",)), ("found, train split", ("train",)),
                                    ("found, test split", ("test",)))), "",
           *rows, "", "A pre-release (rc / dev) is modelled as the first modelled release at or after the one it "
           "names (configurator/vllm/versions.py normalize). Records whose model is marked '(GPU class)' name no "
           "GPU; they run on a stand-in of the class their log implies:", "",
           *(f"- {d['id']}: {d['gpu_note']}" for d in done if d.get("gpu_note")), "", "## Records not run", "",
           "| record | model | reason |", "|---|---|---|"]
    out += [f"| {s['id']} | {s['model']} | {s['reason']} |" for s in skipped]
    if off:
        out += ["", "## Misses", "", *(f"- {d['id']}: tokens {d['tok_err']:+.2%}, concurrency "
                                             f"{'n/a' if d['conc_err'] is None else format(d['conc_err'], '+.2%')}"
                                             for d in off)]
    a.out.write_text("\n".join(out) + "\n")
    print("\n".join(out))
    return 1 if off else 0


if __name__ == "__main__":
    sys.exit(main())
