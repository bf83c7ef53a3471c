"""cuship.json: written into a wheel's .dist-info (in RECORD), read back once installed."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import pytest

from cuship.errors import InputError, UsageError
from cuship.resolve.provenance import Handover, add_to_wheel, read_installed
from cuship.wheel.write.retag import record_hash
from tests.wheel_factory import make_wheel

PREBUILT = Handover(
    name="tinyp",
    version="0.1.0",
    kind="prebuilt",
    why="fits this machine",
    filename="tinyp-0.1.0+cu130-py3-none-any.whl",
    sha256="ab" * 32,
    url="http://127.0.0.1:8000/files/tinyp-0.1.0%2Bcu130-py3-none-any.whl",
    index="http://127.0.0.1:8000/simple",
    label="cu130",
    cuship="0.1.0",
)


def _install(wheel: Path, site: Path) -> None:
    """Unpack a pure wheel into ``site``, as an installer does (RECORD kept as is)."""
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)


def test_the_record_lists_it_with_its_hash_and_it_reads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = make_wheel(tmp_path / "in", "tinyp", "0.1.0")
    out = add_to_wheel(wheel, PREBUILT, out_dir=tmp_path / "out")
    again = add_to_wheel(out, PREBUILT, out_dir=tmp_path / "again")  # replaced, not doubled
    with zipfile.ZipFile(again) as archive:
        names = archive.namelist()
        data = archive.read("tinyp-0.1.0.dist-info/cuship.json")
        rows = list(csv.reader(io.StringIO(archive.read("tinyp-0.1.0.dist-info/RECORD").decode())))
    assert names.count("tinyp-0.1.0.dist-info/cuship.json") == 1
    assert ["tinyp-0.1.0.dist-info/cuship.json", record_hash(data), str(len(data))] in rows
    assert [r[0] for r in rows].count("tinyp-0.1.0.dist-info/cuship.json") == 1
    assert rows[-1] == ["tinyp-0.1.0.dist-info/RECORD", "", ""]
    assert sorted(p.name for p in (tmp_path / "again").iterdir()) == [again.name]  # no temp left
    site = tmp_path / "site"
    _install(again, site)
    monkeypatch.syspath_prepend(str(site))
    assert read_installed("tinyp") == PREBUILT
    assert read_installed("TinyP") == PREBUILT  # any spelling of the name


def test_a_package_cuship_did_not_hand_over_has_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    _install(make_wheel(tmp_path / "in", "plainp", "1.0"), site)
    monkeypatch.syspath_prepend(str(site))
    assert read_installed("plainp") is None
    with pytest.raises(UsageError, match="'no-such-dist' is not installed"):
        read_installed("no-such-dist")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "is not JSON"),
        ('{"kind": "guessed", "name": "badp"}', "is not a cuship provenance record"),
        ('{"kind": "source", "name": "badp", "version": 1, "why": "x"}', "'version' must be"),
        ('{"kind": "source", "name": "badp", "version": "1"}', "lacks name, version or why"),
    ],
)
def test_a_broken_record_is_an_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, problem: str
) -> None:
    site = tmp_path / "site"
    _install(make_wheel(tmp_path / "in", "badp", "1.0"), site)
    (site / "badp-1.0.dist-info" / "cuship.json").write_text(text)
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(InputError, match=problem):
        read_installed("badp")


def test_a_wheel_without_record_is_refused(tmp_path: Path) -> None:
    broken = tmp_path / "brokenp-1.0-py3-none-any.whl"
    with zipfile.ZipFile(broken, "w") as archive:
        archive.writestr("brokenp-1.0.dist-info/METADATA", "Name: brokenp\n")
    with pytest.raises(InputError, match="expected one holding RECORD"):
        add_to_wheel(broken, PREBUILT, out_dir=tmp_path / "out")
    assert not list((tmp_path / "out").iterdir())


def test_a_prebuilt_wheel_that_inflates_to_a_gigabyte_is_refused_not_read(
    tmp_path: Path,
) -> None:
    """The issue's row: the rewrite peaked at 2.97 GB on a 1.46 MB prebuilt wheel."""
    from cuship.wheel.read.members import UnsafeMember
    from tests.hostile_wheels import so_bomb

    bomb = so_bomb(tmp_path / "in", "tinyp", 1024)
    with pytest.raises(UnsafeMember, match=r"_C\.so.*zip bomb"):
        add_to_wheel(bomb, PREBUILT, out_dir=tmp_path / "out")
    assert not list((tmp_path / "out").iterdir())  # no temporary file left


def test_members_are_copied_in_pieces_not_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    wheel = make_wheel(tmp_path / "in", "tinyp", "0.1.0")
    big = os.urandom(3 << 20)
    with zipfile.ZipFile(wheel, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("tinyp/big.bin", big)

    def whole(self: zipfile.ZipFile, name: object, pwd: object = None) -> bytes:
        raise AssertionError(f"read whole: {name!r}")

    monkeypatch.setattr(zipfile.ZipFile, "read", whole)
    out = add_to_wheel(wheel, PREBUILT, out_dir=tmp_path / "out")
    monkeypatch.undo()
    with zipfile.ZipFile(out) as archive:
        assert archive.read("tinyp/big.bin") == big
        assert archive.testzip() is None
