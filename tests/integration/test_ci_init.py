"""`cuship ci init` for real: the files it writes pass actionlint, SchemaStore's schemas and
SkyPilot's own loader; each validator is shown to reject a broken file; the prepare job's command
runs; overwriting needs --force."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.integration.ci_validators import (
    Actionlint,
    ValidatorMissing,
    check_jsonschema,
    install_actionlint,
    install_skypilot,
    lint_workflow,
    sky_load,
)
from tests.integration.clirun import cuship

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cuvecops"
WORKFLOW = Path(".github/workflows/cuship.yml")
LINT_CONFIG = Path(".github/actionlint.yaml")
# the dev install is editable: no runner could install it, so every init names the pin
PIN = ("--cuship", "cuship[all]==0.1.0")


@pytest.fixture(scope="session")
def actionlint() -> Actionlint:
    try:
        return install_actionlint()
    except ValidatorMissing as err:
        pytest.fail(str(err))


@pytest.fixture(scope="session")
def skypilot_python() -> Path:
    try:
        return install_skypilot()
    except ValidatorMissing as err:
        pytest.fail(str(err))


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository root with the example under examples/cuvecops and every provider's files."""
    root = tmp_path_factory.mktemp("repo")
    ignore = shutil.ignore_patterns("build", "dist", "__pycache__", ".cuship", "*.egg-info")
    shutil.copytree(EXAMPLE, root / "examples" / "cuvecops", ignore=ignore)
    done = cuship(
        "ci", "init", *PIN, "examples/cuvecops", "-o", ".",
        "--provider", "github", "--provider", "gitlab", "--provider", "skypilot",
        cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    release = Path(".github/workflows/cuship-release.yml")
    for path in (
        WORKFLOW,
        release,
        LINT_CONFIG,
        Path(".gitlab-ci.yml"),
        Path("sky/cuship-gpu.yaml"),
    ):
        assert (root / path).is_file(), path
        assert f"wrote {path}" in done.stdout
    assert 'cuship matrix "$PROJECT" --format github' in (root / WORKFLOW).read_text()
    return root


def test_workflow_passes_actionlint(generated: Path, actionlint: Actionlint) -> None:
    found = lint_workflow(actionlint, generated / WORKFLOW, generated / LINT_CONFIG)
    assert found == []


def test_actionlint_rejects_a_broken_workflow(generated: Path, actionlint: Actionlint) -> None:
    text = (generated / WORKFLOW).read_text()
    broken = generated / "broken.yml"
    broken.write_text(
        text.replace("needs.prepare.outputs.matrix", "needs.prepar.outputs.matrix").replace(
            "timeout-minutes: 360", "timeout-minutes: soon"
        )
    )
    kinds = {f["kind"] for f in lint_workflow(actionlint, broken, generated / LINT_CONFIG)}
    assert {"expression", "syntax-check"} <= kinds
    # Without the generated actionlint config, the custom GPU labels are errors: the filter is
    # exactly that config, not a blanket pass.
    labels = [f for f in lint_workflow(actionlint, generated / WORKFLOW, None)]
    assert {f["kind"] for f in labels} == {"runner-label"}
    assert {f["message"].split('"')[1] for f in labels} == {"gpu", "h100"}


def test_workflow_and_gitlab_pass_schemastore_schemas(generated: Path) -> None:
    github = check_jsonschema("vendor.github-workflows", generated / WORKFLOW)
    assert github.returncode == 0, github.stdout + github.stderr
    gitlab = check_jsonschema("vendor.gitlab-ci", generated / ".gitlab-ci.yml")
    assert gitlab.returncode == 0, gitlab.stdout + gitlab.stderr


def test_gitlab_schema_rejects_a_broken_pipeline(generated: Path) -> None:
    doc = yaml.safe_load((generated / ".gitlab-ci.yml").read_text())
    doc["build"]["parallel"] = {"matrix": "all of them"}
    doc["check-quick"]["rules"] = [{"when": "sometimes"}]
    broken = generated / "broken-gitlab.yml"
    broken.write_text(yaml.safe_dump(doc))
    done = check_jsonschema("vendor.gitlab-ci", broken)
    assert done.returncode == 1, done.stdout
    assert "build" in done.stdout and "check-quick" in done.stdout


def test_skypilot_task_loads_with_skypilot(generated: Path, skypilot_python: Path) -> None:
    (generated / "wheelhouse").mkdir(exist_ok=True)  # the task mounts it; the README says fill it
    done = sky_load(skypilot_python, generated / "sky" / "cuship-gpu.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("cuship-gpu") and "H100" in done.stdout and "Spot" in done.stdout
    doc = yaml.safe_load((generated / "sky" / "cuship-gpu.yaml").read_text())
    doc["resources"]["use_spot"] = "sometimes"
    doc["run"] = 3
    (generated / "sky" / "broken.yaml").write_text(yaml.safe_dump(doc))
    broken = sky_load(skypilot_python, generated / "sky" / "broken.yaml")
    assert broken.returncode == 1 and "Invalid task YAML" in broken.stdout


def test_prepare_step_really_produces_the_matrix(generated: Path, tmp_path: Path) -> None:
    """Run the prepare job's script as GitHub would, with `cuship` on PATH, from the repo root."""
    doc = yaml.safe_load((generated / WORKFLOW).read_text())
    script = doc["jobs"]["prepare"]["steps"][-1]["run"]
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "cuship").write_text(f'#!/bin/sh\nexec {sys.executable} -m cuship "$@"\n')
    (shim / "cuship").chmod(0o755)
    (shim / "python").symlink_to(sys.executable)
    output = tmp_path / "github_output"
    env = {
        **os.environ,
        **doc["env"],  # the workflow's env: the project path, never pasted into the script
        "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO / "src"),
        "GITHUB_OUTPUT": str(output),
    }
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=generated, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    key, _, value = output.read_text().strip().partition("=")
    assert key == "matrix" and "\n" not in value  # one line: a valid GITHUB_OUTPUT entry
    matrix = json.loads(value)  # what fromJSON() reads
    assert isinstance(matrix["include"], list) and matrix["include"]
    used = {"job", "python", "cuda"}  # matrix.* names the build job refers to
    assert all(used <= entry.keys() for entry in matrix["include"])
    gpu = doc["jobs"]["gpu-h100"]["steps"]
    artifact = next(s["with"]["name"] for s in gpu if "download-artifact" in s.get("uses", ""))
    assert artifact in {f"wheel-{entry['job']}" for entry in matrix["include"]}


def test_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    first = cuship("ci", "init", *PIN, str(EXAMPLE), "-o", str(tmp_path), "--provider", "gitlab")
    assert first.returncode == 0, first.stderr
    target = tmp_path / ".gitlab-ci.yml"
    target.write_text("# my own pipeline\n")
    again = cuship("ci", "init", *PIN, str(EXAMPLE), "-o", str(tmp_path), "--provider", "gitlab")
    assert again.returncode == 2
    assert "refusing to overwrite" in again.stderr and ".gitlab-ci.yml" in again.stderr
    assert "--force" in again.stderr
    assert target.read_text() == "# my own pipeline\n"
    forced = cuship(
        "ci", "init", *PIN, str(EXAMPLE), "-o", str(tmp_path), "--provider", "gitlab", "--force"
    )
    assert forced.returncode == 0, forced.stderr
    assert target.read_text().startswith("# GitLab CI pipeline, generated by `cuship ci init`")


def test_print_matches_the_written_file_for_the_drift_check(generated: Path) -> None:
    """The GitLab matrix-drift job diffs `ci init --print` against the file: they must agree."""
    printed = cuship(
        "ci", "init", *PIN, "examples/cuvecops", "--provider", "gitlab", "--print", "-o", ".",
        cwd=generated,
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == (generated / ".gitlab-ci.yml").read_text()


def test_self_hosted_variant_passes_actionlint_and_schemas(
    tmp_path: Path, actionlint: Actionlint
) -> None:
    """Self-hosted CPU runners, no container, sccache in actions/cache, no release job."""
    project = tmp_path / "proj"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("build", "dist", "__pycache__"))
    toml = (project / "cuship.toml").read_text().split("[ci]")[0]
    (project / "cuship.toml").write_text(
        toml + "[ci]\n"
        'runs_on = ["self-hosted", "linux", "cuda13"]\n'
        'gpu_runners = { l40s = ["self-hosted", "l40s"], h200 = ["self-hosted", "h200"] }\n'
        'container = false\nsccache = "actions-cache"\nrelease = false\nbench = false\n'
    )
    done = cuship("ci", "init", *PIN, str(project), "--provider", "github", "--provider", "gitlab")
    assert done.returncode == 0, done.stderr
    workflow = project / WORKFLOW
    doc = yaml.safe_load(workflow.read_text())
    assert "container" not in doc["jobs"]["build"]
    assert not (project / ".github/workflows/cuship-release.yml").exists()
    assert doc["jobs"]["gpu-h200"]["runs-on"] == ["self-hosted", "h200"]
    assert lint_workflow(actionlint, workflow, project / LINT_CONFIG) == []
    github = check_jsonschema("vendor.github-workflows", workflow)
    assert github.returncode == 0, github.stdout
    gitlab = check_jsonschema("vendor.gitlab-ci", project / ".gitlab-ci.yml")
    assert gitlab.returncode == 0, gitlab.stdout
