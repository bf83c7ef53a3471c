"""The smallest scikit-build-core CUDA project: one kernel in a Python extension module, built
with CMake's CUDA language (what sccache, the kept build directory and nvcc see in a real one)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["tiny_cmake_project"]

_CMAKE = """cmake_minimum_required(VERSION 3.26)
project({name} LANGUAGES C CUDA)
find_package(Python REQUIRED COMPONENTS Interpreter Development.Module)
Python_add_library(_ext MODULE ext.cu WITH_SOABI)
set_target_properties(_ext PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
install(TARGETS _ext DESTINATION {name})
"""

_MODULE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
__global__ void twice(int* x) { x[threadIdx.x] *= 2; }
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ext", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__ext(void) { return PyModule_Create(&module); }
"""


def tiny_cmake_project(root: Path, name: str) -> Path:
    """Write the project ``name`` (package ``name``, extension ``name._ext``) under ``root``;
    its folder, without a cuship.toml (each test writes the one it needs)."""
    project = root / name
    (project / name).mkdir(parents=True)
    (project / "CMakeLists.txt").write_text(_CMAKE.format(name=name))
    (project / "ext.cu").write_text(_MODULE)
    (project / name / "__init__.py").write_text(f"from {name}._ext import *\n")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["scikit-build-core"]\n'
        'build-backend = "scikit_build_core.build"\n'
        f'[project]\nname = "{name}"\nversion = "0.1.0"\n'
    )
    return project
