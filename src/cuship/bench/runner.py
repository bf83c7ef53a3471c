"""Running benchmark points with a timer: adaptive, fixed protocol, or interleaved A/B.

A point whose setup or call raises becomes an ``errored`` result carrying the error text; the
other points go on. So does a point the CUDA timer refuses because it launched no kernel
("timed host code"). A point that stops at the timeout above the noise target is ``unsure``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cuship.bench.registry import Point
from cuship.bench.results import PointResult
from cuship.bench.timers.launches import HostCodeTimed
from cuship.bench.timers.measure import (
    Measurement,
    StopRule,
    Timer,
    measure,
    measure_fixed,
    measure_interleaved,
)
from cuship.events import Emit, Event, discard, progress

__all__ = [
    "Protocol",
    "checked",
    "point_progress",
    "run_interleaved",
    "run_point",
    "run_points",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Protocol:
    """Adaptive (``seeds`` None) or fixed: ``seeds`` input seeds × ``repeats`` samples each."""

    rule: StopRule
    seeds: int | None = None
    repeats: int | None = None

    @property
    def fixed(self) -> bool:
        return self.seeds is not None and self.repeats is not None


def _call(point: Point, seed: int) -> Callable[[], object]:
    kwargs = point.case.inputs(point.params, seed)
    fn = point.case.fn

    def call() -> object:
        return fn(**kwargs)

    return call


def _error_text(err: BaseException) -> str:
    frames = traceback.extract_tb(err.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(err).__name__}: {err}{where}"


def _result(point: Point, m: Measurement, rule: StopRule) -> PointResult:
    unsure = m.stop_reason == "timeout" and not m.rel_noise < rule.noise
    return PointResult(
        key=point.key,
        case=point.case.name,
        params=point.params,
        status="unsure" if unsure else "ok",
        measurement=m,
        work=point.case.work(point.params),
    )


def _errored(point: Point, err: BaseException) -> PointResult:
    text = err.describe(point.key) if isinstance(err, HostCodeTimed) else _error_text(err)
    return PointResult(
        key=point.key,
        case=point.case.name,
        params=point.params,
        status="errored",
        measurement=None,
        error=text,
    )


def run_point(point: Point, timer: Timer, protocol: Protocol) -> PointResult:
    """Measure one point; an exception from its setup or call makes it ``errored``."""
    try:
        if protocol.fixed:
            assert protocol.seeds is not None and protocol.repeats is not None
            calls = [_call(point, seed) for seed in range(protocol.seeds)]
            drop = protocol.rule.drop_throttled
            m = measure_fixed(timer, calls, protocol.repeats, drop_throttled=drop)
        else:
            m = measure(timer, _call(point, 0), protocol.rule)
    except Exception as err:
        return _errored(point, err)
    return _result(point, m, protocol.rule)


def run_points(
    points: Sequence[Point],
    timer_for: Callable[[], Timer],
    protocol: Protocol,
    emit: Emit = discard,
) -> tuple[PointResult, ...]:
    """Measure every point in order, a fresh timer each, reporting progress through ``emit``."""
    results = []
    for index, point in enumerate(points, 1):
        result = run_point(point, timer_for(), protocol)
        results.append(result)
        emit(point_progress(index, len(points), result))
    return checked(points, results, timer_for, emit)


def _check_one(point: Point, timer: Timer, which: str = "") -> tuple[str, ...]:
    """The timer's check of one point, on fresh inputs (seed 0); raises HostCodeTimed."""
    try:
        return timer.check(lambda: _call(point, 0))
    except HostCodeTimed as err:
        err.which = which
        raise


def checked(
    points: Sequence[Point],
    results: Sequence[PointResult],
    timer_for: Callable[[], Timer],
    emit: Emit = discard,
    others: Mapping[str, Point] | None = None,
) -> tuple[PointResult, ...]:
    """Each timed point checked once more, after all points were timed (see ``Timer``): a
    point that launched no device work becomes ``errored`` ("timed host code"), and what the
    timer could not check becomes a note. ``others``: interleaved partners, checked too."""
    out = []
    for point, result in zip(points, results, strict=True):
        if result.measurement is None:
            out.append(result)
            continue
        timer = timer_for()
        try:
            notes = _check_one(point, timer)
            other = (others or {}).get(point.key)
            if other is not None:
                notes += _check_one(other, timer, "the build it is compared with")
        except Exception as err:  # a refusal, or a call that fails now: the point errored
            errored = _errored(point, err)
            emit(Event(level="warning", topic="bench", message=f"{point.key}: {errored.error}"))
            out.append(errored)
            continue
        measurement = replace(result.measurement, notes=result.measurement.notes + notes)
        out.append(replace(result, measurement=measurement))
    return tuple(out)


def point_progress(index: int, total: int, result: PointResult) -> Event:
    """The progress event of point ``index`` of ``total`` (an errored point warns)."""
    status = f"{result.status} ({result.error})" if result.error else result.status
    return progress("bench", index, total, result.key, status, warn=result.status == "errored")


def run_interleaved(
    points: Sequence[Point],
    others: Mapping[str, Point],
    timer_for: Callable[[], Timer],
    rule: StopRule,
    emit: Emit = discard,
) -> tuple[tuple[PointResult, ...], dict[str, tuple[float, ...]]]:
    """A/B: each point alternates samples with the same-key point of ``others`` in this process.

    Returns the results of ``points`` and the samples of their partners (the baseline), by key.
    Points without a partner are measured alone.
    """
    results: list[PointResult] = []
    partners: dict[str, tuple[float, ...]] = {}
    for index, point in enumerate(points, 1):
        other = others.get(point.key)
        timer = timer_for()
        if other is None:
            result = run_point(point, timer, Protocol(rule=rule))
        else:
            result = _interleave_one(point, other, timer, rule, partners)
        results.append(result)
        emit(point_progress(index, len(points), result))
    final = checked(points, results, timer_for, emit, others)
    kept = {r.key for r in final if r.measurement is not None}
    return final, {key: samples for key, samples in partners.items() if key in kept}


def _interleave_one(
    point: Point, other: Point, timer: Timer, rule: StopRule, partners: dict[str, Any]
) -> PointResult:
    try:
        a, b = measure_interleaved(timer, _call(point, 0), _call(other, 0), rule)
    except Exception as err:
        return _errored(point, err)
    partners[point.key] = tuple(b.kept)
    return _result(point, a, rule)
