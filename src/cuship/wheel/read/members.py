"""A wheel's members read as untrusted input: checked against the central directory, streamed,
and bounded.

A wheel's central directory declares each member's size; :mod:`zipfile` inflates no more than
that, so the declared size is what is checked: a member that declares more than
:attr:`MemberLimits.size` (or inflates more than :attr:`MemberLimits.ratio` times its compressed
size: a zip bomb, a 3.8 MB wheel whose ``.so`` of zeros is 3.9 GB) is refused before a byte is
inflated, and every copy counts what it inflates and stops at the smaller of the two bounds
whatever the archive says. A member name that leaves the archive's root (``../x``, ``/etc/x``,
``C:\\x``, a NUL) is refused too.

Memory: a member up to :data:`IN_MEMORY` bytes is read into memory; a larger one is inflated
in :data:`CHUNK` pieces into an unlinked temporary file that is then mapped read-only, so the
anonymous memory a member costs stays under ``IN_MEMORY + CHUNK`` (36 MiB) whatever its size,
and a reader of the map touches only the pages it reads (the ELF headers and the fatbin
sections), which are the page cache's, not the process's own. The temporary file holds at
most :attr:`MemberLimits.size` bytes.
"""

from __future__ import annotations

import mmap
import re
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    import hashlib

from cuship._format import size_text
from cuship._record import frozen
from cuship.errors import InputError

__all__ = [
    "CHUNK",
    "IN_MEMORY",
    "MemberLimits",
    "UnsafeMember",
    "check_members",
    "copy_into",
    "copy_member",
    "member_buffer",
    "member_limits",
    "name_problem",
    "read_member",
]

_MiB = 1 << 20
CHUNK = 4 * _MiB
"""What one inflating step produces at most."""
IN_MEMORY = 32 * _MiB
"""Members up to this size are read into memory; larger ones go through a temporary file."""
DEFAULT_SIZE = 4096 * _MiB
DEFAULT_RATIO = 200
_RATIO_FLOOR = 4 * _MiB  # small members may compress as well as they like (a file of spaces)
_DRIVE = re.compile(r"[A-Za-z]:")
_ROOTS = ("/", "\\")


class UnsafeMember(InputError):
    """A member that cuship does not inflate: too large, too compressed, or outside the root."""


@frozen
class MemberLimits:
    """The most one member may inflate to (bytes), and its largest inflated/compressed ratio."""

    size: int = DEFAULT_SIZE
    ratio: int = DEFAULT_RATIO


def member_limits(environ: Mapping[str, str] | None = None) -> MemberLimits:
    """The limits ``CUSHIP_WHEEL_MEMBER_LIMIT`` sets (``environ`` defaults to ``os.environ``);
    a value that is not a positive integer is a :class:`~cuship.errors.UsageError`."""
    import os

    from cuship import settings
    from cuship.errors import UsageError

    text = (os.environ if environ is None else environ).get(settings.WHEEL_MEMBER_LIMIT, "")
    if not text.strip():
        return MemberLimits()
    try:
        size = int(text)
    except ValueError:
        size = 0
    if size <= 0:
        raise UsageError(
            f"{settings.WHEEL_MEMBER_LIMIT}={text!r} is not a positive number of bytes",
            hint=f"unset it (default {DEFAULT_SIZE} bytes) or give bytes, e.g. 1073741824",
        )
    return MemberLimits(size=size)


def name_problem(name: str) -> str | None:
    """Why a member name leaves the archive's root (None when it does not)."""
    if ".." not in name and "\x00" not in name and name[:1] not in _ROOTS and name[1:2] != ":":
        return None  # nearly every name: a few string tests, no split
    if "\x00" in name:
        return "holds a NUL byte"
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return "is an absolute path"
    if ".." in re.split(r"[/\\]", name):
        return "climbs out of the archive with '..'"
    return None


def check_member(info: zipfile.ZipInfo, source: str, limits: MemberLimits) -> None:
    """Refuse ``info`` (of the wheel ``source``) when its name escapes or its declared size or
    ratio is over ``limits``: :class:`UnsafeMember`, before anything is inflated."""
    where = f"{source}:{info.filename}"
    problem = name_problem(info.filename)
    if problem is not None:
        raise UnsafeMember(
            f"{where!r}: the member name {problem}; refused (an installer would write outside "
            "site-packages)",
            hint="rebuild the wheel with a standard build backend",
        )
    if info.file_size > limits.size:
        from cuship import settings

        raise UnsafeMember(
            f"{where!r} declares {size_text(info.file_size)} inflated, over the "
            f"{size_text(limits.size)} a wheel member may have; refused, nothing inflated",
            hint=f"a real shared object is smaller; {settings.WHEEL_MEMBER_LIMIT} raises the limit",
        )
    compressed = max(info.compress_size, 1)
    if info.file_size > _RATIO_FLOOR and info.file_size > limits.ratio * compressed:
        raise UnsafeMember(
            f"{where!r} inflates {info.file_size // compressed} times "
            f"({size_text(info.compress_size)} to {size_text(info.file_size)}), over the "
            f"{limits.ratio}:1 a real file reaches (a zip bomb); refused, nothing inflated",
            hint="rebuild the wheel; real shared objects compress a few times at most",
        )


