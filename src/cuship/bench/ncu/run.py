"""``--profile ncu``: each timed point's kernels profiled once, in a separate process, after the
timed samples of every point (never while one is timed).

Plan, then act: :func:`plan_profile` builds the exact command lines (pure); :func:`run_profile`
runs them and reads the CSV into an :class:`~cuship.bench.ncu.profile.NcuProfile`.

* basic: ``ncu --csv --metrics <the five> --profile-from-start off --target-processes all
  --clock-control none --cache-control all <python> -c <run cuship.bench.ncu._worker> SPEC``
  (see :func:`worker_command`); the details page on stdout is the CSV read.
* full (or a report directory given): the same with ``--set full -o REPORT -f``; ncu then writes
  the report instead of printing, and ``ncu --import REPORT --csv --page raw --metrics <the
  five>`` prints the figures.

Clocks are left as they run (``--clock-control none``) so the kernel time sits beside the timed
median; caches are flushed before each kernel (``--cache-control all``), as the CUDA timer
flushes L2 before each sample. A profile that fails (no permission for the counters, the call
crashing under ncu, a time limit) becomes an error profile with ncu's own words.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from cuship import process
from cuship.bench.ncu.metrics import ncu_messages, parse_ncu_metrics
from cuship.bench.ncu.profile import METRICS, NcuProfile, NcuSession, NcuSet, aggregate
from cuship.bench.registry import Point
from cuship.bench.results import PointResult
from cuship.errors import TimedOut, ToolMissing, UsageError
from cuship.events import Emit, Event, discard, progress
from cuship.version import IMPORT_ROOT

__all__ = [
    "NCU_TIMEOUT",
    "PERMISSION",
    "NcuOptions",
    "NcuPlan",
    "failure",
    "find_ncu",
    "ncu_version",
    "plan_profile",
    "preflight",
    "profile_points",
    "profile_run",
    "report_stem",
    "run_profile",
    "worker_command",
]

NCU_TIMEOUT = 600.0  # seconds for one point's ncu run (a full set replays each kernel ~40 times)
PERMISSION = "ERR_NVGPUCTRPERM"
PERMISSION_HINT = (
    "the GPU's performance counters are restricted to administrators: run as root, or load the "
    "nvidia module with NVreg_RestrictProfilingOnToAdminUsers=0 "
    "(https://developer.nvidia.com/ERR_NVGPUCTRPERM); in a container add --cap-add SYS_ADMIN"
)
_COMMON = ("--profile-from-start", "off", "--target-processes", "all")
_CONTROL = ("--clock-control", "none", "--cache-control", "all")
_VERSION = re.compile(r"Version\s+(\S+)")


def find_ncu(environ: Mapping[str, str]) -> str:
    """Nsight Compute's ``ncu``, or :class:`ToolMissing` (exit 3) saying where cuship looked."""
    from cuship.tools import find_tool

    found = find_tool("ncu", environ)
    if found.path is None:
        raise ToolMissing(
            f"--profile ncu needs Nsight Compute's `ncu`, which is not in {found.where()}",
            hint="install Nsight Compute (it comes with the CUDA toolkit; standalone installs "
            "live in /opt/nvidia/nsight-compute/<version>) and put `ncu` on PATH or set "
            "CUDA_HOME; or run without --profile ncu",
        )
    return found.path


def ncu_version(ncu: str, environ: Mapping[str, str]) -> str | None:
    """``2025.3.1.0`` from ``ncu --version``; None when it says nothing readable."""
    try:
        proc = process.run([ncu, "--version"], env=environ, timeout=60)
    except (ToolMissing, TimedOut):
        return None
    match = _VERSION.search(proc.stdout)
    return match[1] if match else None


@dataclass(frozen=True, slots=True, kw_only=True)
class NcuOptions:
    """How this run profiles: which ncu, which set, where reports are kept (None: not kept)."""

    ncu: str
    metric_set: NcuSet = "basic"
    reports: Path | None = None
    timeout: float = NCU_TIMEOUT


