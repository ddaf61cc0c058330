"""Load a real config fixture from tests/data/configs (each file records where its config came from)."""

from __future__ import annotations

import json
from pathlib import Path

from configurator.model.hf_config import read_model_spec
from configurator.model.spec import ModelSpec

CONFIGS = Path(__file__).resolve().parent.parent / "data" / "configs"


def fixture(stem: str) -> dict:
    data = json.loads((CONFIGS / f"{stem}.json").read_text())
    assert data["config_source"], stem  # provenance is part of every fixture
    return data


def spec(stem: str) -> ModelSpec:
    data = fixture(stem)
    return read_model_spec(data["config"], name=data["hf_id"], hf_quant_config=data.get("hf_quant_config"))


def kv_bytes_per_token(model: ModelSpec, element_bytes: int = 2) -> int:
    """Per-token KV of the layers that grow with the context (bf16 unless told), all layers, TP 1."""
    total = 0
    for g in model.layers:
        if g.kind == "mamba":
            continue
        if g.kind == "mla":
            total += g.head_size * (g.kv_bytes_override or element_bytes)
        else:
            total += g.num_kv_heads * (g.head_size + g.head_size_v) * element_bytes
    return total


def kinds(model: ModelSpec) -> dict[str, int]:
    out: dict[str, int] = {}
    for g in model.layers:
        out[g.kind] = out.get(g.kind, 0) + 1
    return out
