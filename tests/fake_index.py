"""An HTTP index without sockets for unit tests: urllib's opener answers from a dict of routes,
counts the bytes each URL served and logs every request (404s included)."""

from __future__ import annotations

import email.message
import io
import json
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

JSON_TYPE = "application/vnd.pypi.simple.v1+json"


class _Response(io.RawIOBase):
    """What urllib's opener returns, fed from a chunk iterator; counts the bytes read."""

    def __init__(
        self, server: FakeServer, url: str, kind: str, chunks: Iterator[bytes], size: int | None
    ):
        super().__init__()
        self._server, self._url, self._chunks = server, url, chunks
        self._left = b""
        self.headers = email.message.Message()
        self.headers["Content-Type"] = kind
        if size is not None:
            self.headers["Content-Length"] = str(size)

    def geturl(self) -> str:
        return self._url

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if not self._left:
            self._left = next(self._chunks, b"")
        want = len(self._left) if size is None or size < 0 else size
        out, self._left = self._left[:want], self._left[want:]
        self._server.served[self._url] += len(out)
        return out


class FakeServer:
    """An HTTP index without sockets: urllib's opener answers from ``routes``."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[str, Any, int | None]] = {}
        self.served: Counter[str] = Counter()
        self.requests: list[str] = []  # every URL asked for, in order, 404s included

    def json(self, url: str, document: object) -> None:
        self.routes[url] = (JSON_TYPE, json.dumps(document).encode(), None)

    def raw(self, url: str, kind: str, body: bytes) -> None:
        self.routes[url] = (kind, body, None)

    def manifest(self, url: str, document: object) -> None:
        self.routes[url] = ("application/json", json.dumps(document).encode(), None)

    def stream(self, url: str, chunk: bytes, count: int, *, size: int | None = None) -> None:
        self.routes[url] = (JSON_TYPE, (chunk, count), size)

    def open(
        self, request: urllib.request.Request | str, data: Any = None, timeout: Any = None
    ) -> _Response:
        url = request.full_url if isinstance(request, urllib.request.Request) else request
        self.requests.append(url)
        if url not in self.routes:
            raise urllib.error.HTTPError(url, 404, "Not Found", email.message.Message(), None)
        kind, body, size = self.routes[url]
        chunks = iter([body]) if isinstance(body, bytes) else iter([body[0]] * body[1])
        return _Response(self, url, kind, chunks, size)


def installed(monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    """A :class:`FakeServer` answering every urllib request for the rest of the test."""
    fake = FakeServer()
    monkeypatch.setattr(urllib.request.OpenerDirector, "open", fake.open)
    return fake
