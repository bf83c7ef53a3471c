"""retag on a hand-made wheel: every name, METADATA and RECORD line follow the new label."""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from cuship.cli import main
from cuship.errors import InputError, NothingToDo, UsageError
from cuship.events import Event, collect
from cuship.wheel.write.retag import plan_retag, record_hash, retag

DIST = "my_pkg-1.2.0.dist-info"


def write_wheel(directory: Path, name: str, files: dict[str, bytes]) -> Path:
    path = directory / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return path


@pytest.fixture
def wheel(tmp_path: Path) -> Path:
    return write_wheel(
        tmp_path,
        "my_pkg-1.2.0-1-cp311-cp311-manylinux_2_28_x86_64.manylinux_2_17_x86_64.whl",
        {
            "my_pkg/__init__.py": b"x = 1\n",
            "my_pkg-1.2.0.data/scripts/tool": b"#!python\n",
            f"{DIST}/METADATA": b"Metadata-Version: 2.1\nName: my-pkg\nVersion: 1.2.0\n\n"
            b"Version: 9 in the body is left alone\n",
            f"{DIST}/WHEEL": b"Wheel-Version: 1.0\nTag: cp311-cp311-manylinux_2_28_x86_64\n",
            f"{DIST}/RECORD": b"stale,,\n",
            f"{DIST}/RECORD.jws": b"{}",
        },
    )


def test_plan_keeps_build_tag_and_tag_order() -> None:
    plan = plan_retag(
        "My.Pkg-1.2.0+old-1-py3-none-manylinux_2_28_x86_64.manylinux_2_17_x86_64.whl",
        "cu128torch2.8",
    )
    assert (
        plan.new_filename
        == "my_pkg-1.2.0+cu128torch2.8-1-py3-none-manylinux_2_28_x86_64.manylinux_2_17_x86_64.whl"
    )
    assert (plan.old_prefix, plan.new_prefix) == ("my_pkg-1.2.0+old", "my_pkg-1.2.0+cu128torch2.8")


def test_label_is_normalised_and_validated() -> None:
    assert (
        plan_retag("a-1.0-py3-none-any.whl", "CU128_Torch2-8").new_version == "1.0+cu128.torch2.8"
    )
    with pytest.raises(UsageError, match="'cu 128' is not a valid local version label"):
        plan_retag("a-1.0-py3-none-any.whl", "cu 128")
    with pytest.raises(NothingToDo, match="already carries the local label 'cu128'"):
        plan_retag("a-1.0+cu128-py3-none-any.whl", "cu128")
    with pytest.raises(InputError, match="not a valid wheel file name"):
        plan_retag("a-1.0.whl", "cu128")


def test_retag_rewrites_names_metadata_and_record(wheel: Path, tmp_path: Path) -> None:
    events: list[Event] = []
    out = retag(wheel, local="cu130", out_dir=tmp_path / "out", emit=collect(events))
    assert (
        out.name
        == "my_pkg-1.2.0+cu130-1-cp311-cp311-manylinux_2_28_x86_64.manylinux_2_17_x86_64.whl"
    )
    new = "my_pkg-1.2.0+cu130"
    with zipfile.ZipFile(out) as archive:
        assert sorted(archive.namelist()) == [
            "my_pkg-1.2.0+cu130.data/scripts/tool",
            f"{new}.dist-info/METADATA",
            f"{new}.dist-info/RECORD",
            f"{new}.dist-info/WHEEL",
            "my_pkg/__init__.py",
        ]
        metadata = archive.read(f"{new}.dist-info/METADATA").decode()
        rows = list(csv.reader(io.StringIO(archive.read(f"{new}.dist-info/RECORD").decode())))
        for path, digest, size in rows[:-1]:
            data = archive.read(path)
            assert (digest, int(size)) == (record_hash(data), len(data))
    assert "Version: 1.2.0+cu130\n" in metadata and "Version: 9 in the body" in metadata
    assert rows[-1] == [f"{new}.dist-info/RECORD", "", ""]
    assert [e.message for e in events if e.level == "warning"] == ["dropped signature 'RECORD.jws'"]
    assert list((tmp_path / "out").iterdir()) == [out]  # no temporary file left behind


def test_wheel_without_dist_info_leaves_nothing(tmp_path: Path) -> None:
    broken = write_wheel(tmp_path, "b-1.0-py3-none-any.whl", {"b/__init__.py": b""})
    with pytest.raises(InputError, match=r"has 0 \.dist-info directories"):
        retag(broken, local="cu1", out_dir=tmp_path / "o")
    assert list((tmp_path / "o").iterdir()) == []


def test_cli_exit_codes(wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["retag", str(wheel), "--local", "cu129", "-w", str(tmp_path / "cli")]) == 0
    assert capsys.readouterr().out.strip().endswith(".whl")
    assert main(["retag", str(tmp_path / "missing.whl"), "--local", "cu129"]) == 2
    assert "does not exist" in capsys.readouterr().err
    not_zip = tmp_path / "c-1.0-py3-none-any.whl"
    not_zip.write_text("not a zip")
    assert main(["inspect", str(not_zip)]) == 2
    assert main(["verify", str(not_zip)]) == 2
    assert "is not a readable wheel" in capsys.readouterr().err


