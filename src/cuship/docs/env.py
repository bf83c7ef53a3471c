"""The environment variables page: the table of :mod:`cuship.settings`."""

from __future__ import annotations

from cuship import settings

__all__ = ["render"]


def render() -> str:
    """The page: every ``CUSHIP_*`` variable, who sets it, what it means, its default."""
    return "\n".join(
        [
            "# Environment variables\n",
            "Every `CUSHIP_*` variable, generated from `src/cuship/settings.py`, the one place "
            "code spells them, when the site is built. `set by` user: cuship reads it; "
            "cuship: cuship sets it for the project's build or tests to read. The machine "
            "overrides (`CUSHIP_GPUS` to `CUSHIP_NVCC`) make cuship see another machine: for "
            "tests, dry runs and users who know better.\n",
            settings.render_markdown(),
        ]
    )
