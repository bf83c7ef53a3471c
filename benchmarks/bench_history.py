"""Step detection over bench history: cuship's change points vs the run-over-run threshold users have.

Run: PYTHONPATH=src python benchmarks/bench_history.py

The alternative a user would otherwise pick is pytest-benchmark's `--benchmark-compare-fail=mean:5%`
(or a hand-written "slower than the last run by 5 %" check): it flags run i when its median is 5 %
above run i-1. Both judge the same seeded synthetic histories of 30 runs (Gaussian run-to-run noise):
- flat: no change at all; any alarm is false;
- step: 10 % slower from run 12 on; found = an alarm exactly at run 12, nowhere else;
- outlier: flat with one run 50 % slow (a noisy neighbour); any alarm is false.
Each line prints the rates and the ratio of false alarms (naive / cuship).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable

from cuship.bench.history.changepoints import find_steps

RUNS, STEP_AT, TRIALS = 30, 12, 200


def _series(kind: str, noise: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    values = [1e-3 * (1.0 + rng.gauss(0.0, noise)) for _ in range(RUNS)]
    if kind == "step":
        values = [v * (1.10 if i >= STEP_AT else 1.0) for i, v in enumerate(values)]
    elif kind == "outlier":
        values[rng.randrange(RUNS)] *= 1.5
    return values


def cuship_alarms(values: list[float]) -> tuple[int, ...]:
    return find_steps([math.log(v) for v in values])


def naive_alarms(values: list[float], threshold: float = 0.05) -> tuple[int, ...]:
    return tuple(i for i in range(1, len(values)) if values[i] / values[i - 1] - 1.0 > threshold)


def _rates(detect: Callable[[list[float]], tuple[int, ...]], noise: float) -> dict[str, float]:
    out = {}
    for kind in ("flat", "step", "outlier"):
        hits = 0
        for seed in range(TRIALS):
            found = detect(_series(kind, noise, seed))
            hits += found == (STEP_AT,) if kind == "step" else bool(found)
        out[kind] = hits / TRIALS
    return out


def main() -> None:
    print(f"{TRIALS} seeded histories of {RUNS} runs per line; step = +10 % from run {STEP_AT}")
    print(
        f"{'noise':>6} {'method':<28} {'false (flat)':>12} {'step found':>11} {'false (outlier)':>16}"
    )
    for noise in (0.01, 0.02, 0.03):
        start = time.perf_counter()
        ours = _rates(cuship_alarms, noise)
        took = time.perf_counter() - start
        theirs = _rates(naive_alarms, noise)
        for name, r in (("cuship bench history", ours), ("run-over-run > 5 % (naive)", theirs)):
            print(
                f"{noise:>6.0%} {name:<28} {r['flat']:>12.1%} {r['step']:>11.1%} {r['outlier']:>16.1%}"
            )
        flat = (theirs["flat"] + 1 / TRIALS) / (ours["flat"] + 1 / TRIALS)
        outl = (theirs["outlier"] + 1 / TRIALS) / (ours["outlier"] + 1 / TRIALS)
        print(
            f"{'':>6} ratio naive/cuship false alarms (+1/{TRIALS} smoothing): flat {flat:.1f}x, "
            f"outlier {outl:.1f}x; cuship {took / (3 * TRIALS) * 1e3:.2f} ms per history"
        )


if __name__ == "__main__":
    main()
