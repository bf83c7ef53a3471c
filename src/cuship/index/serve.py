"""A loopback HTTP server for a written index, with PEP 691 content negotiation.

Directories holding both ``index.html`` and ``index.json`` (the simple pages) are answered in
the representation the ``Accept`` header prefers (406 when none is acceptable); everything else
is served as static files. Meant for tests and local use, not as a public server.
"""

from __future__ import annotations

import http.server
import io
import ipaddress
import socket
import threading
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from cuship.errors import InputError
from cuship.events import Emit, Event, discard
from cuship.index._negotiate import HTML, JSON, LEGACY_HTML, choose

__all__ = ["IndexServer", "RequestLog", "serve"]

_TYPES = {
    ".whl": "application/zip",
    ".metadata": "text/plain; charset=utf-8",
    ".json": "application/json",
    ".html": "text/html; charset=utf-8",
}


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
    log: list[RequestLog] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, entry: RequestLog) -> None:
        with self.lock:
            self.log.append(entry)
        self.emit(
            Event(
                level="debug",
                topic="serve",
                message=f"{entry.method} {entry.path} {entry.status}",
                data={"path": entry.path, "status": entry.status},
            )
        )


class _Handler(http.server.SimpleHTTPRequestHandler):
    shared: _Shared

    def __init__(self, *args: Any, shared: _Shared, **kwargs: Any) -> None:
        self.shared = shared
        self._chosen: str | None = None
        self.extensions_map = {**self.extensions_map, **_TYPES}
        super().__init__(*args, **kwargs)

    def send_head(self) -> Any:
        self._chosen = None
        target = Path(self.translate_path(self.path))
        if not target.exists():
            moved = self._normalised_redirect()
            if moved:
                return None
        if target.is_dir() and (target / "index.json").is_file() and self.path.endswith("/"):
            return self._negotiated(target)
        return super().send_head()

    def _normalised_redirect(self) -> bool:
        """PEP 503: a request for a non-normalised project name goes to the normalised one."""
        path = self.path.split("?", 1)[0]
        head, sep, rest = path.partition("/simple/")
        name = rest.rstrip("/")
        if not sep or not name or "/" in name or canonicalize_name(name) == name:
            return False
        self.send_response(301)
        self.send_header("Location", f"{head}/simple/{canonicalize_name(name)}/")
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True

    def _negotiated(self, folder: Path) -> Any:
        chosen = choose(self.headers.get("Accept"))
        if chosen is None:
            self.send_error(406, "Not Acceptable", f"offered: {JSON}, {HTML}, {LEGACY_HTML}")
            return None
        page = folder / ("index.json" if chosen == JSON else "index.html")
        body = page.read_bytes()
        self._chosen = chosen
        self.send_response(200)
        charset = "" if chosen == JSON else "; charset=utf-8"
        self.send_header("Content-Type", chosen + charset)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Vary", "Accept")
        self.end_headers()
        return io.BytesIO(body)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        status = code.value if isinstance(code, http.HTTPStatus) else code
        self.shared.record(
            RequestLog(
                method=self.command or "",
                path=self.path,
                status=int(status) if str(status).isdigit() else 0,
                content_type=self._chosen,
            )
        )

    def log_message(self, format: str, *args: Any) -> None:
        del format, args  # requests are recorded by log_request; errors by send_error


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


class IndexServer:
    """A running server: ``url`` (ends in '/'), ``requests`` (what it answered), ``shutdown()``."""

    def __init__(self, httpd: _Server, shared: _Shared, host: str) -> None:
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
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> IndexServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def serve(
    site: Path, host: str = "127.0.0.1", port: int = 0, *, emit: Emit = discard
) -> IndexServer:
    """Serve ``site`` from a background thread; ``port=0`` picks a free port (see ``.url``)."""
    if not (site / "simple").is_dir():
        raise InputError(
            f"{str(site)!r} holds no simple/ index",
            hint="write one first: cuship index WHEELS -o SITE",
        )
    if not _is_loopback(host):
        message = f"serving {str(site)!r} on {host!r}, reachable beyond this machine"
        emit(Event(level="warning", topic="serve", message=message))
    shared = _Shared(emit=emit)
    handler = partial(_Handler, shared=shared, directory=str(site))
    server_class = _Server6 if ":" in host else _Server
    try:
        httpd = server_class((host, port), handler)
    except OSError as err:
        raise InputError(f"cannot listen on {host!r} port {port}: {err}") from err
    return IndexServer(httpd, shared, host)
