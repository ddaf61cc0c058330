"""Regenerate docs/rules.md from the rule registry (a test fails when it drifts)."""

from pathlib import Path

from configurator.lint.docs import render_rules_doc

out = Path(__file__).resolve().parents[1] / "docs" / "rules.md"
out.write_text(render_rules_doc())
print(f"wrote {out}")
