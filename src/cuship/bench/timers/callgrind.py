"""Instruction counts per call under valgrind's callgrind: deterministic CPU-side numbers.

Each point runs twice in a fresh Python under callgrind, collecting only inside the ctypes call
that runs the timed loop (see ``_worker``): once with no calls and once with ``calls``;
instructions per call = (Ir(calls) - Ir(0)) / calls, so the ctypes overhead cancels out too.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from cuship import process
from cuship.bench.registry import Point
from cuship.bench.timers.measure import Measurement
from cuship.errors import ToolMissing
from cuship.tools import find_tool
from cuship.version import IMPORT_ROOT

__all__ = ["find_valgrind", "instructions_per_call", "parse_totals"]


def find_valgrind(environ: Mapping[str, str]) -> str:
    """The valgrind executable on ``PATH``, or ToolMissing (exit 3) saying how to get it."""
    found = find_tool("valgrind", environ).path
    if found is None:
        raise ToolMissing(
            "--timer instructions needs valgrind (callgrind), which is not on PATH",
            hint="install it (Debian/Ubuntu: apt-get install valgrind), or use --timer wall",
        )
    return found


def parse_totals(text: str) -> int:
    """The total instruction count (``summary:``/``totals:`` line) of a callgrind output file."""
    for line in text.splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise ValueError("no summary or totals line in the callgrind output")


def _count(valgrind: str, args: Sequence[str], env: Mapping[str, str], out: Path) -> int:
    cmd = [valgrind, "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=ffi_call"]
    cmd += [f"--callgrind-out-file={out}", sys.executable]
    cmd += ["-m", "cuship.bench.timers._callgrind_worker", *args]
    proc = process.run(cmd, env=env, name="valgrind")
    if proc.returncode != 0:
        tail = process.tail(proc.stderr, 6)
        raise RuntimeError(f"the case failed under callgrind (exit {proc.returncode}):\n{tail}")
    return parse_totals(out.read_text(encoding="utf-8", errors="replace"))


def instructions_per_call(
    point: Point,
    *,
    root: Path,
    pythonpath: Sequence[Path],
    environ: Mapping[str, str],
    calls: int = 20,
) -> Measurement:
    """Instructions one call of ``point`` executes (seed 0), as a one-sample measurement."""
    valgrind = find_valgrind(environ)
    paths = [str(p) for p in pythonpath] + [str(IMPORT_ROOT)]
    if environ.get("PYTHONPATH"):
        paths.append(environ["PYTHONPATH"])
    env = {**environ, "PYTHONPATH": os.pathsep.join(paths), "PYTHONHASHSEED": "0"}
    params = json.dumps(dict(point.params))
    base = [str(root), point.case.module, point.case.name, params, "0"]
    with tempfile.TemporaryDirectory(prefix="cuship-callgrind-") as tmp:
        idle = _count(valgrind, [*base, "0"], env, Path(tmp) / "idle.out")
        busy = _count(valgrind, [*base, str(calls)], env, Path(tmp) / "busy.out")
    return Measurement(
        samples=(max(0.0, (busy - idle) / calls),),
        stop_reason="fixed",
        rel_noise=0.0,
        calls_per_sample=calls,
        unit="instructions",
    )
