"""Build cushiptorchops' extension with setuptools and torch.utils.cpp_extension.

Two variants, chosen with ``CUSHIPTORCHOPS_VARIANT``:

- ``exact`` (default): ``csrc/ops.cpp`` uses libtorch's C++ API (at::Tensor, TORCH_LIBRARY). The
  wheel pins ``torch==X.Y.*``, X.Y being the torch this build compiles against: a torch of
  another minor version would fail at import with ``undefined symbol: _ZN3c10...``.
- ``stable``: ``csrc/stable/ops.cpp`` uses only torch's stable C ABI (torch/csrc/stable,
  STABLE_TORCH_LIBRARY), targets the torch it compiles against as its minimum, and is tagged
  abi3. The wheel requires ``torch>=X.Y``.

Both compile ``csrc/kernels.cu`` with nvcc for the GPU architectures in ``TORCH_CUDA_ARCH_LIST``
(cuship sets it from ``[matrix] arch``) and link the shared CUDA runtime (libcudart), never
torch's CUDA libraries: the build works against a CPU-only torch too.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch
import torch.utils.cpp_extension as cpp_extension
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = Path(__file__).resolve().parent
VARIANT_ENV = "CUSHIPTORCHOPS_VARIANT"
VARIANTS = ("exact", "stable")
DEFAULT_ARCH_LIST = "8.0+PTX;9.0;10.0;12.0+PTX"
# "native" and an empty list make torch pick the build machine's GPUs: never what a wheel wants.
MACHINE_DEPENDENT = ("", "native")
# The oldest CPython the stable variant's abi3 tag promises (cp310, like cuship's examples).
LIMITED_API = "cp310"


def variant() -> str:
    chosen = os.environ.get(VARIANT_ENV, "exact").strip().lower() or "exact"
    if chosen not in VARIANTS:
        raise SystemExit(f"{VARIANT_ENV}={chosen!r}: expected one of {', '.join(VARIANTS)}")
    return chosen


def cuda_home() -> Path:
    """The CUDA toolkit: CUDA_HOME / CUDA_PATH, else the one nvcc on PATH belongs to, else
    /usr/local/cuda; the first that holds bin/nvcc and include/cuda_runtime.h.

    A CPU-only torch sets ``cpp_extension.CUDA_HOME`` to None, and BuildExtension then refuses
    .cu sources ("CUDA was not found"); the toolkit found here is handed to it instead.
    """
    candidates = [Path(os.environ[n]) for n in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(n)]
    nvcc = shutil.which("nvcc")
    if nvcc:  # /usr/local/bin/nvcc may be a wrapper script: then this is no toolkit
        candidates.append(Path(nvcc).resolve().parents[1])
    candidates.append(Path("/usr/local/cuda"))
    for home in candidates:
        if (home / "bin" / "nvcc").is_file() and (home / "include" / "cuda_runtime.h").is_file():
            return home
    looked = ", ".join(str(c) for c in candidates)
    raise SystemExit(f"no CUDA toolkit found (looked in {looked}): set CUDA_HOME to one")


def arch_list() -> str:
    """TORCH_CUDA_ARCH_LIST from the environment (cuship sets it), else this project's default."""
    value = os.environ.get("TORCH_CUDA_ARCH_LIST", DEFAULT_ARCH_LIST).strip()
    if value.lower() in MACHINE_DEPENDENT:
        raise SystemExit(
            f"TORCH_CUDA_ARCH_LIST={value!r} depends on the build machine's GPU: "
            f'name the architectures, e.g. "{DEFAULT_ARCH_LIST}"'
        )
    return value


def torch_minor() -> str:
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    return f"{major}.{minor}"


def extension(chosen: str, cuda: Path) -> CppExtension:
    binding = "csrc/stable/ops.cpp" if chosen == "stable" else "csrc/ops.cpp"
    cxx = ["-O3"]  # the C++ standard is the one torch.utils.cpp_extension picks for this torch
    if chosen == "stable":
        # Only the stable C ABI of this torch and older (torch/csrc/stable/version.h).
        major, minor = torch_minor().split(".")
        cxx.append(f"-DTORCH_TARGET_VERSION=0x{int(major):02x}{int(minor):02x}000000000000")
    return CppExtension(
        name="cushiptorchops._C",
        sources=[binding, "csrc/module.cpp", "csrc/kernels.cu"],
        include_dirs=[str(HERE / "csrc")],
        library_dirs=[str(cuda / "lib64")],
        libraries=["cudart"],
        extra_compile_args={"cxx": cxx, "nvcc": ["-O3"]},
        py_limited_api=chosen == "stable",
    )


def requirements(chosen: str) -> list[str]:
    minor = torch_minor()
    return [f"torch>={minor}"] if chosen == "stable" else [f"torch=={minor}.*"]


def main() -> None:
    chosen = variant()
    cuda = cuda_home()
    cpp_extension.CUDA_HOME = str(cuda)
    os.environ["TORCH_CUDA_ARCH_LIST"] = arch_list()
    options = {"bdist_wheel": {"py_limited_api": LIMITED_API}} if chosen == "stable" else {}
    setup(
        ext_modules=[extension(chosen, cuda)],
        cmdclass={"build_ext": BuildExtension},
        install_requires=requirements(chosen),
        options=options,
    )


main()
