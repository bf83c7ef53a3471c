"""Bench history: one series per (machine, result key) across stored runs, and its step changes.

Method: exact optimal partitioning of the per-run medians (in log space) under an L1 cost with a
per-segment penalty, i.e. a penalised Potts model solved by dynamic programming (the family asv
uses for its step detection). Chosen over E-divisive because

* the answer is deterministic (no permutation test needed to *find* steps), exact rather than
  greedy, and fast for the few hundred runs a benchmark history holds (O(n² log n));
* the L1 cost with segment medians is robust: one outlier run costs the same whichever segment
  holds it, so it never pays for the penalty of a split, and every segment must hold at least
  ``MIN_SEGMENT`` runs, so a lone run (at the end, too) cannot become a segment of its own;
* the penalty scales with the noise, measured robustly as the MAD of successive differences of
  the log medians (a step moves one difference, an outlier two, neither moves the MAD), with a
  BIC-like ``log n`` factor, so noisy machines need bigger steps and exact counters small ones.

Each step found then gets a significance: an exact (or, for long segments, seeded Monte-Carlo)
permutation test of the difference of medians between the neighbouring segments. The p-value is
reported, not used to drop steps: two-run segments cannot reach small p-values whatever the effect.
Larger values (seconds, instruction counts) are slower.
"""

from __future__ import annotations

import fnmatch
import heapq
import itertools
import math
import random
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from cuship.store import ResultRow, RunRecord

__all__ = [
    "MIN_SEGMENT",
    "History",
    "Point",
    "Series",
    "Step",
    "analyse",
    "collect_series",
    "find_steps",
    "histories",
    "machine_of",
    "noise_scale",
]

