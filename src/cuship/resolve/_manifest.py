"""Find the cuship manifest that holds one project's wheel facts, and read it.

A site written with schema 2 gives every project its own manifest, ``simple/PROJECT/cuship.json``
(``{"schema": "cuship-project/1", "project": NAME, "wheels": [RECORD, ...]}``), so a resolve
reads that project's records and never the whole index. It is looked for in this order:

1. the project's PEP 691 page names it: ``"_cuship": {"manifest": URL}`` (PEP 700 leaves keys
   with a leading underscore to index servers), the URL relative to the page;
2. an HTML page (a static host that does not negotiate) cannot name it, so ``cuship.json``
   beside the page is tried; a 404 moves on. A JSON page that names none is an older site's
   and goes straight to 3;
3. the site manifest ``cuship-index.json`` beside ``simple/`` (one level up for a sub-index).
   Schema 1 lists every record under ``wheels``; schema 2 has a ``projects`` map whose entry
   for the project names its manifest, relative to the site manifest. A project the map does
   not list has no facts.

Everything read is untrusted. A manifest is read up to ``max_manifest_bytes``, parsed with
bounded depth, and never read from outside the index's scheme family (an http index cannot
point at ``file://``). One that is missing where it was promised, too large, not JSON, of the
wrong shape or about another project is ignored with a warning naming its URL: the files are
then judged by their names alone. Records count by file name; the URLs inside them are never
followed (files come from the page).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

from packaging.utils import canonicalize_name

from cuship import _read
from cuship._record import frozen
from cuship.errors import InputError
from cuship.events import Emit, Event
from cuship.resolve.http import FetchOptions, Missing, get, outside_scheme
from cuship.schema.inputs import check_input

__all__ = ["MANIFEST", "PROJECT_MANIFEST", "Found", "find_manifest", "manifest_urls"]

MANIFEST = "cuship-index.json"
PROJECT_MANIFEST = "cuship.json"
_MAX_URL = 8192  # characters of a manifest URL cuship follows (pip's longest are under 300)
Records = Mapping[str, Mapping[str, Any]]


@frozen
class Found:
    """The manifest whose records were read (its URL) and those records by file name."""

    url: str
    records: Records


@frozen
class _Reader:
    """What every read needs: the index (its scheme decides what may be read) and the project."""

    index: str
    project: str
    options: FetchOptions
    emit: Emit

    def load(self, url: str) -> tuple[str, Any]:
        """(final URL, JSON document) of ``url``: :class:`Missing` on a 404, else InputError
        or ValueError for anything that cannot be used."""
        refusal = outside_scheme(self.index, url, "manifests")
        if refusal is not None:
            raise InputError(refusal)
        if len(url) > _MAX_URL:
            raise InputError(f"its URL is {len(url)} characters long; refused, nothing read")
        answer = get(
            url,
            accept="application/json",
            options=self.options,
            emit=self.emit,
            limit=self.options.max_manifest_bytes,
        )
        document = _read.loads(answer.body)
        check_input(document, "manifest", "the document")
        return answer.url, document

    def ignore(self, url: str, err: InputError | ValueError) -> None:
        problem = err.message if isinstance(err, InputError) else str(err)
        shown = repr(url) if len(url) <= 300 else _read.shown(url, 120)
        message = f"ignoring the cuship manifest at {shown}: {problem}"
        self.emit(Event(level="warning", topic="fetch", message=message))

    def project_manifest(self, url: str, *, missing_moves_on: bool = False) -> Found | None:
        """The records of one project's manifest; None (with a warning) when it cannot be used.

        With ``missing_moves_on``, a 404 is :class:`Missing` for the caller to go on from.
        """
        try:
            _, document = self.load(url)
            return Found(url=url, records=_project_records(document, self.project))
        except (InputError, ValueError) as err:
            if missing_moves_on and isinstance(err, Missing):
                raise
            self.ignore(url, err)
            return None

    def site_manifest(self) -> Found | None:
        """The project's records by way of the site manifest (schema 1 or 2), if there is one."""
        for url in manifest_urls(self.index):
            try:
                final, document = self.load(url)
                if not _lists_projects(document):
                    return Found(url=url, records=records_of(document))  # schema 1
                href = _project_entry(document, self.project)
            except Missing:
                continue
            except (InputError, ValueError) as err:
                self.ignore(url, err)
                return None
            if href is None:
                message = f"the cuship manifest at {url!r} lists no project {self.project!r}"
                self.emit(Event(level="debug", topic="fetch", message=message))
                return None
            return self.project_manifest(urljoin(final, href))
        return None


