"""Run inside the interpreter ``cuship gpu-run`` tests with: ``python -m cuship.gpurun._inside``.

Writes one JSON document to stdout (the protocol; nothing else is printed): the interpreter, as
the one interpreter probe describes it (:mod:`cuship.machine.interpreter`: its version, wheel
tags, site directories, which of pip, pytest and venv it can import), cuship's version, its
torch, and with ``--dist NAME`` the installed distribution: version, location, top-level modules,
where ``import`` would find each of them (found, never imported: importing could start CUDA) and
which of its requirements are missing. ``--venv DIR`` adds where a venv at DIR keeps packages.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from cuship.machine.sites import venv_purelib

__all__ = ["main"]


def _torch() -> dict[str, Any] | None:
    from cuship.machine import _torch as torch_of
    from cuship.machine.probe import SystemProbe

    found = torch_of(os.environ, SystemProbe())
    return None if found is None else {"version": found.version, "cxx11abi": found.cxx11abi}


def _dist(name: str) -> dict[str, Any] | None:
    from importlib import metadata

    from cuship import _read
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
        "missing": list(
            missing_requirements(_read.dist_fields(metadata.distribution(name), "Requires-Dist"))
        ),
    }


def facts(dist: str | None, venv: str | None) -> dict[str, Any]:
    """What the parent needs to know about this interpreter."""
    from cuship.machine.interpreter import answer
    from cuship.version import __version__

    doc: dict[str, Any] = {"interpreter": answer(), "cuship": __version__, "torch": _torch()}
    if venv is not None:
        doc["venv_purelib"] = venv_purelib(venv)
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
