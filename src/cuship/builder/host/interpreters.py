"""Every CPython on this machine a build job could use, one per Python version.

Where cuship looks, in order (the first interpreter that answers wins for its version):

1. ``[build] pythons``: interpreter paths the user named;
2. the running interpreter (the one cuship runs in);
3. ``python3.X`` in each directory on ``PATH``;
4. pyenv: ``$PYENV_ROOT/versions/*/bin/python3.X`` (``~/.pyenv`` by default), newest first;
5. uv-managed Pythons: ``uv python find --managed-python 3.X``, when uv is on ``PATH``.

Each candidate is asked, in a subprocess with a time limit, what it is (the one interpreter
probe, :func:`cuship.machine.interpreter.probe`): a candidate that fails (a pyenv shim for a
version not selected exits 127), is not CPython, is a free-threaded build (its wheels are
``cp3Xt``) or has no ``venv``/``ensurepip`` (the smoke venv needs them) is passed over, with the
reason kept. Finding and choosing are separate: the
candidates and the choice are pure, the probe is the only part that runs anything.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from packaging.version import InvalidVersion, Version

from cuship.builder.host.uvpython import fetch_python, uv_find
from cuship.errors import CannotStart, ConfigError, TimedOut, ToolMissing
from cuship.events import Emit, Event, discard
from cuship.machine.interpreter import Interpreter, NoAnswer, probe, running

__all__ = [
    "Candidate",
    "Interpreter",
    "Interpreters",
    "Probe",
    "Search",
    "Source",
    "UvFind",
    "UvInstall",
    "candidates",
    "choose",
    "find_interpreters",
    "looked",
    "probe_interpreter",
    "running_interpreter",
    "unusable",
]

Source = Literal["config", "running", "PATH", "pyenv", "uv"]

PROBE_TIMEOUT = 15.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """A file that may be a Python interpreter, and where cuship found it."""

    path: str
    source: Source


def unusable(found: Interpreter) -> str | None:
    """Why a job cannot use this interpreter; None when it can."""
    if found.implementation != "cpython":
        return f"{found.implementation}, not CPython"
    if found.free_threaded:
        return "a free-threaded build (its wheels are cp3Xt, not the job's cp3X)"
    if not (found.has("venv") and found.has("ensurepip")):
        return "no venv/ensurepip module (the smoke test's venv needs them)"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Interpreters:
    """The interpreter chosen for each Python version, where cuship looked, and what it passed over."""

    found: Mapping[str, Interpreter]
    looked: tuple[str, ...] = ()
    passed_over: tuple[tuple[str, str], ...] = ()  # (path, why)

    def get(self, version: str) -> Interpreter | None:
        return self.found.get(version)

    def not_found(self, version: str) -> str:
        """Why a job for ``version`` has no interpreter: where cuship looked, and what to do."""
        places = ", ".join(p.replace("3.X", version) for p in self.looked)
        return (
            f"needs Python {version}; none found (looked in {places}): "
            f"add its path to [build] pythons, or pass --fetch-python (uv)"
        )


Probe = Callable[[str, Mapping[str, str]], "Interpreter | str"]
"""Ask a candidate what it is: its :class:`Interpreter`, or why it did not answer."""

UvFind = Callable[[str, str, Mapping[str, str]], "str | None"]
"""``(uv, version, environ)`` → the path of a uv-managed CPython of that version, or None."""

UvInstall = Callable[[str, str, Mapping[str, str], Emit], "str | None"]
"""``(uv, version, environ, emit)`` → install that CPython with uv; its path, or None."""


def running_interpreter() -> Interpreter:
    """The interpreter cuship runs in."""
    return running("running")


def _pyenv_root(environ: Mapping[str, str]) -> Path:
    root = environ.get("PYENV_ROOT")
    if root:
        return Path(root)
    home = environ.get("HOME")
    return (Path(home) if home else Path.home()) / ".pyenv"


def _newest_first(dirs: Iterable[Path]) -> list[Path]:
    """pyenv's version directories, newest version first; names that are no version
    (virtualenvs, conda) after them, by name."""
    versions: list[tuple[Version, Path]] = []
    others: list[Path] = []
    for d in dirs:
        try:
            versions.append((Version(d.name), d))
        except InvalidVersion:
            others.append(d)
    return [d for _, d in sorted(versions, reverse=True)] + sorted(others)


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def candidates(version: str, environ: Mapping[str, str]) -> list[Candidate]:
    """``python3.X`` on PATH, then in pyenv's versions (newest first); reads directories only."""
    name = f"python{version}"
    found = [
        Candidate(path=str(Path(folder) / name), source="PATH")
        for folder in environ.get("PATH", "").split(os.pathsep)
        if folder and _executable(Path(folder) / name)
    ]
    versions = _pyenv_root(environ) / "versions"
    if versions.is_dir():
        found += [
            Candidate(path=str(d / "bin" / name), source="pyenv")
            for d in _newest_first(versions.iterdir())
            if _executable(d / "bin" / name)
        ]
    return found


def looked(environ: Mapping[str, str], *, configured: bool, uv: str | None) -> tuple[str, ...]:
    """Where :func:`candidates` and :func:`find_interpreters` look, for messages (``3.X``
    stands for the version)."""
    places = ["[build] pythons"] if configured else []
    places += ["the running interpreter", "python3.X on PATH"]
    places.append(f"{_pyenv_root(environ) / 'versions'}/*/bin/python3.X")
    places.append("uv-managed Pythons" if uv else "uv-managed Pythons (uv not on PATH)")
    return tuple(places)


