"""Choose the wheel for this machine among local files, by the resolver's rules.

:func:`read_wheels` reads the files (name, sha256, METADATA's Requires-Python, and the SASS/PTX
arches found inside, as ``cuship index`` describes them for its manifest) into candidates;
:func:`choose` is pure: :func:`cuship.resolve.select.select` over those candidates for a target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from cuship.errors import CheckFailed, CushipError, InputError
from cuship.events import Emit, Event, discard
from cuship.resolve.model import Candidate, Resolution, Target, Verdict, WheelFacts
from cuship.resolve.select import select

__all__ = ["LocalWheels", "NoWheelFits", "Unreadable", "WheelChoice", "choose", "read_wheels"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Unreadable:
    """A file given as a wheel that could not be read, and why."""

    path: Path
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalWheels:
    """The candidates read from local files (``url`` is the file's URI) and the files skipped."""

    candidates: tuple[Candidate, ...]
    paths: Mapping[str, Path]  # file name -> path
    unreadable: tuple[Unreadable, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelChoice:
    """The wheel chosen, and how every given file was judged."""

    path: Path
    verdict: Verdict
    resolution: Resolution
    unreadable: tuple[Unreadable, ...] = ()

    def to_json(self) -> dict[str, Any]:
        c = self.verdict.candidate
        return {
            "path": str(self.path),
            "filename": c.filename,
            "sha256": c.sha256,
            "version": self.verdict.version,
            "why": _why(self.verdict),
            "cuda": self.verdict.cuda,
            "coverage": self.verdict.coverage,
            "notes": list(self.verdict.notes),
            "target": self.resolution.target.to_json(),
            "also_fitting": [v.candidate.filename for v in self.resolution.ranked[1:]],
            "rejected": [_rejected(v) for v in self.resolution.rejected]
            + [
                {"filename": u.path.name, "rule": "unreadable", "reason": u.reason}
                for u in self.unreadable
            ],
        }


class NoWheelFits(CheckFailed):
    """None of the given wheels can run here; the message lists each one and why."""


_COVERAGE = {
    "sass": "SASS for every GPU",
    "ptx": "PTX JIT for some GPU",
    "unknown": "arches unknown",
    "cpu": "no CUDA device code",
}


def _why(verdict: Verdict) -> str:
    parts = [f"best fit: {_COVERAGE.get(verdict.coverage, verdict.coverage)}"]
    if verdict.cuda:
        parts.append(f"CUDA {verdict.cuda}")
    return ", ".join(parts + list(verdict.notes))


def _rejected(verdict: Verdict) -> dict[str, object]:
    return {"filename": verdict.candidate.filename, "rule": verdict.rule, "reason": verdict.reason}


def _listed(inputs: Sequence[Path]) -> list[Path]:
    """Wheel files: a directory stands for the ``*.whl`` directly inside it."""
    files: list[Path] = []
    for path in inputs:
        if path.is_dir():
            found = sorted(path.glob("*.whl"))
            if not found:
                raise InputError(
                    f"no wheels (*.whl) in {str(path)!r}",
                    hint="build them first (cuship build -o DIR) or download the job's artifact",
                )
            files.extend(found)
        elif path.is_file():
            if not path.name.endswith(".whl"):
                raise InputError(f"not a wheel: {str(path)!r}", hint="pass .whl files or a DIR")
            files.append(path)
        else:
            raise InputError(
                f"--wheels: no such file or directory: {str(path)!r}",
                hint="pass the directory the wheels were built or downloaded into",
            )
    return files


def _facts(path: Path) -> WheelFacts:
    from cuship.index.describe import describe_wheel

    return WheelFacts.from_describe(describe_wheel(path))


def read_wheels(inputs: Sequence[Path], *, emit: Emit = discard) -> LocalWheels:
    """Read the wheels in ``inputs`` (files, or directories of ``*.whl``).

    A missing input, a directory without wheels, or no readable wheel at all is an
    :class:`InputError` (exit 2); single broken files are reported as unreadable.
    """
    from cuship.index.scan import scan_report

    if not inputs:
        raise InputError("no wheels given", hint="pass --wheels DIR (or wheel files)")
    wheels, skipped = scan_report(_listed(inputs), emit=emit)
    unreadable = [Unreadable(path=s.path, reason=s.reason) for s in skipped]
    candidates: list[Candidate] = []
    for wheel in wheels:
        try:
            facts = _facts(wheel.path)
        except CushipError as err:
            unreadable.append(Unreadable(path=wheel.path, reason=err.message))
            continue
        candidates.append(
            Candidate(
                filename=wheel.filename,
                url=wheel.path.resolve().as_uri(),
                sha256=wheel.sha256,
                requires_python=wheel.requires_python,
                size=wheel.size,
                facts=facts,
            )
        )
        message = f"{wheel.filename}: sass {list(facts.sass)}, ptx {list(facts.ptx)}"
        emit(Event(level="debug", topic="gpu-run", message=message))
    if not candidates:
        shown = "; ".join(f"{u.path.name}: {u.reason}" for u in unreadable)
        raise InputError(f"no readable wheel among {', '.join(map(str, inputs))}: {shown}")
    paths = {w.filename: w.path.resolve() for w in wheels}
    return LocalWheels(candidates=tuple(candidates), paths=paths, unreadable=tuple(unreadable))


def _machine(target: Target) -> str:
    gpus = ", ".join(f"{name} ({cc})" for name, cc in target.offer.gpus) or "no GPU"
    cuda = f", driver CUDA {target.offer.driver_cuda}" if target.offer.driver_cuda else ""
    return f"{gpus}{cuda}, Python {target.python}"


def choose(name: str, wheels: LocalWheels, target: Target) -> WheelChoice:
    """The best of ``wheels`` for ``target`` (pure). :class:`NoWheelFits` (exit 1) when none fits.

    Local builds are often pre-releases (``0.2.0.dev3``); they are accepted here, as the
    wheel under test is whatever was built, not what an installer would pick by default.
    """
    requirement = f"{canonicalize_name(name)}>=0.0.0.dev0"  # a pre-release bound allows them
    resolution = select(requirement, wheels.candidates, target)
    chosen = resolution.chosen
    if chosen is None:
        lines = [f"  {v.candidate.filename}: {v.rule}: {v.reason}" for v in resolution.rejected]
        lines += [f"  {u.path.name}: unreadable: {u.reason}" for u in wheels.unreadable]
        raise NoWheelFits(
            f"no wheel of {name!r} fits this machine ({_machine(target)}):\n" + "\n".join(lines),
            hint="build one for this GPU and driver (cuship matrix --explain shows the jobs)",
        )
    return WheelChoice(
        path=wheels.paths[chosen.candidate.filename],
        verdict=chosen,
        resolution=resolution,
        unreadable=wheels.unreadable,
    )
