"""Only regular files are read as wheels, shared objects and yank files (issue 34, items 4 and
8): a FIFO, a device or a symlink loop is refused at once with its kind named, never waited on
and never called "does not exist"."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuship.cli import main
from tests.wheel_factory import make_wheel


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("name", ["x-1.0-py3-none-any.whl", "_C.so"])
def test_inspect_names_a_fifo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    code, said = _run(["inspect", str(_fifo(tmp_path / name))], capsys)
    assert code == 2
    assert "is a FIFO (named pipe), not a regular file" in said and "does not exist" not in said


def test_inspect_names_a_device_behind_a_symlink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "_C.so"
    link.symlink_to("/dev/zero")
    code, said = _run(["inspect", str(link)], capsys)
    assert code == 2 and "is a character device, not a regular file" in said


def test_inspect_names_a_symlink_loop_and_a_dangling_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = tmp_path / "a.whl"
    loop.symlink_to(tmp_path / "b.whl")
    (tmp_path / "b.whl").symlink_to(loop)
    code, said = _run(["inspect", str(loop)], capsys)
    assert code == 2 and "is a symlink loop" in said
    dangling = tmp_path / "c.so"
    dangling.symlink_to(tmp_path / "gone.so")
    code, said = _run(["inspect", str(dangling)], capsys)
    assert code == 2 and "is a dangling symlink" in said


def test_index_skips_a_fifo_named_like_a_wheel_first_run_and_cached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "good", "1.0")
    fifo = _fifo(tmp_path / "x-1.0-py3-none-any.whl")
    site = tmp_path / "site"
    for _ in range(2):  # the second run plans from the cache (a stat, no open)
        code, said = _run(["index", str(wheels), str(fifo), "-o", str(site)], capsys)
        assert code == 1, said
        assert "x-1.0-py3-none-any.whl" in said and "FIFO (named pipe)" in said
        assert (site / "simple" / "good" / "index.html").is_file()


def test_index_refuses_a_fifo_as_yank_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "good", "1.0")
    fifo = _fifo(tmp_path / "yanks.txt")
    args = ["index", str(wheels), "-o", str(tmp_path / "site"), "--yank-file", str(fifo)]
    code, said = _run(args, capsys)
    assert code == 2 and "is a FIFO (named pipe), not a regular file" in said


def test_index_skips_a_directory_named_like_a_wheel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "good", "1.0")
    folder = tmp_path / "pkg-1.0-py3-none-any.whl"
    make_wheel(folder, "inner", "1.0")  # what a listed directory would have offered
    code, said = _run(["index", str(wheels), str(folder), "-o", str(tmp_path / "site")], capsys)
    assert code == 1, said
    assert "pkg-1.0-py3-none-any.whl" in said and "is a directory, not a regular file" in said
    assert not (tmp_path / "site" / "simple" / "inner").exists()
