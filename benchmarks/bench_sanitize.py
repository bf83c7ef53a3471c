"""What `cuship check --sanitize` costs, on a GPU: the example's quick suite plain, under each
compute-sanitizer tool and under all four, as wall-time ratios (exits 3, saying why in one line,
without a GPU or without compute-sanitizer).

Each configuration runs `cuship check examples/cuvecops --device cuda --quick --no-store
--format json [--sanitize T]` as a child process, wall clock including start-up. Two ratios:

  * x plain: the run's wall time over the plain run's (what --sanitize adds to a CI job: the plain
    run, then one sanitized pass per tool);
  * per tool, from the report: the sanitized cases' own time over the same cases' time in that
    run's plain part (the per-case slowdown the tool itself causes), and the workers it started.

The example's `cuda` engine needs its compiled extension installed (pip install the example's
wheel); without it the check exits 3, and `--engine triton --engine numba` checks the rest.

Usage: python benchmarks/bench_sanitize.py [--repeat N] [--engine E]... [--project PATH] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "cuvecops"
TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
CONFIGS: tuple[tuple[str, str | None], ...] = (
    ("plain", None),
    *((tool, tool) for tool in TOOLS),
    ("all", "all"),
)


class Missing(Exception):
    """Something this benchmark needs is not here (exit 3)."""


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "GITHUB_ACTIONS": "false"}


def preflight(environ: dict[str, str]) -> None:
    """Missing when there is no GPU or no compute-sanitizer (cuship's own lookups)."""
    sys.path.insert(0, str(REPO / "src"))
    from cuship.check.sanitize.tools import find_sanitizer
    from cuship.errors import ToolMissing
    from cuship.machine import fingerprint

    if not fingerprint(environ).gpus:
        raise Missing("no CUDA GPU on this machine (no NVML, nvidia-smi or driver)")
    try:
        find_sanitizer(environ)
    except ToolMissing as err:
        raise Missing(err.message) from None


def run_check(project: Path, engines: list[str], tools: str | None) -> tuple[float, dict[str, Any]]:
    argv = [sys.executable, "-m", "cuship", "check", str(project), "--device", "cuda", "--quick"]
    argv += ["--no-store", "--format", "json", *(f"--engine={e}" for e in engines)]
    argv += ["--sanitize", tools] if tools else []
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=_env(), check=False)
    took = time.perf_counter() - started
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    if done.returncode == 3:
        raise Missing(f"cuship check exited 3: {lines[0] if lines else 'no message'}")
    if done.returncode not in (0, 1):
        tail = "\n".join(lines[-8:])
        raise SystemExit(f"cuship check {tools or ''} exited {done.returncode}:\n{tail}")
    report: dict[str, Any] = json.loads(done.stdout)
    return took, report


def _per_tool(report: dict[str, Any]) -> str:
    parts = []
    for run in report.get("sanitize", ()):
        slowdown = run.get("slowdown")
        shown = "-" if slowdown is None else f"{slowdown:.1f}x"
        bad = sum(c["status"] != "passed" for c in run["cases"]) + len(run["unattributed"])
        parts.append(f"{run['tool']} {shown} ({len(run['cases'])} cases, {run['workers']} workers"
                     + (f", {bad} bad" if bad else "") + ")")  # fmt: skip
    return "; ".join(parts)


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--engine", action="append", default=[], help="only this engine")
    parser.add_argument("--project", type=Path, default=EXAMPLE)
    parser.add_argument("--json", type=Path, help="write the numbers here")
    options = parser.parse_args(args)
    try:
        preflight(dict(os.environ))
        rows = []
        for name, tools in CONFIGS:
            runs = [
                run_check(options.project, options.engine, tools) for _ in range(options.repeat)
            ]
            wall = statistics.median(took for took, _ in runs)
            rows.append({"config": name, "wall_s": wall, "report": runs[-1][1]})
            print(f"{name}: {wall:.1f} s", file=sys.stderr)
    except Missing as err:
        print(f"bench_sanitize: {err}")
        return 3
    plain = rows[0]["wall_s"]
    print(f"{'config':<10} {'wall s':>8} {'x plain':>8}  per tool: sanitized/plain case time")
    for row in rows:
        print(f"{row['config']:<10} {row['wall_s']:>8.1f} {row['wall_s'] / plain:>8.2f}  "
              f"{_per_tool(row['report'])}")  # fmt: skip
    if options.json is not None:
        summary = [
            {"config": r["config"], "wall_s": r["wall_s"], "x_plain": r["wall_s"] / plain,
             "sanitize": r["report"].get("sanitize", [])}
            for r in rows
        ]  # fmt: skip
        options.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
