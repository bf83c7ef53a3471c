"""What a user sees when cuship has a bug: exit 70, one line, and the traceback in a file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NoReturn

import click
import pytest

from cuship.cli._common import run_cli
from cuship.errors import ToolMissing


def _group(error: BaseException) -> click.Group:
    @click.group()
    def group() -> None:
        """A stand-in for the cuship group."""

    @group.command()
    def broken() -> NoReturn:
        raise error

    return group


@pytest.fixture(autouse=True)
def _plain_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


def _crash_file(stderr: str) -> Path:
    found = re.search(r"the traceback is in (\S+);", stderr)
    assert found, stderr
    return Path(found.group(1))


def test_a_bug_exits_70_with_one_line_and_the_traceback_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    code = run_cli(_group(RuntimeError("boom\nsecond line")), ["broken"])
    out, err = capsys.readouterr()
    assert code == 70
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith("error: internal error: RuntimeError: boom second line (a bug in cuship")
    assert "Traceback" not in err
    crash = _crash_file(err)
    assert crash.parent == tmp_path / "cache" / "cuship"
    assert crash.name.startswith("crash-") and crash.suffix == ".txt"
    report = crash.read_text()
    assert "argv: ['broken']" in report
    assert "Traceback (most recent call last)" in report
    assert report.rstrip().endswith("RuntimeError: boom\nsecond line")
    assert "raise error" in report


def test_an_unwritable_cache_falls_back_to_the_temp_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cache").write_text("a file where the cache directory should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert run_cli(_group(KeyError("key")), ["broken"]) == 70
    crash = _crash_file(capsys.readouterr().err)
    assert crash.parent == tmp_path / "tmp"
    assert "KeyError: 'key'" in crash.read_text()


def test_cuship_errors_keep_their_exit_codes_and_write_no_crash_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert run_cli(_group(ToolMissing("no nvcc", hint="install it")), ["broken"]) == 3
    assert capsys.readouterr().err == "error: no nvcc\n  hint: install it\n"
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_exits_130_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert run_cli(_group(KeyboardInterrupt()), ["broken"]) == 130
    assert capsys.readouterr().err.strip() in ("aborted", "interrupted")
    assert list(tmp_path.iterdir()) == []


def test_system_exit_passes_through() -> None:
    with pytest.raises(SystemExit) as raised:
        run_cli(_group(SystemExit(5)), ["broken"])
    assert raised.value.code == 5
