"""`cuship index` against wheels whose members are hostile (issue 34, items 1 and 9): a ``.so``
that inflates to a gigabyte, a member that inflates past what it declares, a member name that
leaves the archive, a METADATA that is not UTF-8. Each is skipped with its reason, the rest is
indexed, and the run exits 1 (0 with --skip-bad)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from cuship.cli import main
from tests.elf_factory import make_elf
from tests.hostile_wheels import so_bomb
from tests.wheel_factory import make_wheel


def _index(wheels: Path, site: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["index", str(wheels), "-o", str(site)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _with_member(wheel: Path, name: str, data: bytes) -> Path:
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr(name, data)
    return wheel


@pytest.mark.parametrize("honest", [True, False], ids=["declares-1GiB", "claims-4kB"])
def test_a_so_that_inflates_to_a_gigabyte_is_skipped_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], honest: bool
) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "good", "1.0")
    bomb = so_bomb(wheels, "bomb", 1024, honest_size=honest, elf=make_elf())
    code, said = _index(wheels, tmp_path / "site", capsys)
    assert code == 1, said
    reason = "zip bomb" if honest else "Bad CRC-32"  # stopped at the 4 kB it declares
    assert f"skipped {str(bomb)!r}: cannot be described:" in said and reason in said
    assert "Traceback" not in said
    assert (tmp_path / "site" / "simple" / "good" / "index.html").is_file()
    assert not (tmp_path / "site" / "simple" / "bomb").exists()
    assert main(["index", str(wheels), "-o", str(tmp_path / "site"), "--skip-bad"]) == 0


@pytest.mark.parametrize(
    ("member", "problem"),
    [("../../evil.py", "climbs out"), ("/etc/evil.conf", "absolute"), ("C:/evil.py", "absolute")],
)
def test_a_member_outside_the_archive_root_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], member: str, problem: str
) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "good", "1.0")
    evil = _with_member(make_wheel(wheels, "evil", "1.0"), member, b"x = 1\n")
    code, said = _index(wheels, tmp_path / "site", capsys)
    assert code == 1, said
    assert f"skipped {str(evil)!r}: the member name {member!r}" in said and problem in said
    assert not (tmp_path / "site" / "simple" / "evil").exists()


def test_a_member_outside_the_root_of_a_large_wheel_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wheel the fast path leaves to zipfile (a shared object in it) is checked there too."""
    wheels = tmp_path / "wheels"
    evil = make_wheel(wheels, "evil", "1.0", files={"evil/_C.so": make_elf()})
    _with_member(evil, "../outside.so", make_elf())
    code, said = _index(wheels, tmp_path / "site", capsys)
    assert code == 4, said  # nothing usable
    assert "'../outside.so' climbs out of the archive" in said


def test_metadata_that_is_not_utf8_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "good", "1.0")
    latin = wheels / "latin-1.0-py3-none-any.whl"
    with zipfile.ZipFile(latin, "w") as archive:
        archive.writestr("latin/__init__.py", b"")
        archive.writestr(
            "latin-1.0.dist-info/METADATA",
            b"Metadata-Version: 2.1\nName: latin\nVersion: 1.0\nSummary: caf\xe9\n",
        )
        archive.writestr("latin-1.0.dist-info/RECORD", b"")
    code, said = _index(wheels, tmp_path / "site", capsys)
    assert code == 1, said
    assert f"skipped {str(latin)!r}: its METADATA is not UTF-8" in said
