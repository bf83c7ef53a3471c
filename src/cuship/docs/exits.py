"""The exit codes: the error classes of :mod:`cuship.errors` and the codes the CLI adds."""

from __future__ import annotations

import inspect

from cuship import errors
from cuship.docs._md import code, table, text

__all__ = ["classes", "render"]


def classes() -> list[type[errors.CushipError]]:
    """Every public error class, the base first, then by exit code and name."""
    found: list[type[errors.CushipError]] = [errors.CushipError]
    pending = list(errors.CushipError.__subclasses__())
    while pending:
        cls = pending.pop()
        if cls.__module__ == errors.__name__ and not cls.__name__.startswith("_"):
            found.append(cls)
        pending += cls.__subclasses__()
    return [found[0], *sorted(set(found[1:]), key=lambda c: (c.exit_code, c.__name__))]


def _first_line(cls: type) -> str:
    return inspect.cleandoc(cls.__doc__ or "").split("\n\n", 1)[0]


def render() -> str:
    """The page: the codes, then the classes that carry them."""
    from cuship.errors import INTERNAL_ERROR, INTERRUPTED

    by_code: dict[int, list[str]] = {0: []}
    for cls in classes()[1:]:
        by_code.setdefault(cls.exit_code, []).append(code(cls.__name__))
    meaning = {
        0: "success: everything asked for was done and every check passed",
        INTERNAL_ERROR: "a bug in cuship: one line on stderr names it and the file holding its "
        "traceback (`$XDG_CACHE_HOME/cuship/crash-*.txt`, `~/.cache` by default, else the "
        "temp directory)",
        INTERRUPTED: "interrupted (Ctrl-C); every command the run started is ended with it",
    }
    for cls in sorted(classes()[1:], key=lambda c: len(c.__mro__)):  # the code's own class first
        meaning.setdefault(cls.exit_code, _first_line(cls))
    rows = [
        [code(str(number)), text(meaning[number]), ", ".join(by_code.get(number, []))]
        for number in sorted({*by_code, INTERNAL_ERROR, INTERRUPTED})
    ]
    detail = [
        [code(cls.__name__), code(str(cls.exit_code)), text(_first_line(cls))] for cls in classes()
    ]
    return "\n".join(
        [
            "# Exit codes\n",
            "Every command exits with one of these codes. Generated from the error classes of "
            "`src/cuship/errors.py` (each carries its code; only the CLI turns one into an "
            "exit) and the codes `src/cuship/cli/_common.py` adds. A click usage error (an "
            "unknown option, a missing argument) is 2. Where a command combines several "
            "outcomes (`cuship gpu-run`'s stages) its page says which code wins.\n",
            table(["code", "meaning", "raised as"], rows),
            "## Error classes\n",
            "Every error cuship raises on purpose says what is wrong, quoting the bad input, and "
            "a `hint:` line saying what to do next.\n",
            table(["class", "exit code", "what it means"], detail),
        ]
    )
