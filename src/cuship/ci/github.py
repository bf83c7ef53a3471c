"""GitHub Actions: one workflow, ``.github/workflows/cuship.yml``, as plain Python data.

Jobs: ``prepare`` (the matrix as JSON) → ``build`` (one job per matrix entry, wheel uploaded as the
artifact ``wheel-<job id>``); ``check`` (quick, every PR and push) or ``nightly`` (thorough, against
the baseline the previous nightly run left as an artifact); ``gpu-<name>`` per configured runner;
``release`` (date tag, GitHub release, index with ``--keep-existing``) and ``deploy`` (Pages).
"""

from __future__ import annotations

from typing import Any

from cuship import settings
from cuship.ci.context import CiContext
from cuship.compat.actions import uses

__all__ = [
    "ACTIONLINT_CONFIG",
    "RELEASE_WORKFLOW",
    "WORKFLOW",
    "actionlint_config",
    "github_workflow",
    "literal",
    "release_workflow",
]

WORKFLOW = ".github/workflows/cuship.yml"
# Releases build in a workflow of their own, with no compile or uv cache: a cache a pull
# request's run could have written never reaches a published wheel (zizmor's cache-poisoning).
RELEASE_WORKFLOW = ".github/workflows/cuship-release.yml"
ACTIONLINT_CONFIG = ".github/actionlint.yaml"

Step = dict[str, Any]
Job = dict[str, Any]

# The checkout keeps no token in .git/config: no later step pushes (zizmor's artipacked audit).
_CHECKOUT: Step = {"uses": uses("actions/checkout"), "with": {"persist-credentials": False}}
_HOST_DIRS = {
    "/usr/share/dotnet": "/host/dotnet",
    "/usr/local/lib/android": "/host/android",
    "/opt/ghc": "/host/ghc",
    "/opt/hostedtoolcache/CodeQL": "/host/codeql",
}
_NOT_PR = "github.event_name != 'pull_request'"
_RELEASE = "github.event_name != 'workflow_dispatch' || inputs.release"
_VENV = '"$RUNNER_TEMP/venv"'


def literal(value: str) -> str:
    """``value`` as GitHub reads it back verbatim: a ``${{`` in a config value (a name, a path,
    a note) would otherwise be evaluated as an expression wherever the workflow holds it."""
    return value.replace("${{", "${{ '${{' }}")


def _install_script() -> str:
    """A venv of ``$PYTHON`` on PATH and the requirements of ``$PINNED_CUSHIP`` in it."""
    return "\n".join(
        [
            f'uv venv --python "$PYTHON" {_VENV}',
            'echo "$RUNNER_TEMP/venv/bin" >> "$GITHUB_PATH"',
            'echo "VIRTUAL_ENV=$RUNNER_TEMP/venv" >> "$GITHUB_ENV"',
            "# one requirement a line; installed as a requirements file, never as script text",
            'printf \'%s\\n\' "$PINNED_CUSHIP" > "$RUNNER_TEMP/cuship-requirements.txt"',
            'uv pip install --python "$RUNNER_TEMP/venv/bin/python" pip '
            '-r "$RUNNER_TEMP/cuship-requirements.txt"',
        ]
    )


def _python(ctx: CiContext, version: str) -> list[Step]:
    """A virtual environment of ``version`` on PATH, and cuship in it: cuship's own action when
    the pin names its commit on GitHub, else uv and a run step."""
    if ctx.pin.action is not None:
        inputs = {"python": version, "cuship": "${{ env.PINNED_CUSHIP }}"}
        return [{"name": "Python with cuship", "uses": ctx.pin.action, "with": inputs}]
    return [
        # no uv cache: this workflow publishes what it builds (zizmor's cache-poisoning audit)
        {"uses": uses("astral-sh/setup-uv"), "with": {"enable-cache": False}},
        {"name": "Python with cuship", "env": {"PYTHON": version}, "run": _install_script()},
    ]


def _upload(name: str, path: str, **extra: Any) -> Step:
    return {
        "name": f"Upload {name}",
        "uses": uses("actions/upload-artifact"),
        **({"if": extra.pop("when")} if "when" in extra else {}),
        "with": {"name": name, "path": path, **extra},
    }


