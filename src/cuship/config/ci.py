"""The ``[ci]`` section of cuship.toml: what ``cuship ci init`` needs beyond the build matrix.

Kept apart from :mod:`cuship.config` (which re-exports it) so that the generators in
:mod:`cuship.ci` can import the config without a cycle.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from cuship._record import frozen
from cuship.config.values import between
from cuship.config.values import python_version as _python
from cuship.schema import field_doc

__all__ = ["CiSection", "check_requirement"]

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_ACCELERATOR = re.compile(r"^[A-Za-z0-9-]+(:\d+(\.\d+)?)?$")


def _cron(value: str | None) -> None:
    if value is not None and len(value.split()) != 5:
        raise ValueError(f"{value!r} is not a 5-field cron expression such as '17 3 * * *'")


def _runner_label(value: str) -> None:
    if not _LABEL.match(value):
        raise ValueError(f"{value!r} is not a runner label (letters, digits, '-', '_', '.')")


def _runner_table(value: Mapping[str, tuple[str, ...]]) -> None:
    for name, labels in value.items():
        if not _LABEL.match(name):
            raise ValueError(f"{name!r} is not a job name (letters, digits, '-', '_', '.')")
        if not labels:
            raise ValueError(f"{name!r} has no runner labels")
        for label in labels:
            _runner_label(label)


def _requirement(value: str) -> None:
    """A PEP 508 requirement, or a URL or path pip and uv install from."""
    from packaging.requirements import InvalidRequirement, Requirement

    bare_url = "://" in value and " @ " not in value  # "name @ URL" is PEP 508, parsed below
    if bare_url or value.startswith((".", "/", "git+")):
        if any(c.isspace() for c in value):
            raise ValueError(f"{value!r} holds whitespace: write one list item per requirement")
        return
    try:
        Requirement(value)
    except InvalidRequirement as err:
        raise ValueError(
            f"{value!r} is not one requirement ({err}); write one list item per requirement, "
            'e.g. ["cuship[all]", "torch"]'
        ) from err


def check_requirement(value: str, where: str) -> str:
    """``value`` when it is one requirement as [ci] cuship takes them; else UsageError (exit 2)
    naming ``where`` it came from."""
    from cuship.errors import UsageError

    try:
        _requirement(value)
    except ValueError as err:
        raise UsageError(
            f"{where} {value!r} is not one requirement: {err}",
            hint="e.g. --cuship 'cuship[all]==0.1.0' or "
            "--cuship 'cuship[all] @ git+https://github.com/OWNER/cuship@COMMIT'",
        ) from err
    return value


def _accelerator(value: str) -> None:
    if not _ACCELERATOR.match(value):
        raise ValueError(f"{value!r} is not a SkyPilot accelerator such as 'H100:1'")


@frozen
class CiSection:
    """Generated CI (``cuship ci init``): runners, limits, schedules, caches, spot GPUs."""

    runs_on: tuple[str, ...] = field_doc(
        "Runner labels of CPU jobs (prepare, build, check, release).",
        default=("ubuntu-latest",),
        validate=_runner_label,
    )
    gpu_runners: Mapping[str, tuple[str, ...]] = field_doc(
        "One GPU job per entry: name -> self-hosted runner labels, e.g. "
        '{ h100 = ["self-hosted", "gpu", "h100"] }. Empty: no GPU jobs.',
        default_factory=dict,
        validate=_runner_table,
    )
    gpu_job: str | None = field_doc(
        "Build job ID whose wheel the GPU jobs test; default: the newest CUDA for [ci] python.",
        default=None,
    )
    python: str = field_doc(
        "Python of the prepare, check and release jobs (and of the GPU and SkyPilot runs).",
        default="3.12",
        validate=_python,
    )
    cuship: tuple[str, ...] = field_doc(
        "How CI installs cuship: a list of requirements (or URLs), one per item. Default: the "
        "cuship that runs `ci init` (from an index: cuship[all]==its version; from a VCS: "
        "cuship[all] @ git+URL@COMMIT); a local or editable cuship needs this or "
        "`ci init --cuship`.",
        default=(),
        validate=_requirement,
    )
    check_install: tuple[str, ...] = field_doc(
        "More requirements of the check jobs, one per item (the project's own dependencies "
        "come from its pyproject.toml).",
        default=(),
        validate=_requirement,
    )
    torch_index: str = field_doc(
        "Index of the torch build the check jobs install for the Triton interpreter (torch's "
        "CPU build); '' installs no torch.",
        default="https://download.pytorch.org/whl/cpu",
    )
    timeout_minutes: int = field_doc(
        "Per-job timeout of build jobs (hosted runners stop at 360; at most 10080, a week).",
        default=360,
        validate=between(1, 10080),
    )
    max_parallel: int = field_doc(
        "Build jobs running at once (at most 256).", default=8, validate=between(1, 256)
    )
    nightly_cron: str = field_doc(
        "Schedule of the thorough check (UTC, cron).", default="17 3 * * *", validate=_cron
    )
    container: bool = field_doc(
        "Build inside the [build] image per CUDA version (GitHub: the job's container).",
        default=True,
    )
    clean_disk: bool = field_doc(
        "Free disk on hosted runners before building (dotnet, android, ghc, CodeQL).",
        default=True,
    )
    sccache: Literal["gha", "actions-cache"] = field_doc(
        "Where sccache keeps its cache between runs when [build] cache = 'sccache': 'gha' (the "
        "GitHub Actions cache backend) or 'actions-cache' (a directory saved with actions/cache, "
        "keyed by job ID; on GitLab always the job cache).",
        default="gha",
    )
    pytest_args: tuple[str, ...] = field_doc(
        "Arguments of the GPU jobs' pytest run, relative to the project.", default=()
    )
    bench: bool = field_doc(
        "Run `cuship bench --assert-floors` in GPU jobs (the bench stage of `cuship gpu-run`).",
        default=True,
    )
    release: bool = field_doc(
        "Generate the release job (GitHub release with a date tag, index on Pages).",
        default=True,
    )
    skypilot_accelerators: str = field_doc(
        "SkyPilot accelerator of the spot GPU task.", default="H100:1", validate=_accelerator
    )
    use_spot: bool = field_doc("Ask SkyPilot for a spot instance.", default=True)
    skypilot_bucket: str | None = field_doc(
        "A storage bucket mounted at /cuship-results to copy results back; default: none "
        "(fetch them with rsync, as the task's comments say).",
        default=None,
    )
    gitlab_gpu_tags: Mapping[str, tuple[str, ...]] = field_doc(
        "GitLab runner tags per GPU job; default: the labels of gpu_runners without 'self-hosted'.",
        default_factory=dict,
        validate=_runner_table,
    )

    def gpu_tags(self) -> dict[str, tuple[str, ...]]:
        """GitLab tags per GPU job name."""
        if self.gitlab_gpu_tags:
            return dict(self.gitlab_gpu_tags)
        return {
            name: tuple(t for t in labels if t != "self-hosted")
            for name, labels in self.gpu_runners.items()
        }
