"""`cuship build --parallel N` without building: each job's share of MAX_JOBS, what jobs built at
once take in turns, and a batch on a thread pool (the build replaced by fakes) that reports in
plan order, keeps going past a failed job, stops at an interrupt and keeps each job's events
together."""

from __future__ import annotations

import dataclasses
import functools
import io
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from cuship.builder.collapse import start
from cuship.builder.host.interpreters import Interpreter, Interpreters
from cuship.builder.model import BuildPlan, Host, Step, job_env, share
from cuship.builder.plan import plan_job
from cuship.builder.record import read_record
from cuship.builder.run import batch, shared
from cuship.builder.run.commands import CHILDREN, BuildFailed, Stopped
from cuship.builder.run.execute import JobResult
from cuship.cli import cli
from cuship.cli._common import run_cli
from cuship.cli._console import Console
from cuship.cli._progress import ProgressDisplay
from cuship.compat import load
from cuship.config import Config, load_config
from cuship.errors import ConfigError
from cuship.events import Event, collect
from cuship.matrix import BuildJob, expand, jobs_with_configs
from tests.build_fakes import job_result
from tests.unit.test_collapse import HOST as COLLAPSE_HOST
from tests.unit.test_collapse import ONE_PYTHON, TWO_TORCH, config_of, fake_builds

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"
PYTHONS = {
    v: Interpreter(
        version=v,
        full=f"{v}.1",
        executable=f"/usr/bin/python{v}" if v == "3.11" else f"/p/{v}.1/bin/python{v}",
        source="running" if v == "3.11" else "pyenv",
    )
    for v in ("3.10", "3.11", "3.12", "3.13")
}
HOST = Host(
    python="3.11",
    python_exe="/usr/bin/python3.11",
    nvcc="/usr/local/cuda/bin/nvcc",
    cuda="13.0.88",
    cpus=8,
    memory_available_gib=None,
    interpreters=Interpreters(found=PYTHONS, looked=("the running interpreter",)),
)


def _pairs(config: Config | None = None) -> list[tuple[Config, object]]:
    pairs = jobs_with_configs(config or load_config(EXAMPLE), load())
    return [(c, j) for c, j in pairs if j.cuda.major == 13]


def _planner(out: Path, config: Config | None = None) -> Callable[[Host], list[BuildPlan]]:
    def plan(host: Host) -> list[BuildPlan]:
        return [
            plan_job(job, cfg, host, mode="local", out_dir=out)  # type: ignore[arg-type]
            for cfg, job in _pairs(config)
        ]

    return plan


def _max_jobs(plan: BuildPlan) -> set[str]:
    return {s.env["MAX_JOBS"] for s in plan.steps if "MAX_JOBS" in s.env} | {
        s.env["CMAKE_BUILD_PARALLEL_LEVEL"] for s in plan.steps if "MAX_JOBS" in s.env
    }


# Each job's share of the machine.


@pytest.mark.parametrize(
    ("jobs", "workers", "each"), [(8, 1, 8), (8, 2, 4), (8, 3, 2), (2, 2, 1), (1, 4, 1), (3, 2, 1)]
)
def test_a_job_s_share_of_max_jobs_is_the_cores_divided_never_zero(
    jobs: int, workers: int, each: int
) -> None:
    assert share(jobs, workers) == each
    assert each * workers <= max(jobs, workers), "together they do not oversubscribe"


def test_job_env_divides_the_derived_max_jobs_but_not_a_fixed_one() -> None:
    config, job = _pairs()[0]
    shared_host = dataclasses.replace(HOST, workers=2)
    assert job_env(job, config.build, HOST)["MAX_JOBS"] == "8"  # type: ignore[arg-type]
    env = job_env(job, config.build, shared_host)  # type: ignore[arg-type]
    assert env["MAX_JOBS"] == env["CMAKE_BUILD_PARALLEL_LEVEL"] == "4"
    tight = dataclasses.replace(shared_host, memory_available_gib=20.0)  # 20 / (5 x 2) = 2
    assert job_env(job, config.build, tight)["MAX_JOBS"] == "1"  # type: ignore[arg-type]
    fixed = dataclasses.replace(config.build, max_jobs=6)
    assert job_env(job, fixed, shared_host)["MAX_JOBS"] == "6"  # type: ignore[arg-type]


