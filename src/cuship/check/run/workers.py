"""Worker processes for ``cuship check``: start, send a case, wait with a timeout, replace on death."""

from __future__ import annotations

import contextlib
import json
import os
import select
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from cuship import process
from cuship.process import ended
from cuship.version import IMPORT_ROOT

__all__ = ["Worker", "WorkerDied", "WorkerSetup", "stderr_section", "worker_argv"]

_STDERR_TAIL_LINES = 15
# compute-sanitizer's own lines, should any reach the protocol channel: never an answer.
_SANITIZER_LINE = b"========="


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerSetup:
    """What every worker needs: the check modules, where they live, and its environment;
    ``packages`` are the project's top-level packages whose provenance a worker may report.

    ``prefix``: a command the worker runs under (compute-sanitizer and its options); ``marks``:
    the stream (path) and the worker's name in it, for the markers of a sanitized worker;
    ``fork``: a started worker may be forked to make more (a CPU run; see
    :mod:`cuship.check.run.forks`).
    """

    modules: tuple[str, ...]
    root: Path
    pythonpath: tuple[Path, ...]
    env: Mapping[str, str]
    packages: tuple[str, ...] = ()
    prefix: tuple[str, ...] = ()
    marks: tuple[str, str] | None = None
    fork: bool = False

    def hello(self, *, trace: bool = False) -> dict[str, Any]:
        document: dict[str, Any] = {
            "modules": list(self.modules),
            "root": str(self.root),
            "pythonpath": [str(p) for p in self.pythonpath],
        }
        if trace:
            document["packages"] = list(self.packages)
        if self.marks is not None:
            document["marks"] = list(self.marks)
        return document


def worker_argv(setup: WorkerSetup) -> list[str]:
    """The worker's command line: this interpreter, under ``setup.prefix`` when there is one."""
    return [*setup.prefix, sys.executable, "-m", "cuship.check.run._worker"]


class WorkerDied(Exception):
    """The worker crashed, hung or could not start; ``message`` says which and shows its stderr."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _package_root() -> str:
    return str(IMPORT_ROOT)


class Worker:
    """One ``python -m cuship.check.run._worker`` process speaking JSON lines."""

    def __init__(self, proc: process.Child, log: IO[str], *, group: bool = False) -> None:
        """``group``: the worker leads a process group of its own (it runs under a prefix, whose
        children must go with it)."""
        self.proc = proc
        self.log = log
        self.group = group
        assert proc.stdout is not None
        self.fd = proc.stdout.fileno()
        self.pending = b""
        self.greeting: dict[str, Any] = {}

    def _readline(self, timeout: float) -> bytes | None:
        """One line from the worker; None at end of file; TimeoutError when none comes in time."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line

    @classmethod
    def start(
        cls,
        setup: WorkerSetup,
        *,
        timeout: float,
        trace: bool = False,
        spawned: Callable[[Worker], None] | None = None,
    ) -> Worker:
        """Start a worker and wait for its hello; with ``trace`` its ``greeting`` carries the
        provenance of ``setup.packages``. ``spawned`` gets the worker as soon as its process
        exists (to kill it from another thread while it starts)."""
        env = dict(setup.env)
        env["PYTHONPATH"] = ":".join(p for p in (_package_root(), env.get("PYTHONPATH")) if p)
        env["PYTHONUNBUFFERED"] = "1"
        # Workers are the parallelism; torch's thread pools would only fight over the cores.
        env.setdefault("OMP_NUM_THREADS", "1")
        # Closed by stop(); it outlives this function on purpose.
        log = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        proc = process.start(
            worker_argv(setup),
            stdin=process.PIPE,
            stdout=process.PIPE,
            stderr=log,
            env=env,
            cwd=str(setup.root),
            text=False,
            group=bool(setup.prefix),
        )
        worker = cls(proc, log, group=bool(setup.prefix))
        if spawned is not None:
            spawned(worker)
        hello = worker.request(setup.hello(trace=trace), timeout=timeout, what="starting")
        if "fatal" in hello:
            worker.stop()
            raise WorkerDied(f"worker could not load the check modules: {hello['fatal']}")
        worker.greeting = hello
        return worker

    def request(
        self, document: Mapping[str, Any], *, timeout: float, what: str = "running the case"
    ) -> dict[str, Any]:
        """Send one request and wait for its answer; WorkerDied on crash or timeout."""
        self.send(document, what=what)
        return self.receive(timeout=timeout, what=what)

    def send(self, document: Mapping[str, Any], *, what: str = "running the case") -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(document).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerDied(self._death(what)) from None

    def receive(self, *, timeout: float, what: str = "running the case") -> dict[str, Any]:
        """The next answer, waiting at most ``timeout`` seconds; WorkerDied on crash or timeout."""
        line: bytes | None = _SANITIZER_LINE
        while line is not None and line.startswith(_SANITIZER_LINE):
            try:
                line = self._readline(timeout)
            except TimeoutError:
                tail = self._stderr_tail()
                self.kill()
                raise WorkerDied(
                    f"timed out after {timeout:g} s {what} (per-case limit: [check] timeout)" + tail
                ) from None
        if line is None:
            raise WorkerDied(self._death(what))
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _death(self, what: str) -> str:
        try:
            code = self.proc.wait(timeout=10)
        except TimeoutError:
            self.kill()
            code = self.proc.wait()
        return f"worker process {ended(code)} while {what}" + self._stderr_tail()

    def _stderr_tail(self) -> str:
        try:
            self.log.flush()
            self.log.seek(0)
            return stderr_section(self.log.read())
        except (OSError, ValueError):
            return ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # with its group, when it leads one
            self.proc.wait()

    def stop(self) -> None:
        """Close its stdin and wait for it to exit (under a sanitizer, which writes its summary
        at exit, longer), killing it when it does not."""
        if self.proc.poll() is None:
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
                self.proc.wait(timeout=60 if self.group else 5)
            except (TimeoutError, OSError):
                self.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self.log.close()


def stderr_section(text: str) -> str:
    """The end of a worker's stderr for a message: its last lines under a heading, or ""."""
    said = process.tail(text, _STDERR_TAIL_LINES)
    return f"\nworker stderr:\n{said}" if said else ""
