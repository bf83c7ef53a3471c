"""What a published site must be: readable by anyone, holding nothing but the index."""

from __future__ import annotations

import stat
from pathlib import Path


def publish_problems(site: Path) -> list[str]:
    """Why ``site`` could not be published as it is: a directory without o+rx, a file without
    o+r, a hidden entry or a cache inside it. Empty when all is well."""
    problems = []
    for path in [site, *site.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        rel = path.relative_to(site).as_posix() or "."
        if path.is_dir() and mode & 0o005 != 0o005:
            problems.append(f"{rel}: directory {oct(mode)} without o+rx")
        elif path.is_file() and mode & 0o004 == 0:
            problems.append(f"{rel}: file {oct(mode)} without o+r")
        if path.name.startswith(".") or "cache" in path.name or path.suffix == ".sqlite":
            problems.append(f"{rel}: not part of an index")
    return problems
