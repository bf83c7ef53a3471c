"""What a published site must be: readable by anyone, holding nothing but the index (and its
own state, which is not published)."""

from __future__ import annotations

import stat
from pathlib import Path

STATE = ".cuship"
"""The site's own state (``cuship.index._shared.STATE_DIR``): the scan cache, never published."""


def published(site: Path) -> list[Path]:
    """Every path under ``site`` but its own state, sorted."""
    return sorted(p for p in site.rglob("*") if p.relative_to(site).parts[0] != STATE)


def publish_problems(site: Path) -> list[str]:
    """Why ``site`` could not be published as it is (its own state aside): a directory without
    o+rx, a file without o+r, a hidden entry or a cache inside it; or a state that others may
    read. Empty when all is well."""
    problems = []
    state = site / STATE
    if state.exists() and stat.S_IMODE(state.stat().st_mode) & 0o077:
        problems.append(f"{STATE}: the site's state is open to others")
    for path in [site, *published(site)]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        rel = path.relative_to(site).as_posix() or "."
        if path.is_dir() and mode & 0o005 != 0o005:
            problems.append(f"{rel}: directory {oct(mode)} without o+rx")
        elif path.is_file() and mode & 0o004 == 0:
            problems.append(f"{rel}: file {oct(mode)} without o+r")
        if path.name.startswith(".") or "cache" in path.name or path.suffix == ".sqlite":
            problems.append(f"{rel}: not part of an index")
    return problems
