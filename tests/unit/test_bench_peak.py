"""Results against the hardware: datasheet peaks per GPU variant (cited, dense), the precision a
case is compared in, and the share of peak bandwidth and FLOP/s a result reached."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cuship.bench import case
from cuship.bench.peak import case_dtype, normalise_dtype, peak_share
from cuship.bench.results import PointResult, to_csv, to_json
from cuship.bench.session import _gpu_peak
from cuship.bench.timers.measure import Measurement
from cuship.compat import DATA_DIR, load
from cuship.errors import ConfigError
from tests.bench_reports import report_of

H100 = "NVIDIA H100 80GB HBM3"


def test_the_h100_sxm_row_has_bandwidth_and_dense_tensor_peaks() -> None:
    peak = load().peak(H100)
    assert peak is not None and peak.variant == "H100 SXM5 80GB"
    assert peak.memory_gbps == 3350.0
    assert peak.tflops["bf16"] == 989.5 and peak.tflops["fp16"] == 989.5
    assert peak.tflops["fp8"] == 1979.0 and peak.tflops["fp32"] == 67.0
    assert peak.flops_peak("fp64") == ("fp64_tensor", 67.0)  # the higher of 34 and 67
    assert peak.flops_peak("int8") is None
    assert peak.source.startswith("https://")


def test_a_model_name_alone_does_not_pick_a_variant() -> None:
    data = load()
    assert data.peak("H100") is None  # SXM or PCIe? their peaks differ
    pcie = data.peak("NVIDIA H100 PCIe")
    assert pcie is not None and pcie.memory_gbps == 2000.0
    assert all(p.source.startswith("https://") for p in data.peaks)
    assert all(data.find_gpu(name) is not None for p in data.peaks for name in p.names)


def test_fraction_of_peak_from_the_work_model_and_the_case_dtype() -> None:
    peak = load().peak(H100)
    assert peak is not None
    # the 512 MB copy at 181.2 µs and the bf16 8192³ matmul at 1597.2 µs measured on an H100
    copy = peak_share(
        peak, median=181.2e-6, work={"bytes": 2 * 4 * 2.0**26}, dtype="fp32", origin="assumed"
    )
    assert copy is not None and copy.flops_fraction is None
    assert copy.bandwidth_fraction == pytest.approx(2 * 4 * 2**26 / 181.2e-6 / 3350e9)
    mm = peak_share(
        peak, median=1597.2e-6, work={"flops": 2 * 8192.0**3}, dtype="bf16", origin="declared"
    )
    assert mm is not None and mm.precision == "bf16" and mm.note is None
    assert mm.flops_fraction == pytest.approx(2 * 8192**3 / 1597.2e-6 / 989.5e12)
    assert mm.describe() == "70% of 989.5 bf16 TFLOP/s"
    assert peak_share(peak, median=1e-3, work={}, dtype="fp32", origin="assumed") is None


def test_an_undeclared_dtype_is_compared_with_fp32_and_says_so() -> None:
    peak = load().peak(H100)
    assert peak is not None
    share = peak_share(peak, median=1e-3, work={"flops": 1e10}, dtype="fp32", origin="assumed")
    assert share is not None and share.flops_fraction == pytest.approx(1e10 / 1e-3 / 67e12)
    assert share.note == "dtype not declared: compared with fp32 (declare peak_dtype=)"
    a100 = load().peak("NVIDIA A100-SXM4-80GB")
    assert a100 is not None
    fp8 = peak_share(a100, median=1e-3, work={"flops": 1e10}, dtype="fp8", origin="declared")
    assert fp8 is not None and fp8.flops_fraction is None
    assert fp8.note == "no fp8 peak known for A100 SXM4 80GB"


class _Bf16:
    def __str__(self) -> str:
        return "torch.bfloat16"


def test_the_dtype_comes_from_peak_dtype_then_a_dtype_param_then_fp32() -> None:
    assert case_dtype("bfloat16", {"dtype": "float32"}) == ("bf16", "declared")
    assert case_dtype(None, {"dtype": _Bf16()}) == ("bf16", "params")
    assert case_dtype(None, {"dtype": "float16"}) == ("fp16", "params")
    assert case_dtype(None, {"n": 4}) == ("fp32", "assumed")
    assert normalise_dtype("torch.float8_e4m3fn") == "fp8"
    assert normalise_dtype("<class 'numpy.float64'>") == "fp64"
    assert normalise_dtype("int8") is None

    @case(params={"n": [8]}, flops=lambda n: 2 * n**3, peak_dtype="bf16")
    def mm(n: int) -> None:
        return None

    assert mm.peak_dtype == "bf16"


def test_percent_of_peak_reaches_numbers_json_and_csv() -> None:
    peak = load().peak(H100)
    assert peak is not None
    m = Measurement(samples=(1597.2e-6,) * 3, stop_reason="fixed", rel_noise=0.0)
    work = {"bytes": None, "flops": 2 * 8192.0**3, "ops": None}
    share = peak_share(peak, median=1597.2e-6, work=work, dtype="bf16", origin="declared")
    result = PointResult(
        key="mm", case="mm", params={}, status="ok", measurement=m, work=work, peak=share
    )
    assert result.numbers()["peak_flops_fraction"] == pytest.approx(0.6957, abs=1e-4)
    entry = to_json(report_of(result))["results"][0]
    assert entry["peak"]["variant"] == "H100 SXM5 80GB" and entry["peak"]["precision"] == "bf16"
    header, first = to_csv(report_of(result)).splitlines()[:2]
    values = dict(zip(header.split(","), first.split(","), strict=True))
    assert float(values["flops_peak_fraction"]) == pytest.approx(0.6957, abs=1e-4)


def test_peaks_apply_to_cuda_timed_runs_only() -> None:
    assert _gpu_peak("cuda", {"gpu": H100}) is not None
    assert _gpu_peak("wall", {"gpu": H100}) is None  # host code timed on a GPU machine
    assert _gpu_peak("cuda", {"gpu": "NVIDIA H100"}) is None  # which variant is unknown


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (
            'names = ["NVIDIA H100 80GB HBM3", "H100 SXM"]',
            'names = ["NVIDIA L4"]',
            "is not a name of 'H100'",
        ),
        ("memory_gbps = 3350.0", "memory_gbps = 0", "must be a positive number"),
        ("fp8 = 1979.0", "fp4 = 3958.0", "unknown precision"),
        ('source = "https://resources', 'source = "http://resources', "not an https URL"),
    ],
)
def test_malformed_peak_rows_are_config_errors(
    tmp_path: Path, old: str, new: str, problem: str
) -> None:
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    text = (data / "gpus.toml").read_text()
    assert old in text
    (data / "gpus.toml").write_text(text.replace(old, new, 1))
    with pytest.raises(ConfigError, match="peak\\[0\\]") as caught:
        load(data)
    assert problem in str(caught.value)
