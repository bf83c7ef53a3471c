"""Sdists of ``cplain``, a package with one C extension and no CUDA (a bottleneck-like package
for packages.yml tests), made here in a second each."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_MODULE = (
    "#include <Python.h>\n"
    "static PyObject *add(PyObject *s, PyObject *a) {\n"
    '  long x, y; if (!PyArg_ParseTuple(a, "ll", &x, &y)) return NULL;\n'
    "  return PyLong_FromLong(x + y); }\n"
    'static PyMethodDef m[] = {{"add", add, METH_VARARGS, ""}, {NULL}};\n'
    'static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, "_add", NULL, -1, m};\n'
    "PyMODINIT_FUNC PyInit__add(void) { return PyModule_Create(&d); }\n"
)


def plain_c_sdists(where: Path, *versions: str) -> Path:
    """The folder (``where/dist``) holding an sdist of ``cplain`` for each of ``versions``."""
    dist = where / "dist"
    for version in versions:
        src = where / f"cplain-src-{version}"
        (src / "cplain").mkdir(parents=True)
        (src / "cplain" / "__init__.py").write_text(
            f'from cplain._add import add\n__version__ = "{version}"\n'
        )
        (src / "cplain" / "_add.c").write_text(_MODULE)
        (src / "setup.py").write_text(
            "from setuptools import Extension, setup\n"
            f'setup(name="cplain", version="{version}", packages=["cplain"],\n'
            '      ext_modules=[Extension("cplain._add", ["cplain/_add.c"])])\n'
        )
        subprocess.run(
            [sys.executable, "setup.py", "-q", "sdist", "-d", str(dist)],
            cwd=src,
            check=True,
            capture_output=True,
        )
    return dist


def offline_from(dist: Path) -> dict[str, str]:
    """The environment in which pip finds the sdists of ``dist`` (beside the folders the
    machine's configuration already names) and no index: a build off the network."""
    links = " ".join(filter(None, [os.environ.get("PIP_FIND_LINKS", ""), str(dist)]))
    return {"PIP_FIND_LINKS": links, "PIP_NO_INDEX": "1"}