def test_retag_writes_the_torch_pin_replacing_an_unconditional_torch_requirement(
    tmp_path: Path,
) -> None:
    metadata = (
        b"Metadata-Version: 2.1\nName: my-pkg\nVersion: 1.2.0\nRequires-Dist: numpy\n"
        b"Requires-Dist: torch>=2.0\nRequires-Dist: torch[cuda]; extra == 'gpu'\n\nbody\n"
    )
    source = write_wheel(
        tmp_path,
        "my_pkg-1.2.0-cp311-cp311-linux_x86_64.whl",
        {f"{DIST}/METADATA": metadata, f"{DIST}/RECORD": b""},
    )
    out = retag(source, local="cu130", out_dir=tmp_path / "out", requires=["torch==2.13.*"])
    with zipfile.ZipFile(out) as archive:
        head = archive.read("my_pkg-1.2.0+cu130.dist-info/METADATA").decode().split("\n\n")[0]
    requires = [line for line in head.splitlines() if line.startswith("Requires-Dist:")]
    assert requires == [
        "Requires-Dist: numpy",
        "Requires-Dist: torch[cuda]; extra == 'gpu'",
        "Requires-Dist: torch==2.13.*",
    ]
    with pytest.raises(UsageError, match="not a requirement"):
        plan_retag(source.name, "cu130", requires=["torch=="])


def test_the_torch_pin_stays_a_header_when_metadata_has_no_body(tmp_path: Path) -> None:
    """setuptools writes METADATA without a description as headers and one final newline;
    the pin once landed after a blank line there, in the body, where pip never reads it."""
    from cuship.wheel.audit import inspect_wheel

    metadata = b"Metadata-Version: 2.4\nName: my-pkg\nVersion: 1.2.0\nRequires-Dist: torch\n"
    source = write_wheel(
        tmp_path,
        "my_pkg-1.2.0-cp311-cp311-linux_x86_64.whl",
        {f"{DIST}/METADATA": metadata, f"{DIST}/RECORD": b""},
    )
    out = retag(source, local="cu130", out_dir=tmp_path / "out", requires=["torch==2.13.*"])
    with zipfile.ZipFile(out) as archive:
        text = archive.read("my_pkg-1.2.0+cu130.dist-info/METADATA").decode()
    assert text.endswith("Version: 1.2.0+cu130\nRequires-Dist: torch==2.13.*\n")
    pin = inspect_wheel(out).torch_requirement
    assert pin is not None and pin.requirement == "torch==2.13.*"


def test_retagged_and_stripped_wheels_are_readable_by_anyone(wheel: Path, tmp_path: Path) -> None:
    """mkstemp makes 0600, which a published index (Pages) cannot serve: wheels are 0644."""
    import os
    import stat

    from cuship.wheel.write.retag import strip_label

    old = os.umask(0o077)
    try:
        labelled = retag(wheel, local="cu128", out_dir=tmp_path / "out")
        plain = strip_label(labelled, out_dir=tmp_path / "plain")
    finally:
        os.umask(old)
    assert stat.S_IMODE(labelled.stat().st_mode) == 0o644
    assert stat.S_IMODE(plain.stat().st_mode) == 0o644


def test_a_rewrite_onto_a_published_name_never_writes_through_its_hard_link(
    wheel: Path, tmp_path: Path
) -> None:
    """A rebuild's wheels are written where the last build's were, and an index links those
    files into its site: writing in place would change a published file's bytes. Every rewrite
    writes a new file and renames it onto the name, so the site's link keeps the old bytes."""
    from cuship.wheel.write.retag import strip_label

    rebuilt_dir = tmp_path / "rebuilt"
    rebuilt_dir.mkdir()
    with zipfile.ZipFile(wheel) as old:
        files = {i.filename: old.read(i) for i in old.infolist()}
    rebuilt = write_wheel(rebuilt_dir, wheel.name, {**files, "my_pkg/__init__.py": b"x = 2\n"})
    out, site = tmp_path / "out", tmp_path / "site"
    site.mkdir()

    def labelled(source: Path) -> Path:
        return retag(source, local="cu128", out_dir=out)

    def plain(source: Path) -> Path:
        return strip_label(
            retag(source, local="cu128", out_dir=tmp_path / source.parent.name), out_dir=out
        )

    writers: dict[str, Callable[[Path], Path]] = {"retag": labelled, "strip_label": plain}
    for name, write in writers.items():
        first = write(wheel)
        published = site / f"{name}-{first.name}"
        published.hardlink_to(first)
        before = published.read_bytes()
        again = write(rebuilt)
        assert again == first and again.read_bytes() != before, name  # the rebuild differs
        assert published.read_bytes() == before, name  # the site's link kept its bytes
