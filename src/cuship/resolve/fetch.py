"""Read an index (PEP 691 JSON first, PEP 503 HTML otherwise, plus the cuship manifest of the
project when the site offers one) and download files with their sha256 verified.

urllib only. Every network step has a timeout and a few retries with back-off; what still fails
is an :class:`~cuship.errors.InputError` naming the URL. A download whose bytes do not hash to
what the index says is a :class:`~cuship.errors.CheckFailed` and leaves nothing on disk.

Where the manifest is found (the project's own ``cuship.json``, named by its page, or the
site's ``cuship-index.json``) is ``_manifest.py``'s to say. What an index serves is untrusted:
pages and manifests are read up to a size cap (:class:`FetchOptions`), JSON of any depth fails
cleanly, a file or manifest at a URL outside the index's own scheme (``file://`` from an http
index) is refused with that reason and never read, and a manifest record with a bad field is
ignored with a note on its file.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import field, replace
from html.parser import HTMLParser
from pathlib import Path
from typing import IO, Any, Literal
from urllib.parse import unquote, urljoin, urlsplit

from packaging.utils import canonicalize_name

from cuship import _names, _read, settings
from cuship._fs import move, remove_file, sha256_file
from cuship._record import frozen
from cuship.errors import CheckFailed, InputError, UsageError
from cuship.events import Emit, Event, discard, progress
from cuship.resolve._manifest import Records, find_manifest, manifest_urls
from cuship.resolve.http import (
    DEFAULT_OPTIONS,
    FetchOptions,
    TooLarge,
    get,
    open_stream,
    outside_scheme,
    with_retries,
)
from cuship.resolve.select import Candidate, WheelFacts
from cuship.schema.inputs import check_input

__all__ = [
    "ACCEPT",
    "FetchOptions",
    "IndexPage",
    "download",
    "fetch_page",
    "manifest_urls",
    "parse_html",
    "parse_json",
    "project_url",
]

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
ACCEPT = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"


@frozen
class IndexPage:
    """One project's files as an index lists them."""

    url: str
    format: Literal["json", "html"]
    candidates: tuple[Candidate, ...]
    manifest: str | None  # the URL of the manifest whose records were merged in, if any
    # the wheel variants of each version its variants.json files name: {version: {label: ...}}
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def project_url(index: str, project: str) -> str:
    """``http://h/simple`` + ``My_Pkg`` → ``http://h/simple/my-pkg/``."""
    return f"{index.rstrip('/')}/{canonicalize_name(project)}/"


def _garbage(url: str, problem: str) -> InputError:
    return InputError(
        f"the index answered garbage for {url!r}: {problem}",
        hint="check --index: it must be a PEP 503/691 simple index",
    )


@functools.lru_cache(maxsize=256)
def _join_folder(base: str, folder: str) -> str:
    return urljoin(base, folder)


def _absolute(base: str, href: str) -> str:
    """``urljoin`` without the fragment; the folder part is joined once per page (10k links)."""
    href = href.partition("#")[0]
    if ":" in href.partition("/")[0] or href.startswith("/") or "/" not in href:
        return urljoin(base, href)
    folder, _, name = href.rpartition("/")
    return _join_folder(base, folder + "/") + name


_MAX_REASON = 200


def _yank(value: object) -> str | None:
    """The yank reason: None (not yanked), "" (no reason), else a short printable text."""
    if value is None or value is False:
        return None
    if value is True:
        return ""
    return value[:_MAX_REASON] if isinstance(value, str) else _read.shown(value)


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _sha256(value: object) -> str | None:
    """A sha256 the index gives, lower-cased; anything not 64 hex digits counts as none."""
    if not isinstance(value, str) or not _SHA256.fullmatch(value.lower()):
        return None
    return value.lower()


