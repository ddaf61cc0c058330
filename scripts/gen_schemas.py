"""Regenerate schemas/*.schema.json from the pydantic models and result dataclasses (a test fails when they drift)."""

from pathlib import Path

from configurator.schemas import SCHEMAS, render

out = Path(__file__).resolve().parents[1] / "schemas"
for name in SCHEMAS:
    (out / name).write_text(render(name))
    print(f"wrote schemas/{name}")
