"""A loopback HTTP server for a written index, with PEP 691 content negotiation.

Directories holding both ``index.html`` and ``index.json`` (the simple pages) are answered in
the representation the ``Accept`` header prefers (406 when none is acceptable); other files are
served as they are. Only what the index publishes is served: no directory listings, nothing
whose path has a part starting with '.', nothing a symlink leads to outside SITE (all 404). A
malformed request gets its 4xx and one log line, never a traceback. Concurrency is bounded and
slow clients cost no worker (:class:`ServeLimits`, see ``_server.py``): the handler here answers
a request head already read whole, into memory, and the server writes the answer. Meant for
tests and local use, not as a public server.
"""

from __future__ import annotations

import collections
import email.utils
import http.server
import io
import ipaddress
import os
import threading
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from packaging.utils import canonicalize_name

from cuship import _read
from cuship.errors import InputError
from cuship.events import Emit, Event, Level, discard
from cuship.serve._negotiate import HTML, JSON, LEGACY_HTML, choose
from cuship.serve._server import MAX_HEAD, Address, BoundedServer, Reply, ServeLimits
from cuship.serve.descriptors import within_descriptors

__all__ = ["IndexServer", "RequestLog", "ServeLimits", "serve", "site_labels"]

_TYPES = {
    ".whl": "application/zip",
    ".metadata": "text/plain; charset=utf-8",
    ".json": "application/json",
    ".html": "text/html; charset=utf-8",
}
_MAX_TARGET = 8192  # longest request target answered (longer: 414); pip's are under 300
_LOG_KEPT = 100_000  # requests remembered for .requests (a long-running server forgets older)
_SHOWN = 200  # characters of a path shown in a log line


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestLog:
    """One request the server answered."""

    method: str
    path: str
    status: int
    content_type: str | None = None


@dataclass(slots=True)
class _Shared:
    emit: Emit
    root: Path
    limits: ServeLimits
    log: collections.deque[RequestLog] = field(
        default_factory=lambda: collections.deque(maxlen=_LOG_KEPT)
    )
    lock: threading.Lock = field(default_factory=threading.Lock)
    emit_lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, entry: RequestLog, line: str) -> None:
        with self.lock:
            self.log.append(entry)
        # A malformed or refused request is worth a line; 404 is routine (pip asks an index for
        # every dependency), so it is a debug line like every success.
        level: Level = "warning" if entry.status >= 400 and entry.status != 404 else "debug"
        self.note(level, line, {"path": entry.path[:_MAX_TARGET], "status": entry.status})

    def note(self, level: Level, message: str, data: dict[str, object] | None = None) -> None:
        with self.emit_lock:  # one line at a time from many workers
            self.emit(Event(level=level, topic="serve", message=message, data=data or {}))