@dataclass(frozen=True, slots=True, kw_only=True)
class NcuPlan:
    """The commands that profile one point, the environment they run in, and the report kept."""

    key: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    report: Path | None = None  # the .ncu-rep ncu writes (then read back with import_argv)
    import_argv: tuple[str, ...] | None = None
    metric_set: NcuSet = "basic"

    def to_json(self) -> dict[str, object]:
        return {
            "key": self.key,
            "command": list(self.argv),
            "import": None if self.import_argv is None else list(self.import_argv),
            "report": None if self.report is None else str(self.report),
        }


def report_stem(key: str) -> str:
    """A file name for a point's report: readable part and a hash of the key (unique, safe)."""
    readable = re.sub(r"[^A-Za-z0-9_.=-]+", "-", key).strip("-.")[:60] or "case"
    return f"{readable}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def worker_command(python: str, spec: Mapping[str, object]) -> tuple[str, ...]:
    """``python -c BOOT SPEC``: the worker, with this cuship appended to the END of ``sys.path``
    (never on ``PYTHONPATH``, which goes before site-packages and could shadow the installed
    build the run is about); an importable cuship earlier on the path is used first."""
    home = str(IMPORT_ROOT)
    boot = (
        f"import sys; sys.path.append({home!r}); "
        "from cuship.bench.ncu._worker import main; sys.exit(main(sys.argv[1:]))"
    )
    return (python, "-c", boot, json.dumps(dict(spec)))


def plan_profile(
    point: Point,
    options: NcuOptions,
    *,
    root: Path,
    pythonpath: Sequence[Path],
    environ: Mapping[str, str],
    python: str = sys.executable,
) -> NcuPlan:
    """The ncu command lines for ``point`` (pure: nothing is run or written)."""
    metrics = ",".join(METRICS)
    spec = {
        "root": str(root),
        "module": point.case.module,
        "key": point.key,
        "seed": 0,
        "pythonpath": [str(p) for p in pythonpath],
    }
    worker = worker_command(python, spec)
    argv: tuple[str, ...] = (options.ncu, "--csv", "--metrics", metrics, *_COMMON, *_CONTROL)
    report: Path | None = None
    import_argv: tuple[str, ...] | None = None
    reports = options.reports
    if options.metric_set == "full" or reports is not None:
        stem = (reports or Path()) / report_stem(point.key)
        report = stem.with_name(stem.name + ".ncu-rep")
        full = ("--set", "full") if options.metric_set == "full" else ()
        argv += (*full, "-o", str(stem), "-f")
        import_argv = (
            *(options.ncu, "--import", str(report), "--csv", "--page", "raw"),
            *("--print-units", "base", "--metrics", metrics),
        )
    return NcuPlan(
        key=point.key,
        argv=(*argv, *worker),
        env=dict(environ),
        report=report,
        import_argv=import_argv,
        metric_set=options.metric_set,
    )


def _run(argv: Sequence[str], env: Mapping[str, str], timeout: float) -> tuple[int, str, str]:
    """(exit code, stdout, stderr); on the time limit the whole process group (ncu and the
    Python it started) is killed and :class:`TimedOut` raised."""
    done = process.run(argv, env=env, timeout=timeout, name="ncu")
    return done.returncode, done.stdout, done.stderr


def failure(code: int, out: str, err: str, problem: str) -> str:
    """Why a profile failed, in ncu's words: its ``==ERROR==`` lines (else its warnings, else
    the tail of the output); the permission error says how to lift it."""
    text = out + "\n" + err
    said = ncu_messages(text) or ncu_messages(text, "WARNING")
    if any(PERMISSION in line for line in said):
        return f"{PERMISSION}: {PERMISSION_HINT}"
    if said:
        return f"{problem} (exit {code}): " + " / ".join(said[:3])
    talk = [line for line in (err or out).splitlines() if not line.startswith('"')]  # no CSV
    tail = " ".join(" ".join(talk).split())[-300:]
    return f"{problem} (exit {code})" + (f": {tail}" if tail else "")


def _read(plan: NcuPlan, code: int, out: str, err: str, timeout: float) -> NcuProfile:
    """The profile in ncu's output (or, with a report, in what importing it prints)."""
    if plan.import_argv is not None:
        if plan.report is None or not plan.report.is_file():
            problem = f"ncu wrote no report {str(plan.report)!r}"
            return NcuProfile(metric_set=plan.metric_set, error=failure(code, out, err, problem))
        code, out, err = _run(plan.import_argv, plan.env, timeout)
    problem = "ncu printed no metrics"
    try:
        profile = aggregate(parse_ncu_metrics(out, METRICS), metric_set=plan.metric_set)
    except ValueError:
        profile = None
    if profile is not None and profile.ok:
        return replace(profile, report=None if plan.report is None else str(plan.report))
    if profile is not None and profile.error:
        problem = profile.error
    return NcuProfile(metric_set=plan.metric_set, error=failure(code, out, err, problem))


