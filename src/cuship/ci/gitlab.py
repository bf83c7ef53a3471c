"""GitLab CI: ``.gitlab-ci.yml`` with the build matrix written in, statically.

Why static and not a child pipeline generated at run time: the file stays one readable document
that GitLab's schema (and a reviewer) can check whole, ``parallel:matrix`` keeps GitLab's own
job names and ``needs:parallel:matrix`` can pick the GPU job's wheel. Drift is caught instead:
the ``matrix-drift`` job regenerates the file with ``cuship ci init --print`` and fails when it
differs, so a changed cuship.toml cannot silently build an old matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuship.ci.context import CiContext
from cuship.matrix import BuildJob, to_gitlab

__all__ = ["GITLAB_CI", "gitlab_ci"]

GITLAB_CI = ".gitlab-ci.yml"

Job = dict[str, Any]

_MR = '$CI_PIPELINE_SOURCE == "merge_request_event"'
_SCHEDULE = '$CI_PIPELINE_SOURCE == "schedule"'
_DEFAULT_BRANCH = "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH"


def _matrix(jobs: Sequence[BuildJob]) -> list[dict[str, str]]:
    """``parallel:matrix`` entries with one value each, written as scalars (GitLab takes both)."""
    entries: list[dict[str, list[str]]] = to_gitlab(jobs)["parallel"]["matrix"]
    return [{key: values[0] for key, values in entry.items()} for entry in entries]


def _install(ctx: CiContext, python: str) -> list[str]:
    """Shell lines: uv, a virtual environment of ``python`` on PATH, cuship in it."""
    return [
        "command -v python3 >/dev/null || "
        "(apt-get update -qq && apt-get install -y -qq python3-pip >/dev/null)",
        "python3 -m pip install -q uv || python3 -m pip install -q --break-system-packages uv",
        f'python3 -m uv venv --python "{python}" /tmp/venv',
        'export PATH="/tmp/venv/bin:$PATH" VIRTUAL_ENV=/tmp/venv',
        f"python3 -m uv pip install pip {ctx.cuship_requirements}",
    ]


def _engines(ctx: CiContext) -> list[str]:
    """What the declared engines need: torch's CPU build, the project's dependencies."""
    return [f"python3 -m {line}" for line in ctx.check_installs()]


def _drift(ctx: CiContext) -> Job:
    regenerate = f"cuship ci init {ctx.arg} --provider gitlab --print -o ."
    return {
        "stage": ".pre",
        "image": f"python:{ctx.ci.python}",
        "before_script": _install(ctx, ctx.ci.python),
        "script": [f"{regenerate} | diff -u {GITLAB_CI} -"],
    }


def _build(ctx: CiContext) -> Job:
    job: Job = {
        "stage": "build",
        "timeout": f"{ctx.ci.timeout_minutes} minutes",
        "parallel": {"matrix": _matrix(ctx.jobs)},
    }
    if ctx.ci.container:
        job["image"] = ctx.gitlab_image()
    if ctx.sccache:
        job["variables"] = {"SCCACHE_DIR": "$CI_PROJECT_DIR/.sccache"}
        job["cache"] = {"key": "sccache-$JOB", "paths": [".sccache/"]}
    job["before_script"] = _install(ctx, "$PYTHON")
    job["script"] = [f'cuship build {ctx.arg} --job "$JOB" -o wheelhouse']
    job["artifacts"] = {"name": "wheel-$JOB", "paths": ["wheelhouse/*.whl"], "expire_in": "30 days"}
    return job


def _check_quick(ctx: CiContext) -> Job:
    return {
        "stage": "check",
        "image": f"python:{ctx.ci.python}",
        "needs": [],
        "rules": [{"if": _SCHEDULE, "when": "never"}, {"when": "on_success"}],
        "before_script": [*_install(ctx, ctx.ci.python), *_engines(ctx)],
        "script": [
            f"cuship check {ctx.arg} --quick --require-engines --format junit -o check-junit.xml"
        ],
        "artifacts": {"when": "always", "reports": {"junit": "check-junit.xml"}},
    }


def _check_nightly(ctx: CiContext) -> Job:
    url = (
        "$CI_API_V4_URL/projects/$CI_PROJECT_ID/jobs/artifacts/$CI_DEFAULT_BRANCH"
        "/raw/check-baseline.json?job=check-nightly"
    )
    fetch = "\n".join(
        [
            f'if curl -fsSL --header "JOB-TOKEN: $CI_JOB_TOKEN" "{url}" -o baseline.json; then',
            "  args=(--baseline baseline.json --fail-on-regression)",
            "else",
            "  args=()",
            '  echo "no baseline from an earlier nightly pipeline: this one sets the first"',
            "fi",
        ]
    )
    check = (
        f'cuship check {ctx.arg} "${{args[@]}}" --require-engines '
        "--save-baseline check-baseline.json --format junit -o check-junit.xml"
    )
    return {
        "stage": "check",
        "image": f"python:{ctx.ci.python}",
        "needs": [],
        "rules": [{"if": _SCHEDULE}],
        "before_script": [*_install(ctx, ctx.ci.python), *_engines(ctx)],
        "script": [fetch, check],
        "artifacts": {
            "when": "always",
            "paths": ["check-baseline.json"],
            "expire_in": "90 days",
            "reports": {"junit": "check-junit.xml"},
        },
    }


def _gpu(ctx: CiContext, name: str, tags: tuple[str, ...]) -> Job:
    gpu_job = ctx.gpu_job
    out = f"gpu-{name}"
    script = [
        # The wheel's dependencies (and pytest) come from the network into cuship's venv;
        # gpu-run installs the wheel itself into a fresh venv layered on it, without deps.
        "uv pip install pytest wheelhouse/*.whl",
        f"cuship gpu-run {ctx.arg} --wheels wheelhouse -o {out} --venv /tmp/gpu-venv",
    ]
    needs: list[Any] = []
    if gpu_job is not None:
        needs = [{"job": "build", "parallel": {"matrix": _matrix((gpu_job,))}}]
    junit = [f"{out}/pytest.xml"] + ([f"{out}/check.xml"] if ctx.config.check.modules else [])
    return {
        "stage": "gpu",
        "tags": list(tags),
        "needs": needs,
        "rules": [{"if": _MR, "when": "never"}, {"when": "on_success"}],
        "before_script": _install(ctx, gpu_job.python if gpu_job else ctx.ci.python),
        "script": script,
        "artifacts": {"when": "always", "paths": [f"{out}/"], "reports": {"junit": junit}},
    }


def gitlab_ci(ctx: CiContext) -> dict[str, Any]:
    """The ``.gitlab-ci.yml`` document."""
    doc: dict[str, Any] = {
        "workflow": {
            "rules": [
                {"if": _MR},
                {"if": _SCHEDULE},
                {"if": "$CI_COMMIT_TAG"},
                {"if": _DEFAULT_BRANCH},
            ]
        },
        "stages": [
            stage
            for stage, wanted in (
                ("build", ctx.builds),
                ("check", ctx.has_checks),
                ("gpu", ctx.builds),
            )
            if wanted
        ],
    }
    if ctx.builds:  # a check-only folder of kernels has no package to build
        doc |= {"matrix-drift": _drift(ctx), "build": _build(ctx)}
        for name, tags in ctx.ci.gpu_tags().items():
            doc[f"gpu-{name}"] = _gpu(ctx, name, tags)
    if ctx.has_checks:  # a project without kernel checks gets no job that fails by design
        doc |= {"check-quick": _check_quick(ctx), "check-nightly": _check_nightly(ctx)}
    return doc
