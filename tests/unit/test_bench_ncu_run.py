"""``--profile ncu``'s plan (the exact ncu command lines), finding ncu, and reading what an ncu
run printed (ncu itself is replaced here: unit tests run no process)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from cuship import tools
from cuship.bench.ncu import run as ncu_run
from cuship.bench.ncu.profile import METRICS, NcuProfile
from cuship.bench.ncu.run import (
    PERMISSION,
    NcuOptions,
    failure,
    find_ncu,
    plan_profile,
    preflight,
    profile_points,
    report_stem,
    run_profile,
)
from cuship.bench.registry import Case, Point
from cuship.bench.results import PointResult
from cuship.bench.timers.measure import Measurement
from cuship.errors import CannotStart, TimedOut, ToolMissing, UsageError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "h100" / "ncu-metrics-add.csv"
PERMISSION_OUTPUT = (
    "==PROF== Connected to process 2071 (/usr/bin/python3.12)\n"
    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
    "Performance Counters on the target device 0. For instructions on enabling permissions and "
    "to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
    "==PROF== Disconnected from process 2071\n"
    "==WARNING== No kernels were profiled.\n"
)
NCU = "/opt/cuda/bin/ncu"
ROOT = Path("/work/project")


def _point(key: str = "saxpy[n=262144]") -> Point:
    case = Case(name="saxpy", fn=lambda: None, module="benchmarks/bench_cuvecops.py")
    return Point(case=case, params={"n": 262144}, key=key)


def _worker_spec(argv: Sequence[str]) -> dict[str, object]:
    at = argv.index("-c")
    assert argv[at - 1] == "/usr/bin/python3" and len(argv) == at + 3
    assert "from cuship.bench.ncu._worker import main" in argv[at + 1]
    spec: dict[str, object] = json.loads(argv[at + 2])
    return spec


def test_basic_plan_profiles_one_call_with_the_small_metric_set() -> None:
    plan = plan_profile(
        _point(),
        NcuOptions(ncu=NCU),
        root=ROOT,
        pythonpath=(ROOT / "src",),
        environ={"PATH": "/usr/bin", "PYTHONPATH": "/extra"},
        python="/usr/bin/python3",
    )
    metrics = ",".join(METRICS)
    assert plan.argv[:12] == (
        NCU, "--csv", "--metrics", metrics,
        "--profile-from-start", "off", "--target-processes", "all",
        "--clock-control", "none", "--cache-control", "all",
    )  # fmt: skip
    assert metrics == (
        "gpu__time_duration.sum,dram__bytes.sum.per_second,"
        "dram__throughput.avg.pct_of_peak_sustained_elapsed,"
        "sm__warps_active.avg.pct_of_peak_sustained_active,"
        "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    )
    assert "--set" not in plan.argv and "-o" not in plan.argv
    assert plan.report is None and plan.import_argv is None
    assert _worker_spec(plan.argv) == {
        "root": str(ROOT),
        "module": "benchmarks/bench_cuvecops.py",
        "key": "saxpy[n=262144]",
        "seed": 0,
        "pythonpath": [str(ROOT / "src")],
    }
    assert plan.env == {"PATH": "/usr/bin", "PYTHONPATH": "/extra"}  # the project's path: in SPEC
    boot = plan.argv[plan.argv.index("-c") + 1]
    home = boot.split("sys.path.append(", 1)[1].split(")", 1)[0].strip("'")
    assert Path(home, "cuship", "bench", "ncu", "_worker.py").is_file()  # this cuship, appended
    assert plan.to_json()["import"] is None


def test_full_plan_writes_a_report_and_reads_it_back_from_the_raw_page(tmp_path: Path) -> None:
    options = NcuOptions(ncu=NCU, metric_set="full", reports=tmp_path / "ncu")
    plan = plan_profile(
        _point(), options, root=ROOT, pythonpath=(), environ={}, python="/usr/bin/python3"
    )
    stem = tmp_path / "ncu" / report_stem("saxpy[n=262144]")
    at = plan.argv.index("--set")
    assert plan.argv[at : at + 6] == ("--set", "full", "-o", str(stem), "-f", "/usr/bin/python3")
    assert plan.argv[:4] == (NCU, "--csv", "--metrics", ",".join(METRICS))
    assert plan.report == stem.with_name(stem.name + ".ncu-rep")
    assert plan.import_argv == (
        NCU, "--import", str(plan.report), "--csv", "--page", "raw",
        "--print-units", "base", "--metrics", ",".join(METRICS),
    )  # fmt: skip
    kept = NcuOptions(ncu=NCU, reports=tmp_path)  # basic, reports kept: -o, no --set full
    basic = plan_profile(_point(), kept, root=ROOT, pythonpath=(), environ={})
    assert "-o" in basic.argv and "--set" not in basic.argv and basic.import_argv is not None


def test_report_names_are_safe_readable_and_unique() -> None:
    a = report_stem("reduce_sum[dtype=int64,n=262144]")
    assert a.startswith("reduce_sum-dtype=int64-n=262144-") and "/" not in a
    assert report_stem("../../etc/passwd") != report_stem("etc/passwd")
    assert "/" not in report_stem("../../etc/passwd") and report_stem("").startswith("case-")


def _exe(directory: Path, name: str = "ncu") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_ncu_is_found_in_cuda_home_then_on_path_then_in_the_default_toolkit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tools, "DEFAULT_TOOLKIT_BIN", str(tmp_path / "usr-local-cuda-bin"))
    on_path = _exe(tmp_path / "path")
    in_home = _exe(tmp_path / "home" / "bin")
    assert find_ncu({"PATH": str(tmp_path / "path")}) == str(on_path)
    env = {"PATH": str(tmp_path / "path"), "CUDA_HOME": str(tmp_path / "home")}
    assert find_ncu(env) == str(in_home)  # the toolkit the build uses comes first
    default = _exe(tmp_path / "usr-local-cuda-bin")
    assert find_ncu({"PATH": ""}) == str(default)


def test_no_ncu_is_tool_missing_naming_where_it_looked_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tools, "DEFAULT_TOOLKIT_BIN", str(tmp_path / "none"))
    with pytest.raises(ToolMissing) as caught:
        find_ncu({"PATH": str(tmp_path), "CUDA_HOME": "/opt/cuda-13"})
    err = caught.value
    assert err.exit_code == 3
    assert "needs Nsight Compute's `ncu`" in err.message
    assert f"$CUDA_HOME/bin (/opt/cuda-13/bin), PATH or {tmp_path / 'none'}" in err.message
    assert err.hint is not None and "put `ncu` on PATH or set CUDA_HOME" in err.hint


def test_preflight_refuses_cpu_timers_and_a_machine_without_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tools, "DEFAULT_TOOLKIT_BIN", str(tmp_path / "none"))
    for timer in ("wall", "instructions"):
        with pytest.raises(UsageError, match=f"cannot go with --timer {timer}"):
            preflight(timer, {})
    with pytest.raises(ToolMissing, match="this machine shows no NVIDIA GPU"):
        preflight("auto", {"CUSHIP_GPUS": "none", "PATH": ""})
    with pytest.raises(ToolMissing, match="needs Nsight Compute's `ncu`"):  # a GPU, no ncu
        preflight("cuda", {"CUSHIP_GPUS": "H100", "PATH": str(tmp_path)})
    ncu = _exe(tmp_path / "bin")
    assert preflight("auto", {"CUSHIP_GPUS": "H100", "PATH": str(tmp_path / "bin")}) == str(ncu)


def test_failures_are_said_in_ncus_words() -> None:
    said = failure(1, PERMISSION_OUTPUT, "", "ncu printed no metrics")
    assert said.startswith(f"{PERMISSION}: ") and "NVreg_RestrictProfilingOnToAdminUsers=0" in said
    other = "==ERROR== Failed to prepare kernel for profiling\n==ERROR== Unknown error\n"
    assert failure(9, other, "", "ncu printed no metrics") == (
        "ncu printed no metrics (exit 9): Failed to prepare kernel for profiling / Unknown error"
    )
    warned = failure(4, "==WARNING== No kernels were profiled.\n", "", "p")
    assert warned == "p (exit 4): No kernels were profiled."
    assert failure(2, "", "Traceback ...\nKeyError: 'x'\n", "p") == (
        "p (exit 2): Traceback ... KeyError: 'x'"
    )


class _FakeNcu:
    """Stands in for ncu_run._run: answers each command from a script, records the commands."""

    def __init__(self, *answers: tuple[int, str, str], report: Path | None = None) -> None:
        self.answers = list(answers)
        self.commands: list[tuple[str, ...]] = []
        self.report = report

    def __call__(self, argv: Sequence[str], env: object, timeout: float) -> tuple[int, str, str]:
        self.commands.append(tuple(argv))
        if self.report is not None and "-o" in argv:
            self.report.write_bytes(b"NCU-REP")
        return self.answers.pop(0)


def test_a_basic_run_reads_the_details_page(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeNcu((0, FIXTURE.read_text(), ""))
    monkeypatch.setattr(ncu_run, "_run", fake)
    plan = plan_profile(_point(), NcuOptions(ncu=NCU), root=ROOT, pythonpath=(), environ={})
    profile = run_profile(plan)
    assert profile.ok and profile.kernels == 32 and profile.report is None
    assert profile.wall_time is not None and profile.wall_time >= 0
    assert fake.commands == [plan.argv]


def test_a_full_run_imports_its_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    options = NcuOptions(ncu=NCU, metric_set="full", reports=tmp_path / "reports")
    plan = plan_profile(_point(), options, root=ROOT, pythonpath=(), environ={})
    assert plan.report is not None
    from tests.unit.test_bench_ncu import RAW_PAGE

    fake = _FakeNcu((0, "==PROF== Report: x.ncu-rep\n", ""), (0, RAW_PAGE, ""), report=plan.report)
    monkeypatch.setattr(ncu_run, "_run", fake)
    profile = run_profile(plan)
    assert profile.ok and profile.metric_set == "full" and profile.kernels == 2
    assert profile.report == str(plan.report) and plan.report.is_file()
    assert profile.dram_bytes_per_s == pytest.approx(
        (500.63636363636e9 * 4.224 + 546e9 * 3.904) / (4.224 + 3.904)
    )
    assert fake.commands == [plan.argv, plan.import_argv]
    missing = _FakeNcu((1, "==ERROR== Failed to write report\n", ""))
    monkeypatch.setattr(ncu_run, "_run", missing)
    plan.report.unlink()
    failed = run_profile(plan)
    assert failed.error is not None and failed.error.startswith("ncu wrote no report")
    assert "Failed to write report" in failed.error


def test_permission_timeout_and_a_missing_ncu_are_error_profiles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plan = plan_profile(_point(), NcuOptions(ncu=NCU), root=ROOT, pythonpath=(), environ={})
    monkeypatch.setattr(ncu_run, "_run", _FakeNcu((1, PERMISSION_OUTPUT, "")))
    denied = run_profile(plan)
    assert denied.error is not None and denied.error.startswith(PERMISSION)
    header_only = FIXTURE.read_text().splitlines()[2] + "\n"  # a header, no kernel
    monkeypatch.setattr(ncu_run, "_run", _FakeNcu((0, header_only, "")))
    assert run_profile(plan).error == "ncu profiled no kernel in the call (exit 0)"

    def hang(argv: Sequence[str], env: object, timeout: float) -> tuple[int, str, str]:
        raise TimedOut(argv, timeout)

    monkeypatch.setattr(ncu_run, "_run", hang)
    assert run_profile(plan, timeout=5).error == "ncu ran past 5 s"

    def gone(argv: Sequence[str], env: object, timeout: float) -> tuple[int, str, str]:
        raise CannotStart(argv, "No such file or directory", name="ncu")

    monkeypatch.setattr(ncu_run, "_run", gone)
    assert run_profile(plan).error == "cannot run 'ncu': No such file or directory"


def _timed(key: str) -> PointResult:
    m = Measurement(samples=(1e-4,) * 3, stop_reason="fixed", rel_noise=0.01)
    return PointResult(key=key, case=key, params={}, status="ok", measurement=m)


def test_points_are_profiled_in_order_errored_skipped_and_a_permission_error_stops_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = {
        "a": NcuProfile(kernels=1, kernel_time=1e-5),
        "b": NcuProfile(error=f"{PERMISSION}: x"),
    }
    ran: list[str] = []

    def fake_run(plan: ncu_run.NcuPlan, timeout: float = 0) -> NcuProfile:
        ran.append(plan.key)
        return answers[plan.key]

    monkeypatch.setattr(ncu_run, "run_profile", fake_run)
    errored = PointResult(key="e", case="e", params={}, status="errored", measurement=None)
    results = (_timed("a"), errored, _timed("b"), _timed("c"))
    selected = [_point(k) for k in ("a", "e", "b", "c")]
    events: list[str] = []
    out = profile_points(
        results,
        selected,
        NcuOptions(ncu=NCU),
        root=ROOT,
        pythonpath=(),
        environ={},
        emit=lambda e: events.append(e.message) if e.level != "debug" else None,
    )
    assert ran == ["a", "b"]  # c is not tried after b's permission error
    assert [r.profile for r in out] == [answers["a"], None, answers["b"], answers["b"]]
    assert events[0].startswith("[ncu 1/3] a: 10 µs in 1 kernel")
    assert any(e.startswith("[ncu 3/3] c: not profiled: ERR_NVGPUCTRPERM") for e in events)
