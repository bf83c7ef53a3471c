"""A loopback index server that misbehaves on purpose: it serves a real site written by
``cuship index`` but drips a byte every ``pause`` seconds, sends bytes without end, or
redirects in a loop, for the pages or for the wheels (issue 34, item 3)."""

from __future__ import annotations

import http.server
import socketserver
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MODES = ("drip-page", "drip-wheel", "endless-wheel", "redirect-loop", "stall-headers")
_GIVE_UP = 120.0  # a handler stops misbehaving after this long, whoever is listening


class _Hostile(http.server.BaseHTTPRequestHandler):
    site: Path
    mode: str
    pause: float
    sent: list[int]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        wheel = self.path.endswith(".whl")
        if self.mode == "redirect-loop":
            self._redirect()
        elif self.mode == "stall-headers":
            self._drip(b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100_000, raw=True)
        elif (self.mode == "drip-page" and not wheel) or (self.mode == "drip-wheel" and wheel):
            self._drip(self._body())
        elif self.mode == "endless-wheel" and wheel:
            self._endless()
        else:
            self._answer(self._body())

    def _file(self) -> Path:
        path = self.site / self.path.lstrip("/").split("?")[0]
        return path / "index.json" if path.is_dir() else path

    def _kind(self) -> str:
        name = self._file().name
        if name == "index.json":
            return "application/vnd.pypi.simple.v1+json"
        return "text/html" if name.endswith(".html") else "application/octet-stream"

    def _body(self) -> bytes:
        path = self._file()
        return path.read_bytes() if path.is_file() else b""

    def _answer(self, body: bytes) -> None:
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", self._kind())
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self) -> None:
        self.send_response(302)
        self.send_header("Location", self.path)  # itself, for ever
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _drip(self, body: bytes, *, raw: bool = False) -> None:
        """``body`` a byte at a time, ``pause`` seconds apart (with its true length)."""
        if not raw:
            self.send_response(200)
            self.send_header("Content-Type", self._kind())
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.flush()
        ends = time.monotonic() + _GIVE_UP
        try:
            for byte in body:
                if time.monotonic() > ends:
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                self.sent.append(1)
                time.sleep(self.pause)
        except OSError:
            return  # the client hung up: what a deadline does

    def _endless(self) -> None:
        """Bytes without end (no Content-Length: the answer ends when the connection does)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        block = b"\0" * 65536
        ends = time.monotonic() + _GIVE_UP
        try:
            while time.monotonic() < ends:
                self.wfile.write(block)
                self.sent.append(len(block))
        except OSError:
            return
        self.close_connection = True


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    block_on_close = False


@contextmanager
def hostile_server(site: Path, mode: str, pause: float = 0.5) -> Iterator[tuple[str, list[int]]]:
    """(the ``simple/`` URL of ``site`` served in ``mode``, the bytes each misbehaving
    answer sent: a list that grows as it sends)."""
    assert mode in MODES, mode
    sent: list[int] = []
    handler = type(
        "Handler", (_Hostile,), {"site": site, "mode": mode, "pause": pause, "sent": sent}
    )
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple", sent
    finally:
        server.shutdown()
        server.server_close()
