"""The interpreter probe for real: fake `python3.X` scripts on a fake PATH and in a fake pyenv
(one answers the JSON probe, one is a pyenv shim that exits 127, one hangs, one prints only
`--version`), and this machine's own pyenv Pythons."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from cuship.builder.host import interpreters
from cuship.builder.host.interpreters import Search, find_interpreters, probe_interpreter


def _script(path: Path, body: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def _answer(version: str, executable: str, **extra: object) -> str:
    doc = {
        "version": [int(x) for x in version.split(".")],
        "python": version,
        "implementation": "cpython",
        "executable": executable,
        "free_threaded": False,
        "modules": ["venv", "ensurepip"],
        **extra,
    }
    return f"echo '{json.dumps(doc)}'"


def test_fake_interpreters_on_path_and_in_pyenv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(interpreters, "PROBE_TIMEOUT", 2.0)
    shim = _script(
        tmp_path / "shims" / "python3.12",
        'echo "pyenv: python3.12: command not found" >&2; exit 127',
    )
    hangs = _script(tmp_path / "bin" / "python3.12", f"exec {shutil.which('sleep')} 30")
    versions = tmp_path / "pyenv" / "versions"
    real = versions / "3.12.9" / "bin" / "python3.12"
    _script(real, _answer("3.12.9", str(real)))
    old = _script(versions / "3.12.0" / "bin" / "python3.12", "echo 'Python 3.12.0'")
    thirteen = tmp_path / "bin" / "python3.13"
    _script(thirteen, _answer("3.13.2", str(thirteen), free_threaded=True))
    environ = {
        "PATH": f"{tmp_path / 'shims'}:{tmp_path / 'bin'}",
        "PYENV_ROOT": str(tmp_path / "pyenv"),
    }

    found = find_interpreters(["3.12", "3.13"], Search(environ=environ))
    chosen = found.get("3.12")
    assert chosen is not None
    assert (chosen.executable, chosen.full, chosen.source) == (str(real), "3.12.9", "pyenv")
    reasons = dict(found.passed_over)
    assert reasons[shim] == "exit 127: pyenv: python3.12: command not found"
    assert reasons[hangs] == "did not answer within 2 s"
    assert old not in reasons, "the newest pyenv version answered first"
    assert found.get("3.13") is None
    assert "free-threaded" in reasons[str(thirteen)]
    assert probe_interpreter(old, environ) == (
        "not a Python interpreter (it printed 'Python 3.12.0')"
    )


def test_this_machine_s_pyenv_pythons_are_found() -> None:
    import os

    pyenv = sorted(Path.home().glob(".pyenv/versions/3.1[0-3].*/bin/python3.1[0-3]"))
    if not pyenv:
        pytest.skip("no pyenv Pythons 3.10-3.13 on this machine")
    versions = sorted({p.name.removeprefix("python") for p in pyenv})
    found = find_interpreters(versions, Search(environ=dict(os.environ)))
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert set(found.found) == {*versions, running}
    assert found.found[running].source == "running"
    for version in versions:
        if version != running:
            assert Path(found.found[version].executable).is_file()
            assert found.found[version].full.startswith(version + ".")
