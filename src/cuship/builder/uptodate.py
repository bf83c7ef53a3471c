"""A job whose wheel was built before from the same inputs is not built again.

A job's inputs are the job (its matrix entry and label), the exact commands and environment of
every step (the interpreter, the toolkit, the torch spec, the arch flags, the project's own
switches), the toolkit's version and cuship's version, not the parallelism (``MAX_JOBS`` and its
kin change no wheel); and what it builds:

- a released sdist (a packages.yml entry's ``name==version`` from PyPI): the requirement names
  the source's bytes, since an index never changes a file it published;
- a project's source tree: the tree as it stands when the build starts (:func:`tree_state`:
  every file's path, size and modification time, as make and ninja judge a file changed), but
  what builds write into it (hidden entries, ``__pycache__``, ``*.egg-info``, venvs, the
  top-level ``build/`` and ``dist/``, and the job's output directory). So ``cuship ship`` after
  ``cuship build`` of an unchanged tree reuses what the build made.

After a job is built its record ``<wheels>/inputs/<job>.json`` names the digest (and the tree's
state), the wheel, the wheel's sha256 and how its smoke test went. A later run whose plan has
that digest (and whose tree is in that state), and whose wheel is still there with those bytes,
reuses it (``--rebuild`` builds anyway); anything else builds. The record is written after the
wheel, atomically, so a run killed in between only builds again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from cuship import _read
from cuship._fs import sha256_file, write_json
from cuship.builder.model import BuildPlan, Step
from cuship.version import __version__

__all__ = [
    "digest",
    "inputs_digest",
    "plan_tree_state",
    "record_path",
    "remember",
    "reused",
    "steps_document",
    "tree_state",
]

_VOLATILE = frozenset({"MAX_JOBS", "CMAKE_BUILD_PARALLEL_LEVEL"})  # change no output
_RECORD_LIMIT = 64 * 1024


def digest(value: object) -> str:
    """The sha256 of ``value`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def steps_document(steps: Sequence[Step]) -> list[dict[str, Any]]:
    """The steps' names, argv and environment as a digest sees them: the parallelism left out
    (it changes no output)."""
    return [
        {
            "name": step.name,
            "argv": list(step.argv),
            "env": {k: v for k, v in sorted(step.env.items()) if k not in _VOLATILE},
        }
        for step in steps
    ]


def inputs_digest(
    job: dict[str, Any],
    requirement: str | None,
    steps: Sequence[Step],
    toolkit: str | None,
    tree: Path | None = None,
) -> str | None:
    """The digest of what decides a job's wheel, the state of a source ``tree`` aside (see
    :func:`tree_state`); None when it builds neither a requirement nor a tree."""
    if requirement is None and tree is None:
        return None
    document = {
        "cuship": __version__,
        "job": job,
        "requirement": requirement,
        "toolkit": toolkit,
        "steps": steps_document(steps),
    }
    if tree is not None:
        document["tree"] = str(tree)
    return digest(document)


_BUILT_AT_TOP = frozenset({"build", "dist"})  # what setuptools, scikit-build and cuship write


def _tree_files(root: Path, skip: frozenset[str]) -> Iterator[tuple[str, os.stat_result]]:
    for top, dirs, files in os.walk(root):
        here = Path(top)
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d != "__pycache__"
            and not d.endswith(".egg-info")
            and not (here == root and d in _BUILT_AT_TOP)
            and str(here / d) not in skip
            and not (here / d / "pyvenv.cfg").is_file()
        )
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = here / name
            try:
                yield str(path.relative_to(root)), path.stat()
            except OSError:  # gone since it was listed, or a dangling link
                continue


def tree_state(root: Path, skip: Sequence[Path] = ()) -> str:
    """The digest of the source tree at ``root`` as a build would read it: every file's path,
    size and modification time, but what builds write there (see the module) and ``skip``."""
    skipped = frozenset(str(p) for p in skip)
    found = hashlib.sha256()
    for rel, stat in _tree_files(root, skipped):
        found.update(f"{rel}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return found.hexdigest()


def record_path(plan: BuildPlan) -> Path:
    return plan.out_dir / "inputs" / f"{plan.job.id}.json"


def plan_tree_state(plan: BuildPlan) -> str | None:
    """The state of the source tree ``plan`` builds (None: it builds none)."""
    if plan.tree is None or plan.inputs is None:
        return None
    return tree_state(plan.tree, skip=(plan.out_dir,))


def _record(plan: BuildPlan) -> dict[str, Any] | None:
    path = record_path(plan)
    try:
        record = _read.read_json(path, _read.CACHE, limit=_RECORD_LIMIT)
    except (OSError, _read.Refused):
        return None
    return record if isinstance(record, dict) else None


def reused(plan: BuildPlan, tree: str | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The wheel an earlier run built from ``plan``'s inputs (with its source tree in the
    state ``tree``), still there with its bytes, and its record."""
    if plan.inputs is None:
        return None
    record = _record(plan)
    if record is None or record.get("inputs") != plan.inputs or record.get("tree") != tree:
        return None
    name = record.get("wheel")
    if not isinstance(name, str) or "/" in name or not name.endswith(".whl"):
        return None
    wheel = plan.out_dir / name
    try:
        same = wheel.is_file() and sha256_file(wheel) == record.get("sha256")
    except OSError:
        return None
    return (wheel, record) if same else None


def remember(
    plan: BuildPlan, wheel: Path, tree: str | None = None, smoke: dict[str, Any] | None = None
) -> None:
    """Record that ``wheel`` is what ``plan``'s inputs build (from a source tree in the state
    ``tree``; ``smoke``: how its smoke test went); nothing for a plan without inputs."""
    if plan.inputs is None:
        return
    try:
        sha = sha256_file(wheel)
    except OSError:  # no wheel to hold a later run to: it builds again
        return
    record: dict[str, Any] = {"job": plan.job.id, "inputs": plan.inputs, "wheel": wheel.name}
    record["sha256"] = sha
    if tree is not None:
        record["tree"] = tree
    if smoke is not None:
        record["smoke"] = smoke
    path = record_path(plan)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, record)
