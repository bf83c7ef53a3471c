"""GET with timeouts, retries and a size cap over urllib (http, https, file), and the errors users
read. Redirects stay on http(s): an index never sends cuship to the local disk or another scheme."""

from __future__ import annotations

import http.client
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar
from urllib.parse import urlsplit
from urllib.request import url2pathname

from cuship import __version__, _json
from cuship.errors import InputError
from cuship.events import Emit, Event, discard

__all__ = [
    "DEFAULT_OPTIONS",
    "SCHEMES",
    "FetchOptions",
    "Missing",
    "Response",
    "TooLarge",
    "get",
    "open_stream",
    "outside_scheme",
    "with_retries",
]

T = TypeVar("T")
_CHUNK = 1 << 16
_MiB = 1 << 20
SCHEMES = ("http", "https", "file")  # what cuship reads an index or a file over


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchOptions:
    """How patient to be (seconds per network operation, extra attempts, first back-off pause)
    and how much to read: a project page (or ``.sha256`` file) and a cuship manifest, in bytes."""

    timeout: float = 15.0
    retries: int = 2
    backoff: float = 0.5
    max_page_bytes: int = 64 * _MiB
    max_manifest_bytes: int = 64 * _MiB


DEFAULT_OPTIONS = FetchOptions()


@dataclass(frozen=True, slots=True, kw_only=True)
class Response:
    url: str  # after redirects
    content_type: str
    body: bytes


class Missing(InputError):
    """The server answered 404 (or a file:// path does not exist)."""


class TooLarge(InputError):
    """The answer is larger than cuship reads (a page, a manifest)."""


class _Transient(Exception):
    """A failure worth another attempt (5xx, timeout, refused, reset)."""


def _family(scheme: str) -> tuple[str, frozenset[str]]:
    """The name of an index's scheme family and the URL schemes what it lists may have."""
    if scheme in ("http", "https"):
        return "http", frozenset({"http", "https"})
    return scheme, frozenset(SCHEMES)  # a file:// index is the user's own disk: files or http(s)


def outside_scheme(index: str, url: str, what: str) -> str | None:
    """Why ``url`` (``what``: "files", "manifests") may not be read for ``index``, or None.

    An http(s) index may send cuship only to http(s): never to the local disk (``file://``) or
    any other scheme. A ``file://`` index is the user's own disk and may use files or http(s).
    """
    family, allowed = _family(urlsplit(index).scheme)
    scheme = urlsplit(url).scheme
    if scheme in allowed:
        return None
    article = "an" if family == "http" else "a"
    *others, last = sorted(allowed)
    kinds = f"{', '.join(others)} or {last}"
    return (
        f"{article} {family} index may link only {kinds} {what}, not "
        f"{scheme or 'a path'!r} ({_json.shown(url, 80)}); refused, nothing read"
    )


def _user_agent() -> str:
    return f"cuship/{__version__}"


def _size_text(size: int) -> str:
    return f"{size / _MiB:g} MiB" if size >= _MiB else f"{size} bytes"


def _too_large(url: str, limit: int, size: int | None = None) -> TooLarge:
    found = f"is {_size_text(size)}, larger than" if size is not None else "is larger than"
    return TooLarge(
        f"{url!r} {found} {_size_text(limit)}, the most cuship reads from an index; "
        "refusing it (nothing past that was read)",
        hint="a simple index page or cuship manifest is never this large; check --index",
    )


class _HttpRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects only to http(s): never to ftp (which urllib allows) or anything else."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if urlsplit(newurl).scheme not in ("http", "https"):
            raise InputError(
                f"{req.full_url!r} redirects to {newurl!r}; cuship follows redirects only to "
                "http and https URLs",
                hint="the index must serve its pages and files over http(s)",
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_HttpRedirects())


def _check_scheme(url: str) -> str:
    scheme = urlsplit(url).scheme
    if scheme not in SCHEMES:
        raise InputError(
            f"cannot read {url!r}: cuship reads indexes and files over http, https or file "
            f"URLs, not {scheme or 'a relative path'!r}",
            hint="pass --index as http://HOST/simple, https://… or file:///PATH/simple",
        )
    return scheme


@contextmanager
def open_stream(
    url: str, *, accept: str | None, options: FetchOptions, limit: int | None = None
) -> Iterator[tuple[str, str, IO[bytes]]]:
    """(final url, content type, stream); HTTP errors become :class:`Missing`/``_Transient``/InputError.

    With ``limit``, an answer that says (Content-Length, a file's size) it is larger is
    :class:`TooLarge` before a byte of it is read; the reader still counts what it reads.
    """
    if _check_scheme(url) == "file":
        with _open_file(url) as found:
            size = os.fstat(found[2].fileno()).st_size
            if limit is not None and size > limit:
                raise _too_large(url, limit, size)
            yield found
        return
    headers = {"User-Agent": _user_agent()}
    if accept:
        headers["Accept"] = accept
    request = urllib.request.Request(url, headers=headers)
    try:
        response = _OPENER.open(request, timeout=options.timeout)
    except urllib.error.HTTPError as err:
        err.close()
        _raise_status(url, err.code)
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        raise _Transient(_describe(err, options)) from err
    with response:
        declared = response.headers.get("Content-Length", "")
        if limit is not None and declared.strip().isdigit() and int(declared) > limit:
            raise _too_large(url, limit, int(declared))
        yield response.geturl(), response.headers.get("Content-Type", ""), response


def _raise_status(url: str, code: int) -> None:
    if code == 404:
        raise Missing(f"the index answered 404 Not Found for {url!r}", hint=_HINT)
    if code >= 500 or code == 429:
        raise _Transient(f"the index answered {code}")
    if 300 <= code < 400:
        raise InputError(
            f"the index answered {code} for {url!r}: a redirect cuship does not follow "
            "(only to http and https URLs)",
            hint=_HINT,
        )
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
    limit: int | None = None,
) -> Response:
    """The whole body of ``url``; each attempt must finish within a few timeouts (a trickle stalls).

    At most ``limit`` bytes (default ``options.max_page_bytes``) are read: a larger answer is
    :class:`TooLarge` (exit 2), and memory stays within about twice the limit.
    """
    cap = options.max_page_bytes if limit is None else limit

    def attempt() -> Response:
        deadline = time.monotonic() + 4 * options.timeout
        with open_stream(url, accept=accept, options=options, limit=cap) as (final, kind, stream):
            parts = []
            read = 0
            while chunk := stream.read(_CHUNK):
                read += len(chunk)
                if read > cap:
                    raise _too_large(url, cap)
                parts.append(chunk)
                if time.monotonic() > deadline:
                    raise _Transient(f"still sending after {4 * options.timeout:g} s")
            return Response(url=final, content_type=kind, body=b"".join(parts))

    return with_retries("reading", url, attempt, options=options, emit=emit)
