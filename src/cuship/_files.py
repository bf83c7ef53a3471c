"""Two file operations cuship does in many places: hash a file, and replace a file atomically."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

__all__ = ["sha256_file", "write_atomic"]

_CHUNK = 1 << 20


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
