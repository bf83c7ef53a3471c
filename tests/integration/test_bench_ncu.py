"""``cuship bench --profile ncu`` where it cannot run (no GPU, no ncu: exit 3 with the fix), and
its mechanics with a stand-in ncu that runs the real worker and prints a recorded H100 CSV.

The real profile needs a GPU and Nsight Compute: ``benchmarks/bench_ncu.py`` runs it there.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from cuship.bench.ncu.run import NcuOptions, plan_profile, profile_run
from cuship.bench.registry import Point, discover, points
from cuship.bench.results import PointResult
from cuship.bench.timers.measure import Measurement
from tests.integration.clirun import cuship

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cuvecops"
FAKE_SMI = REPO / "tests" / "fixtures" / "nvidia-smi"
H100_CSV = REPO / "tests" / "fixtures" / "h100" / "ncu-metrics-add.csv"


def _clean_env(path: str) -> dict[str, str]:
    """This process's environment without cuship's overrides or a CUDA home, and ``path``."""
    drop = ("CUDA_HOME", "CUDA_PATH", "GITHUB_ACTIONS")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUSHIP_") and k not in drop}
    env["PATH"] = path
    return env


@pytest.mark.parametrize("override", [True, False], ids=["CUSHIP_GPUS=none", "this-machine"])
def test_no_gpu_exits_3_saying_so(override: bool) -> None:
    env = _clean_env(os.environ.get("PATH", ""))
    if override:
        env["CUSHIP_GPUS"] = "none"
    else:
        from cuship.machine import fingerprint

        if fingerprint(env, toolkit=False).gpus:
            pytest.skip("this machine has a GPU")
    done = cuship("bench", str(EXAMPLE), "--profile", "ncu", "--no-store", base=env)
    assert done.returncode == 3, done.stderr
    assert (
        "--profile ncu profiles CUDA kernels, and this machine shows no NVIDIA GPU" in done.stderr
    )
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_gpu_without_ncu_exits_3_naming_ncu_and_the_fix(tmp_path: Path) -> None:
    smi = tmp_path / "smi"
    smi.mkdir()
    shutil.copy(FAKE_SMI, smi / "nvidia-smi")
    path = os.pathsep.join([str(smi), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    if shutil.which("ncu", path=path) or Path("/usr/local/cuda/bin/ncu").exists():
        pytest.skip("this machine has an ncu where cuship looks")
    done = cuship("bench", str(EXAMPLE), "--profile", "ncu", "--no-store", base=_clean_env(path))
    assert done.returncode == 3, done.stderr
    assert "--profile ncu needs Nsight Compute's `ncu`, which is not in PATH or " in done.stderr
    assert "/usr/local/cuda/bin" in done.stderr
    assert "put `ncu` on PATH or set CUDA_HOME" in done.stderr


def test_usage_errors_exit_2() -> None:
    wall = cuship("bench", str(EXAMPLE), "--profile", "ncu", "--timer", "wall", "--no-store")
    assert wall.returncode == 2 and "cannot go with --timer wall" in wall.stderr
    alone = cuship("bench", str(EXAMPLE), "--ncu-set", "full", "--no-store")
    assert alone.returncode == 2 and "--ncu-set needs --profile ncu" in alone.stderr


# A stand-in ncu: answers --version, runs the program it was given (the real worker) and logs
# how that went, writes the report it was asked for, and prints what a real one printed.
FAKE_NCU = """\
#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2025.3.1.0 (build 36398880)")
    sys.exit(0)
if "--import" in args:
    sys.stdout.write(open(os.environ["FAKE_NCU_RAW"]).read())
    sys.exit(0)
program = args[args.index("-c") - 1 :]
done = subprocess.run(program, capture_output=True, text=True)
with open(os.environ["FAKE_NCU_LOG"], "a") as log:
    log.write(json.dumps({{"args": args, "exit": done.returncode, "stderr": done.stderr,
                           "stdout": done.stdout}}) + "\\n")
if "-o" in args:
    open(args[args.index("-o") + 1] + ".ncu-rep", "wb").write(b"NCU")
    print("==PROF== Report: " + args[args.index("-o") + 1] + ".ncu-rep")
else:
    sys.stdout.write(open(os.environ["FAKE_NCU_CSV"]).read())
"""

CASES = """
    import numpy as np
    from cuship.bench import case

    @case(params={"n": [1000]}, setup=lambda rng, n: {"x": rng.standard_normal(n)}, bytes=lambda n: 8 * n)
    def total(x):
        print("the case talks on stdout")
        return x.sum()
