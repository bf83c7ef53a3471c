"""Finish a built wheel: repair (unless pure) → label → verify, and move it into place; a wheel
that fails is set aside in ``failed/``, never indexed. The wheel is inspected once, after the
repair (the last change to its shared objects), and that report is carried over to the label.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from packaging.utils import parse_wheel_filename

from cuship._fs import move, remove_tree, under
from cuship.builder.glibc import GlibcFloor
from cuship.builder.run.commands import BuildFailed
from cuship.builder.run.job import JobWork
from cuship.events import Emit, Event, discard
from cuship.wheel.audit import WheelReport
from cuship.wheel.torchabi import TorchAbi, pin_for

__all__ = ["FAILED", "finish_wheel", "note", "set_aside"]


FAILED = "failed"
"""The folder under the output directory where a failed job's wheel is kept, out of the index."""


def set_aside(wheel: Path) -> Path:
    """Move the wheel of a failed job to ``failed/`` beside it: kept to look at, never indexed
    (``cuship index`` reads only the output directory's own wheels)."""
    folder = wheel.parent / FAILED
    folder.mkdir(exist_ok=True)
    return move(wheel, folder, wheel.name)


def finish_wheel(
    raw: Path, job: JobWork, *, environ: Mapping[str, str], emit: Emit = discard
) -> tuple[Path, WheelReport, tuple[str, ...]]:
    """Repair (unless pure), label and verify ``raw``, the wheel ``job`` built, working in its
    ``raw_dir``; the final wheel lands in its ``out_dir`` (what it is held to: see
    :class:`~cuship.builder.run.job.JobWork`). Inspected once, after the repair."""
    import time

    from cuship.judge.verify import verify
    from cuship.wheel.carried import carried_report
    from cuship.wheel.write.retag import retag

    work = job.raw_dir / "repaired"
    remove_tree(job.raw_dir, "repaired")
    work.mkdir(parents=True)
    start = time.perf_counter()
    repaired, inspected, said = _repaired(raw, work, job, environ=environ, emit=emit)
    start = _timed(job.log, "repair", said, start)
    requires, unpinned = _torch_pin(inspected.torch_abi, job.torch, repaired.name)
    labelled = retag(
        repaired, local=job.label, out_dir=job.raw_dir / "labelled", requires=requires, emit=emit
    )
    report = carried_report(inspected, repaired, labelled)
    start = _timed(job.log, "retag", "done", start)
    floor = job.floor
    enforced = floor.floor if floor is not None and floor.enforced else None
    checked = verify(
        report, arches=job.arches, local=job.label, torch=job.torch, manylinux=enforced
    )
    _timed(job.log, "verify", "done", start)
    held = _held(report, labelled.name, job.arches, floor, emit)
    problems = unpinned + checked.problems + held
    final = under(job.out_dir, labelled.name)
    if job.immutable:
        _refuse_changed(labelled, final)
    move(labelled, job.out_dir, labelled.name)
    return final, dataclasses.replace(report, path=str(final)), problems


def _repaired(
    raw: Path, work: Path, job: JobWork, *, environ: Mapping[str, str], emit: Emit
) -> tuple[Path, WheelReport, str]:
    """``raw`` repaired into ``work`` (a pure wheel as it is), its inspection (the one of this
    wheel: a retag changes no shared object, see :mod:`cuship.wheel.carried`), and what the
    repair did."""
    from cuship.wheel.audit import inspect_wheel
    from cuship.wheel.write.repair import repair

    _, _, _, tags = parse_wheel_filename(raw.name)
    if all(tag.platform == "any" for tag in tags):
        emit(
            Event(
                level="warning" if job.arches else "info",
                topic="build",
                message=f"{raw.name}: a pure wheel, nothing to repair",
            )
        )
        return raw, inspect_wheel(raw), "a pure wheel, nothing to repair"
    env = {**environ, **_archive_time(job)}
    done = repair(raw, out_dir=work, env=env, emit=emit, cache=job.repairs)
    return done.output, done.report, f"reused {done.reused}" if done.reused else "done"


