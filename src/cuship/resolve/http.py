"""GET with timeouts, retries and a size cap over urllib (http, https, file), and the errors users
read. Redirects stay on http(s): an index never sends cuship to the local disk or another scheme."""

from __future__ import annotations

import contextlib
import contextvars
import http.client
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar
from urllib.parse import urlsplit
from urllib.request import url2pathname

from cuship import _read, settings
from cuship._format import size_text
from cuship._record import frozen
from cuship.errors import InputError, UsageError
from cuship.events import Emit, Event, discard
from cuship.version import __version__

__all__ = [
    "DEFAULT_OPTIONS",
    "SCHEMES",
    "FetchOptions",
    "Missing",
    "Response",
    "TooLarge",
    "fetch_options",
    "get",
    "open_stream",
    "outside_scheme",
    "with_retries",
]

T = TypeVar("T")
_CHUNK = 1 << 16
_MiB = 1 << 20
SCHEMES = ("http", "https", "file")  # what cuship reads an index or a file over


@frozen
class FetchOptions:
    """How patient to be (seconds per network read, extra attempts, first back-off pause, and
    ``deadline``: seconds one fetch may take in all, tries and pauses included; None: each try
    may take four read timeouts) and how much to read: a project page (or ``.sha256`` file), a
    cuship manifest, and a download whose size the index does not declare, in bytes.

    Each try runs under a watchdog that shuts the connection down when its time is up, so a
    server that drips a byte a second, or stalls in its headers, ends the try on time: the
    per-read ``timeout`` alone would wait forever on a drip."""

    timeout: float = 15.0
    retries: int = 2
    backoff: float = 0.5
    deadline: float | None = None
    max_page_bytes: int = 64 * _MiB
    max_manifest_bytes: int = 64 * _MiB
    max_download_bytes: int = 16 * 1024 * _MiB

    @property
    def per_try(self) -> float:
        """The most one try may take (seconds)."""
        return 4 * self.timeout


DEFAULT_OPTIONS = FetchOptions()


def fetch_options(environ: Mapping[str, str], **given: Any) -> FetchOptions:
    """:class:`FetchOptions` from ``given`` (a command's --timeout, --retries) and the
    ``CUSHIP_FETCH_TIMEOUT``, ``CUSHIP_FETCH_DEADLINE`` and ``CUSHIP_MAX_DOWNLOAD`` settings
    (a given value wins); a setting that is not a positive number is a :class:`UsageError`."""
    values = dict(given)
    for name, key, kind in (
        (settings.FETCH_TIMEOUT, "timeout", float),
        (settings.FETCH_DEADLINE, "deadline", float),
        (settings.MAX_DOWNLOAD, "max_download_bytes", int),
    ):
        text = environ.get(name, "").strip()
        if not text or key in values:
            continue
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not value > 0:
            raise UsageError(
                f"{name}={text!r} is not a positive number",
                hint=f"unset {name} or set it to a positive number",
            )
        values[key] = value
    return FetchOptions(**values)


@frozen
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
        f"{scheme or 'a path'!r} ({_read.shown(url, 80)}); refused, nothing read"
    )


def _user_agent() -> str:
    return f"cuship/{__version__}"


