"""The plugin in separate processes: xdist GPU slices, no torch import, the bundled example."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import cuship

pytest_plugins = ["pytester"]

SRC = Path(cuship.__file__).resolve().parents[1]
NO_CACHE = ("-p", "no:cacheprovider")
RECORD = """
import json, os, sys
import pytest

@pytest.mark.gpu
@pytest.mark.parametrize("i", range(8))
def test_record(i):
    seen = {
        "worker": os.environ.get("PYTEST_XDIST_WORKER"),
        "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    with open(os.path.join(os.environ["RECORD_DIR"], f"{i}.json"), "w") as f:
        json.dump(seen, f)

@pytest.mark.gpu(count=2)
def test_pair():
    pass
"""


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (
        "CUSHIP_GPUS",
        "CUSHIP_REQUIRE_GPU",
        "CUDA_VISIBLE_DEVICES",
        "PYTEST_ADDOPTS",
        "PYTEST_XDIST_WORKER",  # inner runs are not xdist workers, even when this one is
        "PYTEST_XDIST_WORKER_COUNT",
        "PYTEST_XDIST_TESTRUNUID",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PYTHONPATH", str(SRC))


def worker_devices(record: Path) -> dict[str, set[str | None]]:
    seen: dict[str, set[str | None]] = {}
    for path in record.glob("*.json"):
        entry = json.loads(path.read_text())
        seen.setdefault(entry["worker"], set()).add(entry["visible"])
    return seen


@pytest.mark.parametrize(
    ("gpus", "workers", "expected", "pair"),
    [
        ("H100,H100,H100,H100", 2, {"gw0": {"0,1"}, "gw1": {"2,3"}}, "passed"),
        ("H100,H100", 3, {"gw0": {"0"}, "gw1": {"1"}, "gw2": {"0"}}, "skipped"),
    ],
)
def test_each_worker_gets_its_own_gpus(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    gpus: str,
    workers: int,
    expected: dict[str, set[str]],
    pair: str,
) -> None:
    record = pytester.mkdir("record")
    monkeypatch.setenv("RECORD_DIR", str(record))
    monkeypatch.setenv("CUSHIP_GPUS", gpus)
    pytester.makepyfile(test_record=RECORD)
    result = pytester.runpytest_subprocess(*NO_CACHE, "-n", str(workers), "--dist", "load", "-rs")
    result.assert_outcomes(passed=9 if pair == "passed" else 8, skipped=int(pair == "skipped"))
    seen = worker_devices(record)
    assert {w: v for w, v in seen.items() if w in expected} == {
        w: v for w, v in expected.items() if w in seen
    }
    assert len(seen) >= 2, f"xdist spread 8 tests over fewer than 2 workers: {seen}"
    if pair == "skipped":
        result.stdout.fnmatch_lines(["*needs 2 GPUs; found 1: H100"])
    result.stdout.fnmatch_lines(["cuship: gpu tests: *"])


def test_no_slicing_leaves_cuda_visible_devices_alone(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = pytester.mkdir("record")
    monkeypatch.setenv("RECORD_DIR", str(record))
    monkeypatch.setenv("CUSHIP_GPUS", "H100,H100,H100,H100")
    pytester.makepyfile(test_record=RECORD)
    result = pytester.runpytest_subprocess(*NO_CACHE, "-n", "2", "--no-gpu-slicing")
    result.assert_outcomes(passed=9)
    assert {v for values in worker_devices(record).values() for v in values} == {None}


def test_gpu_list_with_xdist_lists_in_one_process(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "H100")
    monkeypatch.setenv("RECORD_DIR", str(pytester.mkdir("record")))
    pytester.makepyfile(test_record=RECORD)
    result = pytester.runpytest_subprocess(*NO_CACHE, "-n", "2", "--gpu-list")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["cuship --gpu-list: 9 gpu tests: 8 would run, 1 would skip; nothing was run"]
    )


def test_the_plugin_never_imports_torch(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch is installed here; deciding and reporting must not import it."""
    pytest.importorskip("torch")  # CI has torch (CPU build); the claim is void without it
    monkeypatch.setenv("CUSHIP_GPUS", "NVIDIA A100-SXM4-80GB")  # names and memory get judged
    pytester.makeconftest(
        """
        import sys

        def pytest_sessionfinish(session):
            loaded = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
            print("TORCH-MODULES:", loaded)
        """
    )
    pytester.makepyfile(
        test_gpu="""
        import pytest

        @pytest.mark.gpu(min_cc="8.0", memory="16GiB")
        def test_a(): pass

        @pytest.mark.h100
        def test_b(): pass

        def test_c(): pass
        """
    )
    result = pytester.runpytest_subprocess(*NO_CACHE, "-s")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["cuship: 1 GPU * torch 2.*"])
    assert "TORCH-MODULES: []" in result.stdout.str()


def test_cuvecops_gpu_tests_skip_with_reasons_on_a_cpu_machine(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, example_dir: Path
) -> None:
    monkeypatch.setenv("CUSHIP_GPUS", "none")
    monkeypatch.setenv("PYTHONPATH", f"{SRC}:{example_dir / 'src'}")
    monkeypatch.chdir(example_dir)
    result = pytester.run(
        sys.executable,
        "-m",
        "pytest",
        *NO_CACHE,
        "tests/test_cuda.py",
        "-rs",
        "--strict-markers",
        "-W",
        "error",
    )
    outcomes = result.parseoutcomes()
    assert set(outcomes) == {"skipped"}, outcomes  # every GPU test skipped, none ran or failed
    assert outcomes["skipped"] >= 13
    result.stdout.fnmatch_lines(
        ["*needs a GPU with compute capability ≥ 8.0; found no GPU (CUSHIP_GPUS says none)"]
    )
