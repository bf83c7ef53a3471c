"""File operations cuship does in many places: hash a file, replace a file atomically, and
replace a whole directory tree as one step under a lock.

A tree is built in a staging directory beside its target. On Linux the two are swapped with
``renameat2(RENAME_EXCHANGE)``, which is atomic. Where that call is missing the swap takes two
renames; a crash between them leaves the old tree under ``.NAME.old-*``, which the next run puts
back before doing anything else.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cuship.errors import InputError
from cuship.events import Emit, Event, discard

__all__ = [
    "NotRegular",
    "exchange",
    "file_identity",
    "file_kind",
    "locked",
    "open_regular",
    "open_stated",
    "read_regular",
    "recover",
    "regular_problem",
    "sha256_file",
    "staging_dir",
    "umask",
    "write_atomic",
    "write_json",
]

_CHUNK = 1 << 20


def umask() -> int:
    """The process's umask, left as it is (Linux says it in /proc/self/status; elsewhere it is
    set and put back, which a thread creating files at that moment could see)."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegular(InputError):
    """A path cuship reads as a file (a wheel, a RECORD, an ELF object, a config) that is not a
    regular file: reading a FIFO or a device could block forever or never end."""


def file_kind(mode: int) -> str:
    """What ``mode`` (``st_mode``) says the file is: ``a regular file``, ``a FIFO (named
    pipe)``, ``a directory``, a device, a socket."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def regular_problem(path: Path | str) -> str | None:
    """Why the file at ``path`` cannot be read as a file, or None: it does not exist, is a
    dangling symlink or a symlink loop, or is a FIFO, device, socket or directory (said as
    such; a FIFO is never opened)."""
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


def open_regular(path: Path | str, what: str = "file") -> int:
    """A read-only descriptor of the regular file at ``path``; anything else (a FIFO, a
    device, a directory) is :class:`NotRegular` naming its kind. Opened without blocking, so
    a FIFO with no writer is refused at once, never waited on."""
    return open_stated(path, what)[0]


def open_stated(path: Path | str, what: str = "file") -> tuple[int, os.stat_result]:
    """:func:`open_regular`, and the file's stat taken on the descriptor (one fstat, where a
    caller that needs the stat would take a second)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise  # the caller says what a missing file means
    except OSError as err:
        problem = regular_problem(path) or f"cannot be opened: {err.strerror or err}"
        raise NotRegular(f"the {what} {str(path)!r} {problem}") from err
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode):
        os.close(fd)
        raise NotRegular(
            f"the {what} {str(path)!r} is {file_kind(found.st_mode)}, not a regular file; refused",
            hint=f"pass a regular {what}",
        )
    os.set_blocking(fd, True)
    return fd, found


def read_regular(path: Path | str, what: str, limit: int) -> bytes:
    """The bytes of the regular file at ``path`` (:func:`open_regular`), at most ``limit``:
    a larger file is an :class:`~cuship.errors.InputError` (nothing past the limit is read)."""
    fd = open_regular(path, what)
    try:
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise InputError(
            f"the {what} {str(path)!r} is larger than {limit} bytes, the most cuship reads of it",
            hint=f"pass a smaller {what}",
        )
    return data


def file_identity(path: Path | str | None) -> str:
    """A file as a cache key sees it (a tool, a compiler): its resolved path, size and mtime;
    ``missing`` when there is none. A new version of a tool is another file or a rewritten one."""
    if not path:
        return "missing"
    real = Path(path).resolve()
    try:
        st = real.stat()
    except OSError:
        return f"{real} missing"
    return f"{real} {st.st_size} {st.st_mtime_ns}"


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file at ``path``, read in 1 MiB chunks (OSError propagates)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` in one rename: readers see the old file or the new one.

    The temporary file is unique (two writers never share it) and removed on failure;
    OSError propagates for the caller to name the path and the fix.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            os.fchmod(handle.fileno(), mode)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, document: Any, *, indent: int | None = 2, **dumps: Any) -> None:
    """Write ``document`` as JSON (UTF-8, a final newline) with :func:`write_atomic`: the one way
    cuship writes a JSON file. ``dumps`` goes to :func:`json.dumps` (``sort_keys``, ``default``)."""
    text = json.dumps(document, indent=indent, **dumps) + "\n"
    write_atomic(path, text.encode("utf-8"))


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@contextlib.contextmanager
def locked(target: Path, emit: Emit = discard, *, transient: bool = False) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``.NAME.lock`` beside ``target`` (waits for other runs).

    ``transient``: the lock file is removed when the run ends, so that nothing is left beside
    ``target``; a run that waited on a file removed meanwhile takes the lock again on the file
    the path names now (so two runs never hold locks on two files)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = target.parent / f".{target.name}.lock"
    told = False
    while True:
        handle = lock_path.open("a")
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not told:
                    message = f"waiting for the lock on {str(lock_path)!r}"
                    emit(Event(level="info", topic="index", message=message))
                    told = True
                fcntl.flock(handle, fcntl.LOCK_EX)
        except BaseException:
            handle.close()
            raise
        if not transient or _names(lock_path, handle.fileno()):
            break
        handle.close()  # the file it waited on was removed by the run that held it
    try:
        yield
    finally:
        if transient:
            lock_path.unlink(missing_ok=True)
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the open file ``fd``."""
    try:
        there = path.stat()
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino)


def staging_dir(target: Path, *, mode: int = 0o755) -> Path:
    """A fresh empty directory beside ``target`` (same filesystem, so renames are atomic).

    Its mode is ``mode`` (mkdtemp makes 0700): the tree becomes ``target``, usually published.
    """
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    staging.chmod(mode)
    return staging


def recover(target: Path, emit: Emit = discard) -> None:
    """Undo what a crashed run left beside ``target``; call it while holding the lock."""
    parent = target.parent
    olds = sorted(parent.glob(f".{target.name}.old-*"))
    saved = [old / "tree" for old in olds if (old / "tree").is_dir()]
    if not target.exists() and saved:
        saved[-1].rename(target)
        message = f"restored {str(target)!r} after an interrupted run"
        emit(Event(level="warning", topic="index", message=message))
    for leftover in [*olds, *parent.glob(f".{target.name}.new-*")]:
        shutil.rmtree(leftover, ignore_errors=True)


def _renameat2_exchange(a: Path, b: Path) -> bool:
    import ctypes  # here: once a run, and most runs of cuship never exchange trees

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        func = libc.renameat2
    except (OSError, AttributeError):
        return False
    rc = func(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


def exchange(new: Path, target: Path) -> None:
    """Make ``new`` become ``target``; the previous tree is deleted afterwards."""
    if not target.exists():
        new.rename(target)
        return
    if _renameat2_exchange(new, target):
        shutil.rmtree(new)  # holds the previous tree now
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    target.rename(old / "tree")
    new.rename(target)
    shutil.rmtree(old)
