"""The pages of a simple repository: PEP 503 HTML and PEP 691 JSON, one project or the root.

Every value that came from a wheel (names, versions, Requires-Python, yank reasons) is escaped
with :func:`html.escape` (quotes included) before it reaches HTML, so metadata holding markup
comes out inert. JSON is produced by :mod:`json`, which escapes for its own syntax.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring_ascii as _string
from typing import NamedTuple

__all__ = [
    "API_VERSION",
    "FileLink",
    "landing_html",
    "project_html",
    "project_json",
    "root_html",
    "root_json",
]

API_VERSION = "1.1"

_MARKUP = re.compile("[&<>\"']").search
# json.dumps(document, separators=(",", ":")), the encoder made once
_compact = json.JSONEncoder(separators=(",", ":")).encode


def escape(text: str) -> str:
    """:func:`html.escape` (quotes included), which most values (file names, hashes, links)
    pass through unchanged: those are returned as they are, found so by one search; the few
    others (``>=3.9``) repeat, and are escaped once each."""
    return text if _MARKUP(text) is None else _escaped(text)


@functools.lru_cache(maxsize=4096)
def _escaped(text: str) -> str:
    """:func:`html.escape` of ``text`` with quotes (the html package imports its table of
    named entities, which escaping never needs)."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


class FileLink(NamedTuple):
    """One file row of a project page, with its href already made (relative or absolute).
    (A tuple: an index of 50,000 wheels makes 70,000 of them, and a frozen dataclass costs
    twice as much to make.)"""

    filename: str
    href: str
    sha256: str
    size: int
    requires_python: str | None
    metadata_sha256: str | None
    yanked: str | None  # None: not yanked; "": yanked without a reason
    attestation_href: str | None = None


def _head(title: str) -> str:
    return (
        "<!DOCTYPE html>\n<html>\n  <head>\n"
        f'    <meta name="pypi:repository-version" content="{API_VERSION}">\n'
        f"    <title>{escape(title)}</title>\n  </head>\n  <body>\n"
        f"    <h1>{escape(title)}</h1>\n"
    )


_TAIL = "  </body>\n</html>\n"


def _anchor(link: FileLink) -> str:
    attrs = [f'href="{escape(link.href)}#sha256={link.sha256}"']
    if link.requires_python is not None:
        attrs.append(f'data-requires-python="{escape(link.requires_python)}"')
    if link.metadata_sha256 is not None:
        value = f"sha256={link.metadata_sha256}"
        attrs.append(f'data-core-metadata="{value}"')
        attrs.append(f'data-dist-info-metadata="{value}"')
    if link.yanked is not None:
        attrs.append(f'data-yanked="{escape(link.yanked)}"')
    anchor = f"    <a {' '.join(attrs)}>{escape(link.filename)}</a>"
    return anchor + _attestation_anchor(link) + "<br>\n"


def _attestation_anchor(link: FileLink) -> str:
    """A plain link to the wheel's in-toto/DSSE attestation, for people and scripts.

    Deliberately not PEP 740's ``data-provenance`` attribute: that must point at a PEP 740
    provenance object (Sigstore-signed attestation bundles), and installers or tools reading
    it would misread this ed25519 DSSE envelope. pip and uv skip the extra anchor because its
    name is not a distribution filename (the integration tests install through such a page).
    """
    if link.attestation_href is None:
        return ""
    return f' <small>(<a href="{escape(link.attestation_href)}">attestation</a>)</small>'


def project_html(project: str, links: Sequence[FileLink]) -> bytes:
    """The PEP 503 page of one project."""
    body = "".join(_anchor(link) for link in links)
    return (_head(f"Links for {project}") + body + _TAIL).encode("utf-8")


