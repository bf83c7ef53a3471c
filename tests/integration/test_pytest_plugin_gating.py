"""cuship's pytest plugin as a user meets it: real pytest runs (pytester) under fake GPUs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import cuship
from cuship.machine import fingerprint

pytest_plugins = ["pytester"]

SRC = Path(cuship.__file__).resolve().parents[1]
NO_CACHE = ("-p", "no:cacheprovider")
MIXED = """
import pytest

def test_cpu():
    pass

@pytest.mark.gpu
def test_any():
    pass

@pytest.mark.gpu(min_cc="9.0")
def test_hopper():
    pass

@pytest.mark.h100
def test_h100():
    pass
"""
NO_GPU = "CUSHIP_GPUS says none"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs see only the environment a test sets; subprocesses import this checkout."""
    for var in (
        "CUSHIP_GPUS",
        "CUSHIP_REQUIRE_GPU",
        "CUSHIP_DRIVER_CUDA",
        "CUSHIP_CUDA_DRIVER_VERSION",
        "CUSHIP_TORCH",
        "CUDA_VISIBLE_DEVICES",
        "PYTEST_ADDOPTS",
        "PYTEST_XDIST_WORKER",  # inner runs are not xdist workers, even when this one is
        "PYTEST_XDIST_WORKER_COUNT",
        "PYTEST_XDIST_TESTRUNUID",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PYTHONPATH", str(SRC))


def skip_reasons(rec: pytest.HookRecorder) -> dict[str, str]:
    _, skipped, _ = rec.listoutcomes()
    reasons = {}
    for report in skipped:
        assert isinstance(report.longrepr, tuple)
        reasons[report.nodeid.rpartition("::")[2]] = report.longrepr[2].removeprefix("Skipped: ")
    return reasons


def test_no_gpu_skips_every_gpu_test_with_its_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "none")
    pytester.makepyfile(test_mixed=MIXED)
    rec = pytester.inline_run(*NO_CACHE)
    rec.assertoutcome(passed=1, skipped=3)
    assert skip_reasons(rec) == {
        "test_any": f"needs a GPU; found no GPU ({NO_GPU})",
        "test_hopper": f"needs a GPU with compute capability ≥ 9.0; found no GPU ({NO_GPU})",
        "test_h100": f"needs an H100; found no GPU ({NO_GPU})",
    }


def test_fake_h100_runs_them_all(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "NVIDIA H100 80GB HBM3")
    pytester.makepyfile(test_mixed=MIXED)
    pytester.inline_run(*NO_CACHE).assertoutcome(passed=4)


