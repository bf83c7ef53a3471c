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
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cuship import _read
from cuship.errors import InputError
from cuship.events import Emit, Event, discard

__all__ = [
    "PathEscape",
    "exchange",
    "file_identity",
    "locked",
    "move",
    "recover",
    "remove_dir",
    "remove_file",
    "remove_tree",
    "sha256_file",
    "staging_dir",
    "umask",
    "under",
    "write_atomic",
    "write_json",
]

_CHUNK = 1 << 20


def umask() -> int:
    """The process's umask, left as it is (Linux says it in /proc/self/status; elsewhere it is
    set and put back, which a thread creating files at that moment could see)."""
    try:
        for line in _read.read_bytes("/proc/self/status", _read.SYSTEM_FILE).splitlines():
            if line.startswith(b"Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError, _read.Refused):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


class PathEscape(InputError):
    """A path built from input that would leave the directory it belongs under."""


def under(root: Path | str, *parts: str | os.PathLike[str]) -> Path:
    """``root`` joined with ``parts``, proven to stay under ``root`` before anything is written
    or deleted there: no part is ``..`` or an absolute path outside ``root``, none holds a NUL
    or a backslash, the result is not ``root`` itself, and on disk the deepest part that exists
    lies under ``root``'s real path (a symlink inside ``root`` that leads out is caught).
    :class:`PathEscape` (exit 2) otherwise. Every delete and replace of cuship goes through it
    (:func:`remove_tree`, :func:`remove_file`, :func:`move`; ``tests/unit/test_one_reader.py``
    walks the code)."""
    base = Path(os.path.normpath(Path(root).absolute()))
    path = base
    for part in parts:
        text = os.fspath(part)
        if not text or "\0" in text or "\\" in text:
            raise _escape(base, text, "is not a path")
        piece = Path(text)
        if piece.is_absolute():
            piece = _relative(base, piece)
        if ".." in piece.parts:
            raise _escape(base, text, "climbs out with '..'")
        path = path / piece
    if path == base:
        raise _escape(base, "", "is the directory itself")
    _held_on_disk(base, path)
    return path


def _relative(base: Path, piece: Path) -> Path:
    try:
        return Path(os.path.normpath(piece)).relative_to(base)
    except ValueError:
        raise _escape(base, str(piece), "lies elsewhere") from None


def _held_on_disk(base: Path, path: Path) -> None:
    """The deepest existing ancestor of ``path`` (``path`` itself a link is not followed)
    resolves under ``base``'s real path."""
    real_base = os.path.realpath(base)
    probe = path.parent
    while not os.path.lexists(probe) and probe != base and base in probe.parents:
        probe = probe.parent
    real = os.path.realpath(probe)
    if real != real_base and not real.startswith(real_base.rstrip(os.sep) + os.sep):
        raise _escape(base, str(path.relative_to(base)), f"leads to {real!r} through a link")


def _escape(base: Path, part: str, problem: str) -> PathEscape:
    return PathEscape(
        f"refusing the path {part!r} under {str(base)!r}: it {problem}",
        hint="a name from input (a config, a wheel, an index) must stay a plain name",
    )


def remove_tree(root: Path | str, *parts: str | os.PathLike[str]) -> None:
    """Delete the tree at :func:`under` ``(root, *parts)`` (a link there is removed, not
    followed); nothing when it is absent."""
    path = under(root, *parts)
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def remove_file(root: Path | str, *parts: str | os.PathLike[str]) -> None:
    """Delete the file (or link) at :func:`under` ``(root, *parts)``; nothing when absent."""
    under(root, *parts).unlink(missing_ok=True)


def remove_dir(root: Path | str, *parts: str | os.PathLike[str]) -> None:
    """Remove the empty directory at :func:`under` ``(root, *parts)`` (OSError when it is not
    empty, as :meth:`Path.rmdir`)."""
    under(root, *parts).rmdir()


def move(source: Path, root: Path | str, *parts: str | os.PathLike[str]) -> Path:
    """Rename ``source`` to :func:`under` ``(root, *parts)`` in one step, replacing what is
    there; the target."""
    target = under(root, *parts)
    source.replace(target)
    return target


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
    """Hex sha256 of the regular file at ``path``, read in 1 MiB chunks (a FIFO or a device is
    :class:`~cuship._read.NotRegular`; OSError propagates)."""
    digest = hashlib.sha256()
    with _read.reader(path, _read.HASHED) as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def new_file(root: Path | str, *parts: str | os.PathLike[str], mode: int = 0o644) -> Iterator[Path]:
    """A new file for :func:`under` ``(root, *parts)``: the block writes the temporary path it
    is given (beside the target, unique: two writers never share it, already of ``mode``), which
    is renamed onto the target when the block ends and removed when it raises. Readers see the
    old file or the new one, and a file already there keeps its bytes wherever else it is linked
    (a site's hard link to a published wheel). OSError propagates for the caller to name."""
    target = under(root, *parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    try:
        yield Path(tmp)
        Path(tmp).replace(target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` in one rename (see :func:`new_file`)."""
    with new_file(path.parent, path.name, mode=mode) as tmp:
        tmp.write_bytes(data)


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