def _prepare(ctx: CiContext) -> Job:
    run = "\n".join(
        [
            'matrix="$(cuship matrix "$PROJECT" --format github)"',
            'echo "matrix=$matrix" >> "$GITHUB_OUTPUT"',
            'echo "$matrix" | python -m json.tool',
        ]
    )
    return {
        "name": "matrix",
        "runs-on": list(ctx.ci.runs_on),
        "timeout-minutes": 15,
        "outputs": {"matrix": "${{ steps.matrix.outputs.matrix }}"},
        "steps": [
            _CHECKOUT,
            *_python(ctx, ctx.ci.python),
            {"name": "Expand the build matrix", "id": "matrix", "run": run},
        ],
    }


def _clean_disk(ctx: CiContext) -> list[Step]:
    if not (ctx.ci.clean_disk and ctx.hosted):
        return []
    if ctx.ci.container:
        targets = " ".join(f"{inside}/*" for inside in _HOST_DIRS.values())
        run = f"rm -rf {targets} || true\ndf -h /"
    else:
        run = f"sudo rm -rf {' '.join(_HOST_DIRS)} || true\ndf -h /"
    return [{"name": "Free disk on the hosted runner", "run": run}]


def _sccache(ctx: CiContext) -> tuple[list[Step], dict[str, str]]:
    if not ctx.sccache:
        return [], {}
    if ctx.ci.sccache == "gha":
        return [{"uses": uses("mozilla-actions/sccache-action")}], {"SCCACHE_GHA_ENABLED": "true"}
    cache = {
        "uses": uses("actions/cache"),
        "with": {
            "path": "${{ github.workspace }}/.sccache",
            "key": "sccache-${{ matrix.job }}-${{ github.sha }}",
            "restore-keys": "sccache-${{ matrix.job }}-",
        },
    }
    return [cache], {"SCCACHE_DIR": "${{ github.workspace }}/.sccache"}


def _build_steps(ctx: CiContext, cache_steps: list[Step]) -> list[Step]:
    """Set up, build the matrix entry's wheel: one step of cuship's action when it is known."""
    if ctx.pin.action is not None:
        build: Step = {
            "name": "Build, repair, label and verify the wheel",
            "uses": ctx.pin.action,
            "with": {
                "command": "build",
                "path": "${{ env.PROJECT }}",
                "args": "--job ${{ matrix.job }} -o wheelhouse",
                "python": "${{ matrix.python }}",
                "cuship": "${{ env.PINNED_CUSHIP }}",
            },
        }
        return [*cache_steps, build]
    run = 'cuship build "$PROJECT" --job "$JOB" -o wheelhouse'
    return [
        *_python(ctx, "${{ matrix.python }}"),
        *cache_steps,
        {"name": "Build, repair, label and verify the wheel", "run": run},
    ]


def _build(ctx: CiContext, *, cached: bool = True) -> Job:
    cache_steps, env = _sccache(ctx) if cached else ([], {})
    job: Job = {
        "name": "build ${{ matrix.job }}",
        "needs": "prepare",
        "runs-on": list(ctx.ci.runs_on),
        "timeout-minutes": ctx.ci.timeout_minutes,
        "strategy": {
            "fail-fast": False,
            "max-parallel": ctx.ci.max_parallel,
            "matrix": "${{ fromJSON(needs.prepare.outputs.matrix) }}",
        },
    }
    if ctx.ci.container:
        container: dict[str, Any] = {"image": ctx.github_image()}
        if ctx.ci.clean_disk and ctx.hosted:
            container["volumes"] = [f"{host}:{inside}" for host, inside in _HOST_DIRS.items()]
        job["container"] = container
    job["env"] = {"JOB": "${{ matrix.job }}", **env}
    job["steps"] = [
        *_clean_disk(ctx),
        _CHECKOUT,
        *_build_steps(ctx, cache_steps),
        _upload("wheel-${{ matrix.job }}", "wheelhouse/*.whl", **{"if-no-files-found": "error"}),
    ]
    return job