MIN_SEGMENT = 2
PENALTY_FACTOR = 2.5
NOISE_FLOOR = 1e-4  # relative; exact counters still need a 0.01 % move per run to count
_MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    """One run's result for one key: its median and every raw sample."""

    run_id: int
    started: float
    median: float
    samples: tuple[float, ...]
    label: str | None = None
    numbers: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Series:
    """The results of one key on one machine, oldest run first."""

    machine_id: str
    key: str
    case: str
    params: Mapping[str, Any]
    unit: str
    points: tuple[Point, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """A step change: ``index`` is the position in the series of the first point after it."""

    index: int
    run_id: int
    started: float
    label: str | None
    before: float
    after: float
    rel_change: float
    direction: Literal["slower", "faster"]
    p_value: float
    score: float

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "first_run_after": self.run_id,
            "started": self.started,
            "label": self.label,
            "before": self.before,
            "after": self.after,
            "rel_change": self.rel_change,
            "direction": self.direction,
            "p_value": self.p_value,
            "score": self.score,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class History:
    """A series with the steps found in it and the relative run-to-run noise used to find them."""

    series: Series
    steps: tuple[Step, ...]
    noise: float

    def to_json(self) -> dict[str, Any]:
        s = self.series
        return {
            "machine_id": s.machine_id,
            "key": s.key,
            "case": s.case,
            "params": dict(s.params),
            "unit": s.unit,
            "runs": [p.run_id for p in s.points],
            "medians": [p.median for p in s.points],
            "noise": self.noise,
            "steps": [step.to_json() for step in self.steps],
        }


def machine_of(fingerprint: Mapping[str, Any]) -> str:
    """The fingerprint's ``machine_id``, or the same hash computed from its fields when absent."""
    from cuship.bench.env import machine_id

    stored = fingerprint.get("machine_id")
    if isinstance(stored, str) and stored:
        return stored
    return machine_id(fingerprint)


def _median_of(row: ResultRow) -> tuple[float, tuple[float, ...]] | None:
    raw = row.payload.get("samples") or ()
    samples = tuple(float(x) for x in raw if isinstance(x, int | float) and math.isfinite(x))
    median = row.numbers.get("median")
    # Rows stored before every sample counted left throttled samples out of their median
    # without saying so; their history uses the median of all their raw samples.
    silent_drop = "drop_throttled" not in row.payload and bool(row.payload.get("throttled"))
    if (median is None or silent_drop) and samples:
        median = statistics.median(samples)
    if row.status not in (None, "ok", "unsure") or median is None or not median > 0:
        return None
    return float(median), samples


def collect_series(runs: Iterable[tuple[RunRecord, Sequence[ResultRow]]]) -> tuple[Series, ...]:
    """Group bench results by (machine, key), oldest run first; errored or empty results are left out."""
    points: dict[tuple[str, str], list[Point]] = {}
    first_row: dict[tuple[str, str], ResultRow] = {}
    for run, rows in sorted(runs, key=lambda r: (r[0].started, r[0].id or 0)):
        if run.kind != "bench":
            continue
        machine = machine_of(run.fingerprint)
        label = run.meta.get("label")
        for row in rows:
            found = _median_of(row)
            if found is None:
                continue
            ident = (machine, row.key)
            first_row.setdefault(ident, row)
            points.setdefault(ident, []).append(
                Point(
                    run_id=run.id or 0,
                    started=run.started,
                    median=found[0],
                    samples=found[1],
                    label=str(label) if label is not None else None,
                    numbers=dict(row.numbers),
                )
            )
    return tuple(
        Series(
            machine_id=ident[0],
            key=ident[1],
            case=str(first_row[ident].payload.get("case", ident[1].split("[", 1)[0])),
            params=dict(first_row[ident].payload.get("params") or {}),
            unit=str(first_row[ident].payload.get("unit", "s")),
            points=tuple(pts),
        )
        for ident, pts in sorted(points.items())
    )


def noise_scale(values: Sequence[float]) -> float:
    """Robust standard deviation of ``values`` between neighbours (MAD of successive differences)."""
    diffs = [abs(b - a) for a, b in itertools.pairwise(values)]
    if not diffs:
        return NOISE_FLOOR
    return max(_MAD_TO_SIGMA * statistics.median(diffs) / math.sqrt(2.0), NOISE_FLOOR)


class _RunningL1:
    """Sum of absolute deviations from the median of a growing set (two heaps with their sums)."""

    __slots__ = ("hi", "hi_sum", "lo", "lo_sum")

    def __init__(self) -> None:
        self.lo: list[float] = []  # max-heap of the lower half, negated
        self.hi: list[float] = []
        self.lo_sum = 0.0
        self.hi_sum = 0.0

    def add(self, x: float) -> None:
        if self.lo and x > -self.lo[0]:
            heapq.heappush(self.hi, x)
            self.hi_sum += x
        else:
            heapq.heappush(self.lo, -x)
            self.lo_sum += x
        if len(self.lo) > len(self.hi) + 1:
            moved = -heapq.heappop(self.lo)
            self.lo_sum -= moved
            heapq.heappush(self.hi, moved)
            self.hi_sum += moved
        elif len(self.hi) > len(self.lo):
            moved = heapq.heappop(self.hi)
            self.hi_sum -= moved
            heapq.heappush(self.lo, -moved)
            self.lo_sum += moved

    def cost(self) -> float:
        m = -self.lo[0]
        return (m * len(self.lo) - self.lo_sum) + (self.hi_sum - m * len(self.hi))


def find_steps(
    values: Sequence[float], *, penalty: float | None = None, min_segment: int = MIN_SEGMENT
) -> tuple[int, ...]:
    """Indices where a new segment starts, minimising L1 cost/noise + penalty per segment.

    ``values`` are log medians; the default penalty is ``PENALTY_FACTOR · (1 + ln n)`` in units of
    the noise scale.
    """
    n = len(values)
    if n < 2 * min_segment:
        return ()
    sigma = noise_scale(values)
    beta = PENALTY_FACTOR * (1.0 + math.log(n)) if penalty is None else penalty
    best = [math.inf] * (n + 1)
    last = [0] * (n + 1)
    best[0] = -beta
    running = [_RunningL1() for _ in range(n)]
    for t in range(1, n + 1):
        for s in range(t):
            running[s].add(values[t - 1])
        for s in range(t - min_segment + 1):
            if best[s] == math.inf:
                continue
            total = best[s] + running[s].cost() / sigma + beta
            if total < best[t]:
                best[t], last[t] = total, s
    cuts: list[int] = []
    t = n
    while t > 0:
        t = last[t]
        if t > 0:
            cuts.append(t)
    return tuple(sorted(cuts))


def _permutation_p(
    a: Sequence[float], b: Sequence[float], rng: random.Random, rounds: int
) -> float:
    """Two-sided p-value of |median(b) - median(a)| under exchangeability (exact when small)."""
    pooled = [*a, *b]
    observed = abs(statistics.median(b) - statistics.median(a)) - 1e-12
    k = len(a)
    if math.comb(len(pooled), k) <= rounds:
        picks: Iterable[Sequence[int]] = itertools.combinations(range(len(pooled)), k)
        total = math.comb(len(pooled), k)
        hits = 0
    else:
        picks = (rng.sample(range(len(pooled)), k) for _ in range(rounds))
        total, hits = rounds + 1, 1  # the observed split counts once
    for pick in picks:
        chosen = set(pick)
        left = [pooled[i] for i in chosen]
        right = [pooled[i] for i in range(len(pooled)) if i not in chosen]
        if abs(statistics.median(right) - statistics.median(left)) >= observed:
            hits += 1
    return hits / total


def analyse(series: Series, *, seed: int = 0, rounds: int = 999) -> History:
    """Find the steps of ``series`` and describe each (medians either side, change, p-value)."""
    medians = [p.median for p in series.points]
    logs = [math.log(m) for m in medians]
    sigma = noise_scale(logs)
    cuts = find_steps(logs)
    bounds = [0, *cuts, len(logs)]
    rng = random.Random(seed)
    steps = []
    for i, cut in enumerate(cuts):
        before, after = medians[bounds[i] : cut], medians[cut : bounds[i + 2]]
        m_before, m_after = statistics.median(before), statistics.median(after)
        point = series.points[cut]
        steps.append(
            Step(
                index=cut,
                run_id=point.run_id,
                started=point.started,
                label=point.label,
                before=m_before,
                after=m_after,
                rel_change=m_after / m_before - 1.0,
                direction="slower" if m_after > m_before else "faster",
                p_value=_permutation_p(
                    logs[bounds[i] : cut], logs[cut : bounds[i + 2]], rng, rounds
                ),
                score=abs(math.log(m_after / m_before)) / sigma,
            )
        )
    return History(series=series, steps=tuple(steps), noise=sigma)


def _matches(series: Series, pattern: str) -> bool:
    """A case glob matches the case name, the whole key, or the key spelled exactly."""
    return (
        series.key == pattern
        or fnmatch.fnmatchcase(series.case, pattern)
        or fnmatch.fnmatchcase(series.key, pattern)
    )


def histories(
    runs: Iterable[tuple[RunRecord, Sequence[ResultRow]]],
    *,
    case: str | None = None,
    machine: str | None = None,
    seed: int = 0,
) -> tuple[History, ...]:
    """Every series of ``runs`` (filtered by a case glob and a machine id prefix), analysed."""
    chosen = [
        s
        for s in collect_series(runs)
        if (case is None or _matches(s, case))
        and (machine is None or s.machine_id.startswith(machine))
    ]
    return tuple(analyse(s, seed=seed) for s in chosen)
