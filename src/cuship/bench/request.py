"""What ``cuship bench`` was asked: the request, and the rules its options follow.

:func:`bench_request` turns the command line's plain options into a :class:`BenchRequest`,
refusing the combinations that make no sense (each a :class:`~cuship.errors.UsageError`)
and deciding the defaults one option takes from another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cuship.bench.ncu.profile import NcuSet
from cuship.errors import UsageError

__all__ = [
    "DEFAULT_OUTPUT",
    "BenchFlags",
    "BenchRequest",
    "ProfileKind",
    "TimerKind",
    "bench_request",
]

TimerKind = Literal["auto", "cuda", "wall", "instructions"]
ProfileKind = Literal["ncu"]
DEFAULT_OUTPUT = Path("bench/results")  # where --export writes (and, under ncu/, full reports)


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchRequest:
    """What ``cuship bench`` was asked; None means "as configured"."""

    path: Path
    cases: tuple[str, ...] = ()
    seeds: int | None = None
    repeats: int | None = None
    timer: TimerKind = "auto"
    min_time: float | None = None
    timeout: float | None = None
    noise: float | None = None
    baseline: str | None = None
    fail_on_regression: bool = False
    allow_cross_machine: bool = False
    assert_floors: bool = False
    compare_with: Path | None = None
    label: str | None = None
    store: bool = True
    drop_throttled: bool | None = None
    installed: bool = False  # import the project's package as installed, never from its source
    profile: ProfileKind | None = None  # --profile ncu: each point's kernels, after the timing
    ncu_set: NcuSet = "basic"
    ncu_reports: Path | None = None  # keep each point's .ncu-rep here (None: not kept)


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchFlags:
    """``cuship bench``'s options, named as its flags are, before their rules are applied."""

    cases: Sequence[str] = ()
    seeds: int | None = None
    repeats: int | None = None
    timer: TimerKind = "auto"
    min_time: float | None = None
    timeout: float | None = None
    noise: float | None = None
    baseline: str | None = None
    fail_on_regression: bool = False
    allow_cross_machine: bool = False
    assert_floors: bool = False
    compare_with: Path | None = None
    interleave: bool = False
    burn_in: bool = False
    label: str | None = None
    no_store: bool = False
    drop_throttled: bool = False
    installed: bool = False
    profile: ProfileKind | None = None
    ncu_set: NcuSet | None = None
    ncu_reports: Path | None = None
    output: Path = DEFAULT_OUTPUT


def _refuse(flags: BenchFlags) -> None:
    if flags.interleave and flags.compare_with is None:
        raise UsageError("--interleave needs --compare-with PATH2", hint="name the other build")
    if (flags.seeds is None) != (flags.repeats is None):
        raise UsageError("--seeds and --repeats go together", hint="e.g. --seeds 5 --repeats 50")
    for flag, value in (("--ncu-set", flags.ncu_set), ("--ncu-reports", flags.ncu_reports)):
        if value is not None and flags.profile != "ncu":
            raise UsageError(f"{flag} needs --profile ncu", hint="add --profile ncu")
    if flags.profile is not None and flags.burn_in:
        raise UsageError("--profile profiles timed runs, not --burn-in", hint="pick one")


# The request's fields that are its flags' values as given.
_AS_GIVEN = (
    "seeds",
    "repeats",
    "timer",
    "min_time",
    "timeout",
    "noise",
    "baseline",
    "fail_on_regression",
    "allow_cross_machine",
    "assert_floors",
    "compare_with",
    "label",
    "installed",
    "profile",
)


def bench_request(path: Path, flags: BenchFlags = BenchFlags()) -> BenchRequest:
    """The request ``cuship bench``'s flags make, or a UsageError: ``--interleave`` needs
    ``--compare-with``, ``--seeds`` and ``--repeats`` go together, ``--ncu-set``/``--ncu-reports``
    need ``--profile ncu``, ``--profile`` excludes ``--burn-in``. ``--ncu-set full`` keeps its
    reports in ``OUTPUT/ncu`` unless ``--ncu-reports`` says where; ``--drop-throttled`` absent
    leaves the config's choice."""
    _refuse(flags)
    metric_set: NcuSet = flags.ncu_set or "basic"
    reports = flags.ncu_reports
    if reports is None and metric_set == "full":
        reports = flags.output / "ncu"
    return BenchRequest(
        path=path,
        cases=tuple(flags.cases),
        store=not flags.no_store,
        drop_throttled=True if flags.drop_throttled else None,
        ncu_set=metric_set,
        ncu_reports=reports,
        **{name: getattr(flags, name) for name in _AS_GIVEN},
    )
