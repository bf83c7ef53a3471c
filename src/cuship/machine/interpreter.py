"""A Python interpreter as it describes itself: one record, one probe, one reader.

Every part of cuship that asks "what is this Python" asks here: the builder choosing among the
interpreters it finds, the resolver reading the environment a frontend installs into and the
interpreter ``cuship install --python`` names, gpu-run's interpreter (from inside, with
cuship). The probe is one script (:mod:`cuship.machine._ask`), run as ``python -I -c`` with a
time limit, no ``PYTHON*`` variables and its output kept to 1 MiB (past that it is ended: the
answer is a few KiB); its answer is read through :func:`cuship._read.loads` and held to a
schema. An interpreter that hangs is :class:`~cuship.errors.TimedOut`, one that cannot start
:class:`~cuship.errors.CannotStart`, one that answers anything but the answer
:class:`NoAnswer`; each caller words these for its own command.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cuship import _read, process
from cuship._format import size_text
from cuship._record import frozen
from cuship.errors import InputError
from cuship.machine import _ask
from cuship.schema.check import check

__all__ = [
    "KEEP",
    "Interpreter",
    "NoAnswer",
    "answer",
    "parse",
    "probe",
    "read",
    "running",
    "script",
]

KEEP = 1 << 20  # bytes of an answer kept: a few KiB (its path and its tags)


@frozen
class Interpreter:
    """A Python interpreter: what it said of itself, and how it was found (``source``: the
    builder's ``PATH``/``pyenv``/..., the resolver's ``CUSHIP_TARGET_PYTHON``/...)."""

    version: str  # "3.12": the version its wheels are tagged for
    full: str  # "3.12.1": sys.version_info[:3]
    executable: str
    source: str = ""
    python: str = ""  # platform.python_version(): "3.13.0rc1" where ``full`` is "3.13.0"
    implementation: str = "cpython"
    free_threaded: bool = False
    in_venv: bool = False
    paths: tuple[str, ...] = ()  # sys.path, empty entries left out
    site: tuple[str, ...] = ()  # its site directories (see :mod:`cuship.machine.sites`)
    modules: tuple[str, ...] = ()  # which of pip, pytest, venv, ensurepip it can import
    tags: tuple[str, ...] = ()  # its wheel tags, best first; (): no packaging to compute them

    @property
    def running(self) -> bool:
        return self.source == "running"

    @property
    def tag(self) -> str:
        return "cp" + self.version.replace(".", "")

    def has(self, module: str) -> bool:
        """Whether it can import ``module`` (one of pip, pytest, venv, ensurepip)."""
        return module in self.modules

    def describe(self) -> str:
        """``3.12.1 (pyenv: /root/.pyenv/versions/3.12.1/bin/python3.12)``."""
        return f"{self.full} ({self.source}: {self.executable})"

    def to_json(self) -> dict[str, str]:
        return {"version": self.full, "executable": self.executable, "source": self.source}


class NoAnswer(InputError):
    """An interpreter that ran but did not answer the probe: ``problem`` says what it did
    instead (``it printed more than 1 MiB``, ``its answer is not JSON ...``, ``exit 127``),
    ``result`` is the process (its exit code and what it printed), None for a document read."""

    def __init__(self, python: str, problem: str, result: process.Result | None = None) -> None:
        super().__init__(
            f"{python!r} did not answer what Python it is: {problem}",
            hint="give the path of a working Python interpreter",
        )
        self.problem = problem
        self.result = result


_TEXT = {"type": "string", "maxLength": 4096}
_TEXTS = {"type": "array", "items": _TEXT, "maxItems": 10_000}
_NUMBER = {"type": "integer", "minimum": 0, "maximum": 100_000}
_ANSWER = {
    "type": "object",
    "required": ["executable", "version", "python", "implementation"],
    "properties": {
        "executable": _TEXT,
        "version": {"type": "array", "items": _NUMBER, "minItems": 3, "maxItems": 3},
        "python": {"type": "string", "maxLength": 64},
        "implementation": {"type": "string", "maxLength": 64},
        "free_threaded": {"type": "boolean"},
        "in_venv": {"type": "boolean"},
        "paths": _TEXTS,
        "site": _TEXTS,
        "modules": _TEXTS,
        "tags": {"anyOf": [_TEXTS, {"type": "null"}]},
    },
}


def read(answer: Any, *, source: str = "", what: str = "its answer") -> Interpreter:
    """The record of a probe's answer (a decoded document); a document that is not one is a
    :class:`~cuship.schema.check.SchemaRefused` naming ``what`` and the place."""
    check(answer, _ANSWER, what)
    return _record(answer, source)


def _record(answer: Mapping[str, Any], source: str) -> Interpreter:
    major, minor, micro = answer["version"]
    return Interpreter(
        version=f"{major}.{minor}",
        full=f"{major}.{minor}.{micro}",
        executable=answer["executable"],
        source=source,
        python=answer["python"],
        implementation=answer["implementation"],
        free_threaded=answer.get("free_threaded", False),
        in_venv=answer.get("in_venv", False),
        paths=tuple(answer.get("paths", ())),
        site=tuple(answer.get("site", ())),
        modules=tuple(answer.get("modules", ())),
        tags=tuple(answer.get("tags") or ()),
    )


def parse(stdout: str, *, source: str = "") -> Interpreter:
    """The record of what the probe printed (its last line: a ``sitecustomize`` may print
    before it); an :class:`~cuship.errors.InputError` saying what is wrong with it."""
    lines = stdout.strip().splitlines()
    try:
        answer = _read.loads(lines[-1] if lines else "")
    except _read.JsonRefused as err:
        raise InputError(f"its answer {err.problem}") from None
    return read(answer, source=source)


@functools.cache
def script() -> str:
    """The probe's text (``python -I -c`` runs it)."""
    return _read.read_text(Path(_ask.__file__), _read.SOURCE)


def probe(
    python: str,
    environ: Mapping[str, str],
    *,
    timeout: float,
    source: str = "",
    lend: str | None = None,
) -> Interpreter:
    """Ask ``python`` what it is (see the module); ``lend``: a directory holding ``packaging``
    for its tags. :class:`~cuship.errors.TimedOut`, :class:`~cuship.errors.CannotStart` or
    :class:`NoAnswer` when it does not say."""
    env = {k: v for k, v in environ.items() if not k.startswith("PYTHON")}
    argv = [python, "-I", "-c", script(), *([lend] if lend else [])]
    done = process.run(argv, env=env, timeout=timeout, keep=KEEP, stop_past_keep=True)
    if done.cut:
        raise NoAnswer(python, f"it printed more than {size_text(KEEP)}", done)
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no output"])[0]
        raise NoAnswer(python, f"exit {done.returncode}: {said}", done)
    try:
        return parse(done.stdout, source=source)
    except InputError as err:
        raise NoAnswer(python, err.message, done) from None


def answer() -> dict[str, object]:
    """The probe's answer for the interpreter cuship runs in, asked in this process (the same
    script, imported): what :func:`read` reads."""
    return _ask.about()


def running(source: str = "running") -> Interpreter:
    """The interpreter cuship runs in (see :func:`answer`; its own answer, not held to the
    schema: a thousand tags checked one by one would cost every command's start)."""
    return _record(answer(), source)
