"""Generated CI passes values, never pastes them: every workflow `cuship ci init` writes (and
cuship's own action.yml and release workflow) is zizmor-clean and shellcheck-clean, and hostile
names, paths and requirements run nothing when the generated steps' scripts run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.ci_validators import (
    Actionlint,
    ValidatorMissing,
    install_actionlint,
    lint_workflow,
    shellcheck_workflow,
    zizmor,
)
from tests.integration.clirun import cuship

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cuvecops"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
PINS = {
    "index": "cuship[all]==0.1.0",
    # a GitHub commit: the workflows set cuship up with its action at that commit
    "action": f"cuship[all] @ git+https://github.com/acme/cuship@{COMMIT}",
}
HOSTILE = "x$(touch PWNED)`touch PWNED`'\"${{ github.event }}"


@pytest.fixture(scope="module")
def actionlint() -> Actionlint:
    try:
        return install_actionlint()
    except ValidatorMissing as err:
        pytest.fail(str(err))


def _init(root: Path, project: str, pin: str, *providers: str) -> None:
    argv = ["ci", "init", project, "-o", ".", "--cuship", pin]
    done = cuship(*argv, *(a for p in providers for a in ("--provider", p)), cwd=root)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("pin", sorted(PINS))
def test_generated_workflows_are_zizmor_shellcheck_and_actionlint_clean(
    pin: str, tmp_path: Path, actionlint: Actionlint
) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "ex", ignore=shutil.ignore_patterns("build", "dist"))
    _init(tmp_path, "ex", PINS[pin], "github")
    workflows = sorted((tmp_path / ".github" / "workflows").glob("*.yml"))
    assert [w.name for w in workflows] == ["cuship-release.yml", "cuship.yml"]
    assert zizmor(*workflows) == []
    for workflow in workflows:
        assert shellcheck_workflow(workflow) == [], workflow.name
        assert lint_workflow(actionlint, workflow, tmp_path / ".github/actionlint.yaml") == []
    text = (tmp_path / ".github/workflows/cuship.yml").read_text()
    assert (f"uses: acme/cuship@{COMMIT}" in text) == (pin == "action")


def test_cuships_own_action_and_release_workflow_are_clean(actionlint: Actionlint) -> None:
    action, release = REPO / "action.yml", REPO / ".github" / "workflows" / "release.yml"
    assert zizmor(action, release) == []
    assert shellcheck_workflow(action) == [] and shellcheck_workflow(release) == []
    assert lint_workflow(actionlint, release, None) == []
    publish = yaml.safe_load(release.read_text())["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["steps"][-1]["uses"].startswith("pypa/gh-action-pypi-publish@")
    inputs = yaml.safe_load(action.read_text())["inputs"]
    assert set(inputs) == {"command", "path", "args", "python", "cuship"}


def test_the_shellcheck_validator_finds_what_actionlint_would(tmp_path: Path) -> None:
    broken = tmp_path / "w.yml"
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: cuship build $PROJECT ${{ matrix.job }}\n"
    )
    assert any("SC2086" in f for f in shellcheck_workflow(broken))


# --- hostile values: run the generated scripts, count the PWNED files -------------------------


def _stubs(bin_dir: Path, log: Path) -> None:
    """cuship, uv, gh, python, curl, ...: record their arguments, one per line, and succeed."""
    bin_dir.mkdir()
    for name in ("cuship", "uv", "gh", "python", "python3", "curl", "tar", "sky", "diff"):
        (bin_dir / name).write_text(
            f'#!/bin/bash\nfor a in "$@"; do printf "%s\\n" "$a"; done >> "{log}"\n'
        )
        (bin_dir / name).chmod(0o755)


def _run(script: str, env: dict[str, str], cwd: Path) -> None:
    subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, timeout=60)


def _github_steps(doc: dict[str, Any]) -> list[tuple[dict[str, str], str]]:
    found = []
    for job in doc["jobs"].values():
        for step in job["steps"]:
            if "run" in step:
                env = {**doc.get("env", {}), **job.get("env", {}), **step.get("env", {})}
                found.append(({k: str(v) for k, v in env.items()}, step["run"]))
    return found


def _gitlab_scripts(doc: dict[str, Any]) -> list[tuple[dict[str, str], str]]:
    top = {k: v["value"] for k, v in doc["variables"].items()}
    found = []
    for job in doc.values():
        if isinstance(job, dict) and "script" in job:
            own = {
                k: (v["value"] if isinstance(v, dict) else v)
                for k, v in job.get("variables", {}).items()
            }
            lines = [*job.get("before_script", []), *job["script"]]
            found.append(({**top, **own, "CI_PROJECT_DIR": "."}, "\n".join(lines)))
    return found


def _github_value(value: str) -> str:
    """What GitHub hands the step for an env value: its ``${{ '${{' }}`` read back."""
    return value.replace("${{ '${{' }}", "${{")


def test_hostile_names_paths_and_requirements_run_nothing(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    project = repo / f"proj {HOSTILE}\nnext line"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("build", "dist"))
    toml = (project / "cuship.toml").read_text()
    hostile_req = "evil @ https://example.org/$(touch${IFS}PWNED)/`touch${IFS}PWNED`.whl"
    (project / "cuship.toml").write_text(
        toml.replace("[ci]\n", f'[ci]\ncheck_install = ["{hostile_req}"]\n', 1)
    )
    pin = "cuship[all] @ https://example.org/`touch${IFS}PWNED`$(touch${IFS}PWNED).whl"
    _init(repo, project.name, pin, "github", "gitlab", "skypilot")
    log, bin_dir = tmp_path / "argv.log", tmp_path / "bin"
    _stubs(bin_dir, log)
    work = tmp_path / "work"
    work.mkdir()
    base = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "RUNNER_TEMP": str(work)}
    for name in ("GITHUB_PATH", "GITHUB_ENV", "GITHUB_OUTPUT"):
        base[name] = str(work / name)
    ran = 0
    for workflow in (repo / ".github" / "workflows").glob("*.yml"):
        for env, script in _github_steps(yaml.safe_load(workflow.read_text())):
            _run(script, {**base, **{k: _github_value(v) for k, v in env.items()}}, work)
            ran += 1
    for env, script in _gitlab_scripts(yaml.safe_load((repo / ".gitlab-ci.yml").read_text())):
        _run(script, {**base, **env}, work)
        ran += 1
    sky = yaml.safe_load((repo / "sky" / "cuship-gpu.yaml").read_text())
    for script in (sky["setup"], sky["run"]):
        _run(script, {**base, **sky["envs"]}, work)
        ran += 1
    assert ran > 20
    assert not list(tmp_path.rglob("PWNED")), "a generated script ran a value as code"
    argv = log.read_text().splitlines()
    # the project path reached cuship whole, as one argument, its first line at least
    assert f"proj {HOSTILE}" in argv
    # the pin reached the installer whole, through a requirements file
    written = [p.read_text() for p in work.rglob("*requirements.txt")]
    assert any(pin in text.splitlines() for text in written), written
