"""docs/rules.md, generated from the registry."""

from __future__ import annotations

from configurator.lint.rules import REGISTRY

_INTRO = """\
Each finding names its rule; `vllm-configurator rules` lists them (`--format json` for tools), and the text
output prints each finding's one-line fix with a link to its section here.

## Silencing a finding

On the object (or its pod template), as kube-linter does, with the reason kept:

```yaml
metadata:
  annotations:
    ignore-check.vllm-configurator.io/no-max-model-len: "requests are capped at 4K by the gateway"
    vllm-configurator.io/ignore-all: "a load-test fixture, never deployed"   # every rule
    vllm-configurator.io/ignore: gpu-memory-utilization,shm-missing          # older form, no reason
```

A silenced finding is not dropped: it is counted in the summary line, listed under `suppressed` in
`--format json`, and written to SARIF with a `suppressions` entry (kind `inSource`, the reason as its
justification), so code scanning shows it as dismissed in the source.

For a repository, in `.vllm-configurator.yaml` (found from the first path upwards, or `--config`;
[schema](../schemas/lint-config.schema.json)):

```yaml
ignorePaths: ["charts/**/templates/**", "examples/legacy/**"]   # skipped in folders (named paths: --force-exclude)
rules:
  gpu-memory-utilization: "off"            # a severity (error, warning, info) or off
  shm-missing:
    severity: error
    exclude: ["dev/**"]                    # findings there are suppressed (SARIF kind external)
  startup-probe-too-short:
    include: ["prod/**"]                   # runs only there
gpu:                                       # GPU type when a manifest does not say
  default: l4
  gpu-pool-a100: a100-80gb                 # a node-pool name or node-label value
  nvidia.com/mig-3g.40gb: a100-80gb:3g.40gb  # a GPU resource name
  cloud.google.com/gke-nodepool=big: h100  # a node label key=value
models:                                    # served name or local path -> model id (or ./config.json)
  /models/llama: meta-llama/Llama-3.1-8B-Instruct
```
"""


def render_rules_doc() -> str:
    lines = ["# `check` rules", "",
             "Generated from `configurator/lint/rules.py` by `python scripts/gen_rules_doc.py`; do not edit.", "",
             _INTRO, "## The rules", "",
             "| rule | severity | what |", "|---|---|---|"]
    for r in REGISTRY.values():
        lines.append(f"| [`{r.id}`](#{r.id}) | {r.severity} | {r.title} |")
    for r in REGISTRY.values():
        lines += ["", f"## {r.id}", "", f"**{r.title}** (default severity: {r.severity})", "", r.description, "",
                  f"Fix: {r.remediation}", "",
                  f"Silence: `ignore-check.vllm-configurator.io/{r.id}: \"<reason>\"`"]
    return "\n".join(lines) + "\n"
