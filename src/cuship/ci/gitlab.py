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

from cuship.ci.context import BUILT_WHEELS, CiContext
from cuship.ci.matrix import to_gitlab
from cuship.index import STATE_DIR
from cuship.matrix import BuildJob

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


def _install() -> list[str]:
    """Shell lines: uv, a virtual environment of ``$PYTHON`` (a fresh directory: jobs of a
    shell runner share /tmp) holding uv, pip and ``$PINNED_CUSHIP``, then on PATH. uv
    goes into the venv too: once the venv is on PATH, ``python3`` is the venv's, and the
    later ``python3 -m uv`` lines need it there (gitlab-ci-local's run found this)."""
    return [
        "command -v python3 >/dev/null || "
        "(apt-get update -qq && apt-get install -y -qq python3-pip >/dev/null)",
        "python3 -m pip install -q uv || python3 -m pip install -q --break-system-packages uv",
        'JOB_VENV="$(mktemp -d)/venv"',
        'python3 -m uv venv --python "$PYTHON" "$JOB_VENV"',
        'printf \'%s\\n\' "$PINNED_CUSHIP" > "$JOB_VENV/cuship-requirements.txt"',
        'python3 -m uv pip install --python "$JOB_VENV/bin/python" uv pip '
        '-r "$JOB_VENV/cuship-requirements.txt"',
        'export PATH="$JOB_VENV/bin:$PATH" VIRTUAL_ENV="$JOB_VENV"',
    ]


def _engines(ctx: CiContext) -> list[str]:
    """What the declared engines need: torch's CPU build (unless ``$TORCH_INDEX`` is empty),
    the project's dependencies."""
    lines = [f"python3 -m {x}" if x.startswith("uv ") else x for x in ctx.check_installs()]
    return [f'if [ -n "$TORCH_INDEX" ]; then {x}; fi' if "TORCH_INDEX" in x else x for x in lines]


# ENGINES=allow-missing: a runner that cannot reach torch's index (a proxy, an offline runner)
# checks with the engines it has; the check's summary names each engine left out.
_ENGINES_OPTION = (
    'if [ "${ENGINES:-require}" = allow-missing ]; then set -- --allow-missing-engines; '
    "else set -- --require-engines; fi"
)


def _variables(values: dict[str, str]) -> dict[str, Any]:
    """Job or pipeline variables taken as they are: GitLab expands ``$NAME`` inside a
    variable's value unless told not to, so a config value never reads another variable."""
    return {name: {"value": value, "expand": False} for name, value in values.items()}


def _python_job(ctx: CiContext, python: str) -> Job:
    """The common part of a job that installs cuship in a venv of ``python``."""
    return {
        "image": f"python:{python}",
        "variables": _variables({"PYTHON": python}),
        "before_script": _install(),
    }


def _drift(ctx: CiContext) -> Job:
    """Regenerate the file with the same cuship pin and compare, comments aside (they say why
    the pin is what it is, which a pin passed back in words differently)."""
    script = "\n".join(
        [
            "set --",
            "while IFS= read -r requirement; do",
            '  set -- "$@" --cuship "$requirement"',
            "done <<EOF",
            "$PINNED_CUSHIP",
            "EOF",
            'cuship ci init "$PROJECT" --provider gitlab --print -o . "$@" > "$JOB_VENV/regenerated.yml"',
            f"grep -v '^#' {GITLAB_CI} > \"$JOB_VENV/committed.yml\"",
            'grep -v \'^#\' "$JOB_VENV/regenerated.yml" | diff -u "$JOB_VENV/committed.yml" -',
        ]
    )
    return {"stage": ".pre", **_python_job(ctx, ctx.ci.python), "script": [script]}


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
    job["before_script"] = _install()
    job["script"] = ['cuship build "$PROJECT" --job "$JOB" -o wheelhouse']
    job["artifacts"] = {"name": "wheel-$JOB", "paths": ["wheelhouse/*.whl"], "expire_in": "30 days"}
    return job


def _built_wheel(ctx: CiContext) -> tuple[list[Any], list[str], str]:
    """needs, install lines and check option: the check jobs install the wheel the build job
    made for their Python before checking (an import that loads a compiled library cannot be
    checked from the source tree)."""
    if not (ctx.builds and ctx.gpu_job):
        return [], [], ""
    needs = [{"job": "build", "parallel": {"matrix": _matrix((ctx.gpu_job,))}}]
    return needs, [f"python3 -m uv pip install {BUILT_WHEELS}"], " --installed"


