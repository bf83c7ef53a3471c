"""A bounded HTTP server: one event loop reads request heads and writes answers, a fixed pool
of worker threads makes the answers.

The stdlib's ``ThreadingHTTPServer`` listens with a backlog of 5 and gives each connection a
thread with no timeout, so a few slow clients hold every thread. Here a connection costs a
descriptor and a coroutine, never a thread, while its request head arrives: the head must
arrive whole within the idle timeout of the connection's opening (one deadline for the whole
head, however the bytes drip), else the connection is closed unanswered. Only a whole head goes
to a worker, which answers it from the head alone (the status line, the headers and a file to
send); the loop then writes the answer, closing a client that reads nothing for the idle
timeout. A request line that is not ``METHOD TARGET HTTP/x.y`` (HTTP/0.9, garbage, TLS) goes to
a worker as soon as its line ends, for its 400. Beyond ``max_connections`` open at once a new
connection gets 503 and is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any

from cuship.events import Level

__all__ = ["MAX_HEAD", "BoundedServer", "Reply", "ServeLimits"]

MAX_HEAD = 64 * 1024  # bytes of a request head read at most (pip's are under 1 KiB)
_CHUNK = 256 * 1024  # bytes of a file written at a time
_BUSY = (
    b"HTTP/1.0 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n"
    b"Connection: close\r\n\r\n"
)

Address = Any  # (host, port) or (host, port, flow, scope)
Note = Callable[[Level, str], None]  # (level, message)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeLimits:
    """How much one server takes on.

    ``workers``: requests answered at once; ``idle_timeout``: seconds a request head may take
    to arrive whole (from the connection's opening), and seconds an answer may wait for its
    client to read; ``max_connections``: connections open at once, arriving or answered (more
    get 503); ``backlog``: the kernel's accept queue.
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """An answer: its status line and headers, then the file to send after them (closed once
    sent)."""

    head: bytes
    body: IO[bytes] | None = None


# (the request head, whether it is whole, the client's address) -> the answer
Respond = Callable[[bytes, bool, Address], Reply]


class _Head:
    """The bytes of a request head as they arrive; each byte is searched once."""

    def __init__(self) -> None:
        self.data = bytearray()
        self._line_end = -1  # where the request line ends, once it has

    def add(self, chunk: bytes) -> bool:
        """Add ``chunk``; whether the head is now ready for a worker."""
        start = max(len(self.data) - 2, 0)
        self.data += chunk
        if self._line_end < 0:
            self._line_end = self.data.find(b"\n", start)
            if self._line_end < 0:
                return False
            if not _http_request_line(bytes(self.data[: self._line_end])):
                return True  # answered 400 from its first line, without waiting for headers
            start = self._line_end
        # A blank line ends the head: CRLF CRLF, or bare LFs (which the stdlib parser accepts)
        return self.data.find(b"\n\r\n", start) >= 0 or self.data.find(b"\n\n", start) >= 0


def _http_request_line(line: bytes) -> bool:
    words = line.split()
    return len(words) == 3 and words[2].startswith(b"HTTP/")


async def _read_head(reader: asyncio.StreamReader) -> tuple[bytes, bool] | None:
    """The request head (and whether it is whole: not cut at :data:`MAX_HEAD`); None when the
    client closed before sending anything."""
    head = _Head()
    while True:
        chunk = await reader.read(MAX_HEAD)
        if not chunk:  # the client stopped sending: what came is the request
            return (bytes(head.data), True) if head.data else None
        if head.add(chunk):
            return bytes(head.data), True
        if len(head.data) >= MAX_HEAD:
            return bytes(head.data[:MAX_HEAD]), False


def _peer(address: Address) -> str:
    try:
        return f"{address[0]}:{address[1]}"
    except (TypeError, IndexError):
        return repr(address)


class BoundedServer:
    """An HTTP server within :class:`ServeLimits`; ``respond`` makes each answer (in a worker
    thread), ``note(level, message)`` reports trouble. Listens from construction; serves from
    :meth:`serve_forever` until :meth:`shutdown`."""

    def __init__(
        self,
        address: tuple[str, int],
        respond: Respond,
        limits: ServeLimits,
        note: Note,
        *,
        ipv6: bool = False,
    ) -> None:
        family = socket.AF_INET6 if ipv6 else socket.AF_INET
        self._sock = socket.create_server(address, family=family, backlog=limits.backlog)
        self.server_address: tuple[Any, ...] = self._sock.getsockname()
        self.limits = limits
        self._respond = respond
        self._note = note
        self._open = 0
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(self._loop_failure)
        self._stop = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._pool = ThreadPoolExecutor(limits.workers, thread_name_prefix="cuship-serve")
        self._lock = threading.Lock()
        self._closed = False

    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown`; then close every connection."""
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.close()
            self._pool.shutdown(wait=False, cancel_futures=True)
            self.server_close()

    def shutdown(self) -> None:
        """Ask :meth:`serve_forever` to stop (from any thread)."""
        with self._lock, contextlib.suppress(RuntimeError):  # the loop is closed already
            self._loop.call_soon_threadsafe(self._stop.set)

    def server_close(self) -> None:
        """Close the listening socket (:meth:`serve_forever` does, as it returns)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._sock.close()

    async def _main(self) -> None:
        server = await asyncio.start_server(self._connection, sock=self._sock, limit=MAX_HEAD)
        try:
            await self._stop.wait()
        finally:
            server.close()
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _loop_failure(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        del loop  # one line, never asyncio's traceback on stderr
        failure = context.get("exception")
        self._note("debug", f"serve: {context.get('message')}: {failure!r}")

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        peer = writer.get_extra_info("peername")
        sent = False
        try:
            if self._open >= self.limits.max_connections:
                sent = self._refuse(writer, peer)
                return
            self._open += 1
            try:
                sent = await self._exchange(reader, writer, peer)
            finally:
                self._open -= 1
        except (OSError, asyncio.TimeoutError) as err:  # one line per failure, never a traceback
            self._note("debug", f"connection from {_peer(peer)} ended: {err!r}")
        except Exception as err:
            self._note("warning", f"error on a connection from {_peer(peer)}: {err!r}")
        finally:
            self._tasks.discard(task)
            if sent:
                writer.close()  # what is written is flushed, then the socket closed
            else:
                writer.transport.abort()

    def _refuse(self, writer: asyncio.StreamWriter, peer: Address) -> bool:
        writer.write(_BUSY)
        message = f"503 to {_peer(peer)}: {self.limits.max_connections} connections are open"
        self._note("warning", message)
        return True

    async def _exchange(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Address
    ) -> bool:
        """Read one request, answer it; whether the answer was written whole."""
        timeout = self.limits.idle_timeout
        try:
            head = await asyncio.wait_for(_read_head(reader), timeout)
        except asyncio.TimeoutError:
            message = (
                f"closed a connection from {_peer(peer)}: no whole request within {timeout:g} s"
            )
            self._note("debug", message)
            return False
        if head is None:
            return False
        loop = asyncio.get_running_loop()
        reply = await loop.run_in_executor(self._pool, self._respond, head[0], head[1], peer)
        try:
            await self._send(writer, reply)
        finally:
            if reply.body is not None:
                reply.body.close()
        return True

    async def _send(self, writer: asyncio.StreamWriter, reply: Reply) -> None:
        # Each wait lasts until all that was written is with the kernel: a client that reads
        # nothing for the idle timeout is closed, and nothing is left queued at the close.
        writer.transport.set_write_buffer_limits(high=_CHUNK, low=0)
        writer.write(reply.head)
        await asyncio.wait_for(writer.drain(), self.limits.idle_timeout)
        if reply.body is None:
            return
        while chunk := reply.body.read(_CHUNK):
            writer.write(chunk)
            await asyncio.wait_for(writer.drain(), self.limits.idle_timeout)