def root_html(projects: Sequence[str]) -> bytes:
    """The PEP 503 root page: one link per (normalised) project name. (Normalised names hold
    no markup, so one search over them all usually stands for an escape of each: an update
    that adds a project renders this page for every project of the index.)"""
    if _MARKUP("".join(projects)) is None:
        body = "".join([f'    <a href="{p}/">{p}</a><br>\n' for p in projects])
    else:
        body = "".join(f'    <a href="{escape(p)}/">{escape(p)}</a><br>\n' for p in projects)
    return (_head("Simple index") + body + _TAIL).encode("utf-8")


def landing_html(indexes: Mapping[str, str]) -> bytes:
    """A page for people at the site root: where the combined and per-variant indexes are."""
    items = "".join(
        f'    <li><a href="{escape(href)}">{escape(label)}</a></li>\n'
        for label, href in indexes.items()
    )
    text = "    <p>Use an index below as pip's <code>--index-url</code>.</p>\n"
    return (_head("Package index") + text + "    <ul>\n" + items + "    </ul>\n" + _TAIL).encode(
        "utf-8"
    )


def _file_json(link: FileLink) -> str:
    """One file's PEP 691 entry, written as ``json.dumps`` writes the same dict (compact,
    ASCII): a project page is one such entry per file, and json's encoder, made for any
    document, costs twice as much for this one shape (every string goes through json's
    own escaping, so the text is the same)."""
    digest = _string(link.sha256)
    if link.metadata_sha256 is not None:
        metadata = _string(link.metadata_sha256)
        core = f'{{"sha256":{metadata}}},"dist-info-metadata":{{"sha256":{metadata}}}'
    else:
        core = "false"
    python = "null" if link.requires_python is None else _string(link.requires_python)
    yanked = _string(link.yanked) if link.yanked else "false" if link.yanked is None else "true"
    return (
        f'{{"filename":{_string(link.filename)},"url":{_string(link.href)},'
        f'"hashes":{{"sha256":{digest}}},"requires-python":{python},"size":{int(link.size)},'
        f'"core-metadata":{core},"yanked":{yanked}}}'
    )


def _dump(document: object) -> bytes:
    # No indent: json's C encoder only runs without one, and thousands of pages add up.
    return (_compact(document) + "\n").encode("ascii")


def project_json(
    project: str,
    links: Sequence[FileLink],
    versions: Sequence[str],
    private: Mapping[str, object] | None = None,
) -> bytes:
    """The PEP 691 (api-version 1.1, PEP 700) document of one project; ``private`` keys must
    start with an underscore (PEP 700 keeps those for the index's own use). The text is
    ``json.dumps`` of the document, compact and ASCII."""
    extra = dict(private or {})
    if any(not key.startswith("_") for key in extra):
        raise ValueError(f"private keys must start with '_': {sorted(extra)}")
    listed = ",".join(_string(version) for version in versions)
    head = f'{{"meta":{{"api-version":{_string(API_VERSION)}}},"name":{_string(project)}'
    files = ",".join(_file_json(link) for link in links)
    tail = "".join(f",{_string(k)}:{_private_text(v)}" for k, v in extra.items())
    return f'{head},"versions":[{listed}],"files":[{files}]{tail}}}\n'.encode("ascii")


def _private_text(value: object) -> str:
    """``_compact(value)``; a flat mapping of strings (every page's ``_cuship``) written out
    here, as json writes it: the encoder, made for any document, cost 7 % of rendering."""
    if type(value) is dict and all(type(k) is str and type(v) is str for k, v in value.items()):
        return "{" + ",".join([f"{_string(k)}:{_string(v)}" for k, v in value.items()]) + "}"
    return _compact(value)


def root_json(projects: Sequence[str]) -> bytes:
    """The PEP 691 root document, written as :func:`_dump` writes it (compact, ASCII) without
    a dict per project."""
    listed = '{"name":' + '},{"name":'.join(map(_string, projects)) + "}" if projects else ""
    head = f'{{"meta":{{"api-version":{_string(API_VERSION)}}},"projects":['
    return (head + listed + "]}\n").encode("ascii")
