"""JSON Schemas generated from the pydantic result models (schemas/*.schema.json)."""

from __future__ import annotations

import json


def estimate_schema() -> dict:
    from configurator.estimate import EstimateResult

    schema = EstimateResult.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://github.com/vllm-configurator/schemas/estimate.schema.json"
    return schema


def calibration_schema() -> dict:
    from configurator.calibration import Calibration

    schema = Calibration.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://github.com/vllm-configurator/schemas/calibration.schema.json"
    return schema


SCHEMAS = {"estimate.schema.json": estimate_schema, "calibration.schema.json": calibration_schema}


def render(name: str) -> str:
    return json.dumps(SCHEMAS[name](), indent=2, sort_keys=True) + "\n"
