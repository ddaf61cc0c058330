"""Domain exceptions and the process exit codes, defined once."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from configurator.record import doc, to_json


class ExitCode(IntEnum):
    """What the CLI returns: 0 fits / clean, 1 vLLM would refuse / error findings, 2 bad input,
    3 not predicted (`estimate` without a GPU, or a start-up vLLM runs on its V0 engine: no verdict)."""

    OK = 0
    FAIL = 1
    USAGE = 2
    NOT_PREDICTED = 3


class ConfiguratorError(Exception):
    """Base of every error the library raises on purpose; the CLI prints it as one line."""

    exit_code = ExitCode.USAGE


class InputError(ConfiguratorError):
    """The user's input (flag, file, name) is invalid."""


class NotFoundError(InputError):
    """A model, GPU or file that was named does not exist; carries the nearest known names."""

    def __init__(self, what: str, name: str, suggestions: list[str] | None = None, hint: str = ""):
        self.suggestions = suggestions or []
        self.what, self.name, self.hint = what, name, hint
        msg = f"unknown {what} '{name}'"
        if self.suggestions:
            msg += f"; nearest: {', '.join(self.suggestions)}"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)


class ConfigError(InputError):
    """A model config.json cannot be understood (malformed, truncated, missing geometry)."""


@dataclass(kw_only=True)
class ErrorDetail:
    message: str = doc(description="the error, as the one line printed on standard error without --format json")
    exit_code: int = doc(description="the process exit code (2: bad input)")


# output, so plain records (configurator/record.py): printing an error imports no validation library
@dataclass(kw_only=True)
class ErrorReport:
    """What a command run with `--format json` prints on standard output when it fails with bad input (exit 2)
    instead of its report: `{"error": {"message": ..., "exit_code": 2}}`."""

    error: ErrorDetail

    @classmethod
    def of(cls, message: str, code: int) -> ErrorReport:
        return cls(error=ErrorDetail(message=message, exit_code=int(code)))

    def to_json(self, indent: int | None = 2) -> str:
        return to_json(self, indent)
