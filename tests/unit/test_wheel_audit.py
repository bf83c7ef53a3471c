"""inspect_path on hand-made wheels: what a broken or over-stuffed wheel reports."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from cuship.arch import sm_key
from cuship.errors import InputError
from cuship.wheel.audit import WheelReport, inspect_path


def make_wheel(directory: Path, name: str, files: dict[str, bytes]) -> Path:
    path = directory / name
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return path


def test_bundled_cuda_libraries_are_named_without_parsing(tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path,
        "pkg-0.1.0+cu128torch2.8-cp311-cp311-manylinux_2_28_x86_64.whl",
        {
            "pkg/__init__.py": b"",
            "pkg.libs/libcudart-1a2b3c4d.so.13": b"\x7fELF garbage that is never parsed",
            "pkg.libs/libcublasLt-0badc0de.so.13": b"\x7fELF",
            "pkg/data/not_elf.so": b"plain text named .so",
            "pkg-0.1.0+cu128torch2.8.dist-info/METADATA": b"Name: pkg\nVersion: 0.1.0\n",
        },
    )
    report = inspect_path(wheel)
    assert isinstance(report, WheelReport)
    assert (report.name, report.version, report.local) == (
        "pkg",
        "0.1.0+cu128torch2.8",
        "cu128torch2.8",
    )
    assert report.tags == ("cp311-cp311-manylinux_2_28_x86_64",)
    assert report.bundled_cuda_libs == (
        "pkg.libs/libcublasLt-0badc0de.so.13",
        "pkg.libs/libcudart-1a2b3c4d.so.13",
    )
    assert report.extensions == ()
    assert report.to_json()["bundled_libs"] == list(report.bundled_libs)


def test_not_a_zip(tmp_path: Path) -> None:
    fake = tmp_path / "pkg-0.1.0-py3-none-any.whl"
    fake.write_bytes(b"<html>404 not found</html>")
    with pytest.raises(InputError, match="is not a readable wheel") as caught:
        inspect_path(fake)
    assert caught.value.hint and "again" in caught.value.hint


def test_bad_wheel_name_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"'pkg\.whl' is not a valid wheel file name"):
        inspect_path(make_wheel(tmp_path, "pkg.whl", {}))
    with pytest.raises(InputError, match="does not exist"):
        inspect_path(tmp_path / "missing.whl")
    with pytest.raises(InputError, match="is a directory"):
        inspect_path(tmp_path)


def test_truncated_elf_inside_a_wheel(tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path, "pkg-1.0-cp311-cp311-linux_x86_64.whl", {"pkg/_C.so": b"\x7fELF\x02\x01"}
    )
    with pytest.raises(
        InputError, match=r"pkg-1.0-cp311-cp311-linux_x86_64.whl:pkg/_C.so' is not a readable ELF"
    ):
        inspect_path(wheel)


def test_sm_ordering() -> None:
    assert sorted(["120", "90a", "100f", "90", "100", "80"], key=sm_key) == [
        "80",
        "90",
        "90a",
        "100",
        "100f",
        "120",
    ]