def probe_interpreter(path: str, environ: Mapping[str, str]) -> Interpreter | str:
    """Ask ``path`` what it is (:data:`PROBE_TIMEOUT`): its record, or why not."""
    try:
        return probe(path, environ, timeout=PROBE_TIMEOUT)
    except TimedOut:
        return f"did not answer within {PROBE_TIMEOUT:g} s"
    except CannotStart as err:
        return f"cannot run: {err.reason}"
    except NoAnswer as err:
        return _said_instead(err)


def _said_instead(err: NoAnswer) -> str:
    """Why a candidate that ran is no interpreter: its exit, or the start of what it printed."""
    done = err.result
    if done is not None and done.returncode != 0 and not done.cut:
        return err.problem
    printed = "" if done is None else done.stdout
    first = (printed.strip().splitlines() or ["nothing"])[0][:120]
    return f"not a Python interpreter (it printed {first!r})"


def choose(
    version: str, found: Iterable[Candidate], probe: Callable[[str], Interpreter | str]
) -> tuple[Interpreter | None, list[tuple[str, str]]]:
    """The first candidate that is a usable CPython ``version``; and those passed over, with why."""
    passed: list[tuple[str, str]] = []
    seen: set[str] = set()
    for candidate in found:
        real = os.path.realpath(candidate.path)
        if real in seen:
            continue
        seen.add(real)
        said = probe(candidate.path)
        if isinstance(said, str):
            passed.append((candidate.path, said))
            continue
        problem = unusable(said) or (
            None if said.version == version else f"is Python {said.version}"
        )
        if problem:
            passed.append((candidate.path, problem))
            continue
        executable = said.executable if said.executable and Path(said.executable).is_file() else ""
        return replace(
            said, executable=executable or candidate.path, source=candidate.source
        ), passed
    return None, passed


def _configured(
    paths: Sequence[str],
    probe: Callable[[str], Interpreter | str],
    source: str,
    running: Interpreter,
) -> dict[str, Interpreter]:
    """Each ``[build] pythons`` path by its version; one that is no usable CPython is an error."""
    chosen: dict[str, Interpreter] = {}
    for path in paths:
        said = probe(path)
        problem = said if isinstance(said, str) else unusable(said)
        if problem is not None or isinstance(said, str):
            raise ConfigError(
                source,
                "build.pythons",
                f"{path!r} is not a usable CPython: {problem}",
                hint="name a python3.X executable (e.g. ~/.pyenv/versions/3.12.1/bin/python3.12)",
            )
        if os.path.realpath(path) == os.path.realpath(running.executable):
            chosen.setdefault(said.version, running)
            continue
        chosen.setdefault(said.version, replace(said, executable=path, source="config"))
    return chosen


@dataclass(frozen=True, slots=True, kw_only=True)
class Search:
    """How :func:`find_interpreters` looks; the defaults run the real probes."""

    environ: Mapping[str, str]
    running: Interpreter = field(default_factory=running_interpreter)
    configured: tuple[str, ...] = ()
    config_source: str = "cuship.toml"
    uv: str | None = None
    fetch: bool = False
    probe: Probe = probe_interpreter
    uv_find: UvFind | None = None  # default: :func:`uv_find`
    uv_install: UvInstall | None = None  # default: :func:`fetch_python`


def find_interpreters(
    versions: Iterable[str], search: Search, emit: Emit = discard
) -> Interpreters:
    """An interpreter for each of ``versions`` that this machine has (see the module's order).

    With ``search.fetch``, a version still missing is installed with ``uv python install``
    (said in an event; exit 3 when uv is not there to do it).
    """
    environ = search.environ

    def ask(path: str) -> Interpreter | str:
        return search.probe(path, environ)

    wanted = {*versions, search.running.version}
    found = _configured(search.configured, ask, search.config_source, search.running)
    passed: list[tuple[str, str]] = []
    for version in sorted(wanted - set(found), key=Version):
        if version == search.running.version:
            found[version] = search.running
            continue
        chosen, skipped = choose(version, candidates(version, environ), ask)
        passed += skipped
        for path, why in skipped:
            emit(
                Event(
                    level="debug",
                    topic="build",
                    message=f"Python {version}: passed over {path}: {why}",
                )
            )
        if chosen is None and search.uv:
            chosen = _from_uv(version, search, ask, emit)
        if chosen is not None:
            found[version] = chosen
    missing = sorted(wanted - set(found), key=Version)
    if search.fetch and missing and not search.uv:
        raise ToolMissing(
            f"--fetch-python: no Python {', '.join(missing)} here and no uv to fetch it",
            hint="install uv (pip install uv) or add the interpreters' paths to [build] pythons",
        )
    return Interpreters(
        found={v: found[v] for v in sorted(found, key=Version)},
        looked=looked(environ, configured=bool(search.configured), uv=search.uv),
        passed_over=tuple(passed),
    )


def _from_uv(
    version: str, search: Search, ask: Callable[[str], Interpreter | str], emit: Emit
) -> Interpreter | None:
    assert search.uv is not None
    find = search.uv_find or uv_find
    path = find(search.uv, version, search.environ)
    if path is None and search.fetch:
        path = (search.uv_install or fetch_python)(search.uv, version, search.environ, emit)
    if path is None:
        return None
    chosen, _ = choose(version, [Candidate(path=path, source="uv")], ask)
    return chosen