def _archive_time(job: JobWork) -> dict[str, str]:
    """The ``SOURCE_DATE_EPOCH`` the job's build steps ran with (the last step that set one),
    for auditwheel, which stamps the members of the wheel it writes with it (else with the
    time of the repair): a rebuild of the same inputs then repairs into the same bytes."""
    for step in reversed(job.steps):
        if "SOURCE_DATE_EPOCH" in step.env:
            return {"SOURCE_DATE_EPOCH": step.env["SOURCE_DATE_EPOCH"]}
    return {}


def _held(
    report: WheelReport, name: str, arches: str, floor: GlibcFloor | None, emit: Emit
) -> tuple[str, ...]:
    """Warn of SASS beyond ``arches`` and of a glibc floor not enforced; the problems of a
    CPU-only wheel (``arches`` empty) that holds device code."""
    extra = _extra_sass(report, arches)
    if extra:
        emit(
            Event(
                level="warning",
                topic="build",
                message=f"{name}: holds SASS for {', '.join(extra)} beyond [matrix] "
                "arch: the build passed its own arch flags ([build] arch_flags = 'rewrite' "
                "compiles only the configured ones)",
            )
        )
    if floor is not None and not floor.enforced:
        _warn_floor(report, floor, emit)
    if arches:
        return ()
    return tuple(
        f"{x.path}: CUDA device code in a CPU-only wheel"
        for x in report.extensions
        if x.sass or x.ptx
    )


def _timed(log: Path, name: str, said: str, start: float) -> float:
    """Write ``# name: said in N s`` (since ``start``) to ``log``; the time now."""
    import time

    now = time.perf_counter()
    note(log, f"{name}: {said} in {now - start:.1f} s")
    return now


def note(log: Path, line: str) -> None:
    """Append ``# line`` to the job's log."""
    with log.open("a", encoding="utf-8") as out:
        out.write(f"# {line}\n")


def _refuse_changed(new: Path, final: Path) -> None:
    """Raise when ``final`` exists with other bytes than ``new`` (moved to ``failed/``)."""
    from cuship._fs import sha256_file

    if not final.is_file():
        return
    before, now = sha256_file(final), sha256_file(new)
    if before == now:
        return
    (final.parent / FAILED).mkdir(parents=True, exist_ok=True)
    aside = move(new, final.parent / FAILED, final.name)
    raise BuildFailed(
        f"{final.name}: this build differs from the wheel of that name built before "
        f"(sha256 {before[:12]}... now {now[:12]}...); a wheel of a released sdist keeps its "
        f"bytes under its name, as an index that published it must. The earlier wheel stays; "
        f"this one is kept apart as {aside}",
        hint="publish the new build under a new name (a new version of the package), or "
        "delete the earlier wheel yourself if it was never published",
    )


def _extra_sass(report: WheelReport, arches: str) -> list[str]:
    """SASS the wheel's own objects hold that the job's arch list did not ask for."""
    from cuship.arch import parse_arch_list

    if not arches.strip():
        return []
    asked = {t.sm for t in parse_arch_list(arches).targets if t.sass}
    return [f"sm_{sm}" for sm in report.sass if sm not in asked]


def _warn_floor(report: WheelReport, floor: GlibcFloor, emit: Emit) -> None:
    """Say so when a wheel is above a floor that is not enforced, and what that costs."""
    from cuship.wheel.manylinux import floor_problem, parse_floor

    problem = floor_problem(report, parse_floor(floor.floor))
    if problem is None:
        return
    message = (
        f"{report.filename}: {problem}. Users with an older glibc cannot install it "
        f"(this floor is {floor.why}; set [build] manylinux to make it a verification failure)"
    )
    emit(Event(level="warning", topic="build", message=message, data={"floor": floor.floor}))


def _torch_pin(
    abi: TorchAbi, torch: str | None, name: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(requirements to write, problems): the pin ``abi`` needs, or why there can be none."""
    if abi == "none":
        return (), ()
    if torch is None:
        return (), (
            f"{name} links torch ({abi} ABI) but the torch it builds against is unknown, so it "
            "cannot be pinned: add torch to [matrix] torch, or build without isolation",
        )
    pin = pin_for(abi, torch)
    return ((pin,) if pin else ()), ()