def test_plans_are_shared_among_the_workers_that_have_jobs(tmp_path: Path) -> None:
    plan = _planner(tmp_path)
    alone, one = batch.plan_shared(plan, HOST, 1)
    assert one == 1 and {j for p in alone if p.runnable for j in _max_jobs(p)} == {"8"}
    plans, workers = batch.plan_shared(plan, HOST, 2)
    assert workers == 2 and len([p for p in plans if p.runnable]) == 4
    assert all(_max_jobs(p) == {"4"} and p.max_jobs == 4 for p in plans if p.runnable)
    assert batch.chains(plans) == [[0], [1], [2], [3]], "four wheels of four names"
    _, capped = batch.plan_shared(plan, HOST, 16)
    assert capped == 4, "no more workers than jobs"
    single = dataclasses.replace(HOST, interpreters=Interpreters(found={"3.11": PYTHONS["3.11"]}))
    plans, workers = batch.plan_shared(plan, single, 4)
    assert workers == 1, "one job here: it gets the whole machine"
    assert [p.max_jobs for p in plans if p.runnable] == [8]


def test_a_build_venv_and_an_in_tree_source_are_held_by_one_job_at_a_time(
    tmp_path: Path,
) -> None:
    config, job = next((c, j) for c, j in _pairs() if j.python == "3.12")  # type: ignore[attr-defined]
    plan = plan_job(job, config, HOST, mode="local", out_dir=tmp_path)  # type: ignore[arg-type]
    holds = {s.name: s.holds for s in plan.steps if s.argv}
    assert plan.build_env is not None
    venv = shared.env_key(plan.build_env)
    assert holds["build-env"] == holds["build-env-deps"] == (venv,)
    assert holds["build-wheel"] == (), "scikit-build-core builds under TMPDIR, the venv is read"
    in_tree = dataclasses.replace(config, build_backend="setuptools.build_meta")
    with_deps = dataclasses.replace(
        in_tree, build=dataclasses.replace(config.build, extra_deps=("numpy",))
    )
    plan = plan_job(job, with_deps, HOST, mode="local", out_dir=tmp_path)  # type: ignore[arg-type]
    holds = {s.name: s.holds for s in plan.steps if s.argv}
    assert holds["build-deps"] == (venv,)
    assert holds["build-wheel"] == (venv, shared.source_key(config.source_dir))
    assert shared.last_use(plan.steps)[venv] == [s.name for s in plan.steps].index("build-wheel")
    sdist = dataclasses.replace(in_tree, requirement="demo==1.0")
    plan = plan_job(job, sdist, HOST, mode="local", out_dir=tmp_path)  # type: ignore[arg-type]
    assert next(s for s in plan.steps if s.name == "build-wheel").holds == (), "pip's own dir"
    assert shared.builds_in_tree("scikit_build_core.build", "build/{wheel_tag}")
    assert shared.builds_in_tree(None, None), "an unknown backend is taken to build in tree"


def test_turns_take_a_key_at_first_use_and_give_it_back_after_the_last() -> None:
    steps = [
        Step(name="a", description="", argv=("a",), holds=("env:x",)),
        Step(name="b", description="", argv=("b",), holds=("env:x", "source:s")),
        Step(name="c", description="", argv=("c",)),
    ]
    locks, waited = shared.Locks(), list[str]()
    with locks.spans(steps) as turns:
        turns.before(0)
        turns.after(0)
        assert set(turns.held) == {"env:x"}, "b still needs it"
        locks.lock("source:s").acquire()
        threading.Timer(0.05, locks.lock("source:s").release).start()
        turns.before(1, waited.append)
        assert waited == ["source:s"], "told before waiting for another job's key"
        turns.after(1)
        assert turns.held == {}
    assert not locks.lock("env:x").locked()
    with locks.spans(steps) as turns:
        turns.before(0)
    assert not locks.lock("env:x").locked(), "an ended job gives everything back"
    assert shared.describe("env:/o/envs/cp312-ab") == "the build environment /o/envs/cp312-ab"


# A batch on a thread pool, each job's build replaced by a fake.

Fake = Callable[[BuildPlan, Callable[[Event], None]], JobResult]


def _run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake: Fake, workers: int = 2
) -> tuple[tuple[batch.Outcome, ...], list[Event]]:
    def run_plan(plan: BuildPlan, *, emit: Callable[[Event], None], **_: object) -> JobResult:
        return fake(plan, emit)

    monkeypatch.setattr(batch, "run_plan", run_plan)
    plans, _ = batch.plan_shared(_planner(tmp_path), HOST, workers)
    events: list[Event] = []
    return batch.build_all(plans, emit=collect(events), workers=workers), events


def _by_python(plan: BuildPlan) -> str:
    return plan.job.python


