"""docs/rules.md, generated from the registry."""

from __future__ import annotations

from configurator.lint.rules import REGISTRY


def render_rules_doc() -> str:
    lines = ["# `check` rules", "",
             "Generated from `configurator/lint/rules.py` by `python scripts/gen_rules_doc.py`; do not edit.", "",
             "Silence a rule for one object with the annotation `vllm-configurator.io/ignore: rule-id[,rule-id]` "
             "(on the object or its pod template), or for a repository in `.vllm-configurator.yaml` "
             "(`rules: {rule-id: off}`; [schema](../schemas/lint-config.schema.json)).", "",
             "| rule | severity | what |", "|---|---|---|"]
    for r in REGISTRY.values():
        lines.append(f"| [`{r.id}`](#{r.id}) | {r.severity} | {r.title} |")
    for r in REGISTRY.values():
        lines += ["", f"## {r.id}", "", f"**{r.title}** (default severity: {r.severity})", "", r.description, "",
                  f"Fix: {r.remediation}"]
    return "\n".join(lines) + "\n"
