"""The one exception hierarchy of cuship; every class carries the exit code the CLI uses.

Exit codes (DESIGN.md): 0 success; 1 something checked failed; 2 bad usage, config or input;
3 a required tool or environment is missing; 4 nothing was checked or built. Anything else that
escapes a command is a bug: the CLI exits 70 and writes the traceback to a file (cli/_common.py).
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "CheckFailed",
    "ConfigError",
    "CushipError",
    "InputError",
    "NothingToDo",
    "ToolMissing",
    "UsageError",
]


class CushipError(Exception):
    """Base of every error cuship raises on purpose.

    ``message`` says what is wrong and quotes the bad input; ``hint`` says what to do next.
    """

    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}\n  hint: {self.hint}"
        return self.message


class CheckFailed(CushipError):
    """Something that was checked failed: validation, verification, a regression gate."""

    exit_code = 1


class UsageError(CushipError):
    """The command line asked for something that cannot be done as asked."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration file is malformed or holds an impossible value."""

    def __init__(self, source: str, key: str | None, problem: str, *, hint: str | None = None):
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {problem}", hint=hint)
        self.source = source
        self.key = key


class InputError(UsageError):
    """An input file (wheel, shared object, index, baseline) is broken or of the wrong kind."""


class ToolMissing(CushipError):
    """A required tool or environment (nvcc, a container engine, an extra) is missing."""

    exit_code = 3


class NothingToDo(CushipError):
    """Nothing was selected, built or checked: an empty run is never a success."""

    exit_code = 4
