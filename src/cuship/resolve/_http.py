"""GET with timeouts and retries over urllib (http, https, file), and the errors users read."""

from __future__ import annotations

import http.client
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar
from urllib.parse import urlsplit
from urllib.request import url2pathname

from cuship import __version__
from cuship.errors import InputError
from cuship.events import Emit, Event, discard

__all__ = [
    "DEFAULT_OPTIONS",
    "FetchOptions",
    "Missing",
    "Response",
    "get",
    "open_stream",
    "with_retries",
]

T = TypeVar("T")
_CHUNK = 1 << 16


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchOptions:
    """How patient to be: seconds per network operation, extra attempts, first back-off pause."""

    timeout: float = 15.0
    retries: int = 2
    backoff: float = 0.5


DEFAULT_OPTIONS = FetchOptions()


@dataclass(frozen=True, slots=True, kw_only=True)
class Response:
    url: str  # after redirects
    content_type: str
    body: bytes


class Missing(InputError):
    """The server answered 404 (or a file:// path does not exist)."""


class _Transient(Exception):
    """A failure worth another attempt (5xx, timeout, refused, reset)."""


def _user_agent() -> str:
    return f"cuship/{__version__}"


@contextmanager
def open_stream(
    url: str, *, accept: str | None, options: FetchOptions
) -> Iterator[tuple[str, str, IO[bytes]]]:
    """(final url, content type, stream); HTTP errors become :class:`Missing`/``_Transient``/InputError."""
    if urlsplit(url).scheme == "file":
        with _open_file(url) as found:
            yield found
        return
    headers = {"User-Agent": _user_agent()}
    if accept:
        headers["Accept"] = accept
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=options.timeout)
    except urllib.error.HTTPError as err:
        err.close()
        _raise_status(url, err.code)
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        raise _Transient(_describe(err, options)) from err
    with response:
        yield response.geturl(), response.headers.get("Content-Type", ""), response


def _raise_status(url: str, code: int) -> None:
    if code == 404:
        raise Missing(f"the index answered 404 Not Found for {url!r}", hint=_HINT)
    if code >= 500 or code == 429:
        raise _Transient(f"the index answered {code}")
    raise InputError(f"the index answered {code} for {url!r}", hint=_HINT)


_HINT = "check --index (it names the simple/ root, e.g. http://HOST:PORT/simple) and the name"


def _describe(err: BaseException, options: FetchOptions) -> str:
    reason = getattr(err, "reason", err)
    if isinstance(reason, TimeoutError | socket.timeout):
        return f"no answer within {options.timeout:g} s"
    return f"cannot connect ({reason})"


@contextmanager
def _open_file(url: str) -> Iterator[tuple[str, str, IO[bytes]]]:
    path = Path(url2pathname(urlsplit(url).path))
    if path.is_dir():
        for name, kind in (
            ("index.json", "application/vnd.pypi.simple.v1+json"),
            ("index.html", "text/html"),
        ):
            if (path / name).is_file():
                with (path / name).open("rb") as stream:
                    yield url, kind, stream
                return
    if not path.is_file():
        raise Missing(f"{url!r} does not exist", hint=_HINT)
    with path.open("rb") as stream:
        yield url, "application/octet-stream", stream


def with_retries(
    what: str, url: str, attempt: Callable[[], T], *, options: FetchOptions, emit: Emit
) -> T:
    """Run ``attempt``; transient failures are retried with exponential back-off, then reported."""
    tries = options.retries + 1
    pause = options.backoff
    last = ""
    for number in range(1, tries + 1):
        try:
            return attempt()
        except _Transient as err:
            last = str(err)
        except (OSError, http.client.HTTPException) as err:  # a stall or reset mid-body
            last = _describe(err, options)
        if number < tries:
            message = f"{what} {url!r}: {last}; retrying in {pause:g} s ({number}/{tries})"
            emit(Event(level="warning", topic="fetch", message=message))
            time.sleep(pause)
            pause *= 2
    raise InputError(
        f"{what} {url!r} failed: {last} ({tries} tries)",
        hint="check --index and that the server is up; --timeout/--retries give it more time",
    )


def get(
    url: str,
    *,
    accept: str | None = None,
    options: FetchOptions = DEFAULT_OPTIONS,
    emit: Emit = discard,
) -> Response:
    """The whole body of ``url``; each attempt must finish within a few timeouts (a trickle stalls)."""

    def attempt() -> Response:
        deadline = time.monotonic() + 4 * options.timeout
        with open_stream(url, accept=accept, options=options) as (final, kind, stream):
            parts = []
            while chunk := stream.read(_CHUNK):
                parts.append(chunk)
                if time.monotonic() > deadline:
                    raise _Transient(f"still sending after {4 * options.timeout:g} s")
            return Response(url=final, content_type=kind, body=b"".join(parts))

    return with_retries("reading", url, attempt, options=options, emit=emit)
