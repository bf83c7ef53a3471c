"""The workload of benchmarks/bench_index_scale.py: the wheels it plans are valid and varied, the
floor rewrites a site's tree exactly, and the disk check finds the right mount."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections import Counter
from pathlib import Path

from benchmarks._index_scale import (
    LABELS,
    Results,
    WheelSpec,
    mount_of,
    plan_wheels,
    table,
    wheel_members,
    write_wheel,
)
from packaging.utils import parse_wheel_filename


def test_plan_has_a_tenth_as_many_projects_and_every_label() -> None:
    specs = plan_wheels(1000)
    names = [spec.filename for spec in specs]
    assert len(set(names)) == 1000
    assert len({spec.project for spec in specs}) == 100
    labels = Counter(parse_wheel_filename(name)[1].local for name in names)
    assert {label for label in labels if label} == set(LABELS)
    assert labels[None] == 600  # six plain releases per project, four labelled variants


def test_plan_is_a_prefix_of_a_larger_plan() -> None:
    assert plan_wheels(50) == plan_wheels(5000)[:50]


def test_wheel_members_record_every_file_with_its_hash() -> None:
    spec = WheelSpec("scale-pkg00007", "2.0.0+cu130torch2.9")
    members = dict(wheel_members(spec, b"x" * 2048))
    info = "scale_pkg00007-2.0.0+cu130torch2.9.dist-info"
    record = members[f"{info}/RECORD"].decode().splitlines()
    assert record[-1] == f"{info}/RECORD,,"
    for line in record[:-1]:
        name, digest, size = line.split(",")
        data = members[name]
        expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert (digest, int(size)) == (f"sha256={expected}", len(data))
    assert b"Version: 2.0.0+cu130torch2.9\n" in members[f"{info}/METADATA"]


def test_written_wheel_is_a_stored_zip_readable_by_name(tmp_path: Path) -> None:
    spec = WheelSpec("scale-pkg00001", "1.3.0")
    path = write_wheel(tmp_path, spec, b"\0" * 2048)
    assert path.name == "scale_pkg00001-1.3.0-py3-none-any.whl"
    assert path.stat().st_mode & 0o777 == 0o644
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
        assert {i.compress_type for i in archive.infolist()} == {zipfile.ZIP_STORED}


def test_mount_of_picks_the_longest_mount_holding_the_path() -> None:
    mounts = (
        "/dev/vda / ext4 rw,relatime 0 0\n"
        "tmpfs /var/tmp tmpfs rw 0 0\n"
        "tmpfs /var/tmpfoo tmpfs rw 0 0\n"
        "/dev/vdb /mnt/my\\040disk xfs rw 0 0\n"
    )
    assert mount_of("/var/tmp/bench", mounts) == ("tmpfs", "/var/tmp")
    assert mount_of("/var/tm", mounts) == ("ext4", "/")
    assert mount_of("/mnt/my disk/x", mounts) == ("xfs", "/mnt/my disk")
    assert mount_of("/x", "") == ("unknown", "")


def test_table_shows_medians_ratios_growth_and_notes() -> None:
    results = Results()
    for seconds in (2.0, 1.0, 9.0):
        results.add("cold.cuship", 10, seconds)
    results.add("cold.floor", 10, 1.0)
    results.add("cold.cuship", 100, 4.0)
    results.note("inc.yank 1 wheel.cli", 10, "not supported yet: exit 2")
    lines = table(results, [10, 100]).splitlines()
    row = next(line for line in lines if line.startswith("cuship index, cold"))
    assert row.split()[3:6] == ["2.000", "4.000", "2.0x"]
    ratio = next(line for line in lines if "cuship cold / floor" in line)
    assert "2.00x" in ratio
    yank = next(line for line in lines if line.startswith("yank 1 wheel (CLI)"))
    assert yank.split()[4:6] == ["n/a", "-"]
    assert lines[-1] == "note: inc.yank 1 wheel.cli @ 10: not supported yet: exit 2"
