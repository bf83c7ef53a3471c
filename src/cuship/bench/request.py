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

__all__ = ["DEFAULT_OUTPUT", "BenchRequest", "ProfileKind", "TimerKind", "bench_request"]

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


def _refuse(
    *,
    interleave: bool,
    compare_with: Path | None,
    seeds: int | None,
    repeats: int | None,
    burn_in: bool,
    profile: ProfileKind | None,
    ncu_set: NcuSet | None,
    ncu_reports: Path | None,
) -> None:
    if interleave and compare_with is None:
        raise UsageError("--interleave needs --compare-with PATH2", hint="name the other build")
    if (seeds is None) != (repeats is None):
        raise UsageError("--seeds and --repeats go together", hint="e.g. --seeds 5 --repeats 50")
    for flag, value in (("--ncu-set", ncu_set), ("--ncu-reports", ncu_reports)):
        if value is not None and profile != "ncu":
            raise UsageError(f"{flag} needs --profile ncu", hint="add --profile ncu")
    if profile is not None and burn_in:
        raise UsageError("--profile profiles timed runs, not --burn-in", hint="pick one")


def bench_request(
    path: Path,
    *,
    cases: Sequence[str] = (),
    seeds: int | None = None,
    repeats: int | None = None,
    timer: TimerKind = "auto",
    min_time: float | None = None,
    timeout: float | None = None,
    noise: float | None = None,
    baseline: str | None = None,
    fail_on_regression: bool = False,
    allow_cross_machine: bool = False,
    assert_floors: bool = False,
    compare_with: Path | None = None,
    interleave: bool = False,
    burn_in: bool = False,
    label: str | None = None,
    no_store: bool = False,
    drop_throttled: bool = False,
    installed: bool = False,
    profile: ProfileKind | None = None,
    ncu_set: NcuSet | None = None,
    ncu_reports: Path | None = None,
    output: Path = DEFAULT_OUTPUT,
) -> BenchRequest:
    """The request ``cuship bench``'s options make (named as its flags are), or a UsageError:
    ``--interleave`` needs ``--compare-with``, ``--seeds`` and ``--repeats`` go together,
    ``--ncu-set``/``--ncu-reports`` need ``--profile ncu``, ``--profile`` excludes
    ``--burn-in``. ``--ncu-set full`` keeps its reports in ``OUTPUT/ncu`` unless
    ``--ncu-reports`` says where; ``--drop-throttled`` absent leaves the config's choice."""
    _refuse(
        interleave=interleave,
        compare_with=compare_with,
        seeds=seeds,
        repeats=repeats,
        burn_in=burn_in,
        profile=profile,
        ncu_set=ncu_set,
        ncu_reports=ncu_reports,
    )
    metric_set: NcuSet = ncu_set or "basic"
    if ncu_reports is None and metric_set == "full":
        ncu_reports = output / "ncu"
    return BenchRequest(
        path=path,
        cases=tuple(cases),
        seeds=seeds,
        repeats=repeats,
        timer=timer,
        min_time=min_time,
        timeout=timeout,
        noise=noise,
        baseline=baseline,
        fail_on_regression=fail_on_regression,
        allow_cross_machine=allow_cross_machine,
        assert_floors=assert_floors,
        compare_with=compare_with,
        label=label,
        store=not no_store,
        drop_throttled=True if drop_throttled else None,
        installed=installed,
        profile=profile,
        ncu_set=metric_set,
        ncu_reports=ncu_reports,
    )
