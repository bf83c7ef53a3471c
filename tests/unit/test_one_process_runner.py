"""Every process cuship starts goes through :mod:`cuship.process` (DESIGN.md: one process
runner): no other module of ``src/cuship`` imports or names ``subprocess``."""

from __future__ import annotations

import ast
from pathlib import Path

import cuship

SRC = Path(cuship.__file__).parent
RUNNER = SRC / "process.py"


def _subprocess_uses(path: Path) -> list[int]:
    """Lines of ``path`` that import ``subprocess`` (or from it) or name it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines = []
    for node in ast.walk(tree):
        if (
            (
                isinstance(node, ast.Import)
                and any(a.name.split(".")[0] == "subprocess" for a in node.names)
            )
            or (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").split(".")[0] == "subprocess"
            )
            or (isinstance(node, ast.Name) and node.id == "subprocess")
        ):
            lines.append(node.lineno)
    return lines


def test_only_the_runner_uses_subprocess() -> None:
    found = {
        str(path.relative_to(SRC)): lines
        for path in sorted(SRC.rglob("*.py"))
        if path != RUNNER and (lines := _subprocess_uses(path))
    }
    assert found == {}, "start processes with cuship.process.run/start instead"
    assert _subprocess_uses(RUNNER), "the runner itself is where subprocess is used"


def test_how_a_process_ended_is_said_one_way() -> None:
    """An exit status and a killing signal are worded by :func:`cuship.process.ended` alone."""
    from cuship.process import ended

    assert ended(0) == "exited with status 0" and ended(3) == "exited with status 3"
    assert ended(-11) == "killed by SIGSEGV" and ended(-9) == "killed by SIGKILL"
    assert ended(-200) == "killed by signal 200"
    wordings = ("Signals(-", "exited with status", "killed by signal")
    elsewhere = [
        str(path.relative_to(SRC))
        for path in sorted(SRC.rglob("*.py"))
        if path != RUNNER and any(w in path.read_text(encoding="utf-8") for w in wordings)
    ]
    assert elsewhere == [], "say how a process ended with cuship.process.ended"
