"""cuship.json: written into a wheel's .dist-info (in RECORD), read back once installed."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import pytest

from cuship.errors import InputError, UsageError
from cuship.resolve.provenance import Provenance, add_to_wheel, read_installed
from cuship.wheel.retag import record_hash
from tests.wheel_factory import make_wheel

PREBUILT = Provenance(
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
