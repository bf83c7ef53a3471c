"""Nsight Compute's CSV, as ncu printed it on an H100: the kernel's own duration the timers are
checked against (30 adds of 262,144 floats after two random fills), and the four metrics of
``--profile ncu``'s basic set for the same program (tests/fixtures/h100/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuship.bench.ncu.metrics import (
    NcuRow,
    base_value,
    median_duration,
    ncu_messages,
    parse_ncu_csv,
    parse_ncu_metrics,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE = FIXTURES / "ncu-add-h100.csv"
METRICS_FIXTURE = FIXTURES / "h100" / "ncu-metrics-add.csv"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"


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


def test_the_metrics_fixture_holds_all_four_metrics_of_every_kernel() -> None:
    rows = parse_ncu_metrics(METRICS_FIXTURE.read_text())
    assert len(rows) == 32 * 4
    by_metric: dict[str, list[NcuRow]] = {}
    for row in rows:
        by_metric.setdefault(row.metric, []).append(row)
    assert set(by_metric) == {"gpu__time_duration.sum", DRAM_PCT, OCCUPANCY, SM_PCT}
    assert all(len(found) == 32 for found in by_metric.values())
    assert {r.unit for r in by_metric["gpu__time_duration.sum"]} == {"ns"}
    assert {r.unit for m in (DRAM_PCT, OCCUPANCY, SM_PCT) for r in by_metric[m]} == {"%"}
    # kernel 2, the first add: "14.94" %, "4,224" ns, "2.09" %
    first_add = {r.metric: r for r in rows if r.id == 2}
    assert "CUDAFunctor_add" in first_add[DRAM_PCT].kernel
    assert first_add[DRAM_PCT].value == 14.94 and first_add[SM_PCT].value == 2.09
    assert first_add["gpu__time_duration.sum"].seconds == pytest.approx(4.224e-6)
    assert first_add["gpu__time_duration.sum"].base == pytest.approx((4.224e-6, "s"))
    assert first_add[DRAM_PCT].base == (14.94, "%")
    # one metric only, in kernel order; the old API is this with the duration
    dram = parse_ncu_metrics(METRICS_FIXTURE.read_text(), (DRAM_PCT,))
    assert [r.id for r in dram] == list(range(32)) and dram[0].value == 0.04
    assert parse_ncu_csv(METRICS_FIXTURE.read_text()) == tuple(
        r for r in rows if r.metric == "gpu__time_duration.sum"
    )


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        (7488.0, "ns", (7.488e-6, "s")),
        (7488.0, "nsecond", (7.488e-6, "s")),
        (3.5, "usecond", (3.5e-6, "s")),
        (3.5, "us", (3.5e-6, "s")),
        (1.25, "msecond", (1.25e-3, "s")),
        (2.0, "second", (2.0, "s")),
        (1.5, "Tbyte/second", (1.5e12, "B/s")),
        (1210.4, "Gbyte/second", (1.2104e12, "B/s")),
        (900e9, "byte/second", (900e9, "B/s")),
        (500e9, "byte/s", (500e9, "B/s")),
        (3.0, "Mbyte/s", (3e6, "B/s")),
        (2.0, "GB/s", (2e9, "B/s")),
        (4.0, "Kbyte", (4e3, "B")),
        (64.0, "Mbyte", (64e6, "B")),
        (12.5, "%", (12.5, "%")),
        (1024.0, "cycle", (1024.0, "cycle")),
        (3.0, "", (3.0, "")),
    ],
)
def test_units_are_read_into_base_units(
    value: float, unit: str, expected: tuple[float, str]
) -> None:
    assert base_value(value, unit) == pytest.approx(expected)


def test_program_output_prof_and_error_lines_around_the_table() -> None:
    text = "\n".join(
        [
            "==PROF== Connected to process 1",
            "hello from the program",
            "==WARNING== Found outstanding GPU clock reset, trying to revert...",
            '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"',
            '"0","k","gpu__time_duration.sum","usecond","1.5"',
            '"0","k","sm__throughput.avg.pct_of_peak_sustained_elapsed","%","42"',
            "program output after the header",
            '"1","k","gpu__time_duration.sum","msecond","2"',
            '"1","k","dram__bytes.sum.per_second","Gbyte/second","1,234.5"',
            "==ERROR== An error occurred while trying to profile.",
        ]
    )
    rows = parse_ncu_csv(text)
    assert [r.seconds for r in rows] == pytest.approx([1.5e-6, 2e-3])
    everything = parse_ncu_metrics(text)
    assert [r.metric.split("__")[0] for r in everything] == ["gpu", "sm", "gpu", "dram"]
    assert everything[-1].base == pytest.approx((1.2345e12, "B/s"))  # thousands separator
    assert median_duration(rows, "nothing") is None
    assert ncu_messages(text) == ("An error occurred while trying to profile.",)
    assert ncu_messages(text, "WARNING") == (
        "Found outstanding GPU clock reset, trying to revert...",
    )
    assert ncu_messages(text, "PROF") == ("Connected to process 1",)
    with pytest.raises(ValueError, match="not a time unit"):
        _ = NcuRow(id=0, kernel="k", metric="m", unit="%", value=1.0).seconds


def test_no_header_is_an_error_whatever_ncu_said() -> None:
    permission = (
        "==PROF== Connected to process 2071 (/usr/bin/python3.12)\n"
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
        "Performance Counters on the target device 0.\n"
        "==PROF== Disconnected from process 2071\n"
        "==WARNING== No kernels were profiled.\n"
    )
    for text in (permission, "", "just the program talking\n"):
        with pytest.raises(ValueError, match="no ncu CSV header"):
            parse_ncu_metrics(text)
    assert ncu_messages(permission)[0].startswith("ERR_NVGPUCTRPERM - The user")


# The raw page (``ncu --import REPORT --csv --page raw --print-units base --metrics ...``), as
# cuship reads a kept report: built from the recorded values of kernels 2 and 3 above in the
# raw page's layout (metric names as columns, a row of units, a row per kernel). The recording
# has no dram__bytes.sum.per_second: those two values are made up (about 15 % of 3.35 TB/s).
RAW_PAGE = """\
==PROF== report imported
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes.sum.per_second","dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum","launch__block_size","sm__throughput.avg.pct_of_peak_sustained_elapsed","sm__warps_active.avg.pct_of_peak_sustained_active"
"","","","","","","","","","","","byte/second","%","ns","","%","%"
"2","1182","python3.12","127.0.0.1","void vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, std::array<char *, 3>>(int, T2, T3)","1","7","(128, 1, 1)","(256, 1, 1)","0","9.0","500,636,363,636.36","14.94","4,224","128","2.09","10.60"
"3","1182","python3.12","127.0.0.1","void vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, std::array<char *, 3>>(int, T2, T3)","1","7","(128, 1, 1)","(256, 1, 1)","0","9.0","546,000,000,000","16.31","3,904","128","2.28","10.64"
"""


def test_the_raw_page_is_read_column_by_column_with_its_units_row() -> None:
    rows = parse_ncu_metrics(RAW_PAGE)
    assert {r.metric for r in rows} == {
        "dram__bytes.sum.per_second",
        DRAM_PCT,
        "gpu__time_duration.sum",
        "launch__block_size",
        SM_PCT,
        OCCUPANCY,
    }
    assert [r.id for r in rows if r.metric == DRAM_PCT] == [2, 3]
    duration = [r for r in rows if r.metric == "gpu__time_duration.sum"]
    assert [r.seconds for r in duration] == pytest.approx([4.224e-6, 3.904e-6])
    bandwidth = next(r for r in rows if r.metric == "dram__bytes.sum.per_second")
    assert bandwidth.base == pytest.approx((500.63636363636e9, "B/s"))
    assert "CUDAFunctor_add" in bandwidth.kernel
    picked = parse_ncu_metrics(RAW_PAGE, (OCCUPANCY,))
    assert [(r.id, r.value, r.unit) for r in picked] == [(2, 10.60, "%"), (3, 10.64, "%")]
    assert parse_ncu_csv(RAW_PAGE) == tuple(duration)


# --- cuship's own metric set on the H100 (tests/fixtures/h100/ncu-*-add-sum.csv) ----------


@pytest.mark.parametrize("name", ["ncu-basic-add-sum.csv", "ncu-raw-add-sum.csv"])
def test_both_ways_cuship_reads_ncu_give_the_calls_profile(name: str) -> None:
    """A torch add and sum of 16M floats: the basic set's long table (printed by the profiled
    run) and the raw page of the full set's report (base units, thousands separators)."""
    from cuship.bench.ncu.profile import METRICS, aggregate

    text = (FIXTURES / "h100" / name).read_text()
    profile = aggregate(parse_ncu_metrics(text, METRICS))
    assert profile.ok and profile.kernels == 2
    assert profile.kernel_names[0].startswith("vectorized_elementwise_kernel")
    add_ns, sum_ns = (62_976, 30_080) if name.startswith("ncu-basic") else (63_936, 30_112)
    assert profile.kernel_time == pytest.approx((add_ns + sum_ns) * 1e-9)
    add_rate = 2.911357723577e12 if name.startswith("ncu-basic") else 2.876164164164e12
    assert profile.dram_bytes_per_s is not None
    assert 2.2e12 < profile.dram_bytes_per_s < add_rate  # time-weighted over the two kernels
    assert profile.dram_peak_fraction is not None and 0.69 < profile.dram_peak_fraction < 0.87
