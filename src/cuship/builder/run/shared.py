"""What jobs built at once share, and how they take turns (``cuship build --parallel N``).

Most of a job is its own: its ``raw/<job>`` directory (``TMPDIR``, the smoke venv), its log, its
wheel's name. Three things are not, and the planner names them on the steps that use them
(:attr:`~cuship.builder.model.Step.holds`), as keys:

- ``env:<dir>``: a build venv (one per interpreter under ``<out>/envs``, made by the first job of
  that Python and reused), or the running interpreter's own environment when a job installs its
  build dependencies there. Making the venv and installing into it are one job's at a time; a
  job that installs its own build dependencies (``[build] extra_deps``, e.g. its torch) keeps the
  env until its wheel is built, so no other job swaps them under it.
- ``source:<dir>``: the project's tree, for a build backend that builds in it (setuptools'
  ``build/`` and ``*.egg-info``, shared by every Python): one ``pip wheel`` there at a time.
- the toolkit cache needs no key: ``cuship toolkit install`` holds a file lock per release.

A job takes a key at the first step that names it and lets it go after the last one; keys are
taken in step order (an env before the source tree, never the other way), so two jobs cannot
wait on each other.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from cuship.builder.model import Step

__all__ = [
    "OUT_OF_TREE",
    "Locks",
    "Turns",
    "builds_in_tree",
    "describe",
    "env_key",
    "last_use",
    "source_key",
]

OUT_OF_TREE = frozenset(
    {
        "scikit_build_core.build",  # a fresh build directory under TMPDIR unless build-dir is set
        "hatchling.build",
        "flit_core.buildapi",
        "pdm.backend",
        "mesonpy",  # a build directory of its own per build
    }
)
"""Build backends that write nothing shared into the source tree while building a wheel."""


def env_key(path: Path | str) -> str:
    """The key of a build environment (a venv's directory, or an interpreter's executable)."""
    return f"env:{path}"


def source_key(path: Path | str) -> str:
    """The key of a source tree that its build backend builds in."""
    return f"source:{path}"


_NAMES = {"env": "the build environment", "source": "the source tree"}


def describe(key: str) -> str:
    """A key in words: ``the build environment /out/envs/cp312-…``."""
    kind, _, where = key.partition(":")
    return f"{_NAMES.get(kind, kind)} {where}"


def builds_in_tree(backend: str | None, build_dir: str | None) -> bool:
    """Whether ``pip wheel`` of a project writes into its source tree: any backend not known to
    build elsewhere (setuptools, a custom one), or one given a fixed ``build-dir``."""
    return backend not in OUT_OF_TREE or build_dir is not None


def last_use(steps: Sequence[Step]) -> dict[str, int]:
    """For each key the steps hold, the index of the last step that holds it."""
    return {key: i for i, step in enumerate(steps) for key in step.holds}


class Locks:
    """One lock per key, made on first use; shared by every job of a batch."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    @contextlib.contextmanager
    def spans(self, steps: Sequence[Step]) -> Iterator[Turns]:
        """Hand out keys while ``steps`` run (see :class:`Turns`); all let go at the end."""
        turns = Turns(self, steps)
        try:
            yield turns
        finally:
            turns.release_all()


class Turns:
    """One job's keys: :meth:`before` step ``i`` takes what it needs, :meth:`after` lets go of
    what no later step needs."""

    def __init__(self, locks: Locks, steps: Sequence[Step]) -> None:
        self._locks, self._steps, self._last = locks, steps, last_use(steps)
        self.held: dict[str, threading.Lock] = {}

    def before(self, i: int, waiting: Callable[[str], None] | None = None) -> None:
        """Take the keys step ``i`` needs and this job lacks; ``waiting(key)`` is told of a key
        another job holds before this one waits for it."""
        for key in self._steps[i].holds:
            if key in self.held:
                continue
            lock = self._locks.lock(key)
            if not lock.acquire(blocking=False):
                if waiting is not None:
                    waiting(key)
                lock.acquire()
            self.held[key] = lock

    def after(self, i: int) -> None:
        for key in [k for k in self.held if self._last.get(k, -1) <= i]:
            self.held.pop(key).release()

    def release_all(self) -> None:
        for lock in self.held.values():
            lock.release()
        self.held.clear()