def _engines(ctx: CiContext) -> Step:
    """What the declared engines need: torch's CPU build, the project's dependencies."""
    lines = ctx.check_installs("$RUNNER_TEMP/venv/bin/python")
    return {
        "name": "Engines of the checks (torch CPU, the project's dependencies)",
        "run": "\n".join(lines) or "true",
    }


def _built_wheel(ctx: CiContext) -> list[Step]:
    """The check jobs test what the build job built: its wheel for the check's Python,
    installed before checking (a package whose import loads its compiled library cannot be
    checked from its source tree)."""
    if not (ctx.builds and ctx.gpu_job):
        return []
    return [
        {
            "name": "Wheel of the build job for this Python",
            "uses": uses("actions/download-artifact"),
            "with": {"name": ctx.gpu_wheel_artifact(), "path": "wheelhouse"},
        },
        {"name": "Install the wheel", "run": "uv pip install wheelhouse/*.whl"},
    ]


def _check_job(ctx: CiContext, name: str, condition: str, minutes: int) -> Job:
    job: Job = {"name": name, "if": condition}
    if ctx.builds and ctx.gpu_job:
        job["needs"] = "build"
    return job | {"runs-on": list(ctx.ci.runs_on), "timeout-minutes": minutes}


def _installed(ctx: CiContext) -> str:
    return " --installed" if ctx.builds and ctx.gpu_job else ""


def _check_quick(ctx: CiContext) -> Job:
    run = (
        f'cuship check "$PROJECT" --quick --require-engines{_installed(ctx)} '
        "--format junit -o check-junit.xml"
    )
    return _check_job(ctx, "check (quick)", "github.event_name != 'schedule'", 60) | {
        "steps": [
            _CHECKOUT,
            *_python(ctx, ctx.check_python),
            _engines(ctx),
            *_built_wheel(ctx),
            {"name": "Check kernels against references (quick)", "run": run},
            _upload("check-junit", "check-junit.xml", when="always()"),
        ],
    }


def _check_nightly(ctx: CiContext) -> Job:
    run = "\n".join(
        [
            "args=()",
            "if [ -f baseline/check-baseline.json ]; then",
            "  args=(--baseline baseline/check-baseline.json --fail-on-regression)",
            "else",
            '  echo "::warning::no baseline from an earlier nightly run: this run sets the first one"',
            "fi",
            f'cuship check "$PROJECT" "${{args[@]}}" --require-engines{_installed(ctx)} \\',
            "  --save-baseline check-baseline.json \\",
            "  --format junit -o check-junit.xml",
        ]
    )
    download = {
        "name": "Baseline of the last nightly run",
        "uses": uses("dawidd6/action-download-artifact"),
        "with": {
            "workflow": WORKFLOW.rsplit("/", 1)[-1],
            "name": "check-baseline",
            "path": "baseline",
            "search_artifacts": True,
            "workflow_conclusion": "",
            "if_no_artifact_found": "warn",
        },
    }
    job = _check_job(ctx, "check (thorough, nightly)", "github.event_name == 'schedule'", 180)
    return job | {
        "permissions": {"contents": "read", "actions": "read"},
        "steps": [
            _CHECKOUT,
            *_python(ctx, ctx.check_python),
            _engines(ctx),
            *_built_wheel(ctx),
            download,
            {"name": "Check kernels, compared with the baseline", "run": run},
            _upload("check-nightly-junit", "check-junit.xml", when="always()"),
            _upload("check-baseline", "check-baseline.json", **{"retention-days": 90}),
        ],
    }


