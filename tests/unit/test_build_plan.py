"""The build planner (pure): the host step and the container script run the same pip wheel."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

import pytest

from cuship.builder.host.interpreters import Interpreter, Interpreters
from cuship.builder.model import Host
from cuship.builder.plan import plan_job
from cuship.compat import load
from cuship.config import Config, load_config
from cuship.matrix import BuildJob, jobs_with_configs

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"
HOST = Host(
    python="3.11",
    python_exe="/usr/bin/python3",
    nvcc="/usr/local/cuda/bin/nvcc",
    cuda="13.0.88",
    cpus=8,
    memory_available_gib=30.0,
    engine="docker",
)


def test_local_and_container_plans_build_with_the_same_pip_wheel(tmp_path: Path) -> None:
    config, job = next(
        (c, j)
        for c, j in jobs_with_configs(load_config(EXAMPLE), load())
        if j.python == "3.11" and j.cuda.major == 13
    )
    local = plan_job(job, config, HOST, mode="local", out_dir=tmp_path)
    container = plan_job(job, config, HOST, mode="container", out_dir=tmp_path)
    assert local.runnable and container.runnable
    (build,) = [s for s in local.steps if s.name == "build-wheel"]
    tail = ["wheel", "--no-deps", "-w", str(local.raw_dir), "--no-build-isolation"]
    assert list(build.argv[3:8]) == tail
    assert build.argv[-1] == str(config.source_dir)
    script = " ".join(a for s in container.steps for a in s.argv)
    assert (
        shlex.join(["pip", "wheel", "--no-deps", "-w", "/out", "--no-build-isolation", "/src"])
        in script
    )


def test_the_torch_a_wheel_builds_against_is_the_matrix_s_else_the_host_s(tmp_path: Path) -> None:
    import dataclasses

    from packaging.version import Version

    config, job = next(
        (c, j)
        for c, j in jobs_with_configs(load_config(EXAMPLE), load())
        if j.python == "3.11" and j.cuda.major == 13
    )
    host = dataclasses.replace(HOST, torch="2.13.0+cpu")
    assert not config.build.isolation and job.torch is None
    assert plan_job(job, config, host, mode="local", out_dir=tmp_path).torch == "2.13.0+cpu"
    assert plan_job(job, config, host, mode="container", out_dir=tmp_path).torch is None
    isolated = dataclasses.replace(config, build=dataclasses.replace(config.build, isolation=True))
    assert plan_job(job, isolated, host, mode="local", out_dir=tmp_path).torch is None
    pinned = dataclasses.replace(job, torch=Version("2.8"))
    assert plan_job(pinned, config, host, mode="local", out_dir=tmp_path).torch == "2.8"


def test_a_wheel_linking_torch_gets_the_pin_its_abi_needs() -> None:
    from cuship.builder.run.finish import _torch_pin

    assert _torch_pin("none", "2.13.0+cpu", "w.whl") == ((), ())
    assert _torch_pin("exact", "2.13.0+cpu", "w.whl") == (("torch==2.13.*",), ())
    assert _torch_pin("stable", "2.8", "w.whl") == (("torch>=2.8",), ())
    requires, problems = _torch_pin("exact", None, "w.whl")
    assert requires == () and "cannot be pinned" in problems[0]


def test_a_torch_job_builds_here_only_against_its_own_torch(tmp_path: Path) -> None:
    import dataclasses

    from packaging.version import Version

    config, job = next(
        (c, j)
        for c, j in jobs_with_configs(load_config(EXAMPLE), load())
        if j.python == "3.11" and j.cuda.major == 13
    )
    host = dataclasses.replace(HOST, torch="2.13.0+cpu")
    torch_free = plan_job(
        dataclasses.replace(job, torch=Version("2.11")),
        config,
        host,
        mode="local",
        out_dir=tmp_path,
    )
    assert torch_free.runnable  # cuvecops does not build against torch
    config = dataclasses.replace(config, build_requires=("setuptools", "torch>=2"))
    same = dataclasses.replace(job, torch=Version("2.13"))
    assert plan_job(same, config, host, mode="local", out_dir=tmp_path).runnable
    other = dataclasses.replace(job, torch=Version("2.11"))
    blocked = plan_job(other, config, host, mode="local", out_dir=tmp_path)
    assert not blocked.runnable
    assert blocked.reason == (
        "needs torch 2.11 to build against; this host has torch 2.13.0+cpu "
        "(add torch to [build] extra_deps and cuship installs each job's)"
    )
    installs = dataclasses.replace(
        config, build=dataclasses.replace(config.build, extra_deps=("torch",))
    )
    assert plan_job(other, installs, host, mode="local", out_dir=tmp_path).runnable


def _interpreters(*found: Interpreter) -> Interpreters:
    return Interpreters(
        found={i.version: i for i in found},
        looked=("the running interpreter", "python3.X on PATH", "/p/versions/*/bin/python3.X"),
    )


RUNNING = Interpreter(
    version="3.11", full="3.11.7", executable="/usr/bin/python3", source="running"
)
PYENV_312 = Interpreter(
    version="3.12",
    full="3.12.1",
    executable="/p/versions/3.12.1/bin/python3.12",
    source="pyenv",
)


def _job(python: str) -> tuple[Config, BuildJob]:
    return next(
        (c, j)
        for c, j in jobs_with_configs(load_config(EXAMPLE), load())
        if j.python == python and j.cuda.major == 13
    )


def test_each_job_builds_with_its_own_interpreter_in_a_venv_under_the_output(
    tmp_path: Path,
) -> None:
    host = dataclasses.replace(HOST, interpreters=_interpreters(RUNNING, PYENV_312))
    config, job = _job("3.12")
    assert not config.build.isolation  # the example's build deps come from cuship[build]
    plan = plan_job(job, config, host, mode="local", out_dir=tmp_path)
    assert plan.runnable and plan.python == PYENV_312
    env = tmp_path / "envs" / plan.build_env.name if plan.build_env else None
    assert env is not None and plan.build_env == env and env.name.startswith("cp312-")
    shim, venv, deps, build = (s for s in plan.steps if s.argv)
    assert shim.name == "arch-flags"
    assert venv.argv == (PYENV_312.executable, "-m", "venv", "--without-pip", str(env))
    assert venv.creates == str(env / "bin" / "python"), "made once, reused by later runs"
    assert venv.shell().startswith(f"test -e {env / 'bin' / 'python'} || ")
    through = ("/usr/bin/python3", "-m", "pip", "--python", str(env / "bin" / "python"))
    assert deps.argv[:5] == through and deps.argv[-1] == "scikit-build-core>=0.10"
    assert build.argv[:5] == through
    assert build.argv[5:10] == (
        "wheel",
        "--no-deps",
        "-w",
        str(plan.raw_dir),
        "--no-build-isolation",
    )
    assert build.env["TMPDIR"] == str(plan.raw_dir / "tmp"), "temporary files stay in out_dir"
    assert build.env["CUSHIP_LOCAL_VERSION"] == job.label

    config311, job311 = _job("3.11")
    running = plan_job(job311, config311, host, mode="local", out_dir=tmp_path)
    (step,) = (s for s in running.steps if s.argv and s.name != "arch-flags")
    assert step.argv[:4] == ("/usr/bin/python3", "-m", "pip", "wheel"), "as before"
    assert running.python == RUNNING and running.build_env is None


def test_an_isolated_build_venv_gets_no_build_requirements(tmp_path: Path) -> None:
    host = dataclasses.replace(HOST, interpreters=_interpreters(RUNNING, PYENV_312))
    config, job = _job("3.12")
    isolated = dataclasses.replace(config, build=dataclasses.replace(config.build, isolation=True))
    plan = plan_job(job, isolated, host, mode="local", out_dir=tmp_path)
    names = [s.name for s in plan.steps if s.argv]
    assert names == ["arch-flags", "build-env", "build-wheel"]
    assert "--no-build-isolation" not in plan.steps[2].argv


def test_a_job_whose_python_is_not_found_needs_a_runner_saying_where_cuship_looked(
    tmp_path: Path,
) -> None:
    host = dataclasses.replace(HOST, interpreters=_interpreters(RUNNING, PYENV_312))
    config, job = _job("3.13")
    plan = plan_job(job, config, host, mode="local", out_dir=tmp_path)
    assert not plan.runnable and plan.python is None
    assert plan.reason == (
        "needs Python 3.13; none found (looked in the running interpreter, python3.13 on PATH, "
        "/p/versions/*/bin/python3.13): add its path to [build] pythons, or pass "
        "--fetch-python (uv)"
    )
    assert "python3.13" in plan.steps[1].argv, "--dry-run still shows the commands"
    # without a search (a Host built by hand) the old sentence stays
    assert plan_job(job, config, HOST, mode="local", out_dir=tmp_path).reason == (
        "needs Python 3.13; this host runs 3.11"
    )


def test_a_torch_project_needs_its_torch_installed_in_another_interpreter_s_venv(
    tmp_path: Path,
) -> None:
    host = dataclasses.replace(
        HOST, torch="2.13.0+cpu", interpreters=_interpreters(RUNNING, PYENV_312)
    )
    config, job = _job("3.12")
    torchy = dataclasses.replace(config, build_requires=("scikit-build-core", "torch>=2"))
    plan = plan_job(job, torchy, host, mode="local", out_dir=tmp_path)
    assert not plan.runnable and plan.reason is not None
    assert "needs torch to build against in its Python 3.12 build env" in plan.reason
    installs = dataclasses.replace(
        torchy, build=dataclasses.replace(torchy.build, extra_deps=("torch",))
    )
    plan = plan_job(job, installs, host, mode="local", out_dir=tmp_path)
    assert plan.runnable
    deps = next(s for s in plan.steps if s.name == "build-env-deps")
    assert deps.argv[-1] == "scikit-build-core", "torch is the deps step's, never the venv's"
    assert plan.torch is None, "the host's torch is not what this venv builds against"


def _torch_job(tmp_path: Path, torch: str, cuda: str) -> tuple[Config, BuildJob]:
    (tmp_path / "config").mkdir(parents=True, exist_ok=True)
    (tmp_path / "config" / "packages.yml").write_text(
        f'matrix: {{python: ["3.11"], cuda: ["{cuda}"], torch: ["{torch}"], arch: ["9.0"]}}\n'
        "packages:\n  torchsort:\n    versions: ['0.1.9']\n    build_args: --no-build-isolation\n"
        "    extra_deps: [torch]\n",
        encoding="utf-8",
    )
    ((config, job),) = jobs_with_configs(load_config(tmp_path), load())
    return config, job


def test_a_job_s_torch_is_spelled_so_that_no_other_build_satisfies_it(tmp_path: Path) -> None:
    """PyPI's torch 2.13 is its CUDA 13.0 build: ``===`` keeps a local ``2.13.0+cpu`` out; a
    flavour PyPI lacks comes from the torch index, pinned with its local label."""
    host = dataclasses.replace(HOST, torch="2.13.0+cpu", interpreters=_interpreters(RUNNING))
    config, job = _torch_job(tmp_path / "a", "2.13", "13.0")
    plan = plan_job(job, config, host, mode="local", out_dir=tmp_path / "out")
    deps = next(s for s in plan.steps if s.name == "build-deps")
    assert deps.argv[-1] == f"torch==={job.torch_version}" and "--extra-index-url" not in deps.argv
    config, job = _torch_job(tmp_path / "b", "2.9", "12.6")
    plan = plan_job(job, config, host, mode="local", out_dir=tmp_path / "out")
    deps = next(s for s in plan.steps if s.name == "build-deps")
    assert deps.argv[-1] == f"torch=={job.torch_version}+cu126"
    assert "https://download.pytorch.org/whl/cu126" in deps.argv


def test_a_job_that_installs_torch_builds_in_its_own_venv_and_checks_it_first(
    tmp_path: Path,
) -> None:
    """Even the running interpreter's job: its torch never lands in cuship's environment, and
    the torch-check step runs between the install and the compile."""
    host = dataclasses.replace(HOST, torch="2.13.0+cpu", interpreters=_interpreters(RUNNING))
    config, job = _torch_job(tmp_path, "2.13", "13.0")
    plan = plan_job(job, config, host, mode="local", out_dir=tmp_path / "out")
    assert plan.runnable and plan.build_env is not None
    assert plan.build_env.name.endswith(f"-torch{job.torch_version}-cu130")
    names = [s.name for s in plan.steps if s.argv]
    assert names.index("build-deps") < names.index("torch-check") < names.index("build-wheel")
    setup = next(s for s in plan.steps if s.name == "build-env-deps")
    assert setup.argv[-2:] == ("setuptools>=40.8.0", "wheel"), "a plain setup.py's PEP 517 needs"
    check = next(s for s in plan.steps if s.name == "torch-check")
    assert check.argv[-2:] == (str(job.torch_version), "cu130")
    build = next(s for s in plan.steps if s.name == "build-wheel")
    assert build.argv[0] == RUNNING.executable and "--python" in build.argv


def test_the_torch_check_names_what_was_wanted_and_what_pip_took() -> None:
    from cuship.builder.run.torchcheck import problem
    from cuship.machine import TorchInfo

    cpu = TorchInfo(version="2.13.0+cpu", cuda=None, cxx11abi=True, location=None, flavour="cpu")
    said = problem(cpu, "2.13.0", "cu130")
    assert said is not None and "needs torch 2.13.0 (cu130)" in said and "2.13.0+cpu (cpu)" in said
    cuda = dataclasses.replace(cpu, version="2.13.0", cuda="13.0", flavour="cuda")
    assert problem(cuda, "2.13.0", "cu130") is None
    assert problem(cuda, "2.13.0", "cu126") is not None
    assert "has no torch" in (problem(None, "2.13.0", "cu130") or "")


def test_the_cpu_only_job_is_a_plan_run_as_every_job_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``[build] cpu_fallback`` on a host without nvcc: one ``BuildPlan``, which
    :func:`run_plan` turns into the work the CPU-only build always had (no arch list, the
    ``+cpu`` label, no torch, floor, build directory, kept repairs or smoke interpreter)."""
    from packaging.version import Version

    from cuship import settings
    from cuship.builder.plan import plan_cpu
    from cuship.builder.run import execute
    from cuship.builder.run.execute import JobWork, run_plan

    config = load_config(EXAMPLE)
    host = dataclasses.replace(HOST, nvcc=None, cuda=None)
    plan = plan_cpu(config, host, out_dir=tmp_path, cuda=Version("13.0.2"))
    assert plan.job.id == "cuvecops-0.1.0-cp311-cpu" and plan.job.cpu and plan.runnable
    (step,) = plan.steps
    assert step.name == "build-wheel" and step.argv[3:6] == ("wheel", "--no-deps", "-w")
    assert step.env == {settings.CPU_ONLY: "1", settings.LOCAL_VERSION: "cpu"}
    taken: list[JobWork] = []
    monkeypatch.setattr(execute, "build_job", lambda work, **_: taken.append(work))
    run_plan(plan)
    assert taken == [
        JobWork(
            job_id=plan.job.id,
            steps=(step,),
            raw_dir=tmp_path / "raw" / plan.job.id,
            out_dir=tmp_path,
            log=tmp_path / "logs" / f"{plan.job.id}.log",
            label="cpu",
            arches="",
            test_import="cuvecops",
        )
    ]