def manifest_urls(index: str) -> tuple[str, ...]:
    """Where a site manifest may sit: beside ``simple/``, and one level up for sub-indexes."""
    root = index.rstrip("/") + "/"
    parts = urlsplit(root)
    if parts.scheme not in ("http", "https", "file"):
        return ()
    depth = parts.path.strip("/").count("/") + 1 if parts.path.strip("/") else 0
    found = [urljoin(root, "../" * up + MANIFEST) for up in (1, 2) if up <= depth]
    return tuple(dict.fromkeys(found))


def records_of(document: object) -> dict[str, Mapping[str, Any]]:
    """The records of a manifest by file name; a document of the wrong shape is ``ValueError``.

    Records without a string ``filename`` are skipped; their fields are judged when used.
    """
    records = document.get("wheels") if isinstance(document, dict) else None
    if not isinstance(records, list):
        raise ValueError("it holds no 'wheels' list")
    return {
        r["filename"]: r
        for r in records
        if isinstance(r, dict) and isinstance(r.get("filename"), str)
    }


def _project_records(document: object, project: str) -> dict[str, Mapping[str, Any]]:
    named = document.get("project") if isinstance(document, dict) else None
    if isinstance(named, str) and canonicalize_name(named) != canonicalize_name(project):
        raise ValueError(f"it describes the project {_read.shown(named)}, not {project!r}")
    return records_of(document)


def _lists_projects(document: object) -> bool:
    """Whether a site manifest is schema 2 (a ``projects`` map, no ``wheels`` list)."""
    return (
        isinstance(document, dict)
        and isinstance(document.get("projects"), dict)
        and not isinstance(document.get("wheels"), list)
    )


def _project_entry(document: Mapping[str, Any], project: str) -> str | None:
    """The manifest URL a schema 2 site manifest gives for ``project``; None if not listed."""
    name = canonicalize_name(project)
    entry = document["projects"].get(name)
    if entry is None:
        return None
    href = entry.get("manifest") if isinstance(entry, dict) else None
    if not isinstance(href, str) or not href:
        raise ValueError(f"its entry for {name!r} names no manifest: {_read.shown(entry)}")
    return href


def _declared(value: object, page: str, emit: Emit) -> str | None:
    """The manifest URL a JSON page's ``_cuship`` entry names, or None (a warning if malformed)."""
    if value is None:
        return None
    href = value.get("manifest") if isinstance(value, dict) else None
    if isinstance(href, str) and href:
        return href
    message = (
        f"ignoring the '_cuship' entry of {page!r}: it names no manifest ({_read.shown(value)})"
    )
    emit(Event(level="warning", topic="fetch", message=message))
    return None


def find_manifest(
    *,
    index: str,
    project: str,
    page: str,
    page_format: str,
    declared: object,
    options: FetchOptions,
    emit: Emit,
) -> Found | None:
    """The manifest records for ``project`` whose page ``page`` (its final URL) was read.

    ``declared`` is the page's ``_cuship`` value (None for an HTML page or none given). The
    order is the module's: the page's own, ``cuship.json`` beside an HTML page, the site's.
    """
    reader = _Reader(index=index, project=project, options=options, emit=emit)
    href = _declared(declared, page, emit)
    if href is not None:
        return reader.project_manifest(urljoin(page, href))
    if page_format == "html":
        try:
            return reader.project_manifest(urljoin(page, PROJECT_MANIFEST), missing_moves_on=True)
        except Missing:
            pass
    return reader.site_manifest()