def test_outcomes_come_in_plan_order_whatever_finished_first(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    done: dict[str, threading.Event] = {v: threading.Event() for v in PYTHONS}
    order = list[str]()

    def fake(plan: BuildPlan, emit: Callable[[Event], None]) -> JobResult:
        python = _by_python(plan)
        if python in ("3.10", "3.12"):  # wait for the next job: only a pool gets past this
            later = "3.11" if python == "3.10" else "3.13"
            assert done[later].wait(10), f"{python} waited for {later}, which never ran"
        order.append(python)
        done[python].set()
        return job_result(plan)

    outcomes, events = _run(monkeypatch, tmp_path, fake)
    assert order == ["3.11", "3.10", "3.13", "3.12"]
    assert [o.job_id for o in outcomes] == [
        "cuvecops-0.1.0-cp310-cu130",
        "cuvecops-0.1.0-cp311-cu130",
        "cuvecops-0.1.0-cp312-cu130",
        "cuvecops-0.1.0-cp313-cu130",
    ]
    assert {o.status for o in outcomes} == {"built"}
    starts = [e.message for e in events if e.data.get("phase") == "job-start"]
    assert all(m.endswith("; MAX_JOBS 4, its share with 2 jobs at once") for m in starts)


def test_a_failed_job_stops_no_other(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def fake(plan: BuildPlan, emit: Callable[[Event], None]) -> JobResult:
        if _by_python(plan) == "3.10":
            raise BuildFailed("build-wheel failed (exit 1); the tool said:\nops.cu(3): error")
        return job_result(plan)

    outcomes, events = _run(monkeypatch, tmp_path, fake)
    assert [o.status for o in outcomes] == ["failed", "built", "built", "built"]
    assert outcomes[0].detail.startswith("build-wheel failed (exit 1)")
    errors = [e.message for e in events if e.level == "error"]
    assert errors == [f"{outcomes[0].job_id}: {outcomes[0].detail}"]


def test_an_interrupt_starts_no_more_jobs_and_is_raised(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ran, started = list[str](), threading.Event()

    def fake(plan: BuildPlan, emit: Callable[[Event], None]) -> JobResult:
        python = _by_python(plan)
        ran.append(python)
        if python == "3.10":
            assert started.wait(10)
            raise KeyboardInterrupt  # what Ctrl-C raises in the thread it lands in
        started.set()
        threading.Event().wait(0.5)  # still running when the interrupt comes
        return job_result(plan)

    with pytest.raises(KeyboardInterrupt):
        _run(monkeypatch, tmp_path, fake)
    assert sorted(ran) == ["3.10", "3.11"], "the two running jobs only; 3.12 and 3.13 never ran"
    with pytest.raises(Stopped, match="interrupted"), CHILDREN.stopped():
        CHILDREN.run(["nvcc"], env={}, cwd=None)  # refused before any process is made


def test_a_bug_in_a_job_is_raised_not_reported_as_a_failed_job(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def fake(plan: BuildPlan, emit: Callable[[Event], None]) -> JobResult:
        if _by_python(plan) == "3.12":
            raise ZeroDivisionError("a bug")
        return job_result(plan)

    with pytest.raises(ZeroDivisionError, match="a bug"):
        _run(monkeypatch, tmp_path, fake)


def test_each_job_s_events_stay_together_and_its_steps_show_as_progress(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    barrier = threading.Barrier(2, timeout=10)

    def fake(plan: BuildPlan, emit: Callable[[Event], None]) -> JobResult:
        for step in ("build-wheel", "repair"):
            emit(
                Event(
                    level="info",
                    topic="build",
                    message=f"{plan.job.id}: {step}",
                    data={"job": plan.job.id, "step": step},
                )
            )
            barrier.wait()  # the other job says its step in between
        return job_result(plan)

    _, events = _run(monkeypatch, tmp_path, fake)
    held = [e for e in events if e.level != "progress"]
    groups = [e.message for e in held if e.level == "group-start"]
    for job in groups:  # group-start, its two steps, group-end: one block per job
        at = held.index(next(e for e in held if e.level == "group-start" and e.message == job))
        assert [e.level for e in held[at : at + 4]] == ["group-start", "info", "info", "group-end"]
        assert {e.data.get("job") for e in held[at + 1 : at + 3]} == {job}
    live = [e for e in events if e.data.get("phase") == "job-step"]
    assert len(live) == 8 and all(e.level == "progress" for e in live)


def test_a_sequential_batch_tells_events_as_they_come(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def fake(plan: BuildPlan, emit: Callable[[Event], None]) -> JobResult:
        emit(
            Event(level="info", topic="build", message="x", data={"job": plan.job.id, "step": "s"})
        )
        return job_result(plan)

    _, events = _run(monkeypatch, tmp_path, fake, workers=1)
    assert not [e for e in events if e.data.get("phase") == "job-step"]
    phases = [e.data.get("phase") or e.level for e in events][:5]
    assert phases == ["start", "job-start", "group-start", "info", "group-end"]
    assert "MAX_JOBS" not in next(e.message for e in events if e.data.get("phase") == "job-start")


def test_plain_lines_leave_out_the_live_step_events() -> None:
    err = io.StringIO()
    console = Console(github=True, out=io.StringIO(), err=err)
    step = {"job": "j", "step": "build-wheel"}
    with ProgressDisplay(console, live=False) as emit:
        emit(
            Event(
                level="progress",
                topic="build",
                message="j: build",
                data={**step, "phase": "job-step"},
            )
        )
        emit(Event(level="group-start", topic="build", message="j"))
        emit(Event(level="info", topic="build", message="j: build", data=step))
        emit(Event(level="group-end", topic="build", message="j"))
    assert err.getvalue().splitlines() == ["::group::j", "j: build", "::endgroup::"]


# The option and the setting.


@pytest.mark.parametrize("value", ["0", "-2"])
def test_parallel_below_one_is_a_usage_error_naming_the_option_and_the_fix(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in ("build", "ship"):
        assert run_cli(cli, [command, str(EXAMPLE), "--parallel", value]) == 2
        err = capsys.readouterr().err
        assert "Invalid value for '--parallel'" in err
        assert f"{value} is not a number of jobs to build at once" in err
        assert "give 1 (one after another, the default) or more" in err


def test_build_parallel_in_the_config_is_checked(tmp_path: Path) -> None:
    (tmp_path / "cuship.toml").write_text("[matrix]\npython = ['3.11']\n[build]\nparallel = 3\n")
    assert load_config(tmp_path).build.parallel == 3
    (tmp_path / "cuship.toml").write_text("[matrix]\npython = ['3.11']\n[build]\nparallel = 0\n")
    with pytest.raises(ConfigError, match=r"build\.parallel.*between 1 and 256, got 0"):
        load_config(tmp_path)


def _plan_jobs(jobs: Sequence[BuildJob], config: Config, out: Path, host: Host) -> list[BuildPlan]:
    return [plan_job(j, config, host, mode="local", out_dir=out) for j in jobs]


# The torch axis: jobs one wheel may serve follow each other, the outcomes are those of a
# build one job at a time.


@pytest.mark.parametrize(
    ("matrix", "runs"),
    [
        (TWO_TORCH, 2),  # one torch-free wheel per Python: the two Pythons build at once
        # two arch lists of one label end with one wheel name: one after another
        (ONE_PYTHON.replace('"9.0"', '["8.0", "9.0"]'), 1),
    ],
)
def test_a_parallel_build_collapses_the_torch_axis_as_a_sequential_one(
    matrix: str, runs: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    both = dataclasses.replace(
        COLLAPSE_HOST,
        interpreters=Interpreters(found={v: PYTHONS[v] for v in ("3.11", "3.12")}),
    )
    seen = []
    for workers in (1, 2):
        root = tmp_path / f"w{workers}"
        root.mkdir()
        built = fake_builds(monkeypatch, "none")
        config = config_of(root, matrix)
        events: list[Event] = []
        seed, collapser = start(config, events.append)
        jobs = expand(config, load(), torch_abi=seed).jobs
        plan = functools.partial(_plan_jobs, jobs, config, root / "out")
        plans, at_once = batch.plan_shared(plan, both, workers, collapser)
        assert len(batch.chains(plans, collapser)) == runs
        assert at_once == min(workers, runs)
        outcomes = batch.build_all(plans, emit=collect(events), collapse=collapser, workers=at_once)
        seen.append([(o.job_id, o.status, o.detail) for o in outcomes])
        assert len(built) == 2, "one build per group, the other jobs are served"
        assert read_record(root) is not None
    assert seen[0] == seen[1]


def test_a_build_without_compiler_cache_turns_off_torch_s_own_wrapper_too() -> None:
    """torch's cpp_extension puts ccache/sccache from PATH in front of each compile unless
    TORCH_NO_COMPILER_WRAPPER is set; [build] cache = "none" means none for torch extensions."""
    config, job = _pairs()[0]
    none = dataclasses.replace(config.build, cache="none")
    bare = job_env(job, none, dataclasses.replace(HOST, sccache="/bin/sccache"))  # type: ignore[arg-type]
    assert bare["TORCH_NO_COMPILER_WRAPPER"] == "1"
    assert not any(k.endswith("_COMPILER_LAUNCHER") for k in bare)
    cached = dataclasses.replace(config.build, cache="sccache")
    with_cache = job_env(job, cached, dataclasses.replace(HOST, sccache="/bin/sccache"))  # type: ignore[arg-type]
    assert "TORCH_NO_COMPILER_WRAPPER" not in with_cache
    assert with_cache["CMAKE_CUDA_COMPILER_LAUNCHER"] == "/bin/sccache"
    no_tool = job_env(job, cached, dataclasses.replace(HOST, sccache=None))  # type: ignore[arg-type]
    assert no_tool["TORCH_NO_COMPILER_WRAPPER"] == "1", "sccache asked for but not found: none"
