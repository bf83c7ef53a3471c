"""A pytest plugin ``cuship gpu-run`` loads (``-p cuship.gpurun.origins``): where did the tests
import the package under test from?

At the end of the session each pytest process (the controller and every xdist worker) appends
one JSON line to ``--cuship-origins=FILE``: its pid, its xdist worker id, and for each top-level
module of ``--cuship-origins-dist=NAME`` that it imported, the module's file and whether that file
belongs to the installed distribution. gpu-run reads the lines after the run: a test suite that
imported the package from the project's source tree did not test the wheel.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

__all__ = ["pytest_addoption", "pytest_sessionfinish", "record"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cuship-gpu-run", "where the package under test came from (cuship)")
    group.addoption("--cuship-origins", default=None, help="append the record to this file")
    group.addoption("--cuship-origins-dist", default=None, help="the distribution under test")


def record(dist_name: str, modules: dict[str, Any]) -> dict[str, Any]:
    """The line for this process: each of the distribution's modules found in ``modules``."""
    from cuship.errors import ToolMissing
    from cuship.provenance.installed import find_installed

    line: dict[str, Any] = {"pid": os.getpid(), "worker": os.environ.get("PYTEST_XDIST_WORKER")}
    try:
        dist = find_installed(dist_name)
    except ToolMissing as err:
        line["error"] = err.message
        return line
    found = []
    for name in dist.top_level:
        module = modules.get(name)
        if module is None:
            continue
        file = getattr(module, "__file__", None)
        found.append(
            {"module": name, "file": file, "installed": file is not None and dist.owns(file)}
        )
    line["location"] = str(dist.location)
    line["modules"] = found
    return line


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    out = session.config.getoption("cuship_origins")
    dist = session.config.getoption("cuship_origins_dist")
    if not out or not dist:
        return
    line = json.dumps(record(str(dist), dict(sys.modules)))
    with Path(out).open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
