"""Statistics of bench results: summaries, the bootstrap CI of a ratio of medians, verdicts.

The verdict of current vs baseline joins significance and effect size: with ``t`` the threshold
and [lo, hi] the 99 % percentile bootstrap CI of median(current) / median(baseline) (2000
resamples a side, seeded),

* SLOWER when lo > 1 + t (the whole CI is a slowdown larger than t),
* FASTER when hi < 1 - t,
* SAME when 1 - t <= lo and hi <= 1 + t (any change is smaller than t),
* UNSURE otherwise, with an estimate of how many samples per side would decide: the CI half-width
  shrinks as 1/sqrt(n), so n' = n * (half-width / distance to the nearest decision edge)^2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "Comparison",
    "Summary",
    "Verdict",
    "bootstrap_ratio",
    "compare",
    "compare_exact",
    "summarize",
]

Verdict = Literal["SAME", "FASTER", "SLOWER", "UNSURE"]
RESAMPLES = 2000
CONFIDENCE = 0.99
_BLOCK = 1 << 22


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    median: float
    mean: float
    min: float
    stdev: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """Current vs baseline for one result key."""

    ratio: float
    low: float
    high: float
    threshold: float
    verdict: Verdict
    more_samples: int | None = None

    def describe(self) -> str:
        pct = (self.ratio - 1) * 100
        text = f"{self.verdict} {pct:+.1f}% [{(self.low - 1) * 100:+.1f}, {(self.high - 1) * 100:+.1f}]"
        if self.verdict == "UNSURE":
            text += (
                f", ~{self.more_samples} more samples would decide"
                if self.more_samples is not None
                else ", the change sits on the threshold"
            )
        return text


def summarize(samples: Sequence[float]) -> Summary:
    import numpy as np

    values = np.asarray(samples, dtype=np.float64)
    return Summary(
        median=float(np.median(values)),
        mean=float(values.mean()),
        min=float(values.min()),
        stdev=float(values.std(ddof=1)) if values.size > 1 else 0.0,
    )


def bootstrap_ratio(
    current: Sequence[float],
    baseline: Sequence[float],
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(ratio, low, high): median(current) / median(baseline) and its percentile bootstrap CI.

    Each side is resampled with replacement ``resamples`` times (vectorised, seeded).
    """
    import numpy as np

    cur = np.asarray(current, dtype=np.float64)
    base = np.asarray(baseline, dtype=np.float64)
    rng = np.random.default_rng(seed)
    ratios = _resampled_medians(rng, cur, resamples) / _resampled_medians(rng, base, resamples)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(np.median(cur) / np.median(base)), float(low), float(high)


def _resampled_medians(rng: Any, values: Any, resamples: int) -> Any:
    """Medians of ``resamples`` resamples of ``values``, in blocks of about 4M draws."""
    import numpy as np

    rows = max(1, _BLOCK // max(1, values.size))
    parts = [
        np.median(rng.choice(values, size=(min(rows, resamples - start), values.size)), axis=1)
        for start in range(0, resamples, rows)
    ]
    return np.concatenate(parts)


def _more_samples(ratio: float, low: float, high: float, threshold: float, n: int) -> int | None:
    half = (high - low) / 2
    edges = (1 - threshold, 1 + threshold)
    distance = min(abs(ratio - e) for e in edges)
    if distance < 1e-3 * threshold or half <= 0:
        return None
    needed = n * (half / distance) ** 2
    return max(1, math.ceil(needed - n))


def compare(
    current: Sequence[float],
    baseline: Sequence[float],
    threshold: float,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Comparison:
    """The verdict on ``current`` vs ``baseline`` (module docstring); needs 2+ samples a side
    for a decision, else UNSURE."""
    if len(current) < 2 or len(baseline) < 2:
        ratio = _safe_ratio(current, baseline)
        return Comparison(
            ratio=ratio, low=-math.inf, high=math.inf, threshold=threshold, verdict="UNSURE"
        )
    ratio, low, high = bootstrap_ratio(current, baseline, resamples=resamples, seed=seed)
    verdict: Verdict
    if low > 1 + threshold:
        verdict = "SLOWER"
    elif high < 1 - threshold:
        verdict = "FASTER"
    elif low >= 1 - threshold and high <= 1 + threshold:
        verdict = "SAME"
    else:
        verdict = "UNSURE"
    more = (
        _more_samples(ratio, low, high, threshold, min(len(current), len(baseline)))
        if verdict == "UNSURE"
        else None
    )
    return Comparison(
        ratio=ratio, low=low, high=high, threshold=threshold, verdict=verdict, more_samples=more
    )


def compare_exact(current: float, baseline: float, threshold: float) -> Comparison:
    """The verdict on two deterministic numbers (instruction counts): the CI is the ratio."""
    ratio = current / baseline if baseline else math.inf
    verdict: Verdict = (
        "SLOWER" if ratio > 1 + threshold else "FASTER" if ratio < 1 - threshold else "SAME"
    )
    return Comparison(ratio=ratio, low=ratio, high=ratio, threshold=threshold, verdict=verdict)


def _safe_ratio(current: Sequence[float], baseline: Sequence[float]) -> float:
    if not current or not baseline:
        return math.nan
    base = sorted(baseline)[len(baseline) // 2]
    return sorted(current)[len(current) // 2] / base if base else math.nan