"""


@pytest.fixture
def fake_ncu(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    ncu = tmp_path / "bin" / "ncu"
    ncu.parent.mkdir()
    ncu.write_text(FAKE_NCU.format(python=sys.executable))
    ncu.chmod(0o755)
    from tests.unit.test_bench_ncu import RAW_PAGE

    raw = tmp_path / "raw.csv"
    raw.write_text(RAW_PAGE)
    env = {  # no PYTHONPATH: the worker finds this cuship at the end of its sys.path
        **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        "FAKE_NCU_LOG": str(tmp_path / "ncu.log"),
        "FAKE_NCU_CSV": str(H100_CSV),
        "FAKE_NCU_RAW": str(raw),
    }
    return ncu, env


def _timed(key: str) -> PointResult:
    m = Measurement(samples=(1e-4,) * 3, stop_reason="fixed", rel_noise=0.01)
    work = {"bytes": 8000.0, "flops": None, "ops": None}
    return PointResult(key=key, case="total", params={"n": 1000}, status="ok", measurement=m,
                       work=work)  # fmt: skip


def _points(root: Path) -> list[Point]:
    """The points of CASES, written as ``root/bench_total.py``."""
    module = root / "bench_total.py"
    module.write_text(textwrap.dedent(CASES))
    return list(points(discover((str(module),), root)))


def _log(env: dict[str, str]) -> list[dict[str, Any]]:
    lines = Path(env["FAKE_NCU_LOG"]).read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_the_worker_runs_the_point_once_warm_then_asks_the_driver(
    tmp_path: Path, fake_ncu: tuple[Path, dict[str, str]]
) -> None:
    ncu, env = fake_ncu
    selected = _points(tmp_path)
    options = NcuOptions(ncu=str(ncu))
    results, session = profile_run(
        [_timed("total[n=1000]")], selected, options, root=tmp_path, pythonpath=(), environ=env
    )
    assert session.version == "2025.3.1.0" and session.metric_set == "basic"
    (result,) = results
    assert result.profile is not None and result.profile.ok, result.profile
    assert result.profile.kernels == 32  # the recorded CSV the stand-in printed
    (ran,) = _log(env)
    assert ran["stdout"] == ""  # the case's own output went to stderr, never into ncu's CSV
    stderr = str(ran["stderr"])
    assert stderr.count("the case talks on stdout") == 1  # the warm-up call, then the driver
    if ran["exit"] == 3:  # no driver library on this machine: it stopped before profiling
        assert "cannot load libcuda.so.1" in stderr
    else:  # a driver without a context for numpy's call: it launched nothing on the GPU
        assert ran["exit"] == 4 and "made no CUDA context current" in stderr


def test_full_set_keeps_the_report_and_reads_its_raw_page(
    tmp_path: Path, fake_ncu: tuple[Path, dict[str, str]]
) -> None:
    ncu, env = fake_ncu
    selected = _points(tmp_path)
    reports = tmp_path / "out" / "ncu"
    options = NcuOptions(ncu=str(ncu), metric_set="full", reports=reports)
    (result,), session = profile_run(
        [_timed("total[n=1000]")], selected, options, root=tmp_path, pythonpath=(), environ=env
    )
    assert session.reports == str(reports)
    assert result.profile is not None and result.profile.ok, result.profile
    assert result.profile.kernels == 2 and result.profile.metric_set == "full"
    plan = plan_profile(selected[0], options, root=tmp_path, pythonpath=(), environ=env)
    assert result.profile.report == str(plan.report) and Path(result.profile.report).is_file()
    (ran,) = _log(env)
    assert ran["args"][ran["args"].index("--set") + 1] == "full"


def test_an_unknown_point_is_an_error_profile_with_the_workers_words(
    tmp_path: Path, fake_ncu: tuple[Path, dict[str, str]]
) -> None:
    ncu, env = fake_ncu
    (point,) = _points(tmp_path)
    renamed = type(point)(case=point.case, params=point.params, key="total[n=5]")
    env["FAKE_NCU_CSV"] = str(tmp_path / "empty.csv")
    Path(env["FAKE_NCU_CSV"]).write_text("==WARNING== No kernels were profiled.\n")
    (result,), _ = profile_run(
        [_timed("total[n=5]")], [renamed], NcuOptions(ncu=str(ncu)), root=tmp_path,
        pythonpath=(), environ=env,
    )  # fmt: skip
    assert result.profile is not None
    assert result.profile.error == "ncu printed no metrics (exit 0): No kernels were profiled."
    (ran,) = _log(env)
    assert ran["exit"] == 2 and "no benchmark point 'total[n=5]'" in str(ran["stderr"])
