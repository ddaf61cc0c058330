"""JSON Schemas (schemas/*.schema.json) generated from the pydantic models and result dataclasses; a test fails
on drift."""

from __future__ import annotations

import importlib
import json

from pydantic import TypeAdapter

# schema file -> the pydantic model (an input) or result dataclass (an output) it is generated from
MODELS = {
    "estimate.schema.json": "configurator.estimate.EstimateResult",
    "calibration.schema.json": "configurator.calibration.Calibration",
    "plan.schema.json": "configurator.plan.PlanResult",
    "workload.schema.json": "configurator.workloads.Workload",
    "check-report.schema.json": "configurator.lint.engine.CheckReport",
    "lint-config.schema.json": "configurator.lint.engine.LintConfig",
    "error.schema.json": "configurator.errors.ErrorReport",
}


def schema(name: str) -> dict:
    module, cls = MODELS[name].rsplit(".", 1)
    # a TypeAdapter reads a pydantic model and a standard-library dataclass (EstimateResult) alike
    out = TypeAdapter(getattr(importlib.import_module(module), cls)).json_schema()
    out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    out["$id"] = f"https://github.com/vllm-configurator/schemas/{name}"
    return out


def estimate_schema() -> dict:
    return schema("estimate.schema.json")


SCHEMAS = {name: (lambda n=name: schema(n)) for name in MODELS}


def render(name: str) -> str:
    return json.dumps(SCHEMAS[name](), indent=2, sort_keys=True) + "\n"