@pytest.mark.parametrize(
    ("marker", "gpus", "driver_cuda", "reason"),
    [
        ('gpu(min_cc="9.0")', "A10", None, "needs compute capability ≥ 9.0; found 8.6 (A10)"),
        ('gpu(min_cc="9.0")', "B200", None, None),
        (
            'gpu(cc=["9.0", "10.0"])',
            "A100",
            None,
            "needs compute capability 9.0 or 10.0; found 8.0 (A100)",
        ),
        ('gpu(cc=["9.0", "10.0"])', "B200", None, None),
        ('gpu(memory="40GiB")', "L4", None, "needs ≥ 40 GiB memory; found 24 GiB (L4)"),
        ('gpu(memory="80GiB")', "H100:9.0:81559MiB", None, None),
        ("gpu(count=2)", "H100", None, "needs 2 GPUs; found 1: H100"),
        ("gpu(count=2)", "H100,A10", None, None),
        ('gpu(name="H100")', "NVIDIA H100 80GB HBM3", None, None),
        ('gpu(name=["H100", "H200"])', "A100", None, "needs an H100 or H200; found A100"),
        ("h200", "H100", None, "needs an H200; found H100"),
        ("a100", "NVIDIA A100-SXM4-80GB", None, None),
        ("b200", "B200", None, None),
        ("l4", "NVIDIA L4", None, None),
        (
            'gpu(cuda=">=12.4")',
            "H100",
            "12.2",
            "needs a driver supporting CUDA >=12.4; found CUDA 12.2",
        ),
        ('gpu(cuda=">=12.4")', "H100", "12.8", None),
        (
            'gpu(cuda=">=12.4")',
            "H100",
            None,
            "needs a driver supporting CUDA >=12.4; found no driver CUDA version "
            "(set CUSHIP_DRIVER_CUDA with CUSHIP_GPUS)",
        ),
    ],
)
def test_marker_filters(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    marker: str,
    gpus: str,
    driver_cuda: str | None,
    reason: str | None,
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", gpus)
    if driver_cuda is not None:
        monkeypatch.setenv("CUSHIP_DRIVER_CUDA", driver_cuda)
    pytester.makepyfile(
        test_one=f"import pytest\n@pytest.mark.{marker}\ndef test_it():\n    pass\n"
    )
    rec = pytester.inline_run(*NO_CACHE, "--strict-markers")
    if reason is None:
        rec.assertoutcome(passed=1)
    else:
        assert skip_reasons(rec) == {"test_it": reason}


def test_every_marker_is_registered_for_strict_markers(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    for name in ("gpu", "h100", "h200", "a100", "b200", "l4"):
        result.stdout.fnmatch_lines([f"@pytest.mark.{name}:*"])


@pytest.mark.parametrize(
    ("marker", "says"),
    [
        ("gpu(min_cc='nine')", "min_cc 'nine' is not a compute capability"),
        ("gpu(colour=1)", "unknown keyword 'colour'"),
        ("gpu(name='H1000')", "unknown GPU 'H1000'"),
    ],
)
def test_bad_marker_arguments_are_collection_errors(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, marker: str, says: str
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "H100")
    pytester.makepyfile(
        test_bad=f"import pytest\ndef test_fine():\n    pass\n@pytest.mark.{marker}\ndef test_it():\n    pass\n"
    )
    result = pytester.runpytest(*NO_CACHE)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    assert f"test_bad.py::test_it: @pytest.mark.{marker}: {says}" in result.stdout.str()


def test_bad_gpus_override_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "H100:nine")
    pytester.makepyfile(test_mixed=MIXED)
    result = pytester.runpytest(*NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "CUSHIP_GPUS: 'H100:nine' has compute capability 'nine'" in result.stderr.str()


# --- --require-gpu -------------------------------------------------------------------------


def test_require_gpu_fails_a_cpu_machine(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "none")
    pytester.makepyfile(test_mixed=MIXED)
    result = pytester.runpytest(*NO_CACHE, "--require-gpu")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=4)
    out = result.stdout.str()
    assert (
        "--require-gpu: this gpu test would have been skipped: "
        f"needs a GPU with compute capability ≥ 9.0; found no GPU ({NO_GPU})"
    ) in out
    assert f"--require-gpu: no GPU is visible ({NO_GPU})" in out
    result.stdout.fnmatch_lines(["FAILED cuship::require-gpu - --require-gpu: no GPU is visible*"])
    assert "cuship: gpu tests: 0 ran, 0 skipped, 3 failed under --require-gpu" in out


def test_require_gpu_from_the_environment(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "none")
    monkeypatch.setenv("CUSHIP_REQUIRE_GPU", "1")
    pytester.makepyfile(test_cpu_only="def test_cpu():\n    pass\n")
    result = pytester.runpytest(*NO_CACHE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=1)


def test_require_gpu_fails_a_gpu_machine_where_a_test_would_skip(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "A10")
    pytester.makepyfile(test_mixed=MIXED)
    result = pytester.runpytest(*NO_CACHE, "--require-gpu", "-rA")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=3, failed=2)  # cpu, any and the require-gpu check pass
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["FAILED test_mixed.py::test_h100 - --require-gpu: this gpu*"])
    assert "needs compute capability ≥ 9.0; found 8.6 (A10)" in out
    assert "PASSED cuship::require-gpu" in out


def test_require_gpu_passes_when_every_gpu_test_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "H100")
    pytester.makepyfile(test_mixed=MIXED)
    result = pytester.runpytest(*NO_CACHE, "--require-gpu")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["cuship: gpu tests: 3 ran, 0 skipped"])


def test_require_gpu_turns_any_skip_of_a_gpu_test_into_a_failure(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "H100")
    pytester.makepyfile(
        test_own="""
        import pytest

        @pytest.mark.gpu
        def test_skips_itself():
            pytest.skip("cuDNN is missing")

        @pytest.mark.gpu
        @pytest.mark.xfail(reason="known bug", strict=True)
        def test_known_bug():
            assert False
        """
    )
    result = pytester.runpytest(*NO_CACHE, "--require-gpu")
    result.assert_outcomes(passed=1, failed=1, xfailed=1)
    assert "would have been skipped: cuDNN is missing" in result.stdout.str()


def test_require_gpu_fails_when_no_gpu_test_is_selected(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "H100")
    pytester.makepyfile(test_mixed=MIXED)
    result = pytester.runpytest(*NO_CACHE, "--require-gpu", "-k", "cpu")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=1, deselected=3)
    assert "no gpu-marked test was selected" in result.stdout.str()


# --- selection, listing, header and summary ------------------------------------------------


@pytest.mark.parametrize(
    ("option", "outcomes"),
    [
        ("--gpu-only", {"passed": 3, "deselected": 1}),
        ("--no-gpu", {"passed": 1, "deselected": 3}),
    ],
)
def test_gpu_only_and_no_gpu_deselect(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    option: str,
    outcomes: dict[str, int],
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "H100")
    pytester.makepyfile(test_mixed=MIXED)
    result = pytester.runpytest(*NO_CACHE, option)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(**outcomes)


@pytest.mark.parametrize(
    "options",
    [("--gpu-only", "--no-gpu"), ("--no-gpu", "--require-gpu")],
)
def test_contradictory_options_are_usage_errors(
    pytester: pytest.Pytester, options: tuple[str, ...]
) -> None:
    pytester.makepyfile(test_mixed=MIXED)
    result = pytester.runpytest(*NO_CACHE, *options)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "cuship: --" in result.stderr.str()


