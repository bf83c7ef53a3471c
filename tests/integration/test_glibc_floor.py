"""The glibc floor on a real binary: nvcc with the static CUDA runtime pulls in glibc 2.34's
dlopen and pthread symbols on this host, auditwheel tags the repaired wheel manylinux_2_34, and
a 2_28 floor fails it naming those symbols (or, not enforced, warns)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuship.builder.glibc import GlibcFloor
from cuship.builder.run.finish import finish_wheel
from cuship.cli import main
from cuship.events import Event, collect
from cuship.wheel.read.elf import glibc_needed
from tests.build_fakes import job_work
from tests.integration.cudawheel import build_so, make_wheel

ARCH = "8.0;10.0"


@pytest.fixture(scope="module")
def static_so(tmp_path_factory: pytest.TempPathFactory) -> Path:
    so = build_so(tmp_path_factory.mktemp("nvcc"), flags=("--cudart", "static"))
    need = glibc_needed(so)
    assert need is not None and need >= (2, 29), f"expected glibc >= 2.29 symbols, got {need}"
    return so


def _finish(wheel: Path, tmp_path: Path, floor: GlibcFloor, events: list[Event]) -> tuple[str, ...]:
    (tmp_path / "out").mkdir()
    job = job_work(tmp_path, arches=ARCH, floor=floor)
    _, report, problems = finish_wheel(wheel, job, environ=os.environ, emit=collect(events))
    assert report.tags and "manylinux_2_" in report.tags[0]
    return problems


def test_an_enforced_floor_fails_the_wheel_naming_the_symbols(
    static_so: Path, tmp_path: Path
) -> None:
    wheel = make_wheel(tmp_path, static_so)
    events: list[Event] = []
    problems = _finish(wheel, tmp_path, GlibcFloor(floor="2_28", enforced=True, why="x"), events)
    (problem,) = problems
    assert "above the glibc floor manylinux_2_28" in problem
    assert "GLIBC_2.3" in problem and "cudaxpy/_axpy.so" in problem
    assert not [e for e in events if e.level == "warning" and "floor" in e.message]


def test_the_default_floor_only_warns(static_so: Path, tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, static_so)
    events: list[Event] = []
    floor = GlibcFloor(floor="2_28", enforced=False, why="cuship's default floor")
    assert _finish(wheel, tmp_path, floor, events) == ()
    (warning,) = [e for e in events if e.level == "warning" and "glibc floor" in e.message]
    assert "Users with an older glibc cannot install it" in warning.message
    assert "set [build] manylinux" in warning.message


def test_verify_cli_holds_a_repaired_wheel_to_a_floor(
    static_so: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = make_wheel(tmp_path, static_so)
    assert main(["repair", str(wheel), "-w", str(tmp_path / "fixed")]) == 0
    (repaired,) = (tmp_path / "fixed").glob("*.whl")
    capsys.readouterr()
    assert main(["verify", str(repaired), "--manylinux", "2_28"]) == 1
    err = capsys.readouterr().err
    assert "above the glibc floor manylinux_2_28" in err and "raise the floor" in err
    tag = repaired.name.split("-")[-1].removesuffix(".whl").split(".")[0]
    floor = tag.removeprefix("manylinux_").removesuffix("_x86_64")
    assert main(["verify", str(repaired), "--manylinux", floor]) == 0
