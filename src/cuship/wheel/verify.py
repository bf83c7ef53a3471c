"""Decide from a report whether a wheel holds what its build promised (pure; nothing is read)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cuship.arch import ArchTarget, parse_arch_list
from cuship.wheel.audit import ObjectReport, WheelReport, sm_key

__all__ = ["VerifyResult", "satisfies", "verify"]


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyResult:
    """What was checked, and what is missing (empty ``problems`` means the wheel passed)."""

    target: str
    checks: tuple[str, ...]
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "ok": self.ok,
            "checks": list(self.checks),
            "problems": list(self.problems),
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
) -> VerifyResult:
    """Check configured arches (SASS, and PTX for ``+PTX``), bundled CUDA libraries and the label.

    ``arches`` is an arch spec (``"8.0;9.0;12.0+PTX"``) or a sequence of such items.
    """
    spec = arches if isinstance(arches, str) else ";".join(arches)
    targets = parse_arch_list(spec).targets if spec.strip() else ()
    extensions = report.extensions if isinstance(report, WheelReport) else (report,)
    sass = tuple({sm for x in extensions for sm in x.sass})
    ptx = tuple({sm for x in extensions for sm in x.ptx})
    checks: list[str] = []
    problems: list[str] = []
    _check_arches(targets, sass, ptx, checks, problems)
    if isinstance(report, WheelReport):
        _check_wheel(report, local, checks, problems)
    elif local is not None:
        problems.append(f"--local {local!r} given, but {report.path!r} is not a wheel")
    target = report.filename if isinstance(report, WheelReport) else report.path
    return VerifyResult(target=target, checks=tuple(checks), problems=tuple(problems))


def _check_arches(
    targets: Sequence[ArchTarget],
    sass: Sequence[str],
    ptx: Sequence[str],
    checks: list[str],
    problems: list[str],
) -> None:
    if targets and not sass and not ptx:
        problems.append("no CUDA device code (no .nv_fatbin SASS or PTX) in any shared object")
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


def _normal(label: str | None) -> str | None:
    # PEP 440 compares local labels case-insensitively with '-' and '_' read as '.'.
    return None if label is None else label.lower().replace("-", ".").replace("_", ".")


def _list(sms: Sequence[str]) -> str:
    return ", ".join(sorted(sms, key=sm_key)) or "none"
