"""`cuship doctor` on hostile installs (issue 34, items 4 and 6): what it cannot read is said
as "could not read", in bounded time and memory, never a hang, a traceback or "no problem"."""

from __future__ import annotations

import os
from pathlib import Path

from cuship.doctor import PackageReport
from tests.elf_factory import cuda_elf
from tests.site_factory import install
from tests.unit.test_doctor import EXT, doctor


def _files_problems(package: PackageReport) -> list[str]:
    return [p.message for p in package.problems if p.area == "files"]


def test_a_record_that_is_not_utf8_could_not_be_read(tmp_path: Path) -> None:
    info = install(tmp_path, "pkg", "1.0", files={EXT: cuda_elf(sass=["90"])})
    (info / "RECORD").write_bytes(b"pkg/_C.so,sha256=\xff\xfe,1\n")
    (problem,) = _files_problems(doctor(tmp_path))
    assert problem.startswith("could not read RECORD: it is not UTF-8")


def test_a_record_with_a_50_mb_line_could_not_be_read(tmp_path: Path) -> None:
    info = install(tmp_path, "pkg", "1.0", files={EXT: cuda_elf(sass=["90"])})
    (info / "RECORD").write_bytes(b"pkg/_C.so," + b"x" * (50 << 20) + b",1\n")
    (problem,) = _files_problems(doctor(tmp_path))
    assert problem.startswith("could not read RECORD: it is larger than")


def test_a_record_with_a_line_csv_refuses_could_not_be_read(tmp_path: Path) -> None:
    info = install(tmp_path, "pkg", "1.0", files={EXT: cuda_elf(sass=["90"])})
    (info / "RECORD").write_bytes(b"pkg/_C.so," + b"x" * (1 << 20) + b",1\n")
    (problem,) = _files_problems(doctor(tmp_path))
    assert problem.startswith("could not read RECORD: a line csv cannot read")


def test_a_record_of_a_million_shared_objects_is_read_to_a_bound(tmp_path: Path) -> None:
    info = install(tmp_path, "pkg", "1.0", files={EXT: cuda_elf(sass=["90"])})
    lines = b"".join(b"pkg/x%d.so,sha256=x,1\n" % i for i in range(1_000_000))
    (info / "RECORD").write_bytes(lines)
    problems = _files_problems(doctor(tmp_path))
    assert (
        problems[0]
        == "could not read RECORD: it lists more than 20000 shared objects; the rest unread"
    )
    assert len(problems) == 20_001  # each missing one of the first 20,000, then the bound


def test_a_record_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    info = install(tmp_path, "pkg", "1.0", files={EXT: cuda_elf(sass=["90"])})
    (info / "RECORD").unlink()
    os.mkfifo(info / "RECORD")
    (problem,) = _files_problems(doctor(tmp_path))
    assert (
        problem == "could not read RECORD: it is a FIFO (named pipe), not a regular file; refused"
    )


def test_a_shared_object_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    install(tmp_path, "pkg", "1.0", files={EXT: cuda_elf(sass=["90"])})
    (tmp_path / EXT).unlink()
    os.mkfifo(tmp_path / EXT)
    (problem,) = _files_problems(doctor(tmp_path))
    assert problem.startswith(f"{EXT}: could not read it: the shared object")
    assert "is a FIFO (named pipe), not a regular file" in problem


def test_a_shared_object_cut_to_30_bytes_is_a_problem_not_silence(tmp_path: Path) -> None:
    install(tmp_path, "pkg", "1.0", files={EXT: cuda_elf(sass=["90"])[:30]})
    (problem,) = _files_problems(doctor(tmp_path))
    assert problem.startswith(f"{EXT}: could not read it:")
    assert "cut short: 30 bytes, less than an ELF header" in problem
