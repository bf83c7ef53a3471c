"""The build matrix as CI systems take it: GitHub's ``strategy.matrix`` and GitLab's
``parallel: matrix:`` (``cuship matrix --format``, and the GitLab pipeline ``ci init`` writes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuship.matrix import BuildJob

__all__ = ["to_github", "to_gitlab"]


def to_github(jobs: Sequence[BuildJob]) -> dict[str, Any]:
    """A ``strategy.matrix`` value: ``{"include": [...]}`` with one entry per job."""
    return {"include": [_ci_entry(job) for job in jobs]}


def to_gitlab(jobs: Sequence[BuildJob]) -> dict[str, Any]:
    """A ``parallel: matrix:`` value: a list of single-valued variable sets (GitLab upper-cases)."""
    return {
        "parallel": {"matrix": [{k.upper(): [v] for k, v in _ci_entry(j).items()} for j in jobs]}
    }


def _ci_entry(job: BuildJob) -> dict[str, str]:
    entry = {
        "job": job.id,
        "python": job.python,
        "cuda": str(job.cuda),
        "torch": "" if job.torch is None else str(job.torch),
        "arch": job.arch.torch,
        "label": job.label,
        "platform": job.platform,
    }
    if job.cxx11abi is not None:
        entry["cxx11abi"] = "TRUE" if job.cxx11abi else "FALSE"
    return entry
