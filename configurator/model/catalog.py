"""The offline model catalog: the built-in profiles (profiles/models/*.json, one model a file) and the
catalog parts (profiles/models/catalog/*.json, `{"models": [ENTRY, ...]}`), looked up by Hugging Face id
(case-insensitive), alias or bare repository name.

Lookups are lazy and indexed: a built-in id is found from the file names alone and only that one file is
parsed (what `estimate --model meta-llama/Llama-2-7b-hf` pays, as before the catalog parts existed); the
parts and the built-ins' aliases are parsed and indexed once, on the first name the file names do not
answer. Every entry keeps its provenance (`config_source`: repository, path, commit or package and
version, Hub revision when known).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

from configurator.errors import ConfigError, InputError
from configurator.model.spec import ModelSpec
from configurator.resources import data_path


@dataclass(frozen=True)
class Entry:
    """One catalog model: a config.json (trimmed to what the memory model reads) and where it came from."""

    hf_id: str
    family: str
    aliases: tuple[str, ...]
    config_source: str
    origin: str  # the file it is kept in, relative to profiles/ (profiles/models/X.json, models/catalog/part.json)
    weights_bytes: int | None = None
    weights_source: str | None = None
    config: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    hf_quant_config: dict | None = field(default=None, compare=False, hash=False, repr=False)
    # the config is put together from several sources (config_source says how), not one published file:
    # `"derived": true`, a built-in profile's `derived_from`, or a config_source that opens with "Derived"
    derived: bool = False

    @property
    def part(self) -> str:
        """'built-in' for profiles/models/*.json, else the catalog part's name (families-a)."""
        p = Path(self.origin)
        return p.stem if p.parent.name == "catalog" else "built-in"

    def spec(self) -> ModelSpec:
        from configurator.model.hf_config import read_model_spec

        return read_model_spec(self.config, name=self.hf_id, hf_quant_config=self.hf_quant_config,
                               weights_bytes=self.weights_bytes, weights_source=self.weights_source,
                               hf_id=self.hf_id)

    @property
    def derived_note(self) -> str | None:
        """The warning a derived entry carries wherever it is used, or None for a published config.json."""
        if not self.derived:
            return None
        return (f"{self.hf_id}: the offline catalog's config is derived from several sources, not a copy of the "
                f"published config.json (`vllm-configurator models {self.hf_id} --format json` shows its "
                f"config_source); pass --model-config to be exact")


def read_json(path: Path, what: str) -> dict:
    """A JSON object from a file; one ConfigError / InputError line on anything else."""
    from configurator.safe_io import read_json as read_bounded

    try:  # bounded in size and nesting, and never a FIFO or device (configurator/safe_io.py)
        data = read_bounded(path, what=f"{path}: {what}")
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: malformed or truncated {what} (line {e.lineno}: {e.msg})") from None
    except InputError as e:
        raise ConfigError(str(e)) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: {what} must be a JSON object")
    return data


def profile_dir() -> Path:
    return data_path("profiles", "models")


def catalog_dir() -> Path:
    return data_path("profiles", "models", "catalog")


@lru_cache(maxsize=1)
def profile_files() -> dict[str, Path]:
    """lower-case 'org/name' -> built-in profile file (from the file name alone: no parsing)."""
    return {p.stem.replace("__", "/").lower(): p for p in sorted(profile_dir().glob("*.json"))}


def _merge(base: dict, over: dict) -> dict:
    """Top-level keys of a derived profile replace the base's; a nested text_config is merged."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if k == "text_config" and isinstance(out.get(k), dict) else v
    return {k: v for k, v in out.items() if v != "__delete__"}


def _entry(d: dict, origin: str, where: Path) -> Entry:
    hf_id = d.get("hf_id")
    if not isinstance(hf_id, str) or "/" not in hf_id:
        raise ConfigError(f"{where}: a catalog entry has no 'org/name' hf_id ({hf_id!r})")
    config = d.get("config")
    if d.get("derived_from"):  # a built-in profile that is its base's config plus overrides
        base = profile_entry(d["derived_from"])
        if base is None:
            raise ConfigError(f"{where}: {hf_id} derives from unknown {d['derived_from']}")
        config = _merge(base.config, d.get("config_overrides") or {})
    if not isinstance(config, dict):
        raise ConfigError(f"{where}: {hf_id} has no config")
    wb = d.get("weights_bytes")
    return Entry(hf_id=hf_id, family=str(d.get("family") or ""), aliases=tuple(str(a) for a in d.get("aliases") or ()),
                 config_source=str(d.get("config_source") or ""), origin=origin,
                 weights_bytes=wb if isinstance(wb, int) and not isinstance(wb, bool) else None,
                 weights_source=d.get("weights_source"), config=config,
                 hf_quant_config=d.get("hf_quant_config") if isinstance(d.get("hf_quant_config"), dict) else None,
                 derived=d.get("derived") is True or bool(d.get("derived_from"))
                 or str(d.get("config_source") or "").startswith("Derived "))


@cache
def _profile_entry_at(path: Path) -> Entry:
    return _entry(read_json(path, "model profile"), f"models/{path.name}", path)


def profile_entry(name: str) -> Entry | None:
    """A built-in profile by its exact id (case-insensitive), from the file name: one file parsed."""
    p = profile_files().get(name.strip().lower())
    return _profile_entry_at(p) if p is not None else None


def load_profile(path: Path) -> ModelSpec:
    """The ModelSpec of one built-in profile file."""
    return _profile_entry_at(path).spec()


@lru_cache(maxsize=1)
def _part_entries() -> tuple[Entry, ...]:
    """Every entry of every catalog part, in file order; an id already built in is not repeated."""
    out: list[Entry] = []
    seen = set(profile_files())
    folder = catalog_dir()
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        models = read_json(p, "catalog part").get("models")
        if not isinstance(models, list):
            raise ConfigError(f"{p}: a catalog part is {{\"models\": [...]}}")
        for d in models:
            if not isinstance(d, dict):
                raise ConfigError(f"{p}: every catalog entry is an object")
            e = _entry(d, f"models/catalog/{p.name}", p)
            if e.hf_id.lower() not in seen:
                seen.add(e.hf_id.lower())
                out.append(e)
    return tuple(out)


def entries() -> tuple[Entry, ...]:
    """Every catalog model: the built-in profiles, then the catalog parts."""
    return tuple(_profile_entry_at(p) for p in profile_files().values()) + _part_entries()


@lru_cache(maxsize=1)
def _index() -> dict[str, Entry]:
    """lower-case id, alias and bare repository name -> entry (ids first, so an alias never hides an id)."""
    idx: dict[str, Entry] = {}
    all_entries = entries()
    for e in all_entries:
        idx.setdefault(e.hf_id.lower(), e)
    for e in all_entries:
        for a in e.aliases:
            idx.setdefault(a.strip().lower(), e)
    for e in all_entries:
        idx.setdefault(e.hf_id.split("/", 1)[1].lower(), e)
    return idx


@lru_cache(maxsize=1)
def _part_ids() -> dict[str, Entry]:
    """lower-case id -> entry, of the catalog parts only (no built-in profile parsed)."""
    return {e.hf_id.lower(): e for e in _part_entries()}


def find(name: str) -> Entry | None:
    """The catalog entry for an id, alias or bare repository name (case-insensitive), or None.
    A built-in id costs one file; a part's id the parts; only an alias or a bare name reads everything."""
    key = name.strip().lower()
    return profile_entry(key) or _part_ids().get(key) or _index().get(key)


def names() -> list[str]:
    """Every catalog id and alias (for nearest-name suggestions)."""
    out: list[str] = []
    for e in entries():
        out.append(e.hf_id)
        out += e.aliases
    return out


def clear_cache() -> None:
    """Forget what was read (tests that point the data folders elsewhere)."""
    for f in (profile_files, _profile_entry_at, _part_entries, _part_ids, _index):
        f.cache_clear()


# -- nearest names -------------------------------------------------------------------------------------

def _tokens(text: str) -> list[str]:
    """'Qwen/Qwen3-8B-Instruct' -> ['qwen', '3', '8', 'b', 'instruct'] (org left out by the caller)."""
    import re

    return re.findall(r"[a-z]+|\d+(?:\.\d+)*", text.lower())


def _head(tokens: list[str]) -> tuple[str, ...]:
    """The family and its version: the tokens up to the first number ('qwen', '3'), ('llama', '3.1')."""
    for i, t in enumerate(tokens):
        if t[0].isdigit():
            return tuple(tokens[: i + 1])
    return tuple(tokens[:1])


def _score(q_full: str, cand: str) -> float:
    import difflib

    q_org, _, q_bare = q_full.rpartition("/")
    c_org, _, c_bare = cand.lower().rpartition("/")
    q_tok, c_tok = _tokens(q_bare), _tokens(c_bare)
    q_head = _head(q_tok)
    ratio = difflib.SequenceMatcher(None, q_bare, c_bare).ratio()
    common = len(set(q_tok) & set(c_tok)) / max(len(set(q_tok) | set(c_tok)), 1)
    score = 0.5 * ratio + 0.3 * common + (0.3 if q_head and _head(c_tok) == q_head else 0.0)
    return score + (0.05 if q_org and c_org == q_org else 0.0)


def nearest(name: str, n: int = 3) -> list[str]:
    """The catalog ids most like `name` (an id, alias or bare name; each model named once, by its id).
    Token-aware: the family and its version ('qwen3', 'llama-3.1') weigh most, so a misspelled Qwen3 id
    suggests Qwen3 ids before Qwen2 ones; then the string likeness of the repository name (difflib), then
    the other tokens (sizes, variants) in common. Always some names, however far (`--model nope`)."""
    q = name.strip().lower()
    best: dict[str, float] = {}
    for e in entries():
        best[e.hf_id] = max(_score(q, c) for c in (e.hf_id, *e.aliases))
    ranked = sorted(best.items(), key=lambda x: (-x[1], x[0]))
    return [c for c, _ in ranked[:n]]


# -- describing a model (the `models` command) -----------------------------------------------------------

def kv_bytes_per_token(spec: ModelSpec, element_bytes: int = 2) -> int:
    """KV-cache bytes one token takes across the layers that store K/V for it, at `element_bytes` per element
    (2: bf16), before tensor parallelism. Full, sliding-window and chunked layers count per token (a window
    limits how many tokens a layer keeps, not what one token costs); a Mamba / linear-attention layer keeps a
    fixed state per sequence and counts nothing here. MLA stores one latent (kv_lora_rank + qk_rope_head_dim)
    per token. e.g. Llama-2-7B: 32 layers x 32 KV heads x (128 + 128) x 2 B = 524,288 B."""
    total = 0
    for g in spec.layers:
        if g.kind == "mamba":
            continue
        if g.kind == "mla":
            total += g.head_size * (g.kv_bytes_override if g.kv_bytes_override is not None else element_bytes)
        else:
            total += g.num_kv_heads * (g.head_size + g.head_size_v) * element_bytes
    return total


def attention_kind(spec: ModelSpec) -> str:
    """'GQA 8/32', 'MHA', 'MQA', 'MLA', 'MLA+DSA', with '+sliding' / '+chunked' for local layers and
    'hybrid <state>+<attention>' when recurrent-state layers are mixed in."""
    kinds = {g.kind for g in spec.layers}
    if not kinds:
        return "none (attention-free)"
    if spec.is_mla:
        base = "MLA+DSA" if any(g.kv_bytes_override is not None for g in spec.layers) else "MLA"
    elif spec.num_kv_heads == spec.num_attention_heads:
        base = "MHA"
    elif spec.num_kv_heads == 1:
        base = "MQA"
    else:
        base = f"GQA {spec.num_kv_heads}/{spec.num_attention_heads}"
    if "sliding" in kinds:
        base += "+sliding"
    if "chunked" in kinds:
        base += "+chunked"
    variants = sorted({g.mamba.variant for g in spec.layers if g.kind == "mamba" and g.mamba is not None})
    if variants:
        return f"hybrid {'/'.join(variants)}+{base}" if kinds - {"mamba"} else f"state only ({'/'.join(variants)})"
    return base
