"""Nsight Compute's CSV, as ncu printed it on an H100 (30 adds of 262,144 floats after two
random fills): the kernel's own duration the timers are checked against."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuship.bench.ncu import NcuRow, median_duration, parse_ncu_csv

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ncu-add-h100.csv"


def test_the_h100_fixture_has_32_kernels_and_the_add_takes_3_73_us() -> None:
    rows = parse_ncu_csv(FIXTURE.read_text())
    assert len(rows) == 32 and [r.id for r in rows] == list(range(32))
    assert {r.unit for r in rows} == {"ns"}
    assert rows[0].value == 7520.0 and "normal_kernel" in rows[0].kernel  # "7,520" ns
    adds = [r for r in rows if "CUDAFunctor_add" in r.kernel]
    assert len(adds) == 30
    median = median_duration(rows, "CUDAFunctor_add")
    assert median is not None and median == pytest.approx(3.728e-6)
    assert round(median * 1e6, 2) == 3.73


def test_other_metrics_program_output_and_units() -> None:
    text = "\n".join(
        [
            "==PROF== Connected to process 1",
            "hello from the program",
            '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"',
            '"0","k","gpu__time_duration.sum","usecond","1.5"',
            '"0","k","sm__throughput.avg.pct_of_peak_sustained_elapsed","%","42"',
            "program output after the header",
            '"1","k","gpu__time_duration.sum","msecond","2"',
        ]
    )
    rows = parse_ncu_csv(text)
    assert [r.seconds for r in rows] == pytest.approx([1.5e-6, 2e-3])
    assert median_duration(rows, "nothing") is None
    with pytest.raises(ValueError, match="no ncu CSV header"):
        parse_ncu_csv("==PROF== Disconnected\n==ERROR== no kernels were profiled\n")
    with pytest.raises(ValueError, match="not a time unit"):
        _ = NcuRow(id=0, kernel="k", metric="m", unit="%", value=1.0).seconds
