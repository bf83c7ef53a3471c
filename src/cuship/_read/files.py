"""Files as the reader opens them: regular files only, refused by kind without blocking, read
to their kind's cap."""

from __future__ import annotations

import errno
import io
import mmap
import os
import stat
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cuship._format import size_text
from cuship._read.kinds import ARCHIVE, LOG, JsonRefused, Kind, NotRegular, Refused
from cuship._read.kinds import refused as _refused
from cuship._read.parse import decode, loads

_MIB = 1 << 20  # bytes read at once

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """What ``mode`` (``st_mode``) says the file is: ``a regular file``, ``a FIFO (named
    pipe)``, ``a directory``, a device, a socket."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def regular_problem(path: Path | str) -> str | None:
    """Why the file at ``path`` cannot be read as a file, or None: it does not exist, is a
    dangling symlink or a symlink loop, or is a FIFO, device, socket or directory (said as
    such; nothing is opened)."""
    where = Path(path)
    try:
        mode = where.stat().st_mode
    except FileNotFoundError:
        return "is a dangling symlink" if where.is_symlink() else "does not exist"
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "is a symlink loop"
        return f"cannot be read: {err.strerror or err}"
    if stat.S_ISREG(mode):
        return None
    return f"is {file_kind(mode)}, not a regular file"


def open_stated(path: Path | str, what: str = "file") -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file at ``path`` and its stat (taken on the
    descriptor). Opened with ``O_NONBLOCK``, so a FIFO with no writer is refused at once, never
    waited on; anything but a regular file is :class:`NotRegular` naming its kind. A missing
    file stays :class:`FileNotFoundError` (the caller says what that means)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        raise
    except OSError as err:
        problem = regular_problem(path) or f"cannot be opened: {err.strerror or err}"
        raise NotRegular(f"the {what} {str(path)!r} {problem}", problem=problem) from err
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode):
        os.close(fd)
        problem = f"is {file_kind(found.st_mode)}, not a regular file; refused"
        raise NotRegular(
            f"the {what} {str(path)!r} {problem}", problem=problem, hint=f"pass a regular {what}"
        )
    os.set_blocking(fd, True)
    return fd, found


def open_regular(path: Path | str, what: str = "file") -> int:
    """:func:`open_stated`'s descriptor alone."""
    return open_stated(path, what)[0]


def stated(path: Path | str, kind: Kind) -> os.stat_result:
    """The stat of the regular file at ``path`` (opened and closed, never read: for a reader
    such as SQLite that takes a path); :class:`NotRegular` otherwise."""
    fd, found = _open(path, kind)
    os.close(fd)
    return found


@contextmanager
def reader(path: Path | str, kind: Kind) -> Iterator[io.BufferedReader]:
    """A binary stream of the regular file at ``path`` (to hash or stream it in blocks; the
    caller bounds what it keeps)."""
    fd, _ = _open(path, kind)
    with os.fdopen(fd, "rb") as handle:
        yield handle


def open_file(path: Path | str, kind: Kind) -> io.BufferedReader:
    """:func:`reader`'s stream, for a caller that keeps it past a block (a server sending the
    file): the caller closes it."""
    fd, _ = _open(path, kind)
    return os.fdopen(fd, "rb")


@contextmanager
def mapped(path: Path | str, kind: Kind) -> Iterator[mmap.mmap | bytes]:
    """The regular file at ``path`` mapped read-only (a shared object of a GB costs the pages
    touched, not a GB); ``b""`` for an empty file, which cannot be mapped."""
    fd, found = _open(path, kind)
    try:
        if found.st_size == 0:
            yield b""
            return
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as data:
            yield data
    finally:
        os.close(fd)


@contextmanager
def archive(path: Path | str, kind: Kind | None = None) -> Iterator[zipfile.ZipFile]:
    """The zip archive (a wheel) at ``path``, opened as any file is here (a FIFO named
    ``x.whl`` is refused, never waited on). Its members are the caller's to bound
    (:mod:`cuship.wheel.read.members`)."""
    with reader(path, kind or ARCHIVE) as stream, zipfile.ZipFile(stream) as opened:
        yield opened


def _open(path: Path | str, kind: Kind) -> tuple[int, os.stat_result]:
    try:
        return open_stated(path, kind.what)
    except NotRegular as err:
        raise _refused(path, kind, err.problem, NotRegular) from err.__cause__
    except OSError as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise _refused(path, kind, f"cannot be read: {err.strerror or err}") from err


def read_bytes(path: Path | str, kind: Kind, *, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` (the kind's cap by default):
    a larger file is :class:`Refused` and nothing past the cap is read. A missing file stays
    :class:`FileNotFoundError`."""
    cap = kind.limit if limit is None else limit
    fd, found = _open(path, kind)
    try:
        if found.st_size > cap:
            raise too_large(path, kind, cap, found.st_size)
        chunks, size = [], 0
        while size <= cap and (chunk := os.read(fd, min(cap + 1 - size, _MIB))):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise _refused(path, kind, f"cannot be read: {err.strerror or err}") from err
    finally:
        os.close(fd)
    if size > cap:  # /proc and a file that grew say less than they hold
        raise too_large(path, kind, cap, None)
    return b"".join(chunks)


def read_head(path: Path | str, kind: Kind, limit: int | None = None) -> bytes:
    """The first ``limit`` bytes (the kind's cap by default) of the regular file at ``path``,
    the rest left unread: for a scan that needs only the start (a setup.py's arch flags)."""
    cap = kind.limit if limit is None else limit
    fd, _ = _open(path, kind)
    try:
        chunks, size = [], 0
        while size < cap and (chunk := os.read(fd, min(cap - size, _MIB))):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise _refused(path, kind, f"cannot be read: {err.strerror or err}") from err
    finally:
        os.close(fd)
    return b"".join(chunks)


def too_large(path: Path | str, kind: Kind, cap: int, size: int | None) -> Refused:
    said = f" ({size_text(size)})" if size is not None else ""
    return _refused(
        path, kind, f"is larger than {size_text(cap)}{said}, the most cuship reads of it"
    )


def read_text(path: Path | str, kind: Kind, *, limit: int | None = None) -> str:
    """:func:`read_bytes` decoded as UTF-8 (:func:`decode`)."""
    data = read_bytes(path, kind, limit=limit)
    try:
        return decode(data, f"the {kind.what} {str(path)!r}")
    except Refused as err:
        raise _refused(path, kind, err.problem, hint=_AS_UTF8) from None


_AS_UTF8 = "save the file as UTF-8"


def read_json(path: Path | str, kind: Kind, *, limit: int | None = None) -> Any:
    """:func:`read_bytes` parsed by :func:`loads`; every defect a :class:`Refused` naming it."""
    data = read_bytes(path, kind, limit=limit)
    try:
        return loads(data)
    except JsonRefused as err:
        raise _refused(path, kind, err.problem, JsonRefused) from err


def read_tail(path: Path | str, kind: Kind = LOG) -> str:
    """The last ``kind.limit`` bytes of the file at ``path`` as text (bad bytes replaced): the
    part of a long log an error quotes. "" when it cannot be read."""
    try:
        fd, found = _open(path, kind)
    except (OSError, Refused):
        return ""
    try:
        os.lseek(fd, max(0, found.st_size - kind.limit), os.SEEK_SET)
        data = os.read(fd, kind.limit)
    except OSError:
        data = b""
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")
