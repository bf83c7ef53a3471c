"""The build planner (pure): the host step and the container script run the same pip wheel."""

from __future__ import annotations

import shlex
from pathlib import Path

from cuship.builder.model import Host
from cuship.builder.plan import plan_job
from cuship.compat import load
from cuship.config import load_config
from cuship.matrix import jobs_with_configs

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
    from cuship.builder.execute import _torch_pin

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
