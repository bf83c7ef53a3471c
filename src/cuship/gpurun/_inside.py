"""Run inside the interpreter ``cuship gpu-run`` tests with: ``python -m cuship.gpurun._inside``.

Writes one JSON document to stdout (the protocol; nothing else is printed): the interpreter's
version, wheel tags and site directories, which tools it can import (pip, pytest, cuship), its
torch, and with ``--dist NAME`` the installed distribution: version, location, top-level modules,
where ``import`` would find each of them (found, never imported: importing could start CUDA) and
which of its requirements are missing. ``--venv DIR`` adds where a venv at DIR keeps packages.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import site
import sys
import sysconfig
from collections.abc import Sequence
from typing import Any

__all__ = ["main"]


def _tools() -> dict[str, bool]:
    from importlib.util import find_spec

    return {name: find_spec(name) is not None for name in ("pip", "pytest", "venv")}


def _torch() -> dict[str, Any] | None:
    from cuship.machine import _torch as torch_of
    from cuship.machine.probe import SystemProbe

    found = torch_of(os.environ, SystemProbe())
    return None if found is None else {"version": found.version, "cxx11abi": found.cxx11abi}


def _site_dirs() -> list[str]:
    """Where this interpreter finds installed packages (its user site too, when it uses one)."""
    dirs = list(site.getsitepackages())
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user and user in sys.path:
        dirs.append(user)
    return list(dict.fromkeys(dirs))


def _venv_purelib(venv: str) -> str:
    scheme = "venv" if "venv" in sysconfig.get_scheme_names() else "posix_prefix"
    return sysconfig.get_path("purelib", scheme, vars={"base": venv, "platbase": venv})


def _dist(name: str) -> dict[str, Any] | None:
    from importlib import metadata

    from cuship.errors import ToolMissing
    from cuship.provenance.installed import find_installed, missing_requirements, origin_of

    try:
        dist = find_installed(name)
    except ToolMissing:
        return None
    origins = {module: origin_of(module) for module in dist.top_level}
    return {
        "name": dist.name,
        "version": dist.version,
        "location": str(dist.location),
        "top_level": list(dist.top_level),
        "origins": origins,
        "foreign": sorted(m for m, o in origins.items() if o is not None and not dist.owns(o)),
        "missing": list(missing_requirements(metadata.requires(name) or ())),
    }


def facts(dist: str | None, venv: str | None) -> dict[str, Any]:
    """What the parent needs to know about this interpreter."""
    from packaging import tags

    from cuship.version import __version__

    doc: dict[str, Any] = {
        "executable": sys.executable,
        "python": platform.python_version(),
        "in_venv": sys.prefix != sys.base_prefix,
        "site": _site_dirs(),
        "tags": [str(t) for t in tags.sys_tags()],
        "tools": _tools(),
        "cuship": __version__,
        "torch": _torch(),
    }
    if venv is not None:
        doc["venv_purelib"] = _venv_purelib(venv)
    if dist is not None:
        doc["dist"] = _dist(dist)
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cuship.gpurun._inside")
    parser.add_argument("--dist", help="describe this installed distribution")
    parser.add_argument("--venv", help="report where a venv at this directory keeps packages")
    args = parser.parse_args(argv)
    sys.stdout.write(json.dumps(facts(args.dist, args.venv)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
