"""Worker side of a forked worker: whether this worker may fork, the child's set-up, and the
reaping of children (their exit status goes into their log for the parent to read).

A worker forks only while it is a single thread: the Triton interpreter, the Numba simulator
and torch on the CPU with ``OMP_NUM_THREADS=1`` leave none running after their imports and
kernels, and a copy of a process whose other threads held a lock (an OpenMP pool, a CUDA
driver thread) could deadlock in the child. Workers under compute-sanitizer never fork.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType
from typing import IO, NoReturn

from cuship.process import ended

__all__ = ["EXIT_LINE", "adopt", "blocker", "child"]

# The line the worker appends to a forked child's log when it reaps it: "<EXIT_LINE> how".
EXIT_LINE = "cuship-worker-exit:"

_CHILDREN: dict[int, str] = {}  # pid -> log path; only the main thread touches it


def _threads() -> int:
    try:
        return sum(1 for _ in Path("/proc/self/task").iterdir())
    except OSError:
        return threading.active_count()


def blocker(*, sanitized: bool) -> str | None:
    """Why this worker must not fork now (None: it may)."""
    if sanitized:
        return "a worker under compute-sanitizer is never forked"
    threads = _threads()
    if threads > 1:
        return f"the worker runs {threads} threads (a copy could deadlock on a lock one held)"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "the worker has a CUDA context (a forked child cannot use it)"
    return None


def _how(status: int) -> str:
    return ended(os.waitstatus_to_exitcode(status))


def _reap(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    for pid in list(_CHILDREN):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 0
        if done:
            path = _CHILDREN.pop(pid)
            try:
                with open(path, "a", encoding="utf-8") as log:
                    log.write(f"\n{EXIT_LINE} {_how(status)}\n")
            except OSError:  # the parent has closed that worker and removed its log
                pass


def adopt(pid: int, log: str) -> None:
    """Record a forked child: when it ends, its exit status goes into ``log``."""
    _CHILDREN[pid] = log
    signal.signal(signal.SIGCHLD, _reap)


def child(
    spec: Mapping[str, str], channel: IO[str], serve: Callable[[IO[str], IO[str]], None]
) -> NoReturn:
    """In the child: drop the parent worker's channels, connect to the socket, say ready and
    serve it until the parent closes it. Never returns."""
    code = 0
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _CHILDREN.clear()
        # The parent must see end-of-file on the forking worker's channel when that one dies.
        channel.close()
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        log = os.open(spec["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(spec["socket"])
        reader = conn.makefile("r", encoding="utf-8")
        writer = conn.makefile("w", encoding="utf-8")
        writer.write('{"ready": true}\n')
        writer.flush()
        serve(reader, writer)
    except BaseException:  # the child must never return into the parent worker's loop
        traceback.print_exc()
        code = 1
    finally:
        sys.stderr.flush()
        os._exit(code)