def check_members(infos: Iterable[zipfile.ZipInfo], source: str, limits: MemberLimits) -> None:
    """:func:`check_member` of every member."""
    for info in infos:
        check_member(info, source, limits)


def _overflow(where: str, bound: int) -> UnsafeMember:
    return UnsafeMember(
        f"{where!r} inflates past {size_text(bound)}, more than its central directory "
        "declares (or the limit); refused, stopped there",
        hint="the wheel is damaged or hostile; fetch or build it again",
    )


def _chunks(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, source: str, limits: MemberLimits
) -> Iterator[bytes]:
    """The member's bytes in pieces of at most :data:`CHUNK`, stopping past the bound."""
    check_member(info, source, limits)
    bound = min(info.file_size, limits.size)
    where = f"{source}:{info.filename}"
    done = 0
    try:
        with archive.open(info) as member:
            while chunk := member.read(CHUNK):
                done += len(chunk)
                if done > bound:
                    raise _overflow(where, bound)
                yield chunk
    except (zipfile.BadZipFile, EOFError, zlib.error, ValueError) as err:
        raise InputError(
            f"{where!r} cannot be read: {err}",
            hint="the wheel is damaged (cut short?); fetch or build it again",
        ) from err
    except (NotImplementedError, RuntimeError) as err:  # an unknown method, an encrypted member
        raise InputError(f"{where!r} cannot be read: {err}", hint="rebuild the wheel") from err


def copy_member(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    out: IO[bytes],
    source: str,
    limits: MemberLimits,
    *,
    handle: BinaryIO | None = None,
    digest: hashlib._Hash | None = None,
) -> int:
    """Inflate ``info`` into ``out`` in pieces; its size. Bounded as the module says.
    ``handle`` and ``digest`` as for :func:`member_buffer`."""
    size = 0
    raw = handle is not None and _raw_readable(info)
    chunks = (
        _raw_chunks(handle, info, source, limits, digest)
        if raw and handle is not None
        else _chunks(archive, info, source, limits)
    )
    for chunk in chunks:
        out.write(chunk)
        size += len(chunk)
    return size


def read_member(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    source: str,
    limits: MemberLimits,
    *,
    most: int = IN_MEMORY,
) -> bytes:
    """The member's bytes, refused (:class:`UnsafeMember`) when it declares more than ``most``
    (a METADATA, a RECORD: read whole, so bounded tighter than a shared object)."""
    if info.file_size > most:
        raise UnsafeMember(
            f"{source}:{info.filename!r} declares {size_text(info.file_size)}, more than the "
            f"{size_text(most)} cuship reads of such a file; refused",
            hint="rebuild the wheel with a standard build backend",
        )
    return b"".join(_chunks(archive, info, source, limits))


