"""The torch extension example, built for real against the installed torch: inspect reads exact
(libtorch's C++ API) or stable (torch's stable C shim) from its shared object, the same verdict
binutils gives; verify holds it to the wheel's torch pin; the wheel installs next to that torch
and its CPU kernels pass the example's tests and ``cuship check --installed``.

Each variant is built once per module (nvcc for sm_80 + compute_120 only, to keep it short).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cuship.builder.run.smoke import builder_site
from cuship.cli import main
from cuship.judge.verify import verify
from cuship.wheel.audit import WheelReport, inspect_path
from cuship.wheel.torchabi import classify
from tests.integration.venvs import make_venv

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cushiptorchops"
ARCH_LIST = "8.0;12.0+PTX"
VARIANTS = ("exact", "stable")

torch = pytest.importorskip("torch", reason="the example builds against the installed torch")
TORCH_MINOR = ".".join(torch.__version__.split("+")[0].split(".")[:2])


def _build(variant: str, work: Path) -> Path:
    source = work / "src"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    env = {**os.environ, "TORCH_CUDA_ARCH_LIST": ARCH_LIST, "CUSHIPTORCHOPS_VARIANT": variant}
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps"]
    cmd += ["-w", str(work / "dist"), str(source)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail(f"building the {variant} example failed:\n{proc.stdout}\n{proc.stderr}")
    (wheel,) = (work / "dist").glob("cushiptorchops-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both variants' wheels, built once for this module."""
    return {v: _build(v, tmp_path_factory.mktemp(f"torch-{v}")) for v in VARIANTS}


def _report(wheel: Path) -> WheelReport:
    report = inspect_path(wheel)
    assert isinstance(report, WheelReport)
    return report


def test_exact_build_imports_libtorch_cpp_and_pins_its_torch(wheels: dict[str, Path]) -> None:
    report = _report(wheels["exact"])
    (ext,) = report.extensions
    assert ext.path.startswith("cushiptorchops/_C.cpython-")
    assert report.torch_abi == ext.torch_abi == "exact"
    assert ext.torch.cxx_symbols > 10 and set(ext.torch.libraries) == {
        "libc10.so",
        "libtorch_cpu.so",
    }
    assert "libcudart.so.13" in ext.needed  # the CUDA runtime, not torch's CUDA libraries
    assert not any(n.startswith(("libtorch_cuda", "libc10_cuda")) for n in ext.needed)
    assert (report.sass, report.ptx) == (("80", "120"), ("120",))
    pin = report.torch_requirement
    assert pin is not None and pin.requirement == f"torch=={TORCH_MINOR}.*"
    assert report.torch_built == TORCH_MINOR
    result = verify(report, arches=ARCH_LIST, torch=TORCH_MINOR)
    assert result.ok, result.problems
    assert "torch requirement for torch ABI 'exact'" in result.checks


def test_stable_build_imports_only_the_stable_shim(wheels: dict[str, Path]) -> None:
    report = _report(wheels["stable"])
    (ext,) = report.extensions
    assert ext.path == "cushiptorchops/_C.abi3.so"
    assert report.tags == ("cp310-abi3-linux_x86_64",)
    assert (report.torch_abi, ext.torch.cxx_symbols) == ("stable", 0)
    assert ext.torch.shim_symbols > 10
    # it still needs libtorch and libc10: DT_NEEDED alone cannot tell stable from exact
    assert set(ext.torch.libraries) == {"libc10.so", "libtorch_cpu.so"}
    pin = report.torch_requirement
    assert pin is not None and (pin.minimum, pin.exact) == (TORCH_MINOR, None)
    assert verify(report, arches=ARCH_LIST).ok


def _binutils_verdict(so: Path) -> str:
    nm = subprocess.run(
        ["nm", "-D", "--undefined-only", str(so)], capture_output=True, text=True, check=True
    )
    readelf = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True, check=True)
    undefined = [line.split()[-1].split("@")[0] for line in nm.stdout.splitlines() if line.strip()]
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", readelf.stdout)
    return classify(needed, undefined).abi


@pytest.mark.parametrize("variant", VARIANTS)
def test_same_verdict_as_nm_and_readelf(
    wheels: dict[str, Path], variant: str, tmp_path: Path
) -> None:
    with zipfile.ZipFile(wheels[variant]) as archive:
        (member,) = [n for n in archive.namelist() if n.endswith(".so")]
        so = Path(archive.extract(member, tmp_path))
    (ext,) = _report(wheels[variant]).extensions
    assert _binutils_verdict(so) == ext.torch_abi == variant


