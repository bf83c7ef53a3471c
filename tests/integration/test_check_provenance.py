"""What `cuship check` really ran: the installed build over the source tree, provenance in every
report, exit 3 for a GPU run of an unbuilt source tree, one line for an engine that cannot import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.integration import clirun

SRC = Path(__file__).resolve().parents[2] / "src"
FAKE_GPU = {"CUSHIP_GPUS": "H100:9.0:80GiB"}

_C_SOURCE = """
#include <Python.h>
static PyObject *twice(PyObject *self, PyObject *arg) {
    PyObject *two = PyLong_FromLong(2);
    PyObject *out = PyNumber_Multiply(arg, two);
    Py_DECREF(two);
    return out;
}
static PyMethodDef methods[] = {{"twice", twice, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};
PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
"""

_CHECKS = """
    from cuship.check import Impl, Op, Tensor

    def ref(x):
        return 2 * x

    def native(x, out):
        import tinyext
        out[...] = tinyext.twice(x)

    def cuda(x, out):
        from tinyext import _native
        out[...] = _native.twice(x)

    double = Op(name="double", reference=ref, inputs=(Tensor(name="x", dims=("n",)),),
                outputs=(Tensor(name="out", dims=("n",)),), shapes=({"n": 5},),
                impls=(Impl(kind="native", fn=native), Impl(kind="cuda", fn=cuda)))
"""


cuship = partial(clirun.cuship, drop=("GITHUB_ACTIONS", "CUSHIP_GPUS"))


def _tiny_project(root: Path) -> Path:
    """A flat-layout project: ``tinyext/`` (Python + C source, no built extension) at its root."""
    package = root / "tinyext"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("def twice(x):\n    return 2 * x\n")
    (package / "_native.c").write_text(_C_SOURCE)
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "tinyext"\nversion = "0.3.0"\n'
    )
    (root / "setup.py").write_text(
        "from setuptools import Extension, setup\n"
        'setup(packages=["tinyext"], '
        'ext_modules=[Extension("tinyext._native", ["tinyext/_native.c"])])\n'
    )
    (root / "cuship.toml").write_text('[check]\nmodules = ["checks.py"]\nfuzz = 0\n')
    (root / "checks.py").write_text(textwrap.dedent(_CHECKS))
    return root


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(project, site): the project's wheel, C extension compiled, installed into ``site``."""
    base = tmp_path_factory.mktemp("tiny")
    build, site = _tiny_project(base / "build-copy"), base / "site"
    pip = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps"]
    pip += ["--no-index", "--quiet", "--target", str(site), str(build)]
    done = subprocess.run(pip, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    assert list((site / "tinyext").glob("_native*.so"))
    return _tiny_project(base / "project"), site


def _package(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.stdout, done.stderr
    provenance = json.loads(done.stdout)["provenance"]
    (package,) = provenance["packages"]
    assert isinstance(package, dict)
    return package


def test_the_installed_build_is_checked_not_the_source_tree_beside_it(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    project, site = installed
    env = {"PYTHONPATH": f"{SRC}{os.pathsep}{site}", "CUSHIP_STORE": str(tmp_path / "r.db")}
    # run from the project root, the way CI does: `python -m` puts it first on sys.path
    done = cuship("check", ".", "--device", "cpu", "--format", "json", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    package = _package(done)
    assert package["file"] == str((site / "tinyext" / "__init__.py").resolve())
    assert (package["origin"], package["distribution"], package["version"]) == (
        "installed",
        "tinyext",
        "0.3.0",
    )
    assert [(e["module"], e["loaded"]) for e in package["extensions"]] == [("_native", True)]
    line = (
        "tinyext 0.3.0 from " + package["file"] + " (installed wheel); extensions: _native loaded"
    )
    assert f"package: {line}" in done.stderr
    # the GPU gate lets an installed build through; its `cuda` entry point then runs
    gpu = cuship("check", str(project), "--device", "cuda", "--format", "junit", env=env | FAKE_GPU)
    assert gpu.returncode == 0, gpu.stderr
    props = {p.get("name"): p.get("value") for p in ET.fromstring(gpu.stdout).iter("property")}
    assert props["provenance.tinyext"] == line
    stored = cuship("report", "--store", env["CUSHIP_STORE"], "--format", "json")
    assert [
        r["meta"]["provenance"]["packages"][0]["origin"] for r in json.loads(stored.stdout)
    ] == [
        "installed",
        "installed",
    ]


def test_a_gpu_run_of_a_source_tree_without_its_extension_is_a_missing_tool(
    tmp_path: Path,
) -> None:
    project = _tiny_project(tmp_path / "project")
    env = {"CUSHIP_STORE": str(tmp_path / "r.db")}
    cpu = cuship("check", str(project), "--device", "cpu", "--format", "json", env=env)
    package = _package(cpu)
    assert (package["origin"], package["extensions"]) == ("source", [])
    gpu = cuship("check", str(project), "--device", "cuda", env=env | FAKE_GPU)
    assert gpu.returncode == 3, gpu.stderr
    where = repr(str((project / "tinyext").resolve()))
    assert (
        f"tinyext was imported from the source tree {where}, which has no compiled extension: "
        "install the built wheel (pip install dist/tinyext-*.whl) or build in place"
    ) in gpu.stderr
    assert "double" not in gpu.stdout  # refused before any case ran


_WITH_TRITON = """
    from cuship.check import Impl, Op, Tensor

    def ref(x):
        return 2 * x

    def native(x, out):
        out[...] = 2 * x

    def tri(x, out):
        import triton
        out.copy_(2 * x)

    double = Op(name="double", reference=ref, inputs=(Tensor(name="x", dims=("n",)),),
                outputs=(Tensor(name="out", dims=("n",)),), shapes=({"n": 5}, {"n": 9}),
                dtypes=("float32", "float64"),
                impls=(Impl(kind="native", fn=native), Impl(kind="triton", fn=tri)))
"""


def test_an_engine_that_cannot_import_is_one_line_and_alone_exits_3(tmp_path: Path) -> None:
    fake = tmp_path / "fake" / "triton"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('this triton is broken on purpose')\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "cuship.toml").write_text('[check]\nmodules = ["checks.py"]\nfuzz = 0\n')
    (project / "checks.py").write_text(textwrap.dedent(_WITH_TRITON))
    env = {"PYTHONPATH": f"{SRC}{os.pathsep}{fake.parent}", "CUSHIP_STORE": str(tmp_path / "db")}
    cpu = ("--device", "cpu")  # the interpreter engine, on a GPU machine too
    alone = cuship("check", str(project), *cpu, "--engine", "triton-interpret", env=env)
    assert alone.returncode == 3, alone.stderr
    assert (alone.stdout + alone.stderr).count("broken on purpose") == 1
    assert (
        "engine triton-interpret unavailable: importing triton failed: ImportError: this triton "
        "is broken on purpose; fix: install a triton release"
    ) in alone.stdout
    assert alone.stderr.splitlines()[-1].startswith("unavailable: 2 skipped")

    both = cuship(
        "check", str(project), *cpu, "--engine", "triton-interpret", "--engine", "native",
        "--format", "json", env=env,
    )  # fmt: skip
    assert both.returncode == 0, both.stderr
    report = json.loads(both.stdout)
    assert [u["engine"] for u in report["unavailable"]] == ["triton-interpret"]
    statuses = {(g["engine"], g["dtype"]): g["status"] for g in report["groups"]}
    assert set(statuses.values()) == {"passed", "skipped"}
    assert statuses[("native", "float64")] == "passed"
    assert statuses[("triton-interpret", "float32")] == "skipped"
    assert all(not g["cases"] for g in report["groups"] if g["engine"] == "triton-interpret")


_BENCHES = """
    import numpy as np
    from cuship.bench import case

    def _setup(rng, n):
        return {"x": rng.standard_normal(n)}

    @case(params={"n": [64]}, setup=_setup, bytes=lambda n: 16 * n)
    def double(x):
        import tinyext
        return tinyext.twice(x)
"""


def test_bench_times_the_installed_build_and_says_where_it_came_from(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    project, site = installed
    with (project / "cuship.toml").open("a") as config:
        config.write('[bench]\nmodules = ["benches.py"]\nmin_time = 0.05\ntimeout = 1.0\n')
    (project / "benches.py").write_text(textwrap.dedent(_BENCHES))
    env = {"PYTHONPATH": f"{SRC}{os.pathsep}{site}", "CUSHIP_STORE": str(tmp_path / "r.db")}
    done = cuship("bench", ".", "--timer", "wall", "--json", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    (package,) = json.loads(done.stdout)["run"]["meta"]["provenance"]["packages"]
    assert package["file"] == str((site / "tinyext" / "__init__.py").resolve())
    assert package["origin"] == "installed"
    assert [e["loaded"] for e in package["extensions"]] == [True]
    text = cuship("bench", ".", "--timer", "wall", "--no-store", env=env, cwd=project)
    assert "package: tinyext 0.3.0 from" in text.stdout and "_native loaded" in text.stdout


_WITH_TRITON_KERNEL = """
    from cuship.check import Impl, Op, Tensor

    def ref(x):
        return 2 * x

    def tri(x, out):
        import triton
        out.copy_(2 * x)

    double = Op(name="double", reference=ref, inputs=(Tensor(name="x", dims=("n",)),),
                outputs=(Tensor(name="out", dims=("n",)),), shapes=({"n": 5}, {"n": 9}),
                impls=(Impl(kind="triton", fn=tri),))
"""

# Like numba-cuda 0.30 under NumPy 2.5 on the H100: the engine imports, its first kernel fails
# (there: AttributeError: module 'numpy' has no attribute 'row_stack').
_LATE_BREAKING_TRITON = """
class _Kernel:
    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            raise RuntimeError("PassManager::run failed (planted)")
        return launch

def jit(fn=None, **kwargs):
    return _Kernel()
"""


def test_an_engine_whose_first_kernel_fails_is_one_line_and_exit_3(tmp_path: Path) -> None:
    fake = tmp_path / "fake" / "triton"
    (fake / "language").mkdir(parents=True)
    (fake / "__init__.py").write_text(_LATE_BREAKING_TRITON)
    (fake / "language" / "__init__.py").write_text("def store(*args):\n    pass\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "cuship.toml").write_text('[check]\nmodules = ["checks.py"]\nfuzz = 4\n')
    (project / "checks.py").write_text(textwrap.dedent(_WITH_TRITON_KERNEL))
    env = {"PYTHONPATH": f"{SRC}{os.pathsep}{fake.parent}", "CUSHIP_STORE": str(tmp_path / "db")}
    done = cuship("check", str(project), "--device", "cpu", "--engine", "triton-interpret", env=env)
    assert done.returncode == 3, done.stdout + done.stderr
    assert (done.stdout + done.stderr).count("PassManager::run failed") == 1
    assert (
        "engine triton-interpret unavailable: its first kernel failed (triton): RuntimeError: "
        "PassManager::run failed (planted); fix: install a triton release"
    ) in done.stdout