def _check_quick(ctx: CiContext) -> Job:
    needs, install, installed = _built_wheel(ctx)
    job = _python_job(ctx, ctx.check_python)
    return {
        "stage": "check",
        **job,
        "needs": needs,
        "rules": [{"if": _SCHEDULE, "when": "never"}, {"when": "on_success"}],
        "before_script": [*job["before_script"], *_engines(ctx), *install],
        "script": [
            _ENGINES_OPTION,
            f'cuship check "$PROJECT" --quick "$@"{installed} --format junit -o check-junit.xml',
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
            "  set -- --baseline baseline.json --fail-on-regression",
            "else",
            "  set --",
            '  echo "no baseline from an earlier nightly pipeline: this one sets the first"',
            "fi",
        ]
    )
    needs, install, installed = _built_wheel(ctx)
    check = (
        f'cuship check "$PROJECT" "$@" --require-engines{installed} '
        "--save-baseline check-baseline.json --format junit -o check-junit.xml"
    )
    job = _python_job(ctx, ctx.check_python)
    return {
        "stage": "check",
        **job,
        "needs": needs,
        "rules": [{"if": _SCHEDULE}],
        "before_script": [*job["before_script"], *_engines(ctx), *install],
        "script": [fetch, check],
        "artifacts": {
            "when": "always",
            "paths": ["check-baseline.json"],
            "expire_in": "90 days",
            "reports": {"junit": "check-junit.xml"},
        },
    }


def _index(ctx: CiContext) -> Job:
    """Every build job's wheel, merged into one static index (the pages job publishes it)."""
    return {
        "stage": "index",
        **_python_job(ctx, ctx.ci.python),
        "needs": [{"job": "build", "artifacts": True}],
        # the index's own scan cache (runner paths) stays out of the pages artifact
        "script": ["cuship index wheelhouse -o site", f"rm -rf site/{STATE_DIR}"],
        "artifacts": {"paths": ["site/"], "expire_in": "30 days"},
    }


def _pages(ctx: CiContext) -> Job:
    """GitLab Pages serves the job named ``pages``'s ``public/``: the index, from the default
    branch and from tags, once the quick check of the built wheel passed (``needs`` alone
    would publish it beside a red check; optional: a scheduled pipeline has no quick check)."""
    needs: list[Any] = [{"job": "index", "artifacts": True}]
    if ctx.has_checks:
        needs.append({"job": "check-quick", "artifacts": False, "optional": True})
    return {
        "stage": "deploy",
        "image": "alpine:3.20",
        "needs": needs,
        "rules": [{"if": "$CI_COMMIT_TAG"}, {"if": _DEFAULT_BRANCH}],
        "script": ["rm -rf public", "mv site public"],
        "artifacts": {"paths": ["public/"]},
    }


def _gpu(ctx: CiContext, name: str, tags: tuple[str, ...]) -> Job:
    gpu_job = ctx.gpu_job
    script = [
        # The wheel's dependencies (and pytest) come from the network into cuship's venv;
        # gpu-run installs the wheel itself into a fresh venv layered on it, without deps.
        f"python3 -m uv pip install pytest {BUILT_WHEELS}",
        'cuship gpu-run "$PROJECT" --wheels wheelhouse -o "$OUT" --venv "$JOB_VENV-gpu"',
    ]
    needs: list[Any] = []
    if gpu_job is not None:
        needs = [{"job": "build", "parallel": {"matrix": _matrix((gpu_job,))}}]
    out = f"gpu-{name}"
    junit = [f"{out}/pytest.xml"] + ([f"{out}/check.xml"] if ctx.config.check.modules else [])
    job = _python_job(ctx, gpu_job.python if gpu_job else ctx.ci.python)
    del job["image"]  # the runner's own (a GPU machine)
    job["variables"] |= _variables({"OUT": out})
    return {
        "stage": "gpu",
        "tags": list(tags),
        "needs": needs,
        "rules": [{"if": _MR, "when": "never"}, {"when": "on_success"}],
        **job,
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
        "variables": _variables(ctx.variables()),
        "stages": [
            stage
            for stage, wanted in (
                ("build", ctx.builds),
                ("check", ctx.has_checks),
                ("index", ctx.builds),
                ("gpu", ctx.builds),
                ("deploy", ctx.builds),
            )
            if wanted
        ],
    }
    if ctx.builds:  # a check-only folder of kernels has no package to build
        doc |= {"matrix-drift": _drift(ctx), "build": _build(ctx)}
    if ctx.has_checks:  # a project without kernel checks gets no job that fails by design
        doc |= {"check-quick": _check_quick(ctx), "check-nightly": _check_nightly(ctx)}
    if ctx.builds:
        doc |= {"index": _index(ctx), "pages": _pages(ctx)}
        for name, tags in ctx.ci.gpu_tags().items():
            doc[f"gpu-{name}"] = _gpu(ctx, name, tags)
    return doc
