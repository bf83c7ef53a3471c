"""The bundled example builds into a real CUDA wheel that installs and works without a GPU."""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from tests.integration.cudawheel import cuobjdump_arches
from tests.integration.venvs import make_venv

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"

# Runs inside the fresh venv: the backend and the CPU ops' answers, as JSON.
PROBE = """
import json, numpy as np, cuvecops
x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
print(json.dumps({
    "backend": cuvecops.backend(),
    "cudart": cuvecops.backend_info().cudart,
    "saxpy": cuvecops.saxpy(2.0, x, x).tolist(),
    "softmax": cuvecops.softmax(np.array([[0.0, 0.0], [1000.0, 1000.0]])).tolist(),
    "sums": [cuvecops.reduce_sum(np.arange(10, dtype=t)) for t in
             ("float32", "float64", "int32", "int64")],
    "int32_no_overflow": cuvecops.reduce_sum(np.full(4, 2**31 - 1, dtype=np.int32)),
}))
"""


def extension_of(wheel: Path, dest: Path) -> Path:
    """Extract the wheel's cuvecops/_cuda*.so into dest."""
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if re.fullmatch(r"cuvecops/_cuda[^/]*\.so", n)]
        assert len(names) == 1, f"expected one cuvecops/_cuda*.so in {wheel.name}, got {names}"
        return Path(zf.extract(names[0], dest))


def needed_libraries(so: Path) -> list[str]:
    with so.open("rb") as fh:
        section = ELFFile(fh).get_section_by_name(".dynamic")
        assert isinstance(section, DynamicSection)
        # pyelftools sets .needed on DT_NEEDED tags only, which its type hints cannot say
        return [str(tag.needed) for tag in section.iter_tags("DT_NEEDED")]  # type: ignore[attr-defined]


def undefined_symbols(so: Path) -> set[str]:
    """Dynamic symbols the shared object imports (section index SHN_UNDEF)."""
    with so.open("rb") as fh:
        section = ELFFile(fh).get_section_by_name(".dynsym")
        assert section is not None
        return {
            sym.name
            for sym in section.iter_symbols()  # type: ignore[attr-defined]
            if sym.name and sym["st_shndx"] == "SHN_UNDEF"
        }


def venv_with(tmp_path: Path, *requirements: str) -> Path:
    """A fresh venv (no system site-packages) with the requirements installed; its python."""
    venv = tmp_path / "venv"
    python = make_venv(venv)
    cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", *requirements]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return python