def _too_large(url: str, limit: int, size: int | None = None) -> TooLarge:
    found = f"is {size_text(size)}, larger than" if size is not None else "is larger than"
    return TooLarge(
        f"{url!r} {found} {size_text(limit)}, the most cuship reads from an index; "
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


class _Watchdog:
    """Shuts down the connections of one try when its time is up (a timer thread), so a read
    blocked on a dripping server returns; ``fired`` then says why the body ended."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True

    def watch(self, connection: http.client.HTTPConnection) -> None:
        """Watch the socket ``connection`` has just opened (kept: urllib lets go of it once
        the headers are read, while the body is still read through it)."""
        sock = connection.sock
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            if self.fired:
                _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            for sock in self._sockets:
                _shut(sock)

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


_WATCHDOG: contextvars.ContextVar[_Watchdog | None] = contextvars.ContextVar(
    "cuship_fetch_watchdog", default=None
)


class _WatchedHTTP(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        watchdog = _WATCHDOG.get()
        if watchdog is not None:
            watchdog.watch(self)


class _WatchedHTTPS(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        watchdog = _WATCHDOG.get()
        if watchdog is not None:
            watchdog.watch(self)


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_WatchedHTTP, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_WatchedHTTPS, req)


_OPENER = urllib.request.build_opener(_HttpRedirects(), _HTTPHandler(), _HTTPSHandler())


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
    seconds = min(options.per_try, _left())
    with _Watchdog(seconds) as watchdog:
        token = _WATCHDOG.set(watchdog)
        try:
            response = _open(url, accept, options, watchdog)
        finally:
            _WATCHDOG.reset(token)
        try:
            with response:
                declared = _length(response.headers.get("Content-Length"))
                if limit is not None and declared is not None and declared > limit:
                    raise _too_large(url, limit, declared)
                yield response.geturl(), response.headers.get("Content-Type", ""), response
        except (OSError, http.client.HTTPException, ValueError) as err:
            if watchdog.fired:
                raise _Transient(_late(seconds)) from err
            raise
        if watchdog.fired:  # the body "ended" because the watchdog shut it
            raise _Transient(_late(seconds))


def _length(said: str | None) -> int | None:
    """A Content-Length header's size, None when it says none (``"²"``, ``"-1"``, ``"1e9"``:
    http.client then reads to the end, which ``limit`` bounds)."""
    try:
        return None if said is None else _read.integer(said.strip(), "Content-Length")
    except _read.Refused:
        return None


def _late(seconds: float) -> str:
    return f"not answered in full within {round(seconds, 1):g} s (the server sends too slowly)"


def _open(
    url: str, accept: str | None, options: FetchOptions, watchdog: _Watchdog
) -> http.client.HTTPResponse:
    headers = {"User-Agent": _user_agent()}
    if accept:
        headers["Accept"] = accept
    request = urllib.request.Request(url, headers=headers)
    try:
        response: http.client.HTTPResponse = _OPENER.open(request, timeout=options.timeout)
    except urllib.error.HTTPError as err:
        err.close()
        _raise_status(url, err.code)
        raise  # unreachable: _raise_status always raises
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        if watchdog.fired:
            raise _Transient(_late(watchdog.seconds)) from err
        raise _Transient(_describe(err, options)) from err
    return response


def _raise_status(url: str, code: int) -> None:
    if code == 404:
        raise Missing(f"the index answered 404 Not Found for {url!r}", hint=_HINT)
    if code >= 500 or code == 429:
        raise _Transient(f"the index answered {code}")
    if 300 <= code < 400:
        raise InputError(
            f"the index answered {code} for {url!r}, and its redirects go round in a loop "
            "(or past 10 hops, or name no Location); refused",
            hint="the server's redirects are misconfigured; " + _HINT,
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
                with _read.reader(path / name, _read.INDEX_FILE) as stream:
                    yield url, kind, stream
                return
    if not path.is_file():
        raise Missing(f"{url!r} does not exist", hint=_HINT)
    with _read.reader(path, _read.INDEX_FILE) as stream:
        yield url, "application/octet-stream", stream


_ENDS: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "cuship_fetch_ends", default=None
)


def _left() -> float:
    """Seconds left of the fetch under way (:func:`with_retries`); infinity outside one."""
    ends = _ENDS.get()
    return float("inf") if ends is None else max(ends - time.monotonic(), 0.0)


def with_retries(
    what: str, url: str, attempt: Callable[[], T], *, options: FetchOptions, emit: Emit
) -> T:
    """Run ``attempt``; transient failures are retried with exponential back-off, then reported.

    With ``options.deadline`` no try starts, and none runs on, past that many seconds from now."""
    tries = options.retries + 1
    pause = options.backoff
    last = ""
    ends = None if options.deadline is None else time.monotonic() + options.deadline
    token = _ENDS.set(ends)
    try:
        for number in range(1, tries + 1):
            try:
                return attempt()
            except _Transient as err:
                last = str(err)
            except (OSError, http.client.HTTPException) as err:  # a stall or reset mid-body
                last = _describe(err, options)
            if number < tries and _left() > pause:
                message = f"{what} {url!r}: {last}; retrying in {pause:g} s ({number}/{tries})"
                emit(Event(level="warning", topic="fetch", message=message))
                time.sleep(pause)
                pause *= 2
            elif number < tries:
                tries = number  # the deadline leaves no time for another try
                break
    finally:
        _ENDS.reset(token)
    within = "" if options.deadline is None else f" within the {options.deadline:g} s deadline"
    raise InputError(
        f"{what} {url!r} failed: {last} ({tries} {'try' if tries == 1 else 'tries'}{within})",
        hint="check --index and that the server is up; --timeout/--retries (or "
        f"{settings.FETCH_DEADLINE}) give it more time",
    )


def get(
    url: str,
    *,
    accept: str | None = None,
    options: FetchOptions = DEFAULT_OPTIONS,
    emit: Emit = discard,
    limit: int | None = None,
) -> Response:
    """The whole body of ``url``; each try must finish within four read timeouts (and the
    whole within ``options.deadline``), however slowly the server sends.

    At most ``limit`` bytes (default ``options.max_page_bytes``) are read: a larger answer is
    :class:`TooLarge` (exit 2), and memory stays within about twice the limit.
    """
    cap = options.max_page_bytes if limit is None else limit

    def attempt() -> Response:
        with open_stream(url, accept=accept, options=options, limit=cap) as (final, kind, stream):
            parts = []
            read = 0
            while chunk := stream.read(_CHUNK):
                read += len(chunk)
                if read > cap:
                    raise _too_large(url, cap)
                parts.append(chunk)
        return Response(url=final, content_type=kind, body=b"".join(parts))

    return with_retries("reading", url, attempt, options=options, emit=emit)
