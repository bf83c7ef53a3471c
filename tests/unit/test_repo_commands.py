"""The README's test command is the whole set-up, and CI runs exactly it, then lint and types."""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _readme_test_command() -> str:
    readme = (REPO / "README.md").read_text()
    section = readme.split("Run the tests", 1)[1]
    block = re.search(r"```bash\n(.+?)\n```", section, re.DOTALL)
    assert block is not None, "the README's test command block is missing"
    return block.group(1).strip()


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    command = _readme_test_command()
    assert "\n" not in command, f"the README's test command is one line: {command!r}"
    assert command.startswith("tools/test-deps && "), command
    assert command.endswith("python3 -m pytest -n auto"), command  # xdist: one worker per core
    assert command in (REPO / ".ci" / "run").read_text()


def test_ci_runs_it_in_a_fresh_venv_as_users_do() -> None:
    """A fresh venv, activated, before the README's command: the tests must pass over a venv's
    packages (most users have one), not only over the base interpreter's."""
    run = (REPO / ".ci" / "run").read_text()
    made = run.index("\npython3 -m venv .venv-ci\n")
    assert run.index("\nrm -rf .venv-ci\n") < made < run.index("\n. .venv-ci/bin/activate\n")
    assert run.index("\n. .venv-ci/bin/activate\n") < run.index(_readme_test_command())
    assert "/.venv-ci/" in (REPO / ".gitignore").read_text().splitlines()


def test_the_readme_main_job_is_one_line_as_it_always_was() -> None:
    readme = (REPO / "README.md").read_text()
    main_job = 'python3 -m pip install -e ".[build]" && cuship ship examples/cuvecops'
    assert f"```bash\n{main_job}\n```" in readme


def test_the_readme_stays_short_and_leaves_the_rest_to_the_docs_site() -> None:
    size = (REPO / "README.md").stat().st_size
    assert size <= 12 * 1024, f"README.md is {size:,} bytes: move detail into docs/"


def test_ci_runs_lint_and_types_after_the_tests() -> None:
    run = (REPO / ".ci" / "run").read_text()
    assert run.index(_readme_test_command()) < run.index("\n.ci/lint ")
    lint = (REPO / ".ci" / "lint").read_text()
    for step in ("ruff check", "ruff format --check", "mypy --strict", "mkdocs build --strict"):
        assert f"python3 -m {step}" in lint


def test_the_scripts_are_executable() -> None:
    for script in (REPO / "tools" / "test-deps", REPO / ".ci" / "run", REPO / ".ci" / "lint"):
        assert os.access(script, os.X_OK), f"{script} is not executable"
