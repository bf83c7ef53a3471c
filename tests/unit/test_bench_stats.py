"""Bench statistics and timers' pure parts: verdicts, stopping rule, L2 flush size, throttling."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cuship.bench.stats import bootstrap_ratio, compare
from cuship.bench.timers.measure import (
    StopRule,
    WallTimer,
    l2_flush_bytes,
    measure,
    measure_fixed,
    rel_noise,
    stop_reason,
    throttled_indices,
    usable,
)


def _samples(seed: int, n: int, median: float, spread: float) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(median * (1 + spread * rng.standard_normal(n)))


def test_clear_slowdown_is_slower_and_speedup_is_faster() -> None:
    base = _samples(1, 60, 1.0, 0.01)
    slow = compare(_samples(2, 60, 1.15, 0.01), base, 0.05)
    fast = compare(_samples(3, 60, 0.85, 0.01), base, 0.05)
    assert slow.verdict == "SLOWER" and slow.low > 1.05 and 1.1 < slow.ratio < 1.2
    assert fast.verdict == "FASTER" and fast.high < 0.95


def test_small_change_with_tight_ci_is_same() -> None:
    result = compare(_samples(4, 200, 1.01, 0.005), _samples(5, 200, 1.0, 0.005), 0.05)
    assert result.verdict == "SAME" and result.more_samples is None
    assert result.describe().startswith("SAME +1.")


def test_large_noise_is_unsure_with_an_estimate_of_samples_needed() -> None:
    base = _samples(6, 10, 1.0, 0.2)
    result = compare([1.08 * v for v in base], base, 0.05)
    assert result.verdict == "UNSURE"
    assert result.more_samples is not None and result.more_samples > 0
    assert "more samples would decide" in result.describe()


def test_too_few_samples_is_unsure_never_a_verdict() -> None:
    assert compare([2.0], [1.0, 1.0, 1.0], 0.05).verdict == "UNSURE"


def test_no_false_slower_on_identical_distributions() -> None:
    verdicts = [
        compare(_samples(100 + i, 30, 1.0, 0.05), _samples(200 + i, 30, 1.0, 0.05), 0.05).verdict
        for i in range(60)
    ]
    assert "SLOWER" not in verdicts and "FASTER" not in verdicts


def test_bootstrap_is_seeded_and_brackets_the_ratio() -> None:
    cur, base = _samples(8, 50, 1.2, 0.02), _samples(9, 50, 1.0, 0.02)
    first, second = bootstrap_ratio(cur, base, seed=3), bootstrap_ratio(cur, base, seed=3)
    assert first == second
    ratio, low, high = first
    assert low <= ratio <= high


def test_rel_noise_is_the_relative_standard_error_of_the_median() -> None:
    assert math.isinf(rel_noise([1.0, 2.0]))
    assert rel_noise([5.0] * 10) == 0.0
    wide = _samples(10, 400, 1.0, 0.02)
    # sqrt(pi/2) * sigma / sqrt(n) for normal data: about 0.0125 * 0.02 * 20 / 20
    assert rel_noise(wide) == pytest.approx(math.sqrt(math.pi / 2) * 0.02 / 20, rel=0.2)


def test_stopping_rule_needs_min_samples_and_min_time_then_the_noise_target() -> None:
    rule = StopRule(noise=0.01, min_samples=5, min_time=1.0, timeout=10.0, max_samples=50)
    steady = [1.0] * 10
    assert stop_reason(rule, steady[:4], elapsed=5.0) is None
    assert stop_reason(rule, steady, elapsed=0.5) is None
    assert stop_reason(rule, steady, elapsed=1.5) == "noise-target"
    noisy = _samples(11, 10, 1.0, 0.5)
    assert stop_reason(rule, noisy, elapsed=1.5) is None
    assert stop_reason(rule, noisy, elapsed=10.0) == "timeout"
    assert stop_reason(rule, noisy * 5, elapsed=2.0) == "max-samples"


def test_l2_flush_is_twice_the_l2_with_a_floor() -> None:
    assert l2_flush_bytes(50 * 2**20) == 100 * 2**20  # H100: 50 MiB L2
    assert l2_flush_bytes(0) == 2**20


def test_throttled_samples_are_marked_and_kept_unless_dropping_is_asked_for() -> None:
    clocks = [1980, 1975, 1500, None, 1800]
    marked = throttled_indices(clocks, max_clock=1980, threshold=0.9)
    assert marked == (2,)
    assert throttled_indices(clocks, max_clock=None) == ()
    assert usable([1.0, 1.0, 9.0], marked) == [1.0, 1.0, 9.0]
    assert usable([1.0, 1.0, 9.0], marked, drop_throttled=True) == [1.0, 1.0]
    assert usable([9.0], (0,), drop_throttled=True) == [9.0]


def test_wall_timer_batches_tiny_calls_and_reports_per_call() -> None:
    now = [0]

    def call() -> None:  # a call that takes exactly 1 µs on the fake clock
        now[0] += 1000

    timer = WallTimer(sample_time=0.0001, clock=lambda: now[0])
    timer.prepare(call)
    assert timer.calls_per_sample >= 100
    per_call, clock = timer.sample(call)
    assert clock is None and per_call == pytest.approx(1e-6)


def test_measure_stops_at_the_noise_target_and_fixed_protocol_takes_seeds_times_repeats() -> None:
    now = iter(float(i) for i in range(10**6))
    rule = StopRule(noise=0.5, min_samples=5, min_time=3.0, timeout=100.0)
    result = measure(
        WallTimer(sample_time=1e-6), lambda: sum(range(10)), rule, now=lambda: next(now)
    )
    assert result.stop_reason == "noise-target" and len(result.samples) >= 5
    fixed = measure_fixed(WallTimer(sample_time=1e-6), [lambda: None, lambda: None], repeats=3)
    assert fixed.stop_reason == "fixed" and len(fixed.samples) == 6


def test_instruction_counts_compare_exactly() -> None:
    from cuship.bench.stats import compare_exact

    assert compare_exact(1100.0, 1000.0, 0.05).verdict == "SLOWER"
    assert compare_exact(1010.0, 1000.0, 0.05).verdict == "SAME"
    assert compare_exact(900.0, 1000.0, 0.05).verdict == "FASTER"
