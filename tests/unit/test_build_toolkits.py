"""Planning with [build] toolkits: a 13.x job of another CUDA minor builds here with a toolkit
from the PyPI cache when asked to ("fetch"), and says how to get one when not; 12.x jobs name
the runner or image they need; the plan only names the cache, the run fetches."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

import pytest
from packaging.version import Version

from cuship.builder.host.tools import preflight
from cuship.builder.model import BuildPlan, Host
from cuship.builder.plan import plan_job
from cuship.compat import load
from cuship.config import Config, load_config
from cuship.errors import ToolMissing
from cuship.matrix import BuildJob, jobs_with_configs

Toolkits = Literal["host", "fetch"]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"
HOST = Host(
    python="3.11",
    python_exe="/usr/bin/python3",
    nvcc="/usr/local/cuda/bin/nvcc",
    cuda="13.0.88",
    cuda_home="/usr/local/cuda",
    cpus=2,
    memory_available_gib=8.0,
    toolkits_root="/cache/toolkits",
)


def _config(toolkits: Toolkits) -> Config:
    config = load_config(EXAMPLE)
    return dataclasses.replace(config, build=dataclasses.replace(config.build, toolkits=toolkits))


def _job(config: Config, cuda: str) -> BuildJob:
    _, job = next((c, j) for c, j in jobs_with_configs(config, load()) if j.python == "3.11")
    return dataclasses.replace(job, cuda=Version(cuda))


def _plan(toolkits: Toolkits, cuda: str, host: Host = HOST, tmp: Path = Path("/out")) -> BuildPlan:
    config = _config(toolkits)
    return plan_job(_job(config, cuda), config, host, mode="local", out_dir=tmp)


def _env(plan: BuildPlan) -> dict[str, str]:
    (build,) = [s for s in plan.steps if s.name == "build-wheel"]
    return dict(build.env)


def _toolkit(plan: BuildPlan) -> str:
    """The toolkit the job compiles with: the one behind cuship's nvcc, which the build's
    CUDA_HOME and CUDACXX point at."""
    (shim,) = [s for s in plan.steps if s.name == "arch-flags"]
    env = _env(plan)
    assert env["CUDA_HOME"] == str(plan.raw_dir / "cuda-home")
    assert env["CUDACXX"] == env["PYTORCH_NVCC"] == str(plan.raw_dir / "cuda-home/bin/nvcc")
    return shim.argv[shim.argv.index("--cuda-home") + 1]


def test_fetch_builds_another_13x_minor_with_its_toolkit_from_the_cache() -> None:
    plan = _plan("fetch", "13.1.1")
    assert plan.runnable and plan.reason is None
    fetch = plan.steps[0]
    assert fetch.name == "toolkit"
    assert fetch.argv == ("/usr/bin/python3", "-m", "cuship", "toolkit", "install", "13.1.1")
    assert dict(fetch.env) == {"CUSHIP_TOOLKITS": "/cache/toolkits"}
    assert _toolkit(plan) == "/cache/toolkits/13.1.1"


def test_a_minor_without_its_exact_release_takes_the_newest_release_of_that_minor() -> None:
    plan = _plan("fetch", "13.2.9")
    assert plan.runnable and plan.steps[0].argv[-1] == "13.2.1"


def test_the_hosts_own_minor_uses_the_host_nvcc_and_fetches_nothing() -> None:
    plan = _plan("fetch", "13.0.2")
    assert plan.runnable and [s.name for s in plan.steps if s.argv] == ["arch-flags", "build-wheel"]
    assert _toolkit(plan) == "/usr/local/cuda"


def test_host_toolkits_block_another_minor_and_say_how_to_fetch_it() -> None:
    plan = _plan("host", "13.1.1")
    assert not plan.runnable
    assert plan.reason == (
        'needs CUDA 13.1; this host has 13.0 ([build] toolkits = "fetch" builds it with '
        "CUDA 13.1.1 from PyPI)"
    )
    assert not any(s.name == "toolkit" for s in plan.steps)


@pytest.mark.parametrize("toolkits", ["host", "fetch"])
def test_a_12x_job_names_the_runner_or_image_it_needs(toolkits: Toolkits) -> None:
    plan = _plan(toolkits, "12.8.1")
    assert not plan.runnable and plan.reason is not None
    assert plan.reason.startswith("needs CUDA 12.8; this host has 13.0 (PyPI has no CUDA 12")
    assert "a runner with the CUDA 12.8 toolkit installed" in plan.reason
    assert "nvidia/cuda:12.8.1-devel-ubuntu22.04 with --mode container" in plan.reason


def test_the_12x_note_fills_every_image_template_field() -> None:
    config = _config("fetch")
    image = "ghcr.io/x/cuda:{cuda_mm}-{python_tag}"
    config = dataclasses.replace(config, build=dataclasses.replace(config.build, image=image))
    plan = plan_job(_job(config, "12.9.1"), config, HOST, mode="local", out_dir=Path("/out"))
    assert (
        plan.reason is not None and "ghcr.io/x/cuda:12.9-cp311 with --mode container" in plan.reason
    )


def test_fetch_builds_13x_on_a_host_without_nvcc_and_preflight_lets_it() -> None:
    bare = dataclasses.replace(HOST, nvcc=None, cuda=None, cuda_home=None, sccache="sccache")
    plan = _plan("fetch", "13.0.2", host=bare)
    assert plan.runnable and _toolkit(plan) == "/cache/toolkits/13.0.2"
    preflight(bare, _config("fetch"), "local")  # no nvcc, but one will be fetched
    with pytest.raises(ToolMissing) as caught:
        preflight(bare, _config("host"), "local")
    assert "toolkits = 'fetch'" in str(caught.value.hint)
    blocked = _plan("host", "13.0.2", host=bare)
    assert blocked.reason is not None and blocked.reason.startswith("needs nvcc; none found")


def test_the_container_mode_is_untouched_by_toolkits() -> None:
    config = _config("fetch")
    job = _job(config, "13.1.1")
    plan = plan_job(job, config, HOST, mode="container", out_dir=Path("/out"))
    assert not any(s.name == "toolkit" for s in plan.steps)
