"""`cuship index` holds each wheel to its RECORD (issue 34): a member RECORD does not list, a file
RECORD lists that the archive lacks, a size or a hash that disagrees (METADATA, an inspected
shared object), or no RECORD at all: the wheel is skipped with the reason, never published, the
rest is indexed, and the run exits 1 (0 with --skip-bad). Real wheels pass."""

from __future__ import annotations

import base64
import ensurepip
import hashlib
import importlib
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cuship.cli import main
from cuship.wheel.audit import inspect_wheel
from cuship.wheel.read import members as members_module
from cuship.wheel.record import RecordMismatch
from tests.elf_factory import make_elf
from tests.wheel_factory import make_wheel

INFO = "bad-1.0.dist-info"
EXTRA = b"x = 1\n"
RECORD = f"{INFO}/RECORD"
archive_module = importlib.import_module("cuship.wheel.read.archive")


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _rewrite(
    wheel: Path,
    *,
    drop: tuple[str, ...] = (),
    add: dict[str, bytes] | None = None,
    record: Callable[[str], str] = lambda text: text,
) -> Path:
    """``wheel`` written again without ``drop``, with ``add``, its RECORD edited by ``record``."""
    with zipfile.ZipFile(wheel) as source:
        members = {i.filename: source.read(i) for i in source.infolist()}
    members = {name: data for name, data in members.items() if name not in drop}
    if RECORD in members:
        members[RECORD] = record(members[RECORD].decode()).encode()
    members.update(add or {})
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in members.items():
            out.writestr(name, data)
    return wheel


def _bad(wheels: Path, **change: Any) -> Path:
    files = {"bad/extra.py": EXTRA, "bad/_C.so": make_elf()}
    wheel = make_wheel(wheels, "bad", "1.0", tag="cp311-cp311-linux_x86_64", files=files)
    return _rewrite(wheel, **change)


def _replace_row(name: str, row: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        lines = [row if line.startswith(f"{name},") else line for line in text.splitlines()]
        return "\n".join(lines) + "\n"

    return edit


CASES: dict[str, tuple[dict[str, Any], str]] = {
    "member-missing": (
        {"drop": ("bad/extra.py",)},
        f"{RECORD!r} lists 'bad/extra.py', which the archive does not hold",
    ),
    "member-unlisted": (
        {"add": {"bad/sneaky.py": b"import os\n"}},
        f"the member 'bad/sneaky.py' is not listed in {RECORD!r}",
    ),
    "wrong-size": (
        {"record": _replace_row("bad/extra.py", f"bad/extra.py,{_hash(EXTRA)},99")},
        f"{RECORD!r} says 'bad/extra.py' is 99 bytes, the archive holds 6",
    ),
    "wrong-metadata-hash": (
        {"record": _replace_row(f"{INFO}/METADATA", f"{INFO}/METADATA,{_hash(b'other')},")},
        f"'{INFO}/METADATA' has sha256=",
    ),
    "wrong-so-hash": (
        {"record": _replace_row("bad/_C.so", f"bad/_C.so,{_hash(b'another build')},")},
        "'bad/_C.so' has sha256=",
    ),
    "no-record": (
        {"drop": (RECORD,)},
        f"has no {RECORD!r}: its files are not listed (pip refuses such a wheel)",
    ),
}


@pytest.fixture(params=["in-memory", "zipfile"])
def read_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways the scan reads a wheel: whole into memory (small wheels), or through zipfile
    (past 64 MiB); and both ways a shared object is inflated (in memory, in pieces)."""
    if request.param == "zipfile":
        monkeypatch.setattr(archive_module, "READ_WHOLE", 0)
        monkeypatch.setattr(members_module, "IN_MEMORY", 16)
    return str(request.param)


@pytest.mark.parametrize("case", list(CASES))
def test_a_wheel_whose_record_disagrees_is_skipped_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, read_path: str
) -> None:
    change, reason = CASES[case]
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "good", "1.0")
    bad = _bad(wheels, **change)
    site = tmp_path / "site"
    code = main(["index", str(wheels), "-o", str(site)])
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert code == 1, said
    assert f"skipped {str(bad)!r}: {bad.name!r}" in said and reason in said, said
    assert "must rewrite RECORD" in said  # the fix
    assert (site / "simple" / "good" / "index.html").is_file()
    assert not (site / "simple" / "bad").exists()
    assert not (site / "files" / bad.name).exists()
    assert main(["index", str(wheels), "-o", str(tmp_path / "again"), "--skip-bad"]) == 0


def test_an_agreeing_record_and_its_signatures_are_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], read_path: str
) -> None:
    wheels = tmp_path / "wheels"
    signed = _bad(wheels, add={f"{INFO}/RECORD.jws": b"{}", f"{INFO}/RECORD.p7s": b"\x00"})
    site = tmp_path / "site"
    assert main(["index", str(wheels), "-o", str(site)]) == 0, capsys.readouterr().err
    assert (site / "files" / signed.name).is_file()


def test_inspect_with_record_refuses_a_patched_shared_object(
    tmp_path: Path, read_path: str
) -> None:
    """What the index's describer asks: the .so inflated is held to RECORD's hash."""
    row = f"bad/_C.so,{_hash(b'another build')},"
    wheel = _bad(tmp_path, record=_replace_row("bad/_C.so", row))
    assert [x.path for x in inspect_wheel(wheel).extensions] == ["bad/_C.so"]  # not asked
    with pytest.raises(RecordMismatch, match=r"'bad/_C\.so' has sha256=") as caught:
        inspect_wheel(wheel, record=True)
    assert caught.value.exit_code == 2 and caught.value.hint


def test_real_wheels_from_pypi_are_accepted(tmp_path: Path) -> None:
    """pip's and setuptools' wheels as PyPI serves them (the copies ensurepip bundles)."""
    bundled = sorted((Path(ensurepip.__file__).parent / "_bundled").glob("*.whl"))
    assert len(bundled) >= 1
    site = tmp_path / "site"
    assert main(["index", *map(str, bundled), "-o", str(site)]) == 0
    for wheel in bundled:
        assert (site / "files" / wheel.name).is_file()


def test_quoted_paths_and_directory_entries_are_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], read_path: str
) -> None:
    """A path with a comma is quoted in RECORD (CSV); directory entries need no row."""
    odd = b"y = 2\n"
    row = f'"bad/a,b.py",{_hash(odd)},{len(odd)}'
    wheel = _bad(
        tmp_path / "wheels",
        add={"bad/a,b.py": odd, "bad/": b""},
        record=lambda text: text + row + "\n",
    )
    site = tmp_path / "site"
    assert main(["index", str(wheel.parent), "-o", str(site)]) == 0, capsys.readouterr().err
    assert (site / "files" / wheel.name).is_file()