def _json_file(entry: Any, base: str, url: str) -> Candidate:
    if not isinstance(entry, dict) or not isinstance(entry.get("filename"), str):
        raise _garbage(url, f"a file entry without a filename: {_read.shown(entry)}")
    hashes = entry.get("hashes")
    href = entry.get("url")
    if not isinstance(href, str):
        raise _garbage(url, f"{_read.shown(entry['filename'])} has no url")
    size = entry.get("size")
    python = entry.get("requires-python")
    return Candidate(
        filename=entry["filename"],
        url=_absolute(base, href),
        sha256=_sha256(hashes.get("sha256")) if isinstance(hashes, dict) else None,
        requires_python=python if isinstance(python, str) and python.strip() else None,
        yanked=_yank(entry.get("yanked")),
        size=size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None,
    )


def _json_page(body: bytes, url: str) -> tuple[tuple[Candidate, ...], object]:
    """The files of a PEP 691 page and its ``_cuship`` entry (None when it has none)."""
    try:
        document = _read.loads(body)
    except _read.JsonRefused as err:
        raise _garbage(url, f"it {err.problem}") from err
    files = document.get("files") if isinstance(document, dict) else None
    if not isinstance(files, list):
        raise _garbage(url, "a JSON document without a 'files' list")
    try:
        check_input(document, "pep691-page", "the page")
    except InputError as err:
        raise _garbage(url, err.message) from None
    return tuple(_json_file(entry, url, url) for entry in files), document.get("_cuship")


def parse_json(body: bytes, url: str) -> tuple[Candidate, ...]:
    """The files of a PEP 691 project page; links are made absolute against ``url``."""
    return _json_page(body, url)[0]


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[dict[str, str | None], list[str]]] = []
        self._open: list[str] | None = None
        self.base: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "base" and self.base is None:
            self.base = dict(attrs).get("href")
        elif tag == "a":
            self._open = []
            self.links.append((dict(attrs), self._open))

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open.append(data)


def _html_file(attrs: Mapping[str, str | None], text: str, base: str) -> Candidate | None:
    href = attrs.get("href")
    if not href:
        return None
    link, fragment = _absolute(base, href), href.partition("#")[2]
    name, _, value = fragment.partition("=")
    filename = text.strip() or unquote(urlsplit(link).path.rsplit("/", 1)[-1])
    python = attrs.get("data-requires-python")
    return Candidate(
        filename=filename,
        url=link,
        sha256=_sha256(value) if name == "sha256" else None,
        requires_python=python if python and python.strip() else None,
        yanked=_yank(attrs["data-yanked"] or True) if "data-yanked" in attrs else None,
    )


def parse_html(body: bytes, url: str) -> tuple[Candidate, ...]:
    """The files of a PEP 503 project page (attribute values and text come back unescaped)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _garbage(url, f"not UTF-8 text ({err})") from err
    parser = _Anchors()
    parser.feed(text)
    parser.close()
    base = urljoin(url, parser.base) if parser.base else url
    found = (_html_file(attrs, "".join(parts), base) for attrs, parts in parser.links)
    return tuple(c for c in found if c is not None)


def _with_facts(c: Candidate, records: Records) -> Candidate:
    record = records.get(c.filename)
    if record is None or (c.sha256 is not None and record.get("sha256") != c.sha256):
        return c  # no record, or one for other bytes: judge it by its name alone
    describe = record.get("describe")
    if describe is None or describe == {}:
        return c
    if not isinstance(describe, dict):
        kind = "list" if isinstance(describe, list) else type(describe).__name__
        note = f"manifest record ignored: 'describe' is a {kind}, not a table"
        return replace(c, notes=(*c.notes, note))
    try:
        facts = WheelFacts.from_describe(describe)
    except InputError as err:
        return replace(c, notes=(*c.notes, f"manifest record ignored: {err.message}"))
    return replace(c, facts=facts)


def _in_scheme(c: Candidate, index: str) -> Candidate:
    """``c``, refused when its URL leaves the index's scheme (an http index listing file://)."""
    reason = outside_scheme(index, c.url, "files")
    return c if reason is None else replace(c, refused=reason)