def _gpu(ctx: CiContext, name: str, labels: tuple[str, ...]) -> Job:
    out = f"gpu-{name}"
    run = 'cuship gpu-run "$PROJECT" --wheels wheelhouse -o "$OUT" --venv "$RUNNER_TEMP/gpu-venv"'
    steps: list[Step] = [
        _CHECKOUT,
        *_python(ctx, ctx.gpu_job.python if ctx.gpu_job else ctx.ci.python),
        {
            "name": "Wheel built for this runner",
            "uses": uses("actions/download-artifact"),
            "with": {"name": ctx.gpu_wheel_artifact(), "path": "wheelhouse"},
        },
        # The wheel's dependencies (and pytest) come from the network into cuship's venv;
        # gpu-run installs the wheel itself into a fresh venv layered on it, without deps.
        {
            "name": "pytest and the wheel's dependencies",
            "run": "uv pip install pytest wheelhouse/*.whl",
        },
        {"name": "GPU tests, kernel checks and benchmarks of the wheel", "run": run},
        _upload(f"{out}-results", out, when="always()"),
    ]
    return {
        "name": f"gpu ({name})",
        "needs": "build",
        # Self-hosted runners should not run code from forks' pull requests.
        "if": _NOT_PR,
        "runs-on": list(labels),
        "timeout-minutes": 120,
        "env": {"OUT": out},
        "steps": steps,
    }


def _release_script() -> str:
    """The release step's script: constant text; what the config says reaches it through the
    step's ``env`` (``RELEASE_NOTES``), never pasted into the script."""
    return "\n".join(
        [
            'if [ "$GITHUB_REF_TYPE" = tag ]; then tag="$GITHUB_REF_NAME"; '
            'else tag="$(date -u +%Y.%m.%d)-$GITHUB_RUN_NUMBER"; fi',
            'echo "tag=$tag" >> "$GITHUB_OUTPUT"',
            "# The site of the latest release, so that its wheels stay listed (--keep-existing).",
            "if gh release download --pattern cuship-site.tar.gz --dir previous; then",
            "  mkdir -p site && tar -xzf previous/cuship-site.tar.gz -C site",
            "fi",
            "# Signed build provenance per wheel when the repository has a signing key secret",
            "# (cuship keygen; the index links each WHEEL.intoto.jsonl).",
            'if [ -n "${CUSHIP_SIGNING_KEY:-}" ]; then',
            '  printf \'%s\\n\' "$CUSHIP_SIGNING_KEY" > "$RUNNER_TEMP/cuship-key.pem"',
            '  cuship attest wheelhouse/*.whl --key "$RUNNER_TEMP/cuship-key.pem"',
            "fi",
            'base="https://github.com/$GITHUB_REPOSITORY/releases/download/$tag/"',
            'cuship index wheelhouse -o site --base-url "$base" --keep-existing',
            "tar -czf cuship-site.tar.gz -C site .",
            "# PEP 658 metadata and attestations sit beside each wheel, where the index links them.",
            "assets=(wheelhouse/*.whl)",
            "for w in wheelhouse/*.whl; do",
            '  assets+=("site/files/$(basename "$w").metadata")',
            '  if [ -f "$w.intoto.jsonl" ]; then assets+=("$w.intoto.jsonl"); fi',
            "done",
            'gh release create "$tag" "${assets[@]}" cuship-site.tar.gz --target "$GITHUB_SHA" \\',
            '  --title "$tag" --notes "$RELEASE_NOTES"',
        ]
    )


def _notes(ctx: CiContext) -> str:
    """The release notes: every project built, and how to install one from the index."""
    return (  # a context always has jobs (context_for refuses an empty matrix): a project
        f"Wheels of {', '.join(ctx.projects)} built by cuship; install one with pip install "
        f"{ctx.projects[0]} "
        "--index-url <Pages URL>/simple/ --extra-index-url https://pypi.org/simple"
    )


def _release(ctx: CiContext) -> Job:
    return {
        "name": "release",
        "needs": "build",
        "if": _RELEASE,
        "runs-on": list(ctx.ci.runs_on),
        "timeout-minutes": 30,
        "permissions": {"contents": "write"},
        "outputs": {"tag": "${{ steps.release.outputs.tag }}"},
        "steps": [
            _CHECKOUT,
            *_python(ctx, ctx.ci.python),
            {
                "name": "Every wheel of this run",
                "uses": uses("actions/download-artifact"),
                "with": {"pattern": "wheel-*", "merge-multiple": True, "path": "wheelhouse"},
            },
            {
                "name": "Release with a date tag, index pointing at its assets",
                "id": "release",
                "env": {
                    "GH_TOKEN": "${{ github.token }}",
                    settings.SIGNING_KEY: "${{ secrets.CUSHIP_SIGNING_KEY }}",
                    "RELEASE_NOTES": literal(_notes(ctx)),
                },
                "run": _release_script(),
            },
            {"uses": uses("actions/upload-pages-artifact"), "with": {"path": "site"}},
        ],
    }


