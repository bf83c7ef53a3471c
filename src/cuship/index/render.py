"""The index as data: :func:`render` turns wheels into ``{path in SITE: bytes}`` (pure).

Pages link each wheel relative to the site (``files/NAME``) or, with a base URL, absolutely;
kept wheels of earlier releases keep their own base. Attestations are linked from their row.
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from packaging.version import Version

from cuship import __version__
from cuship.errors import UsageError
from cuship.index._pages import (
    FileLink,
    landing_html,
    project_html,
    project_json,
    root_html,
    root_json,
)
from cuship.index.attached import ATTESTATION_SUFFIX, AttestationRef
from cuship.index.scan import IndexedWheel
from cuship.index.yank import yank_reason

__all__ = ["MANIFEST", "check_base_url", "file_href", "render", "variant_labels"]

MANIFEST = "cuship-index.json"
_RESERVED = frozenset({"simple", "files"})


def check_base_url(base_url: str | None) -> str | None:
    """``base_url`` without trailing slashes, after checking it is an http(s) URL."""
    if base_url is None:
        return None
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(
            f"--base-url must be an http(s) URL, got {base_url!r}",
            hint="e.g. https://github.com/OWNER/REPO/releases/download/TAG",
        )
    return base_url.rstrip("/")


@functools.lru_cache(maxsize=65536)
def _quoted(filename: str) -> str:
    return quote(filename, safe="")


def file_href(filename: str, *, base_url: str | None, depth: int) -> str:
    """Where a page ``depth`` directories below SITE links ``filename`` ('+' becomes %2B)."""
    name = _quoted(filename)
    if base_url is not None:
        return f"{base_url.rstrip('/')}/{name}"
    return "../" * depth + "files/" + name


@dataclass(frozen=True, slots=True, kw_only=True)
class _Hosting:
    """Where each file lives: the run's base URL, per-wheel overrides, attestations."""

    base_url: str | None
    bases: Mapping[str, str | None]  # kept wheels: their earlier base (None: in the site)
    attestations: Mapping[str, AttestationRef]

    def base(self, filename: str) -> str | None:
        return self.bases.get(filename, self.base_url)

    def href(self, filename: str, depth: int) -> str:
        return file_href(filename, base_url=self.base(filename), depth=depth)

    def attestation_href(self, filename: str, depth: int) -> str | None:
        if filename not in self.attestations:
            return None
        return file_href(filename + ATTESTATION_SUFFIX, base_url=self.base(filename), depth=depth)


def variant_labels(wheels: Iterable[IndexedWheel]) -> tuple[str, ...]:
    """Local version labels that get a sub-index (sorted; names the layout uses are left out)."""
    return tuple(sorted({w.local for w in wheels if w.local and w.local not in _RESERVED}))


@functools.lru_cache(maxsize=65536)
def _version(text: str) -> Version:
    return Version(text)


def _sort_key(wheel: IndexedWheel) -> tuple[Version, str]:
    return _version(wheel.version), wheel.filename


def _index_tree(
    prefix: str,
    wheels: Sequence[IndexedWheel],
    *,
    hosting: _Hosting,
    yanked: Mapping[str, str],
) -> dict[str, bytes]:
    depth = prefix.count("/") + 2
    by_project: dict[str, list[IndexedWheel]] = defaultdict(list)
    for wheel in wheels:
        by_project[wheel.project].append(wheel)
    tree: dict[str, bytes] = {}
    for project, group in by_project.items():
        group.sort(key=_sort_key)
        links = [_link(w, hosting=hosting, depth=depth, yanked=yanked) for w in group]
        versions = sorted({w.version for w in group}, key=_version)
        tree[f"{prefix}/{project}/index.html"] = project_html(project, links)
        tree[f"{prefix}/{project}/index.json"] = project_json(project, links, versions)
    projects = sorted(by_project)
    tree[f"{prefix}/index.html"] = root_html(projects)
    tree[f"{prefix}/index.json"] = root_json(projects)
    return tree


