"""SkyPilot: ``sky/cuship-gpu.yaml``, a task that runs the GPU validation on a (spot) cloud GPU.

The wheel travels as a file mount of ``wheelhouse/`` (put the build job's artifact there first);
results are written to a directory that is either a mounted storage bucket (``[ci]
skypilot_bucket``, ``mode: MOUNT``: files written there land in the bucket) or the cluster's work
directory, fetched afterwards with rsync over the SSH alias SkyPilot adds for the cluster.
"""

from __future__ import annotations

from typing import Any

from cuship.ci.context import CiContext

__all__ = ["SKYPILOT_TASK", "skypilot_header", "skypilot_task"]

SKYPILOT_TASK = "sky/cuship-gpu.yaml"
_CLUSTER = "cuship-gpu"
_BUCKET_MOUNT = "/cuship-results"
_WORKDIR_RESULTS = "cuship-results"


def _results_dir(ctx: CiContext) -> str:
    return _BUCKET_MOUNT if ctx.ci.skypilot_bucket else f"~/sky_workdir/{_WORKDIR_RESULTS}"


def _setup(python: str) -> str:
    return "\n".join(
        [
            "set -euo pipefail",
            "python3 -m pip install -q uv || python3 -m pip install -q --break-system-packages uv",
            f'python3 -m uv venv --python "{python}" ~/cuship-venv',
            "# cuship, pytest and the wheel's dependencies; gpu-run installs the wheel itself",
            "printf '%s\\n' \"$PINNED_CUSHIP\" > ~/cuship-requirements.txt",
            "python3 -m uv pip install --python ~/cuship-venv/bin/python pytest "
            "-r ~/cuship-requirements.txt ~/wheelhouse/*.whl",
        ]
    )


def _run(ctx: CiContext) -> str:
    return "\n".join(
        [
            "source ~/cuship-venv/bin/activate",
            f"out={_results_dir(ctx)}",
            'cuship gpu-run "$PROJECT" --wheels ~/wheelhouse -o "$out" --venv ~/cuship-gpu-venv',
        ]
    )


def skypilot_task(ctx: CiContext) -> dict[str, Any]:
    """The task document, for ``sky launch`` from the repository root. Config values reach
    the scripts as ``envs``, never pasted into them."""
    python = ctx.gpu_job.python if ctx.gpu_job else ctx.ci.python
    mounts: dict[str, Any] = {"~/wheelhouse": "./wheelhouse"}
    if ctx.ci.skypilot_bucket:
        mounts[_BUCKET_MOUNT] = {"name": ctx.ci.skypilot_bucket, "mode": "MOUNT"}
    variables = ctx.variables()
    return {
        "name": _CLUSTER,
        "resources": {
            "accelerators": ctx.ci.skypilot_accelerators,
            "use_spot": ctx.ci.use_spot,
        },
        "workdir": ".",
        "file_mounts": mounts,
        "envs": {k: variables[k] for k in ("PROJECT", "PINNED_CUSHIP")},
        "setup": _setup(python),
        "run": _run(ctx),
    }


def skypilot_header(ctx: CiContext) -> str:
    """Comment lines: how to run the task and get its results back."""
    job = ctx.gpu_job.id if ctx.gpu_job else "<job id>"
    fetch = (
        f"# Results land in the bucket {ctx.ci.skypilot_bucket!r} (mounted at {_BUCKET_MOUNT})."
        if ctx.ci.skypilot_bucket
        else "# Results: rsync -Pavz "
        f"{_CLUSTER}:~/sky_workdir/{_WORKDIR_RESULTS}/ ./{_WORKDIR_RESULTS}/"
    )
    return "\n".join(
        [
            "# GPU validation on a cloud GPU with SkyPilot, from the repository root:",
            f"#   gh run download --name wheel-{job} --dir wheelhouse   (or cuship build)",
            f"#   sky launch -c {_CLUSTER} {SKYPILOT_TASK}",
            fetch,
            f"#   sky down {_CLUSTER}",
            "",
        ]
    )
