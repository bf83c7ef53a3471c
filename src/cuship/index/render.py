"""The index as data: wheels become :class:`Row` records, rows become ``{path in SITE: bytes}``.

One row per wheel holds everything its pages show (hashes, sizes, where the file lives, yank,
the ``describe`` record, the attestation). Each project is rendered from its rows alone
(:func:`project_tree`: its PEP 503/691 pages in the combined index and in each variant
sub-index, and its manifest ``simple/PROJECT/cuship.json``), the roots from the list of
projects (:func:`root_tree`), so an update can rewrite one project and the roots while a full
:func:`render` of the same rows gives the same bytes.

Pages link each wheel relative to themselves (``../../files/NAME``) or, with a base URL,
absolutely; kept wheels of earlier releases keep their own base. PEP 700 reserves JSON keys
that start with an underscore for the index's own use: each project's JSON page names its
manifest under ``_cuship``, so ``cuship resolve`` reads one project's records, never the index's.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from json.encoder import encode_basestring_ascii as _string
from typing import TYPE_CHECKING

from packaging.version import Version

from cuship import _names
from cuship._record import frozen
from cuship.index._pages import (
    FileLink,
    landing_html,
    project_html,
    project_json,
    root_html,
    root_json,
)
from cuship.index._row import PROJECT_DEPTH, Row, base_of, file_href
from cuship.index.attached import ATTESTATION_SUFFIX, AttestationRef
from cuship.index.scan import IndexedWheel
from cuship.index.yank import yank_reason
from cuship.version import __version__
from cuship.wheel.variant import dumps, merged, split_variant, variants_json_name

if TYPE_CHECKING:
    from packaging.version import Version

__all__ = [
    "MANIFEST",
    "PROJECT_MANIFEST",
    "DescribeTexts",
    "ProjectEntry",
    "Row",
    "base_of",
    "check_base_url",
    "encoded_once",
    "file_href",
    "group",
    "index_manifest",
    "manifest_entry",
    "patched_manifest",
    "project_tree",
    "render",
    "root_pages",
    "root_tree",
    "rows_of",
    "site_tree",
    "site_trees",
    "variant_labels",
]

MANIFEST = "cuship-index.json"
PROJECT_MANIFEST = "cuship.json"
INDEX_SCHEMA = "cuship-index/2"
PROJECT_SCHEMA = "cuship-project/1"
_RESERVED = frozenset({"simple", "files"})


def check_base_url(base_url: str | None) -> str | None:
    """``base_url`` without trailing slashes, after checking it is an http(s) URL."""
    return None if base_url is None else _names.base_url(base_url)


def rows_of(
    wheels: Iterable[IndexedWheel],
    *,
    base_url: str | None = None,
    yanked: Mapping[str, str] | None = None,
    descriptions: Mapping[str, Mapping[str, object]] | None = None,
    bases: Mapping[str, str | None] | None = None,
    attestations: Mapping[str, AttestationRef] | None = None,
) -> list[Row]:
    """The rows of ``wheels``: hosted at ``base_url`` (per wheel: ``bases``), yanked per
    ``yanked``, described per ``descriptions``, attested per ``attestations``."""
    base = check_base_url(base_url)
    yanks, described = yanked or {}, descriptions or {}
    overrides, attested = bases or {}, attestations or {}
    rows = []
    for w in wheels:
        ref = attested.get(w.filename)
        rows.append(
            Row(
                filename=w.filename,
                project=w.project,
                version=w.version,
                local=w.local,
                tags=w.tags,
                sha256=w.sha256,
                size=w.size,
                requires_python=w.requires_python,
                metadata_sha256=w.metadata_sha256,
                base=overrides.get(w.filename, base),
                yanked=yank_reason(
                    yanks, filename=w.filename, project=w.project, version=w.version
                ),
                describe=described.get(w.filename, {}),
                attestation_sha256=None if ref is None else ref.sha256,
            )
        )
    return rows


def variant_labels(wheels: Iterable[IndexedWheel | Row]) -> tuple[str, ...]:
    """The sub-indexes the wheels get (sorted; names the layout uses are left out): one per
    local version label, and one per torch minor of torch-linked variant builds
    (``torch2.13``, see :func:`torch_group`)."""
    found = set()
    for w in wheels:
        group = w.local or (torch_group(w) if isinstance(w, Row) else None)
        if group and group not in _RESERVED:
            found.add(group)
    return tuple(sorted(found))


def torch_group(row: Row) -> str | None:
    """``torch2.13`` for the public-version files of a torch-linked build that cuship wrote
    beside its labelled wheel (a build tag names their torch minor: ``pkg-1.0-213-…``): uv
    cannot choose by the installed torch, so each torch minor gets its own sub-index, with its
    own variants.json."""
    torch = row.describe.get("torch_built")
    if row.local is not None or not isinstance(torch, str):
        return None  # first: most rows (and every pure wheel's) end here, nothing split
    parts = split_variant(row.filename)[0][:-4].split("-")
    return f"torch{torch}" if len(parts) == 6 else None


def _subset(rows: Sequence[Row], label: str) -> list[Row]:
    return [row for row in rows if row.local == label or torch_group(row) == label]


@functools.lru_cache(maxsize=65536)
def _version(text: str) -> Version:
    from packaging.version import Version  # here: a run that renders no page parses none

    return Version(text)


def _sort_key(row: Row) -> tuple[Version, str]:
    return _version(row.version), row.filename


# json.dumps(document, separators=(",", ":"), default=str, sort_keys=True), the encoder made once
_MANIFEST_JSON = json.JSONEncoder(separators=(",", ":"), default=str, sort_keys=True).encode


def _dump(document: object) -> bytes:
    """A manifest's bytes: keys sorted, so a ``describe`` record read back from the cache (or
    from an earlier manifest) gives the bytes it gave when fresh."""
    return (_MANIFEST_JSON(document) + "\n").encode("utf-8")


def _pages(
    prefix: str,
    project: str,
    rows: Sequence[Row],
    manifest: str,
    extra: Sequence[FileLink] = (),
) -> dict[str, bytes]:
    depth = prefix.count("/") + 2
    links = [row.link(depth) for row in rows] + list(extra)
    versions = list(dict.fromkeys(row.version for row in rows))  # rows come sorted by version
    private = {"_cuship": {"manifest": manifest}}
    return {
        f"{prefix}/{project}/index.html": project_html(project, links),
        f"{prefix}/{project}/index.json": project_json(project, links, versions, private),
    }


DescribeTexts = dict[int, tuple[Mapping[str, object], str]]
"""The text of each ``describe`` record met, by the record's identity, the record held (so
its id is not reused): a caller that renders many projects whose rows share records (an
index's pure wheels share a few) passes one to :func:`project_tree` while it renders."""


def encoded_once(
    record: Mapping[str, object],
    texts: DescribeTexts,
    encode: Callable[[Mapping[str, object]], str],
) -> str:
    """``encode(record)``, made once per record met through ``texts`` (one encoder each)."""
    held = texts.get(id(record))
    if held is None:
        held = texts[id(record)] = (record, encode(record))
    return held[1]


def project_tree(
    project: str, rows: Iterable[Row], *, describe_texts: DescribeTexts | None = None
) -> dict[str, bytes]:
    """One project's files: pages in the combined index and in the sub-index of each of its
    labels, then its manifest (last: an update writes it after the pages it describes)."""
    ordered = sorted(rows, key=_sort_key)
    combined = [row for row in ordered if torch_group(row) is None]
    variants = variants_files(combined)
    listed = _listed(combined, variants)
    tree = _pages("simple", project, listed, PROJECT_MANIFEST, _variants_links(variants))
    tree.update({f"simple/{project}/{name}": data for name, data in variants.items()})
    for label in variant_labels(ordered):
        subset = _subset(ordered, label)
        back = f"../../../simple/{project}/{PROJECT_MANIFEST}"
        extra = variants_files(subset) if not any(row.local for row in subset) else {}
        tree.update(_pages(f"{label}/simple", project, subset, back, _variants_links(extra)))
        tree.update({f"{label}/simple/{project}/{name}": data for name, data in extra.items()})
    texts = {} if describe_texts is None else describe_texts
    records = ",".join([_record_text(row, texts) for row in ordered])
    tree[f"simple/{project}/{PROJECT_MANIFEST}"] = (
        f'{{"generator":{_GENERATOR},"project":{_string(project)},'
        f'"schema":{_string(PROJECT_SCHEMA)},"wheels":[{records}]}}\n'
    ).encode()
    return tree


_GENERATOR = _string(f"cuship {__version__}")


def variants_files(rows: Sequence[Row]) -> dict[str, bytes]:
    """``{name}-{version}-variants.json`` of each version with variant wheels (PEP 825): the
    variants their ``variant.json`` files describe (kept in each row's ``describe`` record),
    merged, by file name. A yanked variant wheel is left out: an installer then never picks its
    label."""
    by_version: dict[tuple[str, str], list[Mapping[str, object]]] = defaultdict(list)
    for row in rows:
        if row.yanked is not None or split_variant(row.filename)[1] is None:
            continue
        record = row.describe.get("variant")
        if isinstance(record, Mapping):
            dist = row.filename.split("-", 1)[0]
            by_version[(dist, row.version)].append({"variants": record})
    return {
        variants_json_name(dist, version): dumps(merged(documents))
        for (dist, version), documents in sorted(by_version.items())
    }


def _variants_links(files: Mapping[str, bytes]) -> list[FileLink]:
    """The project page's links to its ``variants.json`` files (beside the page)."""
    return [
        FileLink(name, name, hashlib.sha256(data).hexdigest(), len(data), None, None, None)
        for name, data in files.items()
    ]


def _listed(rows: Sequence[Row], variants: Mapping[str, bytes]) -> Sequence[Row]:
    """The rows the combined page lists: with variants, the variant wheels and the plain ones,
    not the wheels with a local label (those stay in their sub-index): pip and uv without
    variants take the plain wheel, which a local label would outrank."""
    if not variants:
        return rows
    return [row for row in rows if row.local is None]


def _record_text(row: Row, texts: DescribeTexts) -> str:
    """``_dump`` of ``row.record()`` as text, keys in the order it sorts them: a manifest
    holds one record per wheel, and json's encoder, made for any document, costs most of
    rendering a project (its ``describe`` record is written once, through ``texts``)."""
    describe = encoded_once(row.describe, texts, _describe_json)
    href = row.attestation_href(PROJECT_DEPTH)
    attestation = (
        "null"
        if href is None
        else f'{{"sha256":{_nullable(row.attestation_sha256)},"url":{_string(href)}}}'
    )
    return (
        f'{{"attestation":{attestation},"describe":{describe},'
        f'"filename":{_string(row.filename)},"local":{_nullable(row.local)},'
        f'"metadata_sha256":{_string(row.metadata_sha256)},"project":{_string(row.project)},'
        f'"requires_python":{_nullable(row.requires_python)},"sha256":{_string(row.sha256)},'
        f'"size":{int(row.size)},"tags":{_tags_text(row.tags)},'
        f'"url":{_string(row.href(PROJECT_DEPTH))},"version":{_string(row.version)},'
        f'"yanked":{_nullable(row.yanked)}}}'
    )


def _describe_json(record: Mapping[str, object]) -> str:
    return _MANIFEST_JSON(dict(record))


def _nullable(text: str | None) -> str:
    return "null" if text is None else _string(text)


@functools.lru_cache(maxsize=4096)
def _tags_text(tags: tuple[str, ...]) -> str:
    return _MANIFEST_JSON(list(tags))


def root_pages(entries: Mapping[str, ProjectEntry]) -> dict[str, bytes]:
    """The combined and per-label project lists and the landing page: they depend only on
    which projects there are and the labels each has."""
    projects = sorted(entries)
    by_label: dict[str, list[str]] = defaultdict(list)
    for project in projects:
        for label in entries[project].labels:
            by_label[label].append(project)
    labels = sorted(by_label)
    tree = {"simple/index.html": root_html(projects), "simple/index.json": root_json(projects)}
    for label in labels:
        tree[f"{label}/simple/index.html"] = root_html(by_label[label])
        tree[f"{label}/simple/index.json"] = root_json(by_label[label])
    indexes = {"all variants": "simple/", **{label: f"{label}/simple/" for label in labels}}
    tree["index.html"] = landing_html(indexes)
    return tree


def index_manifest(entries: Mapping[str, ProjectEntry], base_url: str | None) -> bytes:
    """``cuship-index.json``: where each project's manifest is, its labels and wheel count.

    The bytes :func:`_dump` gives the document (keys sorted, compact, ASCII), the projects
    written as text: every update rewrites this file, one entry per project of the index,
    and a dict per project costs most of that."""
    labels = sorted({label for entry in entries.values() for label in entry.labels})
    shapes: dict[tuple[str, ...], str] = {}
    listed: list[str] = []
    for p in sorted(entries):
        entry = entries[p]
        shape = shapes.get(entry.labels)
        if shape is None:
            shape = shapes[entry.labels] = _MANIFEST_JSON(list(entry.labels))
        manifest = _string(f"simple/{p}/{PROJECT_MANIFEST}")
        listed.append(
            f'{_string(p)}:{{"labels":{shape},"manifest":{manifest},"wheels":{int(entry.wheels)}}}'
        )
    head = _MANIFEST_JSON(
        {
            "base_url": base_url,
            "generator": f"cuship {__version__}",
            "indexes": {"": "simple/", **{label: f"{label}/simple/" for label in labels}},
        }
    )
    schema = _MANIFEST_JSON(INDEX_SCHEMA)
    text = f'{head[:-1]},"projects":{{{",".join(listed)}}},"schema":{schema}}}\n'
    return text.encode("utf-8")


def manifest_entry(project: str, entry: ProjectEntry) -> dict[str, object]:
    """A project's entry in ``cuship-index.json``, as JSON reads it back."""
    return {
        "labels": list(entry.labels),
        "manifest": f"simple/{project}/{PROJECT_MANIFEST}",
        "wheels": int(entry.wheels),
    }


def patched_manifest(
    listed: Mapping[str, object],
    changed: Mapping[str, ProjectEntry | None],
    labels: Iterable[str],
    base_url: str | None,
) -> bytes:
    """The bytes :func:`index_manifest` gives, from the projects an index's manifest listed
    (``listed``: their entries as JSON read them) and the entries of the projects this run
    changed (None: no longer listed): an update copies and encodes the others in C."""
    projects = dict(listed)
    for project, entry in changed.items():
        if entry is None:
            projects.pop(project, None)
        else:
            projects[project] = manifest_entry(project, entry)
    document = {
        "base_url": base_url,
        "generator": f"cuship {__version__}",
        "indexes": {"": "simple/", **{label: f"{label}/simple/" for label in sorted(labels)}},
        "projects": projects,
        "schema": INDEX_SCHEMA,
    }
    return _dump(document)


def root_tree(entries: Mapping[str, ProjectEntry], base_url: str | None) -> dict[str, bytes]:
    """The roots (:func:`root_pages`), then the index's manifest (last)."""
    return {**root_pages(entries), MANIFEST: index_manifest(entries, base_url)}


@frozen(kw_only=False)
class ProjectEntry:
    """What the index's manifest says of one project."""

    labels: tuple[str, ...]
    wheels: int

    @classmethod
    def of(cls, rows: Sequence[Row]) -> ProjectEntry:
        return cls(variant_labels(rows), len(rows))


def group(rows: Iterable[Row]) -> dict[str, list[Row]]:
    """Rows by project."""
    by_project: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_project[row.project].append(row)
    return dict(by_project)


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
    wheels = list(wheels)
    rows = rows_of(
        wheels,
        base_url=base_url,
        yanked=yanked,
        descriptions=descriptions,
        bases=bases,
        attestations=attestations,
    )
    tree: dict[str, bytes] = {}
    for wheel in sorted(wheels, key=lambda w: w.filename):
        tree[f"files/{wheel.filename}.metadata"] = wheel.metadata
        ref = (attestations or {}).get(wheel.filename)
        if ref is not None and ref.content is not None:
            tree[f"files/{wheel.filename}{ATTESTATION_SUFFIX}"] = ref.content
    tree.update(site_tree(rows, check_base_url(base_url)))
    return tree


def site_trees(rows: Iterable[Row], base_url: str | None) -> Iterator[dict[str, bytes]]:
    """Every page and manifest of ``rows`` (no wheel, metadata or attestation file), one
    project at a time, then the roots: a writer holds one project's pages, not the index's."""
    entries: dict[str, ProjectEntry] = {}
    texts: DescribeTexts = {}
    for project, group_rows in sorted(group(rows).items()):
        yield project_tree(project, group_rows, describe_texts=texts)
        entries[project] = ProjectEntry.of(group_rows)
    yield root_tree(entries, base_url)


def site_tree(rows: Iterable[Row], base_url: str | None) -> dict[str, bytes]:
    """:func:`site_trees` as one mapping."""
    tree: dict[str, bytes] = {}
    for part in site_trees(rows, base_url):
        tree.update(part)
    return tree