def _link(
    wheel: IndexedWheel, *, hosting: _Hosting, depth: int, yanked: Mapping[str, str]
) -> FileLink:
    return FileLink(
        filename=wheel.filename,
        href=hosting.href(wheel.filename, depth),
        attestation_href=hosting.attestation_href(wheel.filename, depth),
        sha256=wheel.sha256,
        size=wheel.size,
        requires_python=wheel.requires_python,
        metadata_sha256=wheel.metadata_sha256,
        yanked=yank_reason(
            yanked, filename=wheel.filename, project=wheel.project, version=wheel.version
        ),
    )


def _attestation_record(wheel: IndexedWheel, hosting: _Hosting) -> dict[str, str] | None:
    ref = hosting.attestations.get(wheel.filename)
    url = hosting.attestation_href(wheel.filename, 0)
    return None if ref is None or url is None else {"url": url, "sha256": ref.sha256}


def _manifest(
    wheels: Sequence[IndexedWheel],
    *,
    hosting: _Hosting,
    yanked: Mapping[str, str],
    descriptions: Mapping[str, Mapping[str, object]],
) -> bytes:
    labels = variant_labels(wheels)
    records = [
        {
            "filename": w.filename,
            "project": w.project,
            "version": w.version,
            "local": w.local,
            "tags": list(w.tags),
            "sha256": w.sha256,
            "size": w.size,
            "requires_python": w.requires_python,
            "metadata_sha256": w.metadata_sha256,
            "url": hosting.href(w.filename, 0),
            "yanked": yank_reason(
                yanked, filename=w.filename, project=w.project, version=w.version
            ),
            "describe": dict(descriptions.get(w.filename, {})),
            "attestation": _attestation_record(w, hosting),
        }
        for w in wheels
    ]
    document = {
        "schema": "cuship-index/1",
        "generator": f"cuship {__version__}",
        "base_url": hosting.base_url,
        "indexes": {"": "simple/", **{label: f"{label}/simple/" for label in labels}},
        "wheels": records,
    }
    return (json.dumps(document, separators=(",", ":"), default=str) + "\n").encode("utf-8")


def render(
    wheels: Iterable[IndexedWheel],
    *,
    base_url: str | None = None,
    yanked: Mapping[str, str] | None = None,
    descriptions: Mapping[str, Mapping[str, object]] | None = None,
    bases: Mapping[str, str | None] | None = None,
    attestations: Mapping[str, AttestationRef] | None = None,
) -> dict[str, bytes]:
    """The whole index as ``{path relative to SITE: content}``; wheel files themselves excluded.

    Pure: the same wheels give the same bytes. ``descriptions`` maps a wheel filename to the
    ``describe`` record stored in the manifest; ``bases`` overrides ``base_url`` per wheel
    (None: the wheel is inside the site), ``attestations`` are linked from each wheel's row.
    """
    hosting = _Hosting(
        base_url=check_base_url(base_url), bases=bases or {}, attestations=attestations or {}
    )
    yanks = yanked or {}
    ordered = sorted(wheels, key=lambda w: (w.project, *_sort_key(w)))
    tree = _index_tree("simple", ordered, hosting=hosting, yanked=yanks)
    labels = variant_labels(ordered)
    for label in labels:
        subset = [w for w in ordered if w.local == label]
        tree.update(_index_tree(f"{label}/simple", subset, hosting=hosting, yanked=yanks))
    for wheel in ordered:
        tree[f"files/{wheel.filename}.metadata"] = wheel.metadata
        ref = hosting.attestations.get(wheel.filename)
        if ref is not None and ref.content is not None:
            tree[f"files/{wheel.filename}{ATTESTATION_SUFFIX}"] = ref.content
    tree[MANIFEST] = _manifest(
        ordered, hosting=hosting, yanked=yanks, descriptions=descriptions or {}
    )
    indexes = {"all variants": "simple/", **{label: f"{label}/simple/" for label in labels}}
    tree["index.html"] = landing_html(indexes)
    return tree