def _without_torch_requirement(wheel: Path, dest: Path) -> Path:
    """A copy of ``wheel`` whose METADATA lost its Requires-Dist on torch (RECORD not updated:
    inspect and verify read neither hashes nor signatures)."""
    out = dest / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith(".dist-info/METADATA"):
                kept = [ln for ln in data.decode().splitlines() if "Requires-Dist: torch" not in ln]
                data = ("\n".join(kept) + "\n").encode()
            dst.writestr(info, data)
    return out


def test_verify_fails_an_exact_wheel_without_its_pin(
    wheels: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unpinned = _without_torch_requirement(wheels["exact"], tmp_path)
    assert main(["verify", str(unpinned)]) == 1
    err = capsys.readouterr().err
    assert "exact torch ABI (cushiptorchops/_C.cpython-" in err
    assert "no torch requirement" in err and "Requires-Dist: torch==X.Y.*" in err
    assert main(["verify", str(unpinned), "--torch", TORCH_MINOR]) == 1
    assert f"Requires-Dist: torch=={TORCH_MINOR}.*" in capsys.readouterr().err


def test_inspect_text_and_json(wheels: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(wheels["exact"])]) == 0
    out = capsys.readouterr().out
    assert (
        f"torch ABI exact   requires torch=={TORCH_MINOR}.*; built against torch {TORCH_MINOR}"
        in out
    )
    assert re.search(r"_C\.cpython-\S+\.so: torch ABI exact: imports \d+ c10/at/torch C\+\+", out)


def _venv(tmp_path: Path, wheel: Path) -> Path:
    """A fresh venv that sees the system torch, with ``wheel`` installed from no index: its
    torch requirement must be met by the torch already installed."""
    venv = tmp_path / "venv"
    make_venv(venv, system_site=True)
    python = venv / "bin" / "python"
    # The tests may run in a venv themselves (the README's commands in one): then torch is in
    # that venv, which --system-site-packages does not see (it names the base interpreter's
    # packages), so a .pth lists the running interpreter's site directories too, as cuship's
    # system-site smoke venv does (builder_site)
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    parent = "".join(f"{folder}\n" for folder in builder_site(sys.executable))
    Path(purelib, "_tests_parent_site.pth").write_text(parent, encoding="utf-8")
    cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index"]
    proc = subprocess.run([*cmd, str(wheel)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return python


@pytest.mark.parametrize("variant", VARIANTS)
def test_installed_wheel_passes_its_cpu_tests_and_check(
    wheels: dict[str, Path], variant: str, tmp_path: Path
) -> None:
    python = _venv(tmp_path, wheels[variant])
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env["PYTHONPATH"] = str(REPO / "src")  # the cuship under test, not an installed one
    tests = [str(python), "-m", "pytest", "-m", "not gpu", "-p", "no:cacheprovider"]
    proc = subprocess.run(
        [*tests, "-p", "no:cuship", "tests"], cwd=EXAMPLE, env=env, capture_output=True, text=True
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    passed = re.search(r"(\d+) passed", output)
    assert passed is not None and int(passed.group(1)) >= 50, output
    assert f"cushiptorchops: {variant} library {tmp_path / 'venv'}" in output
    check = [str(python), "-m", "cuship", "check", str(EXAMPLE), "--installed", "--quick"]
    proc = subprocess.run(
        [*check, "--no-store", "--device", "cpu"], env=env, capture_output=True, text=True
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert re.search(r"passed: 2 passed, 2 skipped", output), output
    assert "(installed wheel); extensions: _C loaded" in output


def test_resolve_refuses_the_exact_wheel_on_another_torch_naming_both(
    wheels: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    from cuship.index import write
    from cuship.index.describe import describe_wheel

    site = tmp_path / "site"
    write([wheels["exact"]], site, describe=describe_wheel)
    index = (site / "simple").as_uri()
    for key, value in {"CUSHIP_GPUS": "A100", "CUSHIP_DRIVER_CUDA": "13.0"}.items():  # sm_80 SASS
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CUSHIP_TORCH", "2.11.0")
    assert main(["resolve", "cushiptorchops", "--index", index, "--json"]) == 1
    (rejected,) = json.loads(capsys.readouterr().out)["rejected"]
    assert rejected["reason"].startswith(
        f"built for torch=={TORCH_MINOR}.* (exact ABI, from its Requires-Dist); installed torch is "
        "2.11.0: 'undefined symbol: _Z"
    )
    monkeypatch.setenv("CUSHIP_TORCH", f"{TORCH_MINOR}.0+cpu")
    assert main(["resolve", "cushiptorchops", "--index", index, "--json"]) == 0
    chosen = json.loads(capsys.readouterr().out)["chosen"]
    assert chosen["filename"] == wheels["exact"].name
