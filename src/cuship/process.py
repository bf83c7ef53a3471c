"""The one way cuship starts a process (DESIGN.md: one process runner starts every subprocess).

:func:`run` runs a command to its end: output captured (or appended to a log), an optional time
limit, input. :func:`start` starts one for the callers that talk to it while it runs (check's
workers) or must end it from another thread (a build interrupted). Either way:

* the process leads a session (and process group) of its own, and is ended with everything it
  started: on the time limit, on Ctrl-C (``KeyboardInterrupt``, then re-raised) or any other
  exception while waiting. Killing pip alone would leave its compilers running; ncu alone, the
  Python it profiles.
* an executable that cannot be started (missing, not executable) is
  :class:`~cuship.errors.CannotStart` (a ToolMissing, exit 3) naming it and what to do; the time
  limit is :class:`~cuship.errors.TimedOut` naming the command and the limit.

A process in a session of its own does not get the terminal's Ctrl-C; that is why the runner
ends it itself.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from cuship import _read
from cuship._format import size_text
from cuship._record import frozen
from cuship.errors import CannotStart, CheckFailed, TimedOut

__all__ = ["DEVNULL", "KEEP", "PIPE", "Child", "Result", "ended", "run", "start", "tail"]

PIPE = subprocess.PIPE
DEVNULL = subprocess.DEVNULL
_STDOUT = subprocess.STDOUT
_REAP = 10.0  # seconds to collect a killed group's output before leaving it
KEEP = _read.CHILD_OUTPUT.limit  # bytes of each stream :func:`run` keeps by default
_TAIL = 64 << 10  # bytes kept from the end of a stream past ``keep``


def ended(code: int) -> str:
    """How a process ended, from its exit code (negative: the signal that killed it), in the one
    wording every message uses: ``exited with status 3``, ``killed by SIGSEGV``."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def tail(text: str, lines: int = 15) -> str:
    """The last ``lines`` lines of ``text``, surrounding blank space left out: the part of a
    tool's output an error message quotes."""
    return "\n".join(text.strip().splitlines()[-lines:])


@frozen
class Result:
    """A finished process: its exit code and captured output (empty when not captured)."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str = ""
    stderr: str = ""
    cut: bool = False  # more was printed than kept (see :func:`run`'s ``keep``)

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def output(self) -> str:
        """stdout, then stderr."""
        return self.stdout + self.stderr

    def tail(self, lines: int = 15) -> str:
        """The last ``lines`` lines of stderr (of stdout when stderr is empty)."""
        return tail(self.stderr if self.stderr.strip() else self.stdout, lines)


class Child:
    """A started process that leads its own process group (unless started with
    ``group=False``); :meth:`kill` ends the group."""

    def __init__(self, popen: subprocess.Popen[Any], *, group: bool) -> None:
        self._popen = popen
        self.group = group

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def stdin(self) -> IO[Any] | None:
        return self._popen.stdin

    @property
    def stdout(self) -> IO[Any] | None:
        return self._popen.stdout

    @property
    def stderr(self) -> IO[Any] | None:
        return self._popen.stderr

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    def poll(self) -> int | None:
        return self._popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code; :class:`TimeoutError` when it has not exited within ``timeout``."""
        try:
            return self._popen.wait(timeout)
        except subprocess.TimeoutExpired as err:
            raise TimeoutError(f"still running after {timeout:g} s") from err

    def communicate(self, input: Any = None, timeout: float | None = None) -> tuple[Any, Any]:
        """(stdout, stderr) read to the end; :class:`TimeoutError` past ``timeout`` (the process
        runs on, and a later call carries on reading)."""
        try:
            return self._popen.communicate(input, timeout)
        except subprocess.TimeoutExpired as err:
            raise TimeoutError(f"still running after {timeout:g} s") from err

    def kill(self) -> None:
        """SIGKILL the process and, when it leads one, its whole group (what it started)."""
        if self.group:
            try:
                os.killpg(self._popen.pid, signal.SIGKILL)
                return
            except (ProcessLookupError, PermissionError):
                pass
        with contextlib.suppress(ProcessLookupError):
            self._popen.kill()

    def end(self) -> None:
        """Kill it (with its group) and collect it; its pipes are drained for a few seconds."""
        self.kill()
        try:
            self._popen.communicate(timeout=_REAP)
        except (subprocess.TimeoutExpired, ValueError, OSError):
            # a grandchild that left the group holds a pipe open, or the pipes were closed
            self._popen.wait()


