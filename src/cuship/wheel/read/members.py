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
from dataclasses import dataclass
from typing import IO

from cuship import settings
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


class UnsafeMember(InputError):
    """A member that cuship does not inflate: too large, too compressed, or outside the root."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberLimits:
    """The most one member may inflate to (bytes), and its largest inflated/compressed ratio."""

    size: int = DEFAULT_SIZE
    ratio: int = DEFAULT_RATIO


def member_limits(environ: Mapping[str, str] | None = None) -> MemberLimits:
    """The limits ``CUSHIP_WHEEL_MEMBER_LIMIT`` sets (``environ`` defaults to ``os.environ``);
    a value that is not a positive integer is a :class:`~cuship.errors.UsageError`."""
    import os

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
    if "\x00" in name:
        return "holds a NUL byte"
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return "is an absolute path"
    if ".." in re.split(r"[/\\]", name):
        return "climbs out of the archive with '..'"
    return None


def _size_text(size: int) -> str:
    return f"{size / _MiB:.1f} MiB" if size >= _MiB else f"{size} bytes"


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
        raise UnsafeMember(
            f"{where!r} declares {_size_text(info.file_size)} inflated, over the "
            f"{_size_text(limits.size)} a wheel member may have; refused, nothing inflated",
            hint=f"a real shared object is smaller; {settings.WHEEL_MEMBER_LIMIT} raises the limit",
        )
    compressed = max(info.compress_size, 1)
    if info.file_size > _RATIO_FLOOR and info.file_size > limits.ratio * compressed:
        raise UnsafeMember(
            f"{where!r} inflates {info.file_size // compressed} times "
            f"({_size_text(info.compress_size)} to {_size_text(info.file_size)}), over the "
            f"{limits.ratio}:1 a real file reaches (a zip bomb); refused, nothing inflated",
            hint="rebuild the wheel; real shared objects compress a few times at most",
        )


def check_members(infos: Iterable[zipfile.ZipInfo], source: str, limits: MemberLimits) -> None:
    """:func:`check_member` of every member."""
    for info in infos:
        check_member(info, source, limits)


def _overflow(where: str, bound: int) -> UnsafeMember:
    return UnsafeMember(
        f"{where!r} inflates past {_size_text(bound)}, more than its central directory "
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
) -> int:
    """Inflate ``info`` into ``out`` in pieces; its size. Bounded as the module says."""
    size = 0
    for chunk in _chunks(archive, info, source, limits):
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
            f"{source}:{info.filename!r} declares {_size_text(info.file_size)}, more than the "
            f"{_size_text(most)} cuship reads of such a file; refused",
            hint="rebuild the wheel with a standard build backend",
        )
    return b"".join(_chunks(archive, info, source, limits))


@contextmanager
def member_buffer(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, source: str, limits: MemberLimits
) -> Iterator[bytes | mmap.mmap]:
    """The member's bytes to read at random: in memory up to :data:`IN_MEMORY`, else a
    read-only map of an unlinked temporary file it was inflated into (closed on exit)."""
    if info.file_size <= IN_MEMORY:
        yield read_member(archive, info, source, limits)
        return
    with tempfile.TemporaryFile(prefix="cuship-member-") as spool:
        size = copy_member(archive, info, spool, source, limits)
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
    import base64
    import copy
    import hashlib

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
    encoded = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
    return f"sha256={encoded}", size
