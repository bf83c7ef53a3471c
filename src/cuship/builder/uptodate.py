"""A job whose wheel was built before from the same inputs is not built again.

Only jobs that build a released sdist (a packages.yml entry's ``name==version`` from PyPI)
have inputs cuship can name in full: an index never changes a file it published, so the
requirement names the source's bytes. Their inputs are the job (its matrix entry and label),
the requirement, the exact commands and environment of every step (the interpreter, the
toolkit, the torch spec, the arch flags, the project's own switches), the toolkit's version and
cuship's version; not the parallelism (``MAX_JOBS`` and its kin change no wheel). A project
built from its source tree has inputs no digest here names (any file of the tree), so it is
built every time, as before.

After a job is built its record ``<wheels>/inputs/<job>.json`` names the digest, the wheel and
the wheel's sha256. A later run whose plan has that digest, and whose wheel is still there with
those bytes, reuses it (``--rebuild`` builds anyway); anything else builds. The record is
written after the wheel, atomically, so a run killed in between only builds again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cuship._fs import sha256_file, write_json
from cuship.builder.model import BuildPlan, Step
from cuship.version import __version__

__all__ = ["digest", "inputs_digest", "record_path", "remember", "reused", "steps_document"]

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
    job: dict[str, Any], requirement: str | None, steps: Sequence[Step], toolkit: str | None
) -> str | None:
    """The digest of what decides a job's wheel; None when not every input can be named (a
    build from a source tree)."""
    if requirement is None:
        return None
    document = {
        "cuship": __version__,
        "job": job,
        "requirement": requirement,
        "toolkit": toolkit,
        "steps": steps_document(steps),
    }
    return digest(document)


def record_path(plan: BuildPlan) -> Path:
    return plan.out_dir / "inputs" / f"{plan.job.id}.json"


def reused(plan: BuildPlan) -> Path | None:
    """The wheel an earlier run built from ``plan``'s inputs, still there with its bytes."""
    if plan.inputs is None:
        return None
    path = record_path(plan)
    try:
        if not path.is_file() or path.stat().st_size > _RECORD_LIMIT:
            return None
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("inputs") != plan.inputs:
        return None
    name = record.get("wheel")
    if not isinstance(name, str) or "/" in name or not name.endswith(".whl"):
        return None
    wheel = plan.out_dir / name
    try:
        same = wheel.is_file() and sha256_file(wheel) == record.get("sha256")
    except OSError:
        return None
    return wheel if same else None


def remember(plan: BuildPlan, wheel: Path) -> None:
    """Record that ``wheel`` is what ``plan``'s inputs build (nothing for a plan without)."""
    if plan.inputs is None:
        return
    record = {"job": plan.job.id, "inputs": plan.inputs, "wheel": wheel.name}
    record["sha256"] = sha256_file(wheel)
    path = record_path(plan)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, record)
