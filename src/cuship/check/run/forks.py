"""Workers forked from a worker that has already imported everything (parent side).

A worker that has loaded the check modules and imported the engines (torch and Triton, Numba)
is kept as a *zygote*: each lane's worker is a fork of it, ready in milliseconds where a fresh
Python pays those imports again (seconds), and a worker killed by a crashing case is replaced
by another fork. A fork talks to the parent over a Unix socket; its output goes to a log of its
own, to which the zygote appends its exit status when it reaps it. Only CPU runs fork, and the
zygote refuses while it has more than one thread (see :mod:`cuship.check.run._fork`); then lanes
start fresh workers as before.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cuship import _read
from cuship._fs import remove_tree
from cuship.check.run._fork import EXIT_LINE
from cuship.check.run.workers import Worker, WorkerDied, stderr_section

__all__ = ["ForkRefused", "ForkedWorker", "Zygote"]

_EXIT_WAIT_S = 5.0  # for the zygote to reap a dead fork and write its exit status


class ForkRefused(WorkerDied):
    """The zygote would not fork (it runs threads, or holds a CUDA context)."""


class ForkedWorker(Worker):
    """A forked worker: the same protocol as :class:`Worker`, over a Unix socket."""

    def __init__(self, conn: socket.socket, pid: int, folder: Path) -> None:
        # No Popen here: the process is the zygote's child, so kill() and the exit status
        # go through a pidfd and the log rather than through Popen.
        self.conn = conn
        self.fd = conn.fileno()
        self.pending = b""
        self.greeting = {}
        self.group = False
        self.pid = pid
        self.folder = folder
        self.log_path = folder / "log"
        try:
            self.pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self.pidfd = -1

    def send(self, document: Mapping[str, Any], *, what: str = "running the case") -> None:
        try:
            self.conn.sendall(json.dumps(document).encode() + b"\n")
        except OSError:
            raise WorkerDied(self._death(what)) from None

    def _lines(self) -> list[str]:
        try:
            return _read.read_tail(self.log_path).splitlines()
        except OSError:
            return []

    def _death(self, what: str) -> str:
        deadline = time.monotonic() + _EXIT_WAIT_S
        how = f"(forked, pid {self.pid}) ended"
        while time.monotonic() < deadline:
            ends = [line for line in self._lines() if line.startswith(EXIT_LINE)]
            if ends:
                how = ends[-1].removeprefix(EXIT_LINE).strip()
                break
            time.sleep(0.02)
        return f"worker process {how} while {what}" + self._stderr_tail()

    def _stderr_tail(self) -> str:
        return stderr_section("\n".join(s for s in self._lines() if not s.startswith(EXIT_LINE)))

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            if self.pidfd >= 0:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            else:
                os.kill(self.pid, signal.SIGKILL)

    def stop(self) -> None:
        """Close its socket (it exits at end of file; the zygote reaps it) and its files."""
        with contextlib.suppress(OSError):
            self.conn.close()
        if self.pidfd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
            self.pidfd = -1
        remove_tree(self.folder.parent, self.folder.name)


class Zygote:
    """A started worker with engines imported, kept only to be forked (thread-safe)."""

    def __init__(self, worker: Worker, ready: frozenset[str], timeout: float) -> None:
        self.worker = worker
        self.ready = ready
        self.timeout = timeout
        self._lock = threading.Lock()

    def fork(self) -> ForkedWorker:
        """A new worker, a copy of the zygote; ForkRefused or WorkerDied when none can be had."""
        with self._lock:
            folder = Path(tempfile.mkdtemp(prefix="cuship-fork-"))
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self._listen(listener, folder / "s")
                pid = self._request(folder)
                try:
                    conn, _ = listener.accept()
                except OSError as err:
                    raise WorkerDied(f"a forked worker did not connect: {err}") from None
            except BaseException:
                remove_tree(folder.parent, folder.name)
                raise
            finally:
                listener.close()
        conn.setblocking(True)
        worker = ForkedWorker(conn, pid, folder)
        try:
            worker.greeting = worker.receive(timeout=self.timeout, what="starting")
        except WorkerDied:
            worker.stop()
            raise
        return worker

    def _listen(self, listener: socket.socket, path: Path) -> None:
        try:
            listener.bind(str(path))
            listener.listen(1)
        except OSError as err:  # a path too long for a socket (a deep TMPDIR), say
            raise ForkRefused(f"no socket for a forked worker at {path}: {err}") from None
        listener.settimeout(self.timeout)

    def _request(self, folder: Path) -> int:
        spec = {"socket": str(folder / "s"), "log": str(folder / "log")}
        answer = self.worker.request({"fork": spec}, timeout=self.timeout, what="forking a worker")
        pid = int(answer.get("forked") or 0)
        if not pid:
            raise ForkRefused(f"the worker would not fork: {answer.get('why', 'no reason given')}")
        return pid

    def close(self) -> None:
        self.worker.stop()
