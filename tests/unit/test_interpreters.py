"""Finding every CPython a job could use: where cuship looks, in which order, what it passes
over and why, and what a job without one is told. Candidates are real files in fake PATH and
pyenv directories; what each would answer to the probe is given (unit tests run nothing)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from cuship.builder.host.interpreters import Interpreter, Search, candidates, find_interpreters
from cuship.errors import ConfigError, ToolMissing
from cuship.events import Event, collect

RUNNING = Interpreter(
    version="3.11", full="3.11.7", executable="/opt/py311/bin/python3", source="running"
)


def _python(folder: Path, name: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return str(path)


class _Answers:
    """What each fake interpreter says to the probe, by path; records who was asked."""

    def __init__(self, answers: Mapping[str, Interpreter | str]) -> None:
        self.answers, self.asked = dict(answers), list[str]()

    def __call__(self, path: str, environ: Mapping[str, str]) -> Interpreter | str:
        self.asked.append(path)
        return self.answers.get(path, "exit 127: no such interpreter")


def _cpython(
    version: str,
    executable: str,
    *,
    implementation: str = "cpython",
    free_threaded: bool = False,
    venv: bool = True,
) -> Interpreter:
    """What the probe would say of a Python ``version`` (``venv``: it has venv and ensurepip)."""
    return Interpreter(
        version=version.rsplit(".", 1)[0],
        full=version,
        executable=executable,
        python=version,
        implementation=implementation,
        free_threaded=free_threaded,
        modules=("pip", "venv", "ensurepip") if venv else ("pip",),
    )


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, str]:
    """A PATH with a pyenv-like shim for 3.12 and a real 3.13; pyenv with 3.12.1, 3.12.4, 3.10."""
    shims = tmp_path / "shims"
    versions = tmp_path / "pyenv" / "versions"
    return {
        "shim312": _python(shims, "python3.12"),
        "path313": _python(tmp_path / "usr" / "bin", "python3.13"),
        "pyenv3121": _python(versions / "3.12.1" / "bin", "python3.12"),
        "pyenv3124": _python(versions / "3.12.4" / "bin", "python3.12"),
        "venv312": _python(versions / "my-env" / "bin", "python3.12"),
        "pyenv310": _python(versions / "3.10.13" / "bin", "python3.10"),
        "PATH": f"{shims}:{tmp_path / 'usr' / 'bin'}:{tmp_path / 'empty'}",
        "PYENV_ROOT": str(tmp_path / "pyenv"),
    }


def test_candidates_are_path_first_then_pyenv_newest_first(machine: dict[str, str]) -> None:
    environ = {"PATH": machine["PATH"], "PYENV_ROOT": machine["PYENV_ROOT"]}
    found = candidates("3.12", environ)
    assert [(c.path, c.source) for c in found] == [
        (machine["shim312"], "PATH"),
        (machine["pyenv3124"], "pyenv"),
        (machine["pyenv3121"], "pyenv"),
        (machine["venv312"], "pyenv"),  # a name that is no version comes after the versions
    ]
    assert candidates("3.9", environ) == []


def test_a_failing_shim_is_passed_over_with_its_reason(machine: dict[str, str]) -> None:
    answers = _Answers(
        {
            machine["shim312"]: "exit 127: pyenv: python3.12: command not found",
            machine["pyenv3124"]: _cpython("3.12.4", machine["pyenv3124"]),
            machine["path313"]: _cpython("3.13.0", machine["path313"]),
            machine["pyenv310"]: _cpython("3.10.13", machine["pyenv310"]),
        }
    )
    environ = {"PATH": machine["PATH"], "PYENV_ROOT": machine["PYENV_ROOT"]}
    search = Search(environ=environ, running=RUNNING, probe=answers)
    events: list[Event] = []
    found = find_interpreters(["3.10", "3.11", "3.12", "3.13"], search, collect(events))
    assert [e.message for e in events if e.level == "debug"] == [
        f"Python 3.12: passed over {machine['shim312']}: exit 127: pyenv: python3.12: command not found"
    ], "-v says what was passed over"
    assert {v: (i.full, i.source) for v, i in found.found.items()} == {
        "3.10": ("3.10.13", "pyenv"),
        "3.11": ("3.11.7", "running"),
        "3.12": ("3.12.4", "pyenv"),
        "3.13": ("3.13.0", "PATH"),
    }
    assert found.get("3.11") is RUNNING
    assert RUNNING.executable not in answers.asked, "the running interpreter needs no probe"
    assert (machine["shim312"], "exit 127: pyenv: python3.12: command not found") in (
        found.passed_over
    )
    assert list(found.found) == ["3.10", "3.11", "3.12", "3.13"]


def test_pypy_free_threaded_and_wrong_versions_are_passed_over(machine: dict[str, str]) -> None:
    answers = _Answers(
        {
            machine["shim312"]: _cpython("3.12.0", machine["shim312"], implementation="pypy"),
            machine["pyenv3124"]: _cpython("3.12.4", "x", free_threaded=True),
            machine["pyenv3121"]: _cpython("3.11.2", machine["pyenv3121"]),
            machine["venv312"]: _cpython("3.12.2", machine["venv312"], venv=False),
        }
    )
    environ = {"PATH": machine["PATH"], "PYENV_ROOT": machine["PYENV_ROOT"]}
    found = find_interpreters(["3.12"], Search(environ=environ, running=RUNNING, probe=answers))
    assert found.get("3.12") is None
    reasons = dict(found.passed_over)
    assert reasons[machine["shim312"]] == "pypy, not CPython"
    assert "free-threaded" in reasons[machine["pyenv3124"]]
    assert reasons[machine["pyenv3121"]] == "is Python 3.11"
    assert "ensurepip" in reasons[machine["venv312"]]


def test_a_job_without_an_interpreter_is_told_where_cuship_looked(machine: dict[str, str]) -> None:
    environ = {"PATH": machine["PATH"], "PYENV_ROOT": machine["PYENV_ROOT"]}
    found = find_interpreters(["3.9"], Search(environ=environ, running=RUNNING, probe=_Answers({})))
    reason = found.not_found("3.9")
    assert reason.startswith("needs Python 3.9; none found (looked in the running interpreter, ")
    assert "python3.9 on PATH" in reason
    assert f"{machine['PYENV_ROOT']}/versions/*/bin/python3.9" in reason
    assert "uv-managed Pythons (uv not on PATH)" in reason
    assert "[build] pythons" in reason and "--fetch-python" in reason


def test_configured_interpreters_come_first_and_a_bad_one_is_a_config_error(
    machine: dict[str, str], tmp_path: Path
) -> None:
    mine = _python(tmp_path / "opt" / "bin", "python3.12")
    answers = _Answers(
        {
            mine: _cpython("3.12.8", "/resolved/python3.12"),
            machine["pyenv3124"]: _cpython("3.12.4", machine["pyenv3124"]),
        }
    )
    environ = {"PATH": machine["PATH"], "PYENV_ROOT": machine["PYENV_ROOT"]}
    search = Search(environ=environ, running=RUNNING, probe=answers, configured=(mine,))
    found = find_interpreters(["3.12"], search)
    chosen = found.get("3.12")
    assert chosen is not None
    assert (chosen.executable, chosen.source, chosen.full) == (mine, "config", "3.12.8")
    assert found.looked[0] == "[build] pythons"

    bad = Search(environ=environ, running=RUNNING, probe=answers, configured=("/no/python3.12",))
    with pytest.raises(ConfigError) as caught:
        find_interpreters(["3.12"], bad)
    assert caught.value.exit_code == 2
    assert "build.pythons" in str(caught.value) and "'/no/python3.12'" in str(caught.value)
    assert caught.value.hint is not None and "python3.X" in caught.value.hint


def test_uv_managed_pythons_and_fetching_one(machine: dict[str, str], tmp_path: Path) -> None:
    uv_python = _python(tmp_path / "uv" / "cpython-3.14" / "bin", "python3.14")
    answers = _Answers({uv_python: _cpython("3.14.2", uv_python)})
    environ = {"PATH": machine["PATH"], "PYENV_ROOT": machine["PYENV_ROOT"]}
    installed: list[str] = []

    def uv_find(uv: str, version: str, env: Mapping[str, str]) -> str | None:
        return uv_python if version in installed else None

    def uv_install(uv: str, version: str, env: Mapping[str, str], emit: object) -> str | None:
        installed.append(version)
        return uv_find(uv, version, env)

    search = Search(
        environ=environ,
        running=RUNNING,
        probe=answers,
        uv="/usr/bin/uv",
        uv_find=uv_find,
        uv_install=uv_install,
    )
    assert find_interpreters(["3.14"], search).get("3.14") is None, "no fetching unless asked"
    fetching = Search(
        environ=environ,
        running=RUNNING,
        probe=answers,
        uv="/usr/bin/uv",
        uv_find=uv_find,
        uv_install=uv_install,
        fetch=True,
    )
    chosen = find_interpreters(["3.14"], fetching).get("3.14")
    assert chosen is not None and (chosen.source, chosen.full) == ("uv", "3.14.2")
    assert installed == ["3.14"]


def test_fetching_without_uv_exits_3_naming_what_is_missing(machine: dict[str, str]) -> None:
    environ = {"PATH": machine["PATH"], "PYENV_ROOT": machine["PYENV_ROOT"]}
    search = Search(environ=environ, running=RUNNING, probe=_Answers({}), fetch=True)
    with pytest.raises(ToolMissing) as caught:
        find_interpreters(["3.9", "3.11"], search)
    assert caught.value.exit_code == 3
    assert "no Python 3.9 here and no uv" in str(caught.value)
    # nothing missing: nothing to fetch, no uv needed
    assert find_interpreters(["3.11"], search).get("3.11") is RUNNING


def test_fetching_is_said_plainly() -> None:
    from cuship.builder.host.uvpython import fetch_python

    events: list[Event] = []
    with pytest.raises(AssertionError, match="must not spawn"):  # the unit fence stops uv itself
        fetch_python("/usr/bin/uv", "3.14", {}, collect(events))
    (said,) = events
    assert said.level == "warning"
    assert (
        "downloading CPython 3.14 with `uv python install --no-config cpython@3.14`" in said.message
    )


def test_configured_paths_are_read_from_the_config_s_directory(tmp_path: Path) -> None:
    import dataclasses

    from cuship.builder.host.tools import configured_pythons
    from cuship.config import load_config

    (tmp_path / "cuship.toml").write_text(
        '[matrix]\npython = ["3.12"]\n[build]\npythons = ["venvs/py312/bin/python3.12", '
        '"/opt/python3.13", "~/py/bin/python3.10"]\n'
    )
    config = load_config(tmp_path)
    assert config.build.pythons[0] == "venvs/py312/bin/python3.12"
    home = Path.home()
    assert configured_pythons(config) == (
        str(tmp_path.resolve() / "venvs/py312/bin/python3.12"),
        "/opt/python3.13",
        str(home / "py/bin/python3.10"),
    )
    assert (
        configured_pythons(
            dataclasses.replace(config, build=dataclasses.replace(config.build, pythons=()))
        )
        == ()
    )


@pytest.mark.parametrize(
    ("build", "needle"),
    [
        ('pythons = [" "]', "build.pythons"),
        ('smoke = "offline"', "build.smoke"),
    ],
)
def test_bad_build_keys_are_config_errors(tmp_path: Path, build: str, needle: str) -> None:
    from cuship.config import load_config

    (tmp_path / "cuship.toml").write_text(f"[build]\n{build}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert caught.value.exit_code == 2
    assert needle in str(caught.value)
