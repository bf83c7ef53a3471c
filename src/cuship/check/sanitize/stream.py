"""The FIFO a sanitized pass writes to, read by a thread of the parent (see
:mod:`cuship.check.sanitize.map` for what goes into it).

The parent opens the read end first (non-blocking, so that it does not wait for a writer), then
a write end of its own: the FIFO never reports end of file while workers come and go, a writer's
``open`` never blocks, and the parent can write its own markers (a worker's exit).
"""

from __future__ import annotations

import os
import select
import stat
import threading
import time
from pathlib import Path
from types import TracebackType

from cuship._fs import remove_file
from cuship.check.sanitize.map import marker

__all__ = ["MarkedStream"]


class MarkedStream:
    """A FIFO at ``path``, drained by a thread into memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        os.mkfifo(path, 0o600)
        self._read = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self._write = os.open(path, os.O_WRONLY)
        self._chunks: list[bytes] = []
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def __enter__(self) -> MarkedStream:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def _drain(self) -> None:
        while True:
            ready = select.select([self._read], [], [], 0.2)[0]
            chunk = b""
            if ready:
                try:
                    chunk = os.read(self._read, 1 << 16)
                except BlockingIOError:
                    chunk = b""
            if chunk:
                with self._changed:
                    self._chunks.append(chunk)
                    self._changed.notify_all()
            elif self._stop.is_set():
                return

    def write(self, event: str, *fields: str) -> None:
        """The parent's own marker."""
        os.write(self._write, marker(event, *fields).encode())

    def text(self) -> str:
        with self._changed:
            return b"".join(self._chunks).decode("utf-8", errors="replace")

    def wait_for(self, line: str, timeout: float) -> bool:
        """Wait until the stream holds ``line`` (a whole line, newline included)."""
        deadline = time.monotonic() + timeout
        needle = line.encode()
        with self._changed:
            while True:
                data = b"".join(self._chunks)
                if data.startswith(needle) or b"\n" + needle in data:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)

    def close(self) -> None:
        """Stop reading once what is in the FIFO has been read; remove it."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(timeout=10)
        os.close(self._write)
        os.close(self._read)
        if self.path.exists() and stat.S_ISFIFO(self.path.stat().st_mode):
            remove_file(self.path.parent, self.path.name)
