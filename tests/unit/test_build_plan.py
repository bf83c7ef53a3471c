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