@contextmanager
def member_buffer(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    source: str,
    limits: MemberLimits,
    *,
    handle: BinaryIO | None = None,
    digest: hashlib._Hash | None = None,
) -> Iterator[bytes | mmap.mmap]:
    """The member's bytes to read at random: in memory up to :data:`IN_MEMORY`, else a
    read-only map of an unlinked temporary file it was inflated into (closed on exit).

    ``handle``: the wheel opened again, to inflate a stored or deflated member straight from
    its bytes (no :mod:`zipfile` reader between); ``digest`` is then fed every byte inflated,
    and stands for the CRC (the caller holds it to RECORD's hash, which says more)."""
    if info.file_size <= IN_MEMORY:
        if handle is not None and _raw_readable(info):
            yield _inflate_whole(handle, info, source, limits, digest)
        else:
            yield read_member(archive, info, source, limits)
        return
    with tempfile.TemporaryFile(prefix="cuship-member-") as spool:
        size = copy_member(archive, info, spool, source, limits, handle=handle, digest=digest)
        spool.flush()
        if size == 0:
            yield b""
            return
        with mmap.mmap(spool.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            yield mapped


def copy_into(
    old: zipfile.ZipFile,
    new: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    source: str,
    limits: MemberLimits,
    *,
    header: zipfile.ZipInfo | None = None,
) -> tuple[str, int]:
    """Copy the member ``info`` of ``old`` into ``new`` under ``header`` (default: the same
    name, date, mode and method), streamed and bounded as :func:`copy_member`; its RECORD
    hash (``sha256=…``) and size."""
    import copy
    import hashlib

    from cuship.wheel.record import urlsafe_digest

    header = copy.copy(info) if header is None else header  # a copy: writing sets its offsets
    if info.is_dir():
        new.writestr(header, b"")
        return "", 0
    digest = hashlib.sha256()
    size = 0
    with new.open(header, "w") as out:
        for chunk in _chunks(old, info, source, limits):
            digest.update(chunk)
            out.write(chunk)
            size += len(chunk)
    return f"sha256={urlsafe_digest(digest.digest())}", size


_LOCAL_HEADER = 30


def _raw_readable(info: zipfile.ZipInfo) -> bool:
    """Whether the member can be inflated from the wheel's bytes here: stored or deflated, not
    encrypted (anything else goes through :mod:`zipfile`, which words why it cannot)."""
    return not info.flag_bits & 0x1 and info.compress_type in (
        zipfile.ZIP_STORED,
        zipfile.ZIP_DEFLATED,
    )


def _raw(handle: BinaryIO, info: zipfile.ZipInfo, source: str, limits: MemberLimits) -> int:
    """Where the member's compressed bytes start in ``handle`` (checked as :func:`_chunks`)."""
    check_member(info, source, limits)
    handle.seek(info.header_offset)
    head = handle.read(_LOCAL_HEADER)
    if len(head) != _LOCAL_HEADER or not head.startswith(b"PK\x03\x04"):
        raise _damaged(f"{source}:{info.filename}", "no local header where the directory says")
    name_len = int.from_bytes(head[26:28], "little")
    extra_len = int.from_bytes(head[28:30], "little")
    return info.header_offset + _LOCAL_HEADER + name_len + extra_len


def _damaged(where: str, why: str) -> InputError:
    return InputError(
        f"{where!r} cannot be read: {why}",
        hint="the wheel is damaged (cut short?); fetch or build it again",
    )


def _inflate_whole(
    handle: BinaryIO,
    info: zipfile.ZipInfo,
    source: str,
    limits: MemberLimits,
    digest: hashlib._Hash | None,
) -> bytes:
    """The member inflated in one step (one buffer, no pieces to join), bounded as
    :func:`_chunks`; checked against its CRC, or fed to ``digest``."""
    where = f"{source}:{info.filename}"
    handle.seek(_raw(handle, info, source, limits))
    raw = handle.read(info.compress_size)
    bound = min(info.file_size, limits.size)
    if info.compress_type == zipfile.ZIP_STORED:
        data, finished = raw[: bound + 1], True
    else:
        inflater = zlib.decompressobj(-15)
        try:
            data = inflater.decompress(raw, bound + 1)
        except zlib.error as err:
            raise _damaged(where, str(err)) from err
        finished = inflater.eof
    _check_end(where, info, bound, len(data), finished)
    if digest is not None:
        digest.update(data)
    elif zlib.crc32(data) != info.CRC:
        raise _damaged(where, "its CRC does not match")
    return data


def _check_end(where: str, info: zipfile.ZipInfo, bound: int, size: int, finished: bool) -> None:
    if size > bound:
        raise _overflow(where, bound)
    if not finished or size != info.file_size:
        raise _damaged(where, f"{size} bytes inflated, the directory says {info.file_size}")


def _raw_chunks(
    handle: BinaryIO,
    info: zipfile.ZipInfo,
    source: str,
    limits: MemberLimits,
    digest: hashlib._Hash | None,
) -> Iterator[bytes]:
    """:func:`_inflate_whole` in pieces of at most :data:`CHUNK`."""
    where = f"{source}:{info.filename}"
    handle.seek(_raw(handle, info, source, limits))
    bound = min(info.file_size, limits.size)
    inflater = zlib.decompressobj(-15) if info.compress_type else None
    left, done, crc = info.compress_size, 0, 0
    for piece in _pieces(handle, inflater, left, where):
        done += len(piece)
        if done > bound:
            raise _overflow(where, bound)
        if digest is not None:
            digest.update(piece)
        else:
            crc = zlib.crc32(piece, crc)
        yield piece
    _check_end(where, info, bound, done, inflater is None or inflater.eof)
    if digest is None and crc != info.CRC:
        raise _damaged(where, "its CRC does not match")


def _pieces(
    handle: BinaryIO, inflater: zlib._Decompress | None, left: int, where: str
) -> Iterator[bytes]:
    """The ``left`` compressed bytes at ``handle``'s position, inflated (``inflater``; None:
    stored) in pieces of at most :data:`CHUNK`."""
    try:
        while left:
            data = handle.read(min(left, CHUNK))
            if not data:
                raise _damaged(where, "the archive ends inside it")
            left -= len(data)
            if inflater is None:
                yield data
                continue
            while data:
                yield inflater.decompress(data, CHUNK)
                data = inflater.unconsumed_tail
        while inflater is not None and not inflater.eof:  # what it holds back past the input
            piece = inflater.decompress(b"", CHUNK)
            if not piece:
                break
            yield piece
    except zlib.error as err:
        raise _damaged(where, str(err)) from err
