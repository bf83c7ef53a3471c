"""A bounded HTTP server: a real listen backlog, a fixed pool of worker threads, idle deadlines.

The stdlib's ``ThreadingHTTPServer`` listens with a backlog of 5 (most of 200 clients arriving
at once time out in SYN retries) and starts one thread per connection with no timeout (1,000
idle connections hold 1,000 threads forever). Here, an accepted connection first waits in a
*waiting room* (one thread, one selector): it costs a descriptor, not a thread, until its
request starts to arrive, and is closed when nothing arrives within the idle timeout. Ready
connections go to a fixed pool of workers; when all are busy the rest wait their turn. Beyond
``max_connections`` open at once a new connection gets 503 and is closed. Each worker's socket
has the idle timeout too, so a client that stops reading or writing mid-request frees its
worker after that long.
"""

from __future__ import annotations

import collections
import contextlib
import http.server
import queue
import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cuship.events import Level

__all__ = ["BoundedServer", "ServeLimits"]

_BUSY = (
    b"HTTP/1.0 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n"
    b"Connection: close\r\n\r\n"
)

Address = Any  # (host, port) or (host, port, flow, scope)
Note = Callable[[Level, str], None]  # (level, message)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeLimits:
    """How much one server takes on.

    ``workers``: requests handled at once; ``idle_timeout``: seconds a connection may stay silent
    (before its request, and between reads or writes of it); ``max_connections``: connections
    open at once, waiting or handled (more get 503); ``backlog``: the kernel's accept queue.
    """

    workers: int = 32
    idle_timeout: float = 30.0
    max_connections: int = 4096
    backlog: int = 1024

    def __post_init__(self) -> None:
        if self.workers < 1 or self.max_connections < 1 or self.backlog < 1:
            raise ValueError(f"limits must be positive: {self!r}")
        if not 0 < self.idle_timeout < float("inf"):
            raise ValueError(f"idle_timeout must be a positive number of seconds: {self!r}")


class _WaitingRoom:
    """Accepted connections waiting for their first bytes, oldest first."""

    def __init__(
        self,
        limits: ServeLimits,
        ready: queue.SimpleQueue[Any],
        note: Note,
        release: Callable[[], None],
    ) -> None:
        self._limits = limits
        self._ready = ready
        self._note = note
        self._release = release
        self._selector = selectors.DefaultSelector()
        self._waiting: collections.OrderedDict[socket.socket, float] = collections.OrderedDict()
        self._arrivals: collections.deque[tuple[socket.socket, Address]] = collections.deque()
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="cuship-serve-room", daemon=True)
        self._thread.start()

    def admit(self, sock: socket.socket, address: Address) -> None:
        with self._lock:
            self._arrivals.append((sock, address))
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # a wake-up is pending, or the room is closing
            self._wake_w.send(b"\0")

    def stop(self) -> None:
        self._stopping = True
        self._wake()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            while not self._stopping:
                self._take_arrivals()
                timeout = self._expire()
                for key, _ in self._selector.select(timeout):
                    if key.fileobj is self._wake_r:
                        self._drain_wake()
                    else:
                        self._dispatch(key.fileobj, key.data)  # type: ignore[arg-type]
        finally:
            self._close_all()

    def _take_arrivals(self) -> None:
        with self._lock:
            arrivals, self._arrivals = self._arrivals, collections.deque()
        deadline = time.monotonic() + self._limits.idle_timeout
        for sock, address in arrivals:
            self._waiting[sock] = deadline
            self._selector.register(sock, selectors.EVENT_READ, address)

    def _expire(self) -> float:
        """Close connections past their deadline; seconds until the next one (at most 1)."""
        now = time.monotonic()
        while self._waiting:
            sock, deadline = next(iter(self._waiting.items()))
            if deadline > now:
                return min(deadline - now, 1.0)
            address = self._selector.unregister(sock).data
            del self._waiting[sock]
            _close(sock)
            self._release()
            message = (
                f"closed a connection from {_peer(address)}: no request within "
                f"{self._limits.idle_timeout:g} s"
            )
            self._note("debug", message)
        return 1.0

    def _dispatch(self, sock: socket.socket, address: Address) -> None:
        self._selector.unregister(sock)
        del self._waiting[sock]
        self._ready.put((sock, address))

    def _drain_wake(self) -> None:
        with contextlib.suppress(OSError):
            while self._wake_r.recv(4096):
                pass

    def _close_all(self) -> None:
        with self._lock:
            socks = [*self._waiting, *(sock for sock, _ in self._arrivals)]
            self._arrivals.clear()
        self._waiting.clear()
        for sock in socks:
            _close(sock)
            self._release()
        self._selector.close()
        _close(self._wake_r)
        _close(self._wake_w)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()


def _has_data(sock: socket.socket) -> bool:
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except OSError:  # nothing yet (EAGAIN), or already broken: the waiting room decides
        return False


def _peer(address: Address) -> str:
    try:
        return f"{address[0]}:{address[1]}"
    except (TypeError, IndexError):
        return repr(address)


class BoundedServer(http.server.HTTPServer):
    """An HTTP server within :class:`ServeLimits`; ``note(level, message)`` reports trouble."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: Callable[..., Any],
        limits: ServeLimits,
        note: Note,
        *,
        ipv6: bool = False,
    ) -> None:
        if ipv6:
            self.address_family = socket.AF_INET6
        self.request_queue_size = limits.backlog
        self.limits = limits
        self._note = note
        self._open = 0
        self._open_lock = threading.Lock()
        super().__init__(address, handler)
        self._ready: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._room = _WaitingRoom(limits, self._ready, note, self._release)
        self._workers = [
            threading.Thread(target=self._work, name=f"cuship-serve-{i}", daemon=True)
            for i in range(limits.workers)
        ]
        for worker in self._workers:
            worker.start()

    def process_request(self, request: Any, client_address: Any) -> None:
        """Called for each accepted connection: into the waiting room, or 503 when full."""
        with self._open_lock:
            full = self._open >= self.limits.max_connections
            if not full:
                self._open += 1
        if full:
            self._refuse(request, client_address)
            return
        if _has_data(request):  # the request is here already: no need to wait for it
            self._ready.put((request, client_address))
        else:
            self._room.admit(request, client_address)

    def _refuse(self, sock: socket.socket, address: Address) -> None:
        with contextlib.suppress(OSError):
            sock.setblocking(False)
            sock.send(_BUSY)
        _close(sock)
        message = f"503 to {_peer(address)}: {self.limits.max_connections} connections are open"
        self._note("warning", message)

    def _release(self) -> None:
        with self._open_lock:
            self._open -= 1

    def _work(self) -> None:
        while True:
            item = self._ready.get()
            if item is None:
                return
            sock, address = item
            try:
                self.finish_request(sock, address)
            except Exception as err:  # one line per failure, never a traceback
                self._note("debug", f"connection from {_peer(address)} ended: {err!r}")
            finally:
                self.shutdown_request(sock)
                self._release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line, never the stdlib's traceback on stderr."""
        failure = sys.exc_info()[1]
        self._note("warning", f"error on a connection from {_peer(client_address)}: {failure!r}")

    def server_close(self) -> None:
        super().server_close()
        self._room.stop()
        for _ in self._workers:
            self._ready.put(None)
