"""Decide from a report whether a wheel holds what its build promised (pure; nothing is read)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from packaging.version import InvalidVersion, Version

from cuship._record import frozen
from cuship.arch import ArchTarget, parse_arch_list, sm_key
from cuship.errors import UsageError
from cuship.judge.ptx import PtxReach, reach, reach_lines
from cuship.wheel.audit import ObjectReport, WheelReport
from cuship.wheel.manylinux import floor_problem, parse_floor
from cuship.wheel.torchabi import TorchAbi, TorchPin

__all__ = ["VerifyResult", "satisfies", "verify"]


@frozen
class VerifyResult:
    """What was checked, and what is missing (empty ``problems`` means the wheel passed)."""

    target: str
    checks: tuple[str, ...]
    problems: tuple[str, ...]
    notes: tuple[str, ...] = ()  # worth saying, not wrong
    ptx: tuple[PtxReach, ...] = ()  # the PTX found, and which GPUs can JIT each
    device_code: bool = False  # some shared object carries SASS or PTX

    @property
    def ok(self) -> bool:
        return not self.problems

    def ptx_lines(self) -> tuple[str, ...]:
        """Which GPUs the PTX can serve, one line per arch (none without device code)."""
        return reach_lines([r.sm for r in self.ptx]) if self.device_code else ()

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "ok": self.ok,
            "checks": list(self.checks),
            "problems": list(self.problems),
            "notes": list(self.notes),
            "ptx": [r.to_json() for r in self.ptx],
        }


def satisfies(present: Sequence[str], wanted: str, *, kind: str) -> bool:
    """Whether the SMs in ``present`` cover ``wanted``.

    SASS for a plain ``"90"`` is covered by ``90``, ``90a`` or ``90f`` (all run on a 9.0 GPU);
    a suffixed request (``"90a"``, ``"100f"``) needs exactly that. PTX must match exactly:
    arch-specific PTX is not forward compatible, so it cannot stand in for plain PTX.
    """
    if wanted in present:
        return True
    if kind == "ptx" or not wanted.isdigit():
        return False
    return any(sm.rstrip("af") == wanted for sm in present)


def verify(
    report: WheelReport | ObjectReport,
    *,
    arches: Sequence[str] | str = (),
    local: str | None = None,
    torch: str | None = None,
    manylinux: str | None = None,
) -> VerifyResult:
    """Check configured arches (SASS, and PTX for ``+PTX``), bundled CUDA libraries, the label,
    a wheel's torch requirement against the torch ABI of its shared objects, and (with
    ``manylinux``, a glibc floor such as ``"2_28"``) that its platform tag is within the floor.

    ``arches`` is an arch spec (``"8.0;9.0;12.0+PTX"``) or a sequence of such items. ``torch``
    is the torch X.Y the wheel was built against, when the caller knows it; else its local
    label says, if it names one.
    """
    spec = arches if isinstance(arches, str) else ";".join(arches)
    targets = parse_arch_list(spec).targets if spec.strip() else ()
    # The package's own device code, as the runtime loads it: not the NVIDIA libraries it
    # bundles (their arch list is NVIDIA's), not relocatable code (never loaded).
    extensions = report.own if isinstance(report, WheelReport) else (report,)
    sass = tuple({sm for x in extensions for sm in x.sass})
    ptx = tuple({sm for x in extensions for sm in x.ptx})
    built = _torch_minor(torch)
    checks: list[str] = []
    problems: list[str] = []
    notes: list[str] = []
    _check_arches(targets, sass, ptx, checks, problems)
    if isinstance(report, WheelReport):
        _check_wheel(report, local, checks, problems)
        _check_variant(report, checks, problems, notes)
        built = built or report.torch_label
        _check_torch(report, built, checks, problems, notes)
        _check_floor(report, manylinux, checks, problems)
    else:
        for option, value in (("--local", local), ("--torch", torch), ("--manylinux", manylinux)):
            if value is not None:
                problems.append(f"{option} {value!r} given, but {report.path!r} is not a wheel")
    target = report.filename if isinstance(report, WheelReport) else report.path
    return VerifyResult(
        target=target,
        checks=tuple(checks),
        problems=tuple(problems),
        notes=tuple(notes),
        ptx=tuple(reach(sm) for sm in sorted(ptx, key=sm_key)),
        device_code=bool(sass or ptx),
    )


def _check_floor(
    report: WheelReport, manylinux: str | None, checks: list[str], problems: list[str]
) -> None:
    if manylinux is None:
        return
    floor = parse_floor(manylinux)
    checks.append(f"glibc floor manylinux_{floor[0]}_{floor[1]}")
    problem = floor_problem(report, floor)
    if problem is not None:
        problems.append(problem)


def _torch_minor(torch: str | None) -> str | None:
    if torch is None:
        return None
    try:
        release = Version(torch).release
    except InvalidVersion as err:
        raise UsageError(
            f"torch version {torch!r} is not a version", hint="pass the torch X.Y, e.g. 2.13"
        ) from err
    return f"{release[0]}.{release[1] if len(release) > 1 else 0}"


def _check_torch(
    report: WheelReport,
    built: str | None,
    checks: list[str],
    problems: list[str],
    notes: list[str],
) -> None:
    """The wheel's torch requirement against what its binaries import from torch.

    exact: ``torch==X.Y.*`` (X.Y = ``built`` when known), or pip installs a torch the wheel
    cannot load; stable: some torch requirement (its objects need libtorch at import); none:
    nothing to check.
    """
    abi, pin = report.torch_abi, report.torch_requirement
    note = _torch_note(abi, pin)
    if note is not None:
        notes.append(note)
    if abi == "none":
        return
    checks.append(f"torch requirement for torch ABI {abi!r}")
    culprit = next(x for x in report.extensions if x.torch_abi == abi)
    why = f"{culprit.path} {culprit.torch.reason}"
    problem = (
        _exact_problem(pin, built, why) if abi == "exact" else _stable_problem(pin, built, why)
    )
    if problem is not None:
        problems.append(problem)


def _exact_problem(pin: TorchPin | None, built: str | None, why: str) -> str | None:
    want = f"Requires-Dist: torch=={built or 'X.Y'}.*"
    if pin is None or pin.exact is None:
        have = f"Requires-Dist: {pin.requirement}" if pin is not None else "no torch requirement"
        return (
            f"exact torch ABI ({why}) but {have}: pip may install a torch it cannot load "
            f"(undefined symbol _ZN3c10... at import); the wheel needs {want}"
        )
    if built is not None and pin.exact != built:
        return (
            f"built against torch {built} (exact torch ABI) but Requires-Dist pins "
            f"{pin.requirement!r}; the wheel needs {want}"
        )
    return None


def _stable_problem(pin: TorchPin | None, built: str | None, why: str) -> str | None:
    if pin is not None:
        return None
    return (
        f"stable torch ABI ({why}) but no torch requirement: its shared objects need libtorch "
        f"at import; the wheel needs Requires-Dist: torch>={built or 'X.Y'}"
    )


def _torch_note(abi: TorchAbi, pin: TorchPin | None) -> str | None:
    if pin is None:
        return None
    if abi == "none":
        return f"requires {pin.requirement!r} though no shared object imports anything from torch"
    if abi == "stable" and pin.exact is not None:
        return (
            f"pins {pin.requirement!r} though its torch ABI is stable: torch>={pin.exact} "
            "would let it install next to newer torch releases"
        )
    return None


def _check_arches(
    targets: Sequence[ArchTarget],
    sass: Sequence[str],
    ptx: Sequence[str],
    checks: list[str],
    problems: list[str],
) -> None:
    if targets and not sass and not ptx:
        problems.append(
            "no CUDA device code (no .nv_fatbin SASS or PTX) in any shared object: a setup.py "
            "that compiles CUDA only when torch.cuda.is_available() needs its gate opened "
            "(FORCE_CUDA=1, or the project's own switch in [build] env); a package with none "
            "to build is a CPU wheel: [matrix] device_code = false (in packages.yml, its "
            "entry's matrix: {device_code: false})"
        )
        return
    for target in targets:
        if target.sass:
            checks.append(f"SASS sm_{target.sm}")
            if not satisfies(sass, target.sm, kind="sass"):
                problems.append(f"missing SASS for sm_{target.sm} (found: {_list(sass)})")
        if target.ptx:
            checks.append(f"PTX compute_{target.sm}")
            if not satisfies(ptx, target.sm, kind="ptx"):
                problems.append(f"missing PTX for compute_{target.sm} (found: {_list(ptx)})")


def _check_wheel(
    report: WheelReport, local: str | None, checks: list[str], problems: list[str]
) -> None:
    checks.append("no bundled CUDA/torch library")
    for lib in report.bundled_cuda_libs:
        problems.append(
            f"bundles {lib!r}; repair with `cuship repair` (it excludes CUDA libraries)"
        )
    if local is not None:
        checks.append(f"local label {local!r}")
        if _normal(report.local) != _normal(local):
            problems.append(f"local version label is {report.local!r}, expected {local!r}")


def _check_variant(
    report: WheelReport, checks: list[str], problems: list[str], notes: list[str]
) -> None:
    """A variant wheel's NVIDIA properties against what its binaries earn: a claim they do not
    earn sends uv's users a wheel that fails (a problem); one they would earn and that is not
    claimed only keeps uv from taking it where it runs (a note)."""
    if report.variant is None:
        return
    from cuship.judge.needs import wheel_needs
    from cuship.judge.variants import properties

    checks.append("variant properties held to the binaries")
    earned = properties(wheel_needs(report), upper_bound=True)
    for label, entry in report.variant.items():
        claimed = entry.get("nvidia", {}) if isinstance(entry, dict) else {}
        for value in claimed.get("sm_arch", []):
            if value not in earned.get("sm_arch", []):
                problems.append(
                    f"variant {label!r} claims sm_arch {value!r}, which its binaries do not "
                    f"earn (they earn: {', '.join(earned.get('sm_arch', [])) or 'none'})"
                )
        missing = [v for v in earned.get("sm_arch", []) if v not in claimed.get("sm_arch", [])]
        if claimed and missing:
            notes.append(f"variant {label!r} could also claim sm_arch {', '.join(missing)}")
        _check_bound(label, claimed, earned, problems)


def _check_bound(
    label: str,
    claimed: dict[str, list[str]],
    earned: dict[str, list[str]],
    problems: list[str],
) -> None:
    need = earned.get("cuda_version_lower_bound")
    said = claimed.get("cuda_version_lower_bound")
    if not need or not claimed:
        return
    if not said:
        problems.append(
            f"variant {label!r} has no cuda_version_lower_bound; its objects need CUDA {need[0]}"
        )
        return
    if min(int(v.partition(".")[0]) for v in said) < int(need[0]):
        problems.append(
            f"variant {label!r} says cuda_version_lower_bound {', '.join(said)}; its objects "
            f"link the CUDA {need[0]} runtime: a driver of an older CUDA fails it"
        )


def _normal(label: str | None) -> str | None:
    # PEP 440 compares local labels case-insensitively with '-' and '_' read as '.'.
    return None if label is None else label.lower().replace("-", ".").replace("_", ".")


def _list(sms: Sequence[str]) -> str:
    return ", ".join(sorted(sms, key=sm_key)) or "none"
