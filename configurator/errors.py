"""Domain exceptions and the process exit codes, defined once."""

from __future__ import annotations

from enum import IntEnum


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
