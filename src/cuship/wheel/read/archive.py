"""A wheel file read for the index: its sha256, its METADATA, and how its RECORD agrees with
the archive; then whether METADATA and its ``.dist-info`` folder agree with the filename.

Wheels are untrusted input. A file up to :data:`READ_WHOLE` is read once into memory (hash and
zip from the same bytes, the central directory read without :mod:`zipfile` where the archive
allows, see :mod:`~cuship.wheel.read.zipmeta`); a larger one is hashed and opened as a stream.
No METADATA is inflated past :data:`METADATA_LIMIT`, whatever the archive says, and a member
name that leaves the archive's root is refused. What cannot be read raises
:class:`Unreadable`; what disagrees with the filename, :class:`Disagrees`: each message says
why, for the index's skip.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion

from cuship import _read
from cuship._format import size_text
from cuship._fs import sha256_file
from cuship._read import open_regular, open_stated
from cuship.wheel.read.filename import FilenameSays, canonical_name
from cuship.wheel.read.headers import header_fields
from cuship.wheel.read.members import name_problem
from cuship.wheel.read.zipmeta import (
    METADATA_LIMIT,
    Listing,
    Member,
    member_at,
    member_names,
    metadata_fast,
)
from cuship.wheel.record import (
    RECORD_LIMIT,
    RecordMismatch,
    check_digest,
    check_listing,
    hasher,
    missing_record,
    parse_record,
    record_agrees,
    record_name,
)

if TYPE_CHECKING:
    from packaging.utils import NormalizedName

__all__ = [
    "READ_WHOLE",
    "Disagrees",
    "Unreadable",
    "WheelRead",
    "check_dist_info",
    "check_metadata",
    "read_wheel",
    "read_whole",
]

# Wheels up to this size are read once into memory (hash and zip from the same bytes).
READ_WHOLE = 64 * 1024 * 1024


class Unreadable(Exception):
    """The archive is broken or holds no single METADATA; the message says why."""


class Disagrees(Exception):
    """METADATA, or the ``.dist-info`` folder, disagrees with the filename (pip would refuse
    the wheel); the message says how."""


# What reading a wheel gives (a tuple: a NamedTuple class costs the index's start-up a million
# instructions): its sha256; METADATA's member (name and bytes); whether it is known to hold no
# shared object (all member names read, none like *.so); its size; the stat of the file opened,
# when no size was planned; how RECORD disagrees with the archive
WheelRead = tuple[str, Member, bool, int, "os.stat_result | None", "RecordMismatch | None"]


@functools.lru_cache(maxsize=65536)
def _canonical(name: str) -> NormalizedName:
    return canonical_name(name)


def read_wheel(path: str, size: int | None) -> WheelRead:
    """Hash the file and pull its METADATA, reading small files once; ``size``: from a stat
    before, when one was taken (else the file opened is stated). Raises :class:`Unreadable`,
    :class:`~cuship._read.NotRegular` and :class:`OSError`."""
    no_shared = False
    found = None
    data = None
    if size is None:
        data, found = _read_stated(path)
        size = found.st_size
    elif size <= READ_WHOLE:
        data = read_whole(path, size)
    if data is not None:
        digest = hashlib.sha256(data).hexdigest()
        shared: list[bool] = []
        suspect: list[bool] = []
        listing: Listing = ({}, [])
        fast = metadata_fast(data, shared, suspect, listing)
        if fast is not None and suspect:
            _check_names(member_names(data) or [])
        no_shared = fast is not None and not shared
        if fast is not None:
            member, problem = fast, _record_fast(data, fast, path, listing)
        else:
            member, problem = _metadata_from(io.BytesIO(data), path)
    else:
        digest = sha256_file(Path(path))
        with _read.reader(path, _read.ARCHIVE) as handle:
            member, problem = _metadata_from(handle, path)
    return digest, member, no_shared, size, found, problem


def _read_stated(path: str) -> tuple[bytes | None, os.stat_result]:
    """The file's bytes (None when larger than :data:`READ_WHOLE`) and its stat, from the
    file opened: one path lookup, where a stat and then an open take two."""
    fd, found = open_stated(path, "wheel")
    try:
        data = None if found.st_size > READ_WHOLE else _read_fd(fd, found.st_size)
    finally:
        os.close(fd)
    return data, found


def read_whole(path: str, size: int) -> bytes:
    """The file's bytes (plain os calls: pathlib's read_bytes costs twice as much per wheel);
    ``size``, from the stat before, is a hint: a file that grew since is read to its end."""
    fd = open_regular(path, "wheel")
    try:
        return _read_fd(fd, size)
    finally:
        os.close(fd)


def _read_fd(fd: int, size: int) -> bytes:
    """What is left to read from ``fd``, ``size`` bytes expected (more are read, if there)."""
    first = os.read(fd, size + 1)
    if len(first) == size:  # one byte fewer than asked: the end, as the stat said
        return first
    chunks = [first]
    while chunks[-1]:
        chunks.append(os.read(fd, max(size, 1 << 16)))
    return b"".join(chunks)


_LIMIT_TEXT = size_text(METADATA_LIMIT)


def _metadata_from(
    source: io.BufferedIOBase | io.BytesIO, path: str
) -> tuple[Member, RecordMismatch | None]:
    """The METADATA member through :mod:`zipfile`, inflating at most ``METADATA_LIMIT + 1``,
    and how the RECORD beside it disagrees with the archive (``path``: the wheel's)."""
    try:
        with zipfile.ZipFile(source) as archive:
            _check_names(archive.namelist())
            infos = [
                i
                for i in archive.infolist()
                if i.filename.count("/") == 1 and i.filename.endswith(".dist-info/METADATA")
            ]
            if len(infos) != 1:
                found = "no" if not infos else f"{len(infos)}"
                raise Unreadable(f"{found} .dist-info/METADATA in the wheel")
            (info,) = infos
            if info.file_size > METADATA_LIMIT:
                raise Unreadable(
                    f"{info.filename} is {info.file_size} bytes, over the {_LIMIT_TEXT} limit"
                )
            with archive.open(info) as member:
                data = member.read(METADATA_LIMIT + 1)
            problem = None
            if len(data) <= METADATA_LIMIT:
                problem = _record_zip(archive, Member(info.filename, data), path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as err:
        raise Unreadable(f"broken zip: {err}") from err
    except zlib.error as err:
        raise Unreadable(f"corrupt compressed data in METADATA: {err}") from err
    except (NotImplementedError, RuntimeError) as err:  # unknown method, encrypted member
        raise Unreadable(f"unreadable METADATA: {err}") from err
    if len(data) > METADATA_LIMIT:
        raise Unreadable(f"{info.filename} inflates past the {_LIMIT_TEXT} limit")
    return Member(info.filename, data), problem


def _record_fast(
    data: bytes, metadata: Member, path: str, listing: Listing
) -> RecordMismatch | None:
    """How RECORD disagrees with the wheel ``data`` (its central directory, ``listing``, and
    METADATA's hash), read without :mod:`zipfile` where the archive allows."""
    record = record_name(metadata.name)
    wanted = record.encode()
    at = next((entry for name, entry in listing[1] if name == wanted), None)
    content = None if at is None else member_at(data, at, RECORD_LIMIT)
    if at is not None and content is None:
        return _metadata_from(io.BytesIO(data), path)[1]  # zipfile words what is unusual
    if content is not None and record_agrees(
        content, listing[0], record, metadata.name, metadata.data
    ):
        return None
    named = [(name.decode("utf-8", errors="replace"), size) for name, size in listing[0].items()]
    return _record_problem(named, content, metadata, path.rpartition("/")[2])


def _record_zip(archive: zipfile.ZipFile, metadata: Member, path: str) -> RecordMismatch | None:
    """:func:`_record_fast` through :mod:`zipfile` (its errors go to the caller)."""
    record = record_name(metadata.name)
    wheel = path.rpartition("/")[2]
    try:
        info = archive.getinfo(record)
    except KeyError:
        return missing_record(wheel, record)
    if info.file_size > RECORD_LIMIT:
        return RecordMismatch(
            f"{wheel!r}: {record!r} is {info.file_size} bytes, over the {RECORD_LIMIT} a RECORD "
            "may have",
            hint="rebuild the wheel with a standard build backend",
        )
    with archive.open(info) as member:
        content = member.read(RECORD_LIMIT + 1)
    listing = [(i.filename, i.file_size) for i in archive.infolist()]
    return _record_problem(listing, content, metadata, wheel)


def _record_problem(
    listing: list[tuple[str, int]], content: bytes | None, metadata: Member, wheel: str
) -> RecordMismatch | None:
    record = record_name(metadata.name)
    if content is None:
        return missing_record(wheel, record)
    try:
        rows = parse_record(content, wheel, record)
        check_listing(rows, listing, wheel, record)
        row = rows.get(metadata.name)
        digest = hasher(row)
        if digest is not None:
            digest.update(metadata.data)
            check_digest(row, digest.digest(), metadata.name, wheel, record)
    except RecordMismatch as err:
        return err
    return None


def _check_names(names: Iterable[str]) -> None:
    """Refuse a wheel with a member that leaves the archive's root (pip would write it
    outside site-packages, or refuse it)."""
    for name in names:
        problem = name_problem(name)
        if problem is not None:
            raise Unreadable(f"the member name {_shown(name)} {problem}")


def _shown(name: str) -> str:
    return repr(name if len(name) <= 120 else name[:117] + "...")


def check_dist_info(member: str, name: NormalizedName) -> None:
    """pip installs a wheel only when its ``.dist-info`` directory (``member``: METADATA's
    name) names the project: :class:`Disagrees` when it does not."""
    folder = member.partition("/")[0]
    if not _names_project(folder, name):
        raise Disagrees(
            f"its metadata directory {folder!r} does not name the project {name!r} "
            "(pip would reject it)",
        )


def _names_project(folder: str, name: NormalizedName) -> bool:
    stem = folder.removesuffix(".dist-info")
    first, last = stem.partition("-")[0], stem.rpartition("-")[0] or stem
    return name == _canonical(first) or name == _canonical(last)


def check_metadata(
    where: str, metadata: bytes, name: FilenameSays, requires_dist: list[str] | None = None
) -> str | None:
    """Requires-Python from METADATA, after checking Name and Version agree with the filename
    of the wheel at ``where`` (:class:`Disagrees` when not); ``requires_dist`` gets the
    Requires-Dist values."""
    fields: dict[str, str] = {}
    try:
        text = metadata.decode("utf-8")
    except UnicodeDecodeError as err:
        raise Disagrees(f"its METADATA is not UTF-8 ({err.reason} at byte {err.start})") from err
    for key, value in header_fields(text):
        fields[key] = value
        if key == "requires-dist" and requires_dist is not None:
            requires_dist.append(value)
    meta_name, meta_version = fields.get("name", ""), fields.get("version", "")
    from packaging.version import Version

    try:
        # The filename's own spelling first: it is how METADATA says it, nearly always.
        filename = where.rpartition("/")[2]
        same_version = (
            meta_version == filename.split("-", 2)[1] or Version(meta_version) == name.version
        )
    except InvalidVersion:
        same_version = False
    if _canonical(meta_name) != name.project or not same_version:
        raise Disagrees(
            f"METADATA says Name {meta_name!r} Version {meta_version!r} but the filename says "
            f"{name.project!r} {name.version_text!r} (pip would reject it)",
        )
    return fields.get("requires-python") or None
