"""Project names (PEP 503) and the plain parts of a wheel's filename (PEP 427, PEP 425), without
importing :mod:`packaging.utils`.

``packaging.utils`` brings in ``packaging.tags``, and with it ``sysconfig``, ``logging``,
``subprocess`` and the manylinux and musllinux probes: about a sixth of ``cuship index``'s
start-up, before the first wheel is read. What the index needs of a filename is small: the
normalised project name and the tag set. These give the same answers as packaging for the
names and tags they accept (the tests compare them), and say ``None`` for anything else, which
the caller then hands to packaging itself (imported there) for its verdict and its wording;
:func:`parse_filename` does both for a whole wheel filename, its parts through caches.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, NamedTuple, cast

from packaging.version import InvalidVersion

from cuship.wheel.variant import split_variant

if TYPE_CHECKING:
    from packaging.utils import NormalizedName
    from packaging.version import Version

__all__ = [
    "BadFilename",
    "FilenameSays",
    "canonical_name",
    "parse_filename",
    "plain_project",
    "tag_set",
]

_RUNS = re.compile(r"[-_.]+")
# A name part packaging accepts ([\w\d._]*, no "__"), narrowed to ASCII and to a letter or
# digit at each end: what nearly every wheel is called. Anything else goes to packaging.
_PLAIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._]*[A-Za-z0-9])?")
_PLAIN_TAG = re.compile(r"[a-z0-9_]+")  # one component of a tag, in lower case
_VARIANT_LABEL = re.compile(r"[0-9a-z_.]+")


class BadFilename(Exception):
    """A filename that is not a wheel's as pip reads it; the message says why."""


class FilenameSays(NamedTuple):
    """What a wheel's filename says, parsed."""

    project: NormalizedName
    version: Version
    version_text: str  # str(version): the normal form
    local: str | None
    tags: tuple[str, ...]  # sorted


def canonical_name(name: str) -> NormalizedName:
    """PEP 503's normal form: runs of ``-``, ``_`` and ``.`` become one ``-``, all lower case."""
    return cast("NormalizedName", _RUNS.sub("-", name).lower())


def plain_project(name_part: str) -> NormalizedName | None:
    """The project a wheel filename's name part names, when the part is plain (see
    ``_PLAIN``) and has no ``__``; None when packaging must decide."""
    if "__" in name_part or _PLAIN.fullmatch(name_part) is None:
        return None
    return canonical_name(name_part)


def tag_set(tag_part: str) -> tuple[str, ...] | None:
    """The tags of a filename's ``PYTHON-ABI-PLATFORM`` part, a compressed set expanded
    (``py2.py3-none-any`` is two), lower case and sorted; None unless the part is three
    fields of plain components (ASCII letters, digits and ``_``; a Python tag not starting
    with a digit): packaging's checks of the rest have changed between releases (26.3 refuses
    an empty component and a Python tag that is not an identifier)."""
    fields = tag_part.lower().split("-")
    if len(fields) != 3:
        return None
    pythons, abis, platforms = (field.split(".") for field in fields)
    if not all(map(_PLAIN_TAG.fullmatch, (*pythons, *abis, *platforms))):
        return None
    if not all(python.isidentifier() for python in pythons):
        return None
    return tuple(sorted({f"{p}-{a}-{x}" for p in pythons for a in abis for x in platforms}))


def parse_filename(filename: str) -> FilenameSays:
    """``filename`` parsed as :func:`packaging.utils.parse_wheel_filename` does, its parts
    through caches (an index repeats project names, versions and tag sets many times);
    anything unusual (a build tag, a name that is not plain), and every error, goes to
    packaging itself. A wheel variant's label (PEP 825, the last dash component) is read past.
    :class:`BadFilename` says what is wrong with a name it refuses."""
    plain, label = split_variant(filename)
    if label is not None:
        if not _VARIANT_LABEL.fullmatch(label):
            raise BadFilename(f"invalid variant label {label!r} (lower case [0-9a-z_.])")
        filename = plain

    stem = filename[:-4]
    if filename.endswith(".whl") and stem.count("-") == 4:
        name_part, version_part, tag_part = stem.split("-", 2)
        project = _project_part(name_part)
        tags = _tag_part(tag_part)
        if project is not None and tags is not None:
            try:
                version, text, local = _version_part(version_part)
            except InvalidVersion:
                pass  # worded below
            else:
                return FilenameSays(project, version, text, local, tags)
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        name, version, _build, parsed = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion) as err:
        raise BadFilename(f"invalid wheel filename: {err}") from err
    return FilenameSays(name, version, str(version), version.local, tuple(sorted(map(str, parsed))))


@functools.lru_cache(maxsize=65536)
def _project_part(name_part: str) -> NormalizedName | None:
    return plain_project(name_part)


@functools.lru_cache(maxsize=65536)
def _version_part(version_part: str) -> tuple[Version, str, str | None]:
    from packaging.version import Version

    version = Version(version_part)
    return version, str(version), version.local


@functools.lru_cache(maxsize=4096)
def _tag_part(tag_part: str) -> tuple[str, ...] | None:
    return tag_set(tag_part)