class _Refused(Exception):
    """Internal: answer ``status`` (and ``reason``) instead of a file."""

    def __init__(self, status: int, reason: str | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _shown(text: str) -> str:
    """A path for a log line: quoted (control characters escaped) and cut short."""
    if len(text) <= _SHOWN:
        return repr(text)
    return f"{text[:_SHOWN]!r}... ({len(text)} characters)"


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Answers one request head (``request``, bytes already read) into memory: the status
    line and headers in ``wfile``, the file to send after them in ``body``."""

    shared: _Shared
    # An error for a request line too broken to name its version still gets a status line
    # (the stdlib assumes HTTP/0.9 there, which has none).
    default_request_version = "HTTP/1.0"

    def __init__(self, *args: Any, shared: _Shared, whole: bool, **kwargs: Any) -> None:
        self.shared = shared
        self.whole = whole
        self.body: Any = None
        self._chosen: str | None = None
        self.path = ""  # log_request may run before parse_request sets it (400, 505)
        self.extensions_map = {**self.extensions_map, **_TYPES}
        super().__init__(*args, **kwargs)

    def setup(self) -> None:
        self.rfile = io.BytesIO(self.request)
        self.wfile = self._out = io.BytesIO()

    def finish(self) -> None:
        pass  # the server writes what wfile holds, then the body

    def reply(self) -> Reply:
        return Reply(head=self._out.getvalue(), body=self.body)

    def parse_request(self) -> bool:
        line: bytes = getattr(self, "raw_requestline", b"")
        if len(line.split()) < 3:  # nothing, garbage, or HTTP/0.9 (whose answer has no status line)
            self.command, self.request_version = "", self.default_request_version
            self.requestline = line.decode("iso-8859-1").rstrip("\r\n")
            self.send_error(400, "not an HTTP/1.x request line")
            return False
        if not super().parse_request():
            return False
        if len(self.path) > _MAX_TARGET:
            self.send_error(414, f"request target longer than {_MAX_TARGET} characters")
            return False
        if not self.whole:
            self.send_error(431, f"request head longer than {MAX_HEAD} bytes")
            return False
        return True

    def do_GET(self) -> None:
        self.body = self.send_head()

    def send_head(self) -> Any:
        self._chosen = None
        try:
            return self._answer()
        except _Refused as why:
            self.send_error(why.status, why.reason)
            return None

    def _answer(self) -> Any:
        route = self.path.split("?", 1)[0].split("#", 1)[0]
        target = self._locate(route)
        if target is None:
            if self._normalised_redirect(route):
                return None
            raise _Refused(404)
        if not target.is_dir():
            return self._file(target)
        if not route.endswith("/"):
            return self._redirect(route + "/")
        page = self._inside(target / "index.html")
        if (target / "index.json").is_file() and page is not None:
            return self._negotiated(target)
        if page is None:
            raise _Refused(404)  # no directory listings
        return self._file(page)

    def _locate(self, route: str) -> Path | None:
        """The file or directory ``route`` names inside SITE; None when there is none."""
        try:
            decoded = unquote(route, errors="strict")
        except UnicodeDecodeError as err:
            raise _Refused(400, "the path is not UTF-8 once %-decoded") from err
        if "\0" in decoded:
            raise _Refused(400, "null byte in the path")
        parts = [p for p in decoded.split("/") if p not in ("", ".")]
        if any(p.startswith(".") for p in parts):
            raise _Refused(404)  # hidden files, '..': never served
        return self._inside(self.shared.root.joinpath(*parts))

    def _inside(self, path: Path) -> Path | None:
        """``path`` resolved, when it exists within SITE and no part of it is hidden."""
        root = self.shared.root
        try:
            real = path.resolve(strict=True)
        except (OSError, ValueError, RuntimeError):  # missing, name too long, undecodable, loop
            return None
        if real != root and not real.is_relative_to(root):
            return None  # a symlink out of SITE
        if any(p.startswith(".") for p in real.relative_to(root).parts):
            return None
        return real

    def _file(self, path: Path) -> Any:
        try:
            handle = _read.open_file(path, _read.HASHED)
        except (OSError, _read.Refused) as err:
            raise _Refused(404) from err
        try:
            facts = os.fstat(handle.fileno())
            self.send_response(200)
            self.send_header("Content-Type", self.guess_type(str(path)))
            self.send_header("Content-Length", str(facts.st_size))
            self.send_header("Last-Modified", email.utils.formatdate(facts.st_mtime, usegmt=True))
            self.end_headers()
        except BaseException:
            handle.close()
            raise
        return handle

    def _redirect(self, location: str) -> None:
        self.send_response(301)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _normalised_redirect(self, route: str) -> bool:
        """PEP 503: a request for a non-normalised project name goes to the normalised one."""
        head, sep, rest = route.partition("/simple/")
        name = rest.rstrip("/")
        if not sep or not name or "/" in name or canonicalize_name(name) == name:
            return False
        self._redirect(f"{head}/simple/{canonicalize_name(name)}/")
        return True

    def _negotiated(self, folder: Path) -> Any:
        chosen = choose(self.headers.get("Accept"))
        if chosen is None:
            raise _Refused(406, f"offered: {JSON}, {HTML}, {LEGACY_HTML}")
        page = self._inside(folder / ("index.json" if chosen == JSON else "index.html"))
        if page is None:
            raise _Refused(404)
        body = _read.read_bytes(page, _read.INDEX_FILE)
        self._chosen = chosen
        self.send_response(200)
        charset = "" if chosen == JSON else "; charset=utf-8"
        self.send_header("Content-Type", chosen + charset)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Vary", "Accept")
        self.end_headers()
        return io.BytesIO(body)

    def list_directory(self, path: str | os.PathLike[str]) -> None:
        self.send_error(404)  # never a listing, whichever path leads here

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        status = int(code) if str(code).isdigit() else 0  # HTTPStatus is an int
        method = self.command or ""
        shown = _shown(self.path) if self.path else _shown(self.requestline or "")
        client = self.client_address[0] if self.client_address else "?"
        self.shared.record(
            RequestLog(method=method, path=self.path, status=status, content_type=self._chosen),
            f"{client} {method or '-'} {shown} {status}",
        )

    def log_message(self, format: str, *args: Any) -> None:
        del format, args  # every response is recorded by log_request, once


def _respond(shared: _Shared, head: bytes, whole: bool, client: Address) -> Reply:
    """The answer to one request head (in a worker thread)."""
    handler = _Handler(head, client, None, shared=shared, whole=whole, directory=str(shared.root))
    return handler.reply()


class IndexServer:
    """A running server: ``url`` (ends in '/'), ``requests`` (what it answered), ``shutdown()``."""

    def __init__(self, httpd: BoundedServer, shared: _Shared, host: str) -> None:
        self._httpd = httpd
        self._shared = shared
        port = httpd.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{port}/"
        self._thread = threading.Thread(
            target=httpd.serve_forever, name="cuship-serve", daemon=True
        )
        self._thread.start()

    @property
    def requests(self) -> tuple[RequestLog, ...]:
        with self._shared.lock:
            return tuple(self._shared.log)

    def wait(self, timeout: float | None = None) -> None:
        """Block until the server stops (or ``timeout`` seconds pass)."""
        self._thread.join(timeout)

    def shutdown(self) -> None:
        """Stop serving, close every connection and the socket."""
        self._httpd.shutdown()
        self._thread.join()
        self._httpd.server_close()

    def __enter__(self) -> IndexServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def site_labels(site: Path) -> tuple[str, ...]:
    """The variant labels ``site`` has a sub-index for (``LABEL/simple/``), sorted."""
    found = (p.parent.name for p in site.glob("*/simple") if p.parent.name != "files")
    return tuple(sorted(found))


def serve(
    site: Path,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    limits: ServeLimits | None = None,
    emit: Emit = discard,
) -> IndexServer:
    """Serve ``site`` from a background thread; ``port=0`` picks a free port (see ``.url``)."""
    if not (site / "simple").is_dir():
        raise InputError(
            f"{str(site)!r} holds no simple/ index",
            hint="write one first: cuship index WHEELS -o SITE",
        )
    if not 0 <= port <= 65535:
        raise InputError(f"port {port} is not between 0 and 65535")
    if not _is_loopback(host):
        message = f"serving {str(site)!r} on {host!r}, reachable beyond this machine"
        emit(Event(level="warning", topic="serve", message=message))
    limits = within_descriptors(limits or ServeLimits(), emit)
    shared = _Shared(emit=emit, root=site.resolve(), limits=limits)
    respond = partial(_respond, shared)
    try:
        httpd = BoundedServer((host, port), respond, limits, shared.note, ipv6=":" in host)
    except (OSError, OverflowError) as err:
        raise InputError(f"cannot listen on {host!r} port {port}: {err}") from err
    return IndexServer(httpd, shared, host)
