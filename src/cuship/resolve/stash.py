"""One decision per frontend run, shared by the hooks the frontend calls in separate processes.

pip, uv and build call ``get_requires_for_build_wheel``, ``prepare_metadata_for_build_wheel``
and ``build_wheel`` each in a new Python process, all children of the frontend. The first hook
decides (and, for a prebuilt wheel, downloads, verifies and finishes it); the others read that
decision from ``<project>/.cuship-prebuilt/<frontend>/``, where ``<frontend>`` names the calling
process by its pid and start time, so a later run never reads an earlier run's decision.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cuship import _read
from cuship._fs import remove_dir, remove_tree, write_json
from cuship._record import frozen
from cuship.errors import CushipError
from cuship.resolve.provenance import Handover

__all__ = ["STASH", "Choice", "Stash", "frontend_key", "stash_for"]

STASH = ".cuship-prebuilt"
_CHOICE = "choice.json"


def frontend_key(pid: int) -> str | None:
    """``PID-STARTTIME`` of a running process (Linux), ``PID`` elsewhere; None: it is gone."""
    try:
        stat = _read.read_bytes(f"/proc/{pid}/stat", _read.SYSTEM_FILE).decode("utf-8", "replace")
    except FileNotFoundError:
        return None if Path("/proc/self/stat").exists() else str(pid)
    except (OSError, _read.Refused):
        return str(pid)
    fields = stat.rsplit(")", 1)[-1].split()
    return f"{pid}-{fields[19]}" if len(fields) > 19 else str(pid)  # field 22: starttime


@frozen
class Choice:
    """What a frontend run decided; ``wheel`` is a finished wheel in the stash, if one is."""

    provenance: Handover
    wheel: str | None = None
    wheel_sha256: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "provenance": self.provenance.to_json(),
            "wheel": self.wheel,
            "wheel_sha256": self.wheel_sha256,
        }


@frozen
class Stash:
    """A directory for one frontend run's decision and wheel; ``shared``: later hooks see it."""

    dir: Path
    shared: bool

    def load(self) -> Choice | None:
        """The choice an earlier hook of this run saved (None: none, or unreadable)."""
        try:
            doc = _read.read_json(self.dir / _CHOICE, _read.CACHE)
            provenance = Handover.from_json(doc["provenance"], str(self.dir / _CHOICE))
        except (OSError, ValueError, KeyError, TypeError, CushipError):
            return None  # unreadable: this hook decides anew
        wheel, digest = doc.get("wheel"), doc.get("wheel_sha256")
        if wheel is not None and not (self.dir / str(wheel)).is_file():
            return None
        return Choice(provenance=provenance, wheel=wheel, wheel_sha256=digest)

    def save(self, choice: Choice) -> None:
        """Write ``choice`` atomically (a temporary file renamed into place)."""
        write_json(self.dir / _CHOICE, choice.to_json(), indent=None)

    def clear(self) -> None:
        """Remove this run's directory, and the stash root when nothing else is in it."""
        remove_tree(self.dir.parent, self.dir.name)
        if self.shared:
            with contextlib.suppress(OSError):  # another run's directory is still there
                remove_dir(self.dir.parent.parent, self.dir.parent.name)


def _prune(root: Path, keep: str) -> None:
    """Remove the directories of frontend runs whose process is gone (failed runs leave them)."""
    for entry in root.iterdir():
        pid = entry.name.split("-", 1)[0]
        if entry.name != keep and pid.isdigit() and frontend_key(int(pid)) != entry.name:
            remove_tree(root, entry.name)


@contextmanager
def stash_for(project: Path, frontend: str | None, fallback: Path | None) -> Iterator[Stash]:
    """The shared stash of this frontend run in ``project``; else a private one, removed after.

    Private (not shared) when the frontend is unknown or the project directory is read-only;
    it lives in ``fallback`` or a temporary directory.
    """
    if frontend:
        root = project / STASH
        try:
            (root / frontend).mkdir(parents=True, exist_ok=True)
            _prune(root, frontend)
        except OSError:
            pass
        else:
            yield Stash(dir=root / frontend, shared=True)
            return
    with tempfile.TemporaryDirectory(prefix="cuship-prebuilt-") as temp:
        private = Path(temp) if fallback is None else fallback
        try:
            yield Stash(dir=private, shared=False)
        finally:
            remove_tree(private.parent, private.name)