def _deploy(ctx: CiContext) -> Job:
    return {
        "name": "deploy the index to Pages",
        "needs": "release",
        "runs-on": list(ctx.ci.runs_on),
        "timeout-minutes": 15,
        "permissions": {"pages": "write", "id-token": "write"},
        "environment": {"name": "github-pages", "url": "${{ steps.deployment.outputs.page_url }}"},
        "steps": [{"id": "deployment", "uses": uses("actions/deploy-pages")}],
    }


PAGES_NOTE = (
    "Pages: the deploy job publishes the index of a release, which runs on a v* tag or a",
    "dispatch with release. Before the first one, in the repository's settings: Pages -> Source:",
    '"GitHub Actions"; Environments -> github-pages -> Deployment branches and tags: add a tag',
    "rule v* (its default admits only the default branch, and a tag's deploy is refused).",
)


def _triggers(ctx: CiContext) -> dict[str, Any]:
    return {
        "pull_request": {"branches": ["main"]},
        "push": {"branches": ["main"]},
        "schedule": [{"cron": ctx.ci.nightly_cron}],
        "workflow_dispatch": {},
    }


def _release_triggers() -> dict[str, Any]:
    release = {
        "description": "Publish a release (date tag) and its index on GitHub Pages",
        "type": "boolean",
        "default": False,
    }
    return {"push": {"tags": ["v*"]}, "workflow_dispatch": {"inputs": {"release": release}}}


def _document(
    name: str, on: dict[str, Any], ctx: CiContext, jobs: dict[str, Job]
) -> dict[str, Any]:
    return {
        "name": name,
        "on": on,
        "permissions": {"contents": "read"},
        "concurrency": {
            "group": f"{name}-${{{{ github.ref }}}}",
            "cancel-in-progress": "${{ github.event_name == 'pull_request' }}",
        },
        "env": {key: literal(value) for key, value in ctx.variables().items()},
        "jobs": jobs,
    }


def github_workflow(ctx: CiContext) -> dict[str, Any]:
    """The workflow document (``on`` is the string key "on")."""
    jobs: dict[str, Job] = {}
    if ctx.builds:  # a check-only folder of kernels has no package to build
        jobs |= {"prepare": _prepare(ctx), "build": _build(ctx)}
    if ctx.has_checks:  # a project without kernel checks gets no job that fails by design
        jobs |= {"check": _check_quick(ctx), "nightly": _check_nightly(ctx)}
    for name, labels in ctx.ci.gpu_runners.items() if ctx.builds else ():
        jobs[f"gpu-{name}"] = _gpu(ctx, name, labels)
    return _document("cuship", _triggers(ctx), ctx, jobs)


def release_workflow(ctx: CiContext) -> dict[str, Any] | None:
    """The release workflow: on a v* tag or a dispatch with release, every matrix entry built
    afresh (no cache), a GitHub release, its index deployed to Pages. None without [ci] release
    or a package to build."""
    if not (ctx.ci.release and ctx.builds):
        return None
    jobs = {
        "prepare": _prepare(ctx),
        "build": _build(ctx, cached=False),
        "release": _release(ctx),
        "deploy": _deploy(ctx),
    }
    return _document("cuship-release", _release_triggers(), ctx, jobs)


def actionlint_config(ctx: CiContext) -> dict[str, Any] | None:
    """actionlint's config naming the self-hosted runners' custom labels (None when there are none)."""
    sets = [ctx.ci.runs_on, *ctx.ci.gpu_runners.values()]
    labels = [label for ls in sets if "self-hosted" in ls for label in ls]
    custom = [label for label in dict.fromkeys(labels) if label != "self-hosted"]
    if not custom:
        return None
    return {"self-hosted-runner": {"labels": custom}}