def start(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stdin: int | IO[Any] | None = DEVNULL,
    stdout: int | IO[Any] | None = PIPE,
    stderr: int | IO[Any] | None = PIPE,
    text: bool = True,
    group: bool = True,
    name: str | None = None,
    hint: str | None = None,
) -> Child:
    """Start ``argv`` (``group``: in a session of its own, ended together by :meth:`Child.kill`).

    :class:`~cuship.errors.CannotStart` (a ToolMissing) when its executable cannot be started
    (``name``: what to call it there, ``hint``: what to do); a working directory that does not
    exist stays an OSError (the caller's mistake, not a missing tool)."""
    try:
        popen = subprocess.Popen(
            list(argv),
            env=None if env is None else dict(env),
            cwd=cwd,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            text=text,
            errors="replace" if text else None,
            start_new_session=group,
        )
    except OSError as err:
        if cwd is not None and err.filename is not None and str(err.filename) == str(cwd):
            raise  # the working directory, not the tool: the caller's own mistake
        raise CannotStart(argv, err.strerror or str(err), name=name, hint=hint) from err
    return Child(popen, group=group)


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    log: IO[str] | None = None,
    timeout: float | None = None,
    input: str | None = None,
    check: bool = False,
    name: str | None = None,
    hint: str | None = None,
    keep: int = KEEP,
    stop_past_keep: bool = False,
) -> Result:
    """Run ``argv`` to its end in a process group of its own and return what it did.

    Output is captured as text (undecodable bytes replaced), at most ``keep`` bytes of each
    stream (:data:`KEEP` by default; a tool that prints 3 GB costs that much memory, not 3 GB):
    past it the start and the last 64 KiB are kept and :attr:`Result.cut` says so. With ``log``
    stdout and stderr go to that open file instead. Past ``timeout`` seconds the group is
    killed and :class:`TimedOut` raised; on any exception while waiting (Ctrl-C) the group is
    killed and the exception re-raised. ``check``: an exit code other than 0 is
    :class:`CheckFailed` quoting the tail of its stderr. ``stop_past_keep``: a process that
    prints more than ``keep`` is ended there (a probe whose answer is a few KiB: past the bound
    the answer is no answer, and reading 3 GB to throw it away takes time).
    """
    captured = log is None
    child = start(
        argv,
        env=env,
        cwd=cwd,
        stdin=DEVNULL if input is None else PIPE,
        stdout=PIPE if captured else log,
        stderr=PIPE if captured else _STDOUT,
        text=not captured,
        name=name,
        hint=hint,
    )
    streams: _Streams | None = None
    try:  # from here on, a Ctrl-C (even one while the readers start) ends the group
        if captured:
            streams = _Streams(child, keep, input, stop=stop_past_keep)
        code = _wait(child, streams, timeout)
    except TimeoutError as expired:
        _end(child, streams)
        raise TimedOut(argv, timeout or 0.0, name=name) from expired
    except BaseException:
        _end(child, streams)
        raise
    out, err, cut = streams.texts() if streams is not None else ("", "", False)
    done = Result(argv=tuple(argv), returncode=code, stdout=out, stderr=err, cut=cut)
    if check and not done.ok:
        said = done.tail()
        raise CheckFailed(
            f"{shlex.join(argv)!r} failed (exit {done.returncode})" + (f":\n{said}" if said else "")
        )
    return done


class _Kept:
    """What one stream said, bounded: its first ``keep`` bytes and, past them, its last 64 KiB."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            over = len(self.tail) - _TAIL
            if over > 0:
                del self.tail[:over]
                self.dropped += over

    def text(self) -> str:
        body = bytes(self.head)
        if self.tail:
            gap = f"\n[... {size_text(self.dropped)} not kept ...]\n" if self.dropped else ""
            body += gap.encode() + bytes(self.tail)
        return body.decode("utf-8", errors="replace")


class _Streams:
    """Threads that feed ``input`` to a child and drain its stdout and stderr, bounded."""

    def __init__(self, child: Child, keep: int, input: str | None, *, stop: bool) -> None:
        self.kept = (_Kept(keep), _Kept(keep))
        over = child.kill if stop else None
        self.threads = [
            threading.Thread(target=_drain, args=(pipe, kept, over), daemon=True)
            for pipe, kept in zip((child.stdout, child.stderr), self.kept, strict=True)
        ]
        if input is not None:
            self.threads.append(
                threading.Thread(target=_feed, args=(child.stdin, input), daemon=True)
            )
        for thread in self.threads:
            thread.start()

    def join(self, deadline: float | None) -> bool:
        """Whether every stream ended by ``deadline`` (monotonic seconds; None: no limit)."""
        for thread in self.threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in self.threads)

    def texts(self) -> tuple[str, str, bool]:
        out, err = self.kept
        return out.text(), err.text(), bool(out.tail or err.tail)


def _drain(pipe: IO[bytes] | None, kept: _Kept, over: Callable[[], None] | None) -> None:
    if pipe is None:
        return
    with contextlib.suppress(OSError, ValueError):
        while chunk := pipe.read1(1 << 16):  # type: ignore[attr-defined]
            kept.add(chunk)
            if over is not None and kept.tail:  # past the bound: end it, read what is left
                over()
                over = None
    with contextlib.suppress(OSError):
        pipe.close()


def _feed(pipe: IO[bytes] | None, input: str) -> None:
    if pipe is None:
        return
    with contextlib.suppress(OSError, ValueError):
        pipe.write(input.encode("utf-8"))
    with contextlib.suppress(OSError, ValueError):
        pipe.close()


def _wait(child: Child, streams: _Streams | None, timeout: float | None) -> int:
    """The child's exit code once it and its output streams have ended; TimeoutError past
    ``timeout`` seconds (the streams' end counts: a grandchild may hold them open)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    code = child.wait(timeout)
    if streams is not None and not streams.join(deadline):
        raise TimeoutError(f"its output did not end within {timeout:g} s")
    return code


def _end(child: Child, streams: _Streams | None) -> None:
    """Kill the child's group and collect it; its streams drained for a few seconds."""
    if streams is None:
        child.end()
        return
    child.kill()
    streams.join(time.monotonic() + _REAP)
    child.wait()