def probe(python: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CUVECOPS_BACKEND")}
    out = subprocess.run(
        [str(python), "-c", PROBE], env=env, check=True, capture_output=True, text=True
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def system_has_cudart() -> bool:
    try:
        ctypes.CDLL("libcudart.so.13")
    except OSError:
        return False
    return True


def test_extension_links_the_shared_cuda_runtime(example_wheel: Path, tmp_path: Path) -> None:
    needed = needed_libraries(extension_of(example_wheel, tmp_path))
    assert "libcudart.so.13" in needed
    assert not any(lib.startswith("libcuda.so") for lib in needed)  # the driver is never linked
    # the runtime API comes from that shared libcudart, none of it is linked in statically
    assert {"cudaMalloc", "__cudaRegisterFatBinary"} <= undefined_symbols(
        extension_of(example_wheel, tmp_path)
    )


def test_extension_has_sass_for_four_arches_and_ptx(example_wheel: Path, tmp_path: Path) -> None:
    so = extension_of(example_wheel, tmp_path)
    sass, ptx = cuobjdump_arches(so)
    assert sass == {"80", "90", "100", "120"}
    assert ptx == {"80", "120"}  # compute_80: what a 9.0 GPU JITs under CUDA_FORCE_PTX_JIT=1


def _assert_cpu_answers(result: dict[str, object]) -> None:
    assert result["saxpy"] == [3.0, 6.0, 9.0]
    assert result["softmax"] == [[0.5, 0.5], [0.5, 0.5]]
    assert result["sums"] == [45.0, 45.0, 45, 45]
    assert result["int32_no_overflow"] == 4 * (2**31 - 1)


def test_installed_wheel_falls_back_to_cpu_and_says_why(
    example_wheel: Path, tmp_path: Path
) -> None:
    result = probe(venv_with(tmp_path, str(example_wheel)))
    backend = str(result["backend"])
    if system_has_cudart():
        assert backend.startswith("cpu: no CUDA device (cudaGetDeviceCount: "), backend
    else:
        assert backend == "cpu: extension not importable: libcudart.so.13 not found"
    assert result["cudart"] is None
    _assert_cpu_answers(result)


def test_pip_cuda_runtime_is_preloaded(example_wheel: Path, tmp_path: Path) -> None:
    result = probe(venv_with(tmp_path, str(example_wheel), "nvidia-cuda-runtime==13.0.*"))
    backend = str(result["backend"])
    assert backend.startswith("cpu: no CUDA device (cudaGetDeviceCount: "), backend
    assert str(result["cudart"]).startswith(str(tmp_path / "venv"))
    assert str(result["cudart"]).endswith("libcudart.so.13")
    _assert_cpu_answers(result)


def test_example_suite_passes_against_the_built_extension(
    example_wheel: Path, tmp_path: Path
) -> None:
    with zipfile.ZipFile(example_wheel) as zf:
        zf.extractall(tmp_path / "site")
    # Not an xdist worker itself, even when this test runs in one (pytest-benchmark would warn).
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "CUVECOPS_BACKEND" and not k.startswith("PYTEST_XDIST")
    }
    env.update(
        PYTHONPATH=str(tmp_path / "site"),
        TRITON_INTERPRET="1",
        NUMBA_ENABLE_CUDASIM="1",
        TRITON_CACHE_DIR=str(tmp_path / "triton-cache"),
        NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"),
    )
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "not gpu", "-rs"]
    cmd += ["-p", "no:cacheprovider", "-p", "no:cuship"]
    proc = subprocess.run(cmd, cwd=EXAMPLE, env=env, capture_output=True, text=True, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    passed = re.search(r"(\d+) passed", output)
    assert passed is not None and int(passed.group(1)) >= 50, output
    assert re.search(r"\d+ deselected", output), output  # the gpu tests exist and were held back
    assert "failed" not in output and "error" not in output.lower(), output
    assert "skipped" not in output, output  # the extension tests ran against the built wheel


def configure(tmp_path: Path, *defines: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    """Run only CMake's configure step on the example (seconds: no compile)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CUSHIP_CUDA_ARCHS", "CUDAARCHS", "CMAKE_CUDA_COMPILER_LAUNCHER")
    }
    env.update(CUDACXX="/usr/local/cuda/bin/nvcc", **extra_env)
    cmd = ["cmake", "-S", str(EXAMPLE), "-B", str(tmp_path / "build"), "-G", "Ninja", *defines]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    ("defines", "env", "expected"),
    [
        (
            (),
            {},
            "80-real;80-virtual;90-real;100-real;120-real;120-virtual (from cuvecops default)",
        ),
        (
            (),
            {"CUSHIP_CUDA_ARCHS": "86-real;90"},
            "86-real;90 (from environment variable CUSHIP_CUDA_ARCHS)",
        ),
        (
            ("-DCMAKE_CUDA_ARCHITECTURES=75-real;120",),
            {"CUSHIP_CUDA_ARCHS": "86-real"},
            "75-real;120 (from CMAKE_CUDA_ARCHITECTURES)",
        ),
    ],
    ids=["default", "cuship-env", "cmake-define-wins"],
)
def test_arch_list_comes_from_outside(
    tmp_path: Path, defines: tuple[str, ...], env: dict[str, str], expected: str
) -> None:
    proc = configure(tmp_path, *defines, CMAKE_CUDA_COMPILER_LAUNCHER="sccache", **env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"cuvecops: CUDA architectures {expected}" in proc.stdout
    assert "cuvecops: CUDA compiler launcher sccache" in proc.stdout


@pytest.mark.parametrize("arch", ["native", "all", "all-major"])
def test_machine_dependent_arch_lists_are_refused(tmp_path: Path, arch: str) -> None:
    proc = configure(tmp_path, CUSHIP_CUDA_ARCHS=arch)
    assert proc.returncode != 0
    assert f"CUDA architecture '{arch}'" in proc.stderr
    assert "is not" in proc.stderr and "allowed" in proc.stderr