def test_gpu_list_says_what_each_test_needs_and_runs_nothing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "A10")
    pytester.makepyfile(
        test_mixed=MIXED.replace("    pass", "    open('ran', 'w').close()"),
    )
    result = pytester.runpytest(*NO_CACHE, "--gpu-list")
    assert result.ret == pytest.ExitCode.OK
    assert not (pytester.path / "ran").exists()
    result.stdout.fnmatch_lines(
        [
            "cuship --gpu-list on 1 GPU (CUSHIP_GPUS): A10 *",
            "  RUNS   test_mixed.py::test_any  needs a GPU",
            "  SKIPS  test_mixed.py::test_hopper  needs a GPU with compute capability ≥ 9.0",
            "         needs compute capability ≥ 9.0; found 8.6 (A10)",
            "  SKIPS  test_mixed.py::test_h100  needs an H100",
            "         needs an H100; found A10",
            "cuship --gpu-list: 3 gpu tests: 1 would run, 2 would skip; nothing was run",
        ]
    )


def test_header_and_summary_lines(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "A10,A10")
    monkeypatch.setenv("CUSHIP_CUDA_DRIVER_VERSION", "570.124.06")
    monkeypatch.setenv("CUSHIP_DRIVER_CUDA", "12.8")
    monkeypatch.setenv("CUSHIP_TORCH", "2.8.0+cu128")
    pytester.makepyfile(test_mixed=MIXED)
    result = pytester.runpytest(*NO_CACHE)
    lines = result.stdout.lines
    assert (
        "cuship: 2 GPUs (CUSHIP_GPUS): A10 [cc 8.6, 24 GiB], A10 [cc 8.6, 24 GiB]; "
        "driver 570.124.06 (CUDA 12.8); "
    ) in "\n".join(lines)
    assert any(
        line.endswith("; torch 2.8.0+cu128") for line in lines if line.startswith("cuship: 2")
    )
    assert "cuship: gpu tests: 1 ran, 2 skipped" in lines


def test_header_reports_this_machine_without_overrides(pytester: pytest.Pytester) -> None:
    fp = fingerprint(os.environ)
    pytester.makepyfile(test_cpu="def test_cpu():\n    pass\n")
    header = [
        line for line in pytester.runpytest(*NO_CACHE).stdout.lines if line.startswith("cuship: ")
    ]
    assert len(header) == 1
    count = len(fp.gpus)
    expected = f"cuship: {count} GPU" if count else "cuship: no GPU ("
    assert header[0].startswith(expected)
    assert header[0].endswith(f"; torch {fp.torch.version if fp.torch else 'none'}")
    assert "cuship: gpu tests" not in pytester.runpytest(*NO_CACHE).stdout.str()


def test_markers_added_by_a_conftest_are_judged_too(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "A10")
    pytester.makeconftest(
        """
        import pytest

        def pytest_collection_modifyitems(items):
            for item in items:
                if "hopper" in item.name:
                    item.add_marker(pytest.mark.gpu(min_cc="9.0"))
        """
    )
    pytester.makepyfile(
        test_dyn="def test_hopper_kernel():\n    pass\n\ndef test_cpu():\n    pass\n"
    )
    rec = pytester.inline_run(*NO_CACHE)
    rec.assertoutcome(passed=1, skipped=1)
    assert skip_reasons(rec) == {
        "test_hopper_kernel": "needs compute capability ≥ 9.0; found 8.6 (A10)"
    }


FAKE_SMI_DIR = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize(
    ("gpus", "reason"),
    [
        (None, None),  # the machine as its nvidia-smi tells it: an H100 whose driver runs 13.0
        (
            "H100",
            "needs a driver supporting CUDA >=12.4; found no driver CUDA version "
            "(set CUSHIP_DRIVER_CUDA with CUSHIP_GPUS)",
        ),
    ],
)
def test_gpus_override_ignores_the_real_driver(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, gpus: str | None, reason: str | None
) -> None:
    """With CUSHIP_GPUS the machine is the fake one, even where nvidia-smi reports a real driver
    (../shared/gpu/fake-nvidia-smi: one H100, driver 580.159.04, CUDA 13.0)."""
    monkeypatch.setenv("PATH", f"{FAKE_SMI_DIR}{os.pathsep}{os.environ['PATH']}")
    if gpus is not None:
        monkeypatch.setenv("CUSHIP_GPUS", gpus)
    pytester.makepyfile(
        test_one='import pytest\n@pytest.mark.gpu(cuda=">=12.4")\ndef test_it():\n    pass\n'
    )
    rec = pytester.inline_run(*NO_CACHE, "--strict-markers")
    if reason is None:
        rec.assertoutcome(passed=1)
    else:
        assert skip_reasons(rec) == {"test_it": reason}
