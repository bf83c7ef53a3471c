"""inspect / repair / retag / verify on a real nvcc-built .so, real auditwheel and real pip."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cuship.cli import main
from cuship.docs.documents import schema_file
from cuship.events import Event, collect
from cuship.wheel.audit import ObjectReport, WheelReport, inspect_path
from cuship.wheel.read.fatbin import fatbin_of_elf
from cuship.wheel.write.repair import repair
from cuship.wheel.write.retag import record_hash, retag
from tests.integration.cudawheel import build_so, cuobjdump_arches, make_wheel
from tests.integration.venvs import make_venv
from tests.jsondocs import schema_errors


@pytest.fixture(scope="session")
def cuda_so(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_so(tmp_path_factory.mktemp("nvcc"))


@pytest.fixture
def raw_wheel(cuda_so: Path, tmp_path: Path) -> Path:
    return make_wheel(tmp_path, cuda_so)


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_inspect_matches_cuobjdump(cuda_so: Path) -> None:
    report = inspect_path(cuda_so)
    assert isinstance(report, ObjectReport)
    sass, ptx = cuobjdump_arches(cuda_so)
    assert (set(report.sass), set(report.ptx)) == (sass, ptx) == ({"80", "90a", "100"}, {"120"})
    assert report.ptx_compressed  # CUDA 13 zstd-compresses PTX by default
    assert report.containers == 2  # nvlink's device-link container plus the compiled one
    assert "libcudart.so.13" in report.needed and not any("libcuda.so" in n for n in report.needed)


def test_sass_and_ptx_of_one_arch_and_lz4(tmp_path: Path) -> None:
    plain = build_so(tmp_path, gencode=("arch=compute_75,code=[sm_75,compute_75]",))
    assert {(e.kind, e.sm, e.codec) for e in fatbin_of_elf(plain)} == {
        ("sass", "75", None),
        ("ptx", "75", "zstd"),
    }
    assert cuobjdump_arches(plain) == ({"75"}, {"75"})
    fast = build_so(
        tmp_path,
        name="fast.so",
        gencode=("arch=compute_75,code=compute_75",),
        flags=("-Xfatbin", "-compress-all", "--compress-mode=speed"),
    )
    assert {(e.kind, e.codec) for e in fatbin_of_elf(fast)} == {("ptx", "lz4")}
    assert cuobjdump_arches(fast) == (set(), {"75"})


def test_truncated_so_is_input_error(
    cuda_so: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cut = tmp_path / "cut.so"
    cut.write_bytes(cuda_so.read_bytes()[:20000])
    code, _, err = run_cli(["inspect", str(cut)], capsys)
    assert code == 2 and "cut.so" in err and "truncated" in err


def test_inspect_wheel_json(raw_wheel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["inspect", str(raw_wheel), "--json"], capsys)
    doc = json.loads(out)
    assert code == 0
    assert schema_errors(schema_file("inspect"), doc) == []
    assert (doc["sass"], doc["ptx"], doc["tags"]) == (
        ["80", "90a", "100"],
        ["120"],
        ["cp311-cp311-linux_x86_64"],
    )
    assert doc["extensions"][0]["path"] == "cudaxpy/_axpy.so"
    assert doc["bundled_cuda_libs"] == []


def test_plain_auditwheel_bundles_cudart_and_verify_catches_it(
    raw_wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "auditwheel",
            "repair",
            "-w",
            str(tmp_path / "plain"),
            str(raw_wheel),
        ],
        check=True,
        capture_output=True,
    )
    (bundled,) = (tmp_path / "plain").glob("*.whl")
    code, _, err = run_cli(["verify", str(bundled), "--arch", "8.0;9.0;10.0"], capsys)
    assert code == 1
    assert re.search(r"bundles 'cudaxpy\.libs/libcudart-[0-9a-f]{8}\.so\.13[.\d]*'", err)


def test_repair_excludes_cuda_and_warns_about_glibc(raw_wheel: Path, tmp_path: Path) -> None:
    events: list[Event] = []
    result = repair(raw_wheel, out_dir=tmp_path / "out", env=dict(os.environ), emit=collect(events))
    assert result.report.bundled_cuda_libs == () and result.report.bundled_libs == ()
    assert result.excluded_needed == ("libcudart.so.13",)
    assert any(tag.startswith("cp311-cp311-manylinux") for tag in result.report.tags)
    (warning,) = [e for e in events if e.level == "warning"]
    assert "libcudart.so.13 is excluded" in warning.message and "GLIBC_2." in warning.message
    with zipfile.ZipFile(result.output) as archive:
        assert not any("libcudart" in name for name in archive.namelist())


def test_retag_then_pip_install_shows_label(
    raw_wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(
        ["retag", str(raw_wheel), "--local", "cu128torch2.8", "-w", str(tmp_path / "tagged")],
        capsys,
    )
    tagged = Path(out.strip())
    assert code == 0 and tagged.name == "cudaxpy-0.1.0+cu128torch2.8-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(tagged) as archive:
        names = archive.namelist()
        record = archive.read("cudaxpy-0.1.0+cu128torch2.8.dist-info/RECORD").decode()
        for line in record.splitlines():
            path, digest, size = line.rsplit(",", 2)
            if digest:
                data = archive.read(path)
                assert (digest, int(size)) == (record_hash(data), len(data))
    assert not any(name.startswith("cudaxpy-0.1.0.dist-info") for name in names)

    venv = tmp_path / "venv"
    make_venv(venv, pip=True)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", str(tagged)], check=True)
    shown = subprocess.run(
        [python, "-m", "pip", "show", "cudaxpy"], capture_output=True, text=True, check=True
    )
    assert "Version: 0.1.0+cu128torch2.8" in shown.stdout

    code, out, _ = run_cli(
        ["verify", str(tagged), "--arch", "8.0;9.0;10.0;compute_120", "--local", "cu128torch2.8"],
        capsys,
    )
    assert code == 0 and out.startswith("ok: ")


def test_verify_reports_missing_arches(raw_wheel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        ["verify", str(raw_wheel), "--arch", "8.0;9.0;10.0;12.0+PTX", "--json"], capsys
    )
    doc = json.loads(out)
    assert code == 1 and not doc["ok"]
    assert schema_errors(schema_file("verify"), doc) == []
    assert doc["problems"] == ["missing SASS for sm_120 (found: 80, 90a, 100)"]


def test_retag_rejects_same_label_and_bad_label(raw_wheel: Path, tmp_path: Path) -> None:
    tagged = retag(raw_wheel, local="cu130", out_dir=tmp_path)
    report = inspect_path(tagged)
    assert isinstance(report, WheelReport) and report.local == "cu130"
    from cuship.errors import NothingToDo, UsageError

    with pytest.raises(NothingToDo):
        retag(tagged, local="cu130")
    with pytest.raises(UsageError, match="'cu 13' is not a valid local version label"):
        retag(raw_wheel, local="cu 13")


def test_verify_so_without_arches_checks_nothing(
    cuda_so: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(["verify", str(cuda_so)], capsys)
    assert code == 4 and "nothing to verify" in err
    code, out, _ = run_cli(["verify", str(cuda_so), "--arch", "sm_80 90a compute_120"], capsys)
    assert code == 0 and out.startswith("ok: ")
