"""Change points over bench history: planted steps are found where they are, noise and outliers are not steps."""

from __future__ import annotations

import math
import random

from cuship.bench.history.changepoints import (
    analyse,
    collect_series,
    find_steps,
    histories,
    machine_of,
)
from tests.bench_factory import FINGERPRINT, bench_row, bench_run, synthetic_runs


def _logs(values: list[float]) -> list[float]:
    return [math.log(v) for v in values]


def _flat(n: int, noise: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [1e-3 * (1.0 + rng.gauss(0.0, noise)) for _ in range(n)]


def test_ten_percent_step_at_run_12_of_30_is_found_at_12() -> None:
    for seed in range(20):
        values = _flat(30, 0.015, seed)
        stepped = [v * (1.10 if i >= 12 else 1.0) for i, v in enumerate(values)]
        assert find_steps(_logs(stepped)) == (12,), f"seed {seed}"


def test_flat_noisy_history_has_no_step_in_at_least_95_percent_of_trials() -> None:
    trials = 200
    alarms = sum(bool(find_steps(_logs(_flat(30, 0.03, seed)))) for seed in range(trials))
    assert alarms <= 0.05 * trials, f"{alarms} false steps in {trials} flat series"


def test_one_outlier_run_is_not_a_step_anywhere_in_the_series() -> None:
    base = _flat(30, 0.01, seed=7)
    for where in (0, 1, 15, 28, 29):
        for factor in (0.5, 1.5, 3.0):
            values = list(base)
            values[where] *= factor
            assert find_steps(_logs(values)) == (), f"outlier x{factor} at {where}"


def test_two_steps_are_both_found() -> None:
    values = [v * (1.2 if 10 <= i < 25 else 1.0) for i, v in enumerate(_flat(40, 0.01, seed=3))]
    assert find_steps(_logs(values)) == (10, 25)


def test_exact_counters_find_a_small_step() -> None:
    values = [1_000_000.0] * 10 + [1_003_000.0] * 10  # instruction counts repeat exactly
    assert find_steps(_logs(values)) == (10,)


def test_short_series_has_no_steps() -> None:
    assert find_steps(_logs([1.0, 2.0, 2.0])) == ()


def test_analyse_names_the_first_run_after_the_step_with_its_medians() -> None:
    runs = synthetic_runs(30, step_at=12, factor=1.10, noise=0.01, seed=2)
    (small, large) = histories(runs)
    for hist in (small, large):
        (step,) = hist.steps
        assert step.index == 12
        assert step.run_id == 13
        assert step.label == "v0.12"
        assert step.direction == "slower"
        assert abs(step.rel_change - 0.10) < 0.02
        assert step.after > step.before
        assert step.p_value < 0.01
        assert step.score > 3.0


def test_a_speed_up_is_faster() -> None:
    runs = synthetic_runs(20, step_at=8, factor=0.8, noise=0.01, seed=4)
    (step,) = histories(runs, case="vecadd")[0].steps
    assert step.direction == "faster"
    assert step.rel_change < -0.15


def test_p_value_is_reproducible_with_a_seed() -> None:
    runs = synthetic_runs(60, step_at=30, factor=1.02, noise=0.01, seed=5)
    series = collect_series(runs)[0]
    first, second = analyse(series, seed=1), analyse(series, seed=1)
    assert first == second


def test_series_are_split_by_machine_and_key_and_filtered() -> None:
    other = {**FINGERPRINT, "machine_id": "ffffeeeedddd", "gpu": "NVIDIA A100-SXM4-80GB"}
    runs = synthetic_runs(6, step_at=99)
    runs += [
        (bench_run(i, other), [bench_row("vecadd", {"n": 1024}, [2e-3, 2e-3])]) for i in range(3)
    ]
    series = collect_series(runs)
    assert {(s.machine_id, s.key) for s in series} == {
        ("a1b2c3d4e5f6", "vecadd[n=1024]"),
        ("a1b2c3d4e5f6", "vecadd[n=1048576]"),
        ("ffffeeeedddd", "vecadd[n=1024]"),
    }
    assert [h.series.machine_id for h in histories(runs, machine="ffff")] == ["ffffeeeedddd"]
    assert histories(runs, case="matmul*") == ()
    assert len(histories(runs, case="vecadd[n=1024]")) == 2


def test_errored_results_are_left_out_of_the_series() -> None:
    runs = synthetic_runs(4, step_at=99)
    runs[1][1][0] = bench_row("vecadd", {"n": 1024}, [1.0], status="errored")
    (small, large) = collect_series(runs)
    assert len(small.points) == 3
    assert len(large.points) == 4


def test_machine_id_is_computed_when_the_fingerprint_lacks_one() -> None:
    bare = {k: v for k, v in FINGERPRINT.items() if k != "machine_id"}
    ident = machine_of(bare)
    assert len(ident) == 12
    assert ident == machine_of({**bare, "sm_clock_mhz": 1200})  # clocks do not change the machine
    assert ident != machine_of({**bare, "gpu": "NVIDIA A100-SXM4-80GB"})
