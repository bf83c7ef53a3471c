"""CI generators: GitHub Actions, GitLab CI and a SkyPilot task, from the same config.

Plan, then write: :func:`context_for` expands the matrix and fixes the shared names,
:func:`generate` turns that into :class:`GeneratedFile` values (pure), :func:`write_files`
writes them atomically and refuses to overwrite without ``force``.
"""

from __future__ import annotations

from cuship.ci.context import CiContext, context_for
from cuship.ci.generate import (
    PROVIDERS,
    CiPlan,
    CiWritten,
    GeneratedFile,
    Provider,
    generate,
    plan_ci,
    write_ci,
    write_files,
)

__all__ = [
    "PROVIDERS",
    "CiContext",
    "CiPlan",
    "CiWritten",
    "GeneratedFile",
    "Provider",
    "context_for",
    "generate",
    "plan_ci",
    "write_ci",
    "write_files",
]