def run_profile(plan: NcuPlan, timeout: float = NCU_TIMEOUT) -> NcuProfile:
    """Run ``plan``: its profile, or an error profile saying why there is none."""
    if plan.report is not None:
        plan.report.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        code, out, err = _run(plan.argv, plan.env, timeout)
        profile = _read(plan, code, out, err, timeout)
    except TimedOut:
        profile = NcuProfile(metric_set=plan.metric_set, error=f"ncu ran past {timeout:g} s")
    except ToolMissing as err:
        profile = NcuProfile(metric_set=plan.metric_set, error=err.message)
    return replace(profile, wall_time=time.perf_counter() - started)


def preflight(timer: str, environ: Mapping[str, str]) -> str:
    """The ncu to profile with, checked before anything is timed: a non-GPU timer is a
    UsageError (exit 2), no GPU or no ncu a ToolMissing (exit 3)."""
    if timer in ("wall", "instructions"):
        raise UsageError(
            f"--profile ncu profiles CUDA kernels; it cannot go with --timer {timer}",
            hint="use --timer cuda (or auto, on a GPU machine)",
        )
    from cuship.machine import fingerprint

    if not fingerprint(environ, toolkit=False).gpus:
        raise ToolMissing(
            "--profile ncu profiles CUDA kernels, and this machine shows no NVIDIA GPU",
            hint="run it on a GPU machine (`cuship env` shows what cuship sees), "
            "or without --profile ncu",
        )
    return find_ncu(environ)


def _progress(index: int, total: int, key: str, profile: NcuProfile) -> Event:
    status = profile.describe() if profile.ok else f"not profiled: {profile.error}"
    return progress("bench", index, total, key, status, stage="ncu", warn=not profile.ok)


def profile_points(
    results: Sequence[PointResult],
    selected: Sequence[Point],
    options: NcuOptions,
    *,
    root: Path,
    pythonpath: Sequence[Path],
    environ: Mapping[str, str],
    emit: Emit = discard,
) -> tuple[PointResult, ...]:
    """Each timed point of ``results`` with its profile, one ncu run after another. Errored
    points are not profiled; after a permission error the rest are not tried (same answer)."""
    by_key = {p.key: p for p in selected}
    todo = [r for r in results if r.measurement is not None and r.key in by_key]
    blocked: str | None = None
    profiles: dict[str, NcuProfile] = {}
    for index, result in enumerate(todo, 1):
        if blocked is not None:
            profile = NcuProfile(metric_set=options.metric_set, error=blocked)
        else:
            plan = plan_profile(
                by_key[result.key], options, root=root, pythonpath=pythonpath, environ=environ
            )
            emit(Event(level="debug", topic="bench", message=shlex.join(plan.argv)))
            profile = run_profile(plan, options.timeout)
            if profile.error is not None and profile.error.startswith(PERMISSION):
                blocked = profile.error
        profiles[result.key] = profile
        emit(_progress(index, len(todo), result.key, profile))
    return tuple(replace(r, profile=profiles[r.key]) if r.key in profiles else r for r in results)


def profile_run(
    results: Sequence[PointResult],
    selected: Sequence[Point],
    options: NcuOptions,
    *,
    root: Path,
    pythonpath: Sequence[Path],
    environ: Mapping[str, str],
    emit: Emit = discard,
) -> tuple[tuple[PointResult, ...], NcuSession]:
    """:func:`profile_points`, and the session that says how (set, ncu and its version,
    where reports were kept)."""
    session = NcuSession(
        metric_set=options.metric_set,
        ncu=options.ncu,
        version=ncu_version(options.ncu, environ),
        reports=None if options.reports is None else str(options.reports),
    )
    profiled = profile_points(
        results, selected, options, root=root, pythonpath=pythonpath, environ=environ, emit=emit
    )
    return profiled, session
