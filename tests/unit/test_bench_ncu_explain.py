"""benchmarks/bench_ncu.py's account of a bandwidth gap, on the rows of its run on an H100
(2026-11-23, ncu 2025.3.1, the example's cases): the two factors multiply back to the ratio."""

from __future__ import annotations

import pytest
from benchmarks.bench_ncu import explain

# key: (cuship median s, ncu kernel s, cuship GB/s over ncu DRAM GB/s), as that run printed them
H100 = {
    "saxpy[n=16777216]": (7.2256e-05, 6.2528e-05, 0.9475626610254826),
    "reduce_sum[dtype=float32,n=16777216]": (4.5056e-05, 2.9472e-05, 0.6317),
    "reduce_sum[dtype=int64,n=16777216]": (8.2208e-05, 5.1136e-05, 0.6120),
    "saxpy[n=262144]": (1.4336e-05, 3.68e-06, 0.38438772495989015),
}


def _row(median: float, kernel: float, ratio: float) -> dict[str, float]:
    return {"median_profiled": median, "kernel_time": kernel, "bw_ratio": ratio}


@pytest.mark.parametrize("key", sorted(H100))
def test_the_factors_multiply_back_to_the_ratio(key: str) -> None:
    row = _row(*H100[key])
    found = explain(row)
    assert found["kernel_share"] * found["bytes_ratio"] == pytest.approx(row["bw_ratio"])
    assert found["outside_kernels_s"] == pytest.approx(row["median_profiled"] - row["kernel_time"])


def test_the_reductions_miss_on_time_outside_their_kernels_not_on_bytes() -> None:
    """The reductions' calls wait for a second kernel and the result's copy: 35-38 % of the
    timed call is outside the kernels, while the bytes agree within 10 %."""
    for key in ("reduce_sum[dtype=float32,n=16777216]", "reduce_sum[dtype=int64,n=16777216]"):
        found = explain(_row(*H100[key]))
        assert 0.6 < found["kernel_share"] < 0.7 and found["bytes_result"] == "PASS", found
    short = explain(_row(*H100["saxpy[n=262144]"]))
    assert short["bytes_result"] == "short"  # 3.7 µs of kernel: launch latency dominates


def test_nothing_to_explain_without_a_profile() -> None:
    found = explain({"median_profiled": 1e-4, "kernel_time": None, "bw_ratio": None})
    assert found == {
        "kernel_share": None,
        "outside_kernels_s": None,
        "bytes_ratio": None,
        "bytes_result": "SKIP",
    }
