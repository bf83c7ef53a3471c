"""The one exception hierarchy of cuship; every class carries the exit code the CLI uses.

Exit codes (DESIGN.md): 0 success; 1 something checked failed; 2 bad usage, config or input;
3 a required tool or environment is missing; 4 nothing was checked or built. Anything else that
escapes a command is a bug: the CLI exits 70 and writes the traceback to a file (cli/_common.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

__all__ = [
    "INTERNAL_ERROR",
    "INTERRUPTED",
    "CannotStart",
    "CheckFailed",
    "ConfigError",
    "CushipError",
    "InputError",
    "NothingToDo",
    "TimedOut",
    "ToolMissing",
    "UsageError",
]


INTERNAL_ERROR = 70  # EX_SOFTWARE in sysexits.h: a bug in cuship, its traceback in a file
INTERRUPTED = 130  # 128 + SIGINT, as shells report a command ended by Ctrl-C


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


class CannotStart(ToolMissing):
    """A command's executable could not be started (missing, not executable): ``argv`` the
    command, ``reason`` the system's words ("No such file or directory")."""

    def __init__(
        self, argv: Sequence[str], reason: str, *, name: str | None = None, hint: str | None = None
    ) -> None:
        super().__init__(
            f"cannot run {name or argv[0]!r}: {reason}",
            hint=hint or f"check that {argv[0]!r} is installed and executable",
        )
        self.argv = tuple(argv)
        self.reason = reason


class TimedOut(CushipError):
    """A command ran past its time limit (and was ended): a tool that hangs is as good as a
    missing one, so the exit code is 3. ``argv`` and ``timeout`` say which and how long."""

    exit_code = 3

    def __init__(
        self,
        argv: Sequence[str],
        timeout: float,
        *,
        name: str | None = None,
        hint: str | None = None,
    ) -> None:
        what = name or " ".join(argv)
        what = what if len(what) <= 200 else what[:197] + "..."  # a `python -c` program
        super().__init__(
            f"{what!r} did not finish within {timeout:g} s and was stopped",
            hint=hint or "check that it is not waiting for something (a lock, the network)",
        )
        self.argv = tuple(argv)
        self.timeout = timeout


class NothingToDo(CushipError):
    """Nothing was selected, built or checked: an empty run is never a success."""

    exit_code = 4
