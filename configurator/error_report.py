"""What a command run with `--format json` prints when it fails with bad input (schemas/error.schema.json).

Apart from configurator.errors so that importing the exceptions does not import pydantic."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ErrorDetail(BaseModel):
    message: str = Field(description="the error, as the one line printed on standard error without --format json")
    exit_code: int = Field(description="the process exit code (2: bad input)")


class ErrorReport(BaseModel):
    """What a command run with `--format json` prints on standard output when it fails with bad input (exit 2)
    instead of its report: `{"error": {"message": ..., "exit_code": 2}}`."""

    error: ErrorDetail

    @classmethod
    def of(cls, message: str, code: int) -> ErrorReport:
        return cls(error=ErrorDetail(message=message, exit_code=int(code)))