def fetch_page(
    index: str,
    project: str,
    *,
    options: FetchOptions = DEFAULT_OPTIONS,
    manifest: bool = True,
    emit: Emit = discard,
) -> IndexPage:
    """The files ``index`` lists for ``project``, with manifest facts merged in when offered.

    The facts come from the project's manifest that the JSON page names (``_cuship``), else
    ``cuship.json`` beside an HTML page, else the site manifest (see ``_manifest.py``). A
    manifest that cannot be used is a warning event: the files are judged by name alone.
    """
    url = project_url(index, project)
    answer = get(url, accept=ACCEPT, options=options, emit=emit)
    kind = answer.content_type.split(";")[0].strip().lower()
    declared: object = None
    if kind.endswith("+json") or kind == "application/json":
        (candidates, declared), fmt = _json_page(answer.body, answer.url), "json"
    elif "html" in kind:
        candidates, fmt = parse_html(answer.body, answer.url), "html"
    else:
        raise _garbage(url, f"content type {answer.content_type!r} is no simple index page")
    candidates = tuple(_in_scheme(c, index) for c in candidates)
    found = None
    if manifest:
        found = find_manifest(
            index=index,
            project=project,
            page=answer.url,
            page_format=fmt,
            declared=declared,
            options=options,
            emit=emit,
        )
    if found is not None:
        candidates = tuple(_with_facts(c, found.records) for c in candidates)
    variants = _variants(candidates, options, emit)
    candidates = tuple(c for c in candidates if not c.filename.endswith(_VARIANTS_SUFFIX))
    message = f"{url}: {len(candidates)} files ({fmt})" + (
        f", manifest {found.url}" if found else ""
    )
    emit(Event(level="debug", topic="fetch", message=message))
    return IndexPage(
        url=answer.url,
        format=fmt,  # type: ignore[arg-type]
        candidates=candidates,
        manifest=found.url if found else None,
        variants=variants,
    )


_VARIANTS_SUFFIX = "-variants.json"


def _variants(
    candidates: tuple[Candidate, ...], options: FetchOptions, emit: Emit
) -> dict[str, Mapping[str, Any]]:
    """The variants each ``{name}-{version}-variants.json`` the page links names, by version
    (read like a manifest: bounded, in the index's scheme; one that cannot be used is a
    warning, and its version's variant wheels are then judged without uv's view)."""
    found: dict[str, Mapping[str, Any]] = {}
    for c in candidates:
        if not c.filename.endswith(_VARIANTS_SUFFIX) or c.refused:
            continue
        version = c.filename[: -len(_VARIANTS_SUFFIX)].rpartition("-")[2]
        try:
            answer = get(c.url, options=options, emit=emit, limit=options.max_manifest_bytes)
            document = _read.loads(answer.body)
            check_input(document, "variants", "the document")
            variants = document["variants"]
        except (InputError, ValueError) as err:
            problem = err.message if isinstance(err, InputError) else str(err)
            message = f"ignoring {c.url!r}: {problem}"
            emit(Event(level="warning", topic="fetch", message=message))
            continue
        found[version] = dict(variants)
    return found


def _safe_name(filename: str) -> str:
    """``filename`` when it is a plain file name (:func:`cuship._names.file_name`): what the
    index lists reaches a path here."""
    try:
        return _names.file_name(filename)
    except UsageError:
        raise InputError(
            f"refusing the file name {_read.shown(filename)}: it is not a plain file name",
            hint="the index lists a path, not a file; fix the index",
        ) from None


def _mismatch(c: Candidate, got: str) -> CheckFailed:
    return CheckFailed(
        f"sha256 mismatch for {c.filename!r} from {c.url!r}: the index says {c.sha256}, "
        f"the download is {got}; refusing it",
        hint="the file on the server is not the one the index lists; tell the index maintainer",
    )


def _oversized(c: Candidate, limit: int) -> CheckFailed | TooLarge:
    if c.size is None:
        return TooLarge(
            f"{c.url!r} sends more than {limit} bytes, the most cuship downloads of a file "
            "whose size the index does not declare; refused, nothing kept",
            hint=f"{settings.MAX_DOWNLOAD} raises the limit",
        )
    return CheckFailed(
        f"{c.url!r} sends more than the {c.size} bytes the index declares for {c.filename!r}; "
        "refused after that many, nothing kept",
        hint="the file on the server is not the one the index lists; tell the index maintainer",
    )


