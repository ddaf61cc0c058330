"""Regenerate charts/vllm/{values.schema.json, values.yaml, templates/_flags.tpl, README.md values table}
from configurator/emit/values_model.py (tests/test_chart.py fails when they drift)."""

from pathlib import Path

from configurator.emit.values_model import render_chart_files

chart = Path(__file__).resolve().parents[1] / "charts" / "vllm"
for rel, text in render_chart_files((chart / "README.md").read_text()).items():
    (chart / rel).write_text(text)
    print(f"wrote charts/vllm/{rel}")