def _fetch_once(
    c: Candidate, dest: Path, options: FetchOptions, told: Callable[[int], None] | None
) -> Path:
    """One try: at most the size the index declares (else ``options.max_download_bytes``)
    is read, within the try's deadline (see :class:`FetchOptions`); ``told``: of the bytes
    read so far, after each chunk."""
    limit = options.max_download_bytes if c.size is None else c.size
    fd, temp = tempfile.mkstemp(dir=dest, prefix=f".{c.filename}.", suffix=".part")
    part = Path(temp)
    try:
        digest = hashlib.sha256()
        stream = open_stream(c.url, accept=None, options=options, limit=limit)
        with os.fdopen(fd, "wb") as out, _sized(stream, c, limit) as got:
            read = 0
            while chunk := got[2].read(1 << 20):
                read += len(chunk)
                if read > limit:
                    raise _oversized(c, limit)
                digest.update(chunk)
                out.write(chunk)
                if told is not None:
                    told(read)
        if digest.hexdigest() != c.sha256:
            raise _mismatch(c, digest.hexdigest())
        return move(part, dest, c.filename)
    finally:
        remove_file(dest, part)


@contextmanager
def _sized(
    stream: AbstractContextManager[tuple[str, str, IO[bytes]]], c: Candidate, limit: int
) -> Iterator[tuple[str, str, IO[bytes]]]:
    """``stream``, its answer over ``limit`` by its own Content-Length worded as
    :func:`_oversized` (a declared size the server contradicts is a mismatch)."""
    try:
        with stream as got:
            yield got
    except TooLarge as err:
        raise _oversized(c, limit) from err


_MiB = 1 << 20
TOLD_FROM = 16 * _MiB
"""Bytes a download must have (by the index) to be told as it goes; a smaller one takes a
few chunks, and its line when done says enough."""


def _told_bytes(c: Candidate, name: str, emit: Emit) -> Callable[[int], None] | None:
    """Progress events (``fetch``, stage ``download``) by MiB read, for a download the
    index says is large; the renderer picks which lines a log shows."""
    size = c.size
    if size is None or size < TOLD_FROM:
        return None
    total = -(-size // _MiB)

    def told(read: int) -> None:
        done = total if read >= size else read // _MiB
        data = {"bytes": read, "size": size}
        emit(progress("fetch", done, total, name, "MiB", stage="download", data=data))

    return told


def download(
    candidate: Candidate,
    dest: Path,
    *,
    options: FetchOptions = DEFAULT_OPTIONS,
    emit: Emit = discard,
    quiet: bool = False,
) -> Path:
    """Fetch ``candidate`` into ``dest`` (streamed, sha256 verified, renamed into place).

    A file already in ``dest`` with the right hash is reused. No sha256 in the index: an
    :class:`InputError` (cuship installs only verified files). Mismatch: :class:`CheckFailed`.
    ``quiet``: the download is told at level ``debug`` (its caller reports its progress);
    else one of :data:`TOLD_FROM` bytes or more is told as it goes, by MiB read.
    """
    name = _safe_name(candidate.filename)
    if candidate.refused:
        raise InputError(
            f"refusing {name!r}: {candidate.refused}",
            hint="the index lists a file outside its own scheme; fix the index",
        )
    if not candidate.sha256:
        raise InputError(
            f"the index gives no sha256 for {name!r}; cuship installs only verified files",
            hint="index it with `cuship index` (or add #sha256=... fragments to its links)",
        )
    dest.mkdir(parents=True, exist_ok=True)
    ready = dest / name
    if ready.is_file() and sha256_file(ready) == candidate.sha256:
        emit(Event(level="debug", topic="fetch", message=f"reusing verified {str(ready)!r}"))
        return ready

    told = None if quiet else _told_bytes(candidate, name, emit)

    def attempt() -> Path:
        return _fetch_once(candidate, dest, options, told)

    path = with_retries("downloading", candidate.url, attempt, options=options, emit=emit)
    message = f"downloaded {name} (sha256 {candidate.sha256[:12]}… verified)"
    emit(Event(level="debug" if quiet else "info", topic="fetch", message=message))
    return path
