"""The schemas of the judge's pieces that ``cuship doctor``, ``cuship resolve`` and ``cuship
install`` print: one check, the machine's NVIDIA libraries and torch build, and the reach of PTX."""

from __future__ import annotations

from typing import get_args

from cuship.docs.documents._parts import Schema, array, closed, enum, maybe, of
from cuship.judge.model import Area, Status
from cuship.judge.ptx import Rule

__all__ = [
    "check",
    "cuda_libraries",
    "loader_view",
    "nullable",
    "object_load",
    "ptx_reach",
    "torch_build",
]


def nullable(kind: str, description: str) -> Schema:
    """A value of JSON type ``kind``, or null."""
    return maybe(of(kind, ""), description)


def check(description: str = "One check the judge made.") -> Schema:
    return closed(
        description,
        {
            "area": enum(get_args(Area), "What it checks."),
            "status": enum(
                get_args(Status),
                "`pass`; `fail`; `partial`: it works, with the caveat in `message`; "
                "`unchecked`: it could not run.",
            ),
            "message": of("string", "What it found."),
            "fix": of("string", "What fixes a failure; empty when nothing to fix."),
        },
    )


def cuda_libraries(description: str) -> Schema:
    libraries = closed(
        "The NVIDIA libraries found here.",
        {
            "source": of(
                "string", "`searched`, or `CUSHIP_CUDA_LIBS` when that variable named them."
            ),
            "found": of(
                "object",
                "Where each library is, by file name (`libcudart.so.13`).",
                additionalProperties={"type": "string"},
            ),
        },
    )
    return maybe(libraries, description)


def torch_build(description: str) -> Schema:
    build = closed(
        "The installed torch and its build.",
        {
            "version": of("string", "Its version (`2.13.0+cu130`)."),
            "flavour": nullable("string", "`cpu`, `cuda`, `rocm` or `xpu`; null: not read."),
            "cuda": nullable("string", "The CUDA of a CUDA build (`13.0`)."),
            "cxx11abi": nullable("boolean", "Its C++ ABI is cxx11; null: not known."),
            "flavour_from": nullable("string", "Where the flavour was read."),
        },
    )
    return maybe(build, description)


def ptx_reach() -> Schema:
    return closed(
        "One PTX arch and the GPUs that can JIT it.",
        {
            "arch": of("string", "The PTX arch (`compute_90a`)."),
            "rule": enum(
                get_args(Rule),
                "`forward`: compute capability X.Y and up; `exact`: only X.Y (arch-specific); "
                "`family`: X.Y and up within major X (family-specific).",
            ),
            "cc": of("string", "The compute capability it was written for (`9.0`)."),
            "serves": of("string", "Which GPUs can JIT it, in words."),
        },
    )


def _strings(description: str) -> Schema:
    return of("object", description, additionalProperties={"type": "string"})


def loader_view(description: str) -> Schema:
    view = closed(
        "The loader of the machine judged (data/loader.toml has its rules).",
        {
            "library_path": array("LD_LIBRARY_PATH, in order."),
            "cache": of("string", "The loader cache read, with its layout and entries, or none."),
            "default_dirs": array("The default directories of its layout."),
            "lib": of("string", "What $LIB expands to."),
            "platform": of("string", "What $PLATFORM expands to."),
            "site_dirs": array("The site directories (NVIDIA's wheels, torch)."),
            "interpreter": nullable("string", "The Python executable (the global scope)."),
            "virtual": _strings("Libraries known by SONAME only, and where they are said to be."),
            "described": of(
                "boolean", "true: NVIDIA libraries are the described ones (CUSHIP_CUDA_LIBS)."
            ),
        },
    )
    return maybe(view, description)


def object_load() -> Schema:
    return closed(
        "One own object loaded as dlopen(RTLD_NOW) would load it here.",
        {
            "path": of("string", "Its path in the package."),
            "loads": nullable("boolean", "Whether it loads; null: not decided (see unchecked)."),
            "optional": of("string", "Why it is optional; empty for a main object."),
            "libraries": _strings("Each library of its lookup scope: where, and how found."),
            "missing": array("The libraries it needs that nothing provides."),
            "versions": array("The symbol versions a library lacks (ld.so's words)."),
            "unbound": array("The first undefined symbols, demangled where possible."),
            "unbound_count": of("integer", "How many are undefined.", minimum=0),
            "expected": of("string", "The library expected to define the first of them."),
            "opens": of(
                "object",
                "The NVIDIA libraries it opens at run time: where each is, null: nowhere.",
                additionalProperties={"type": ["string", "null"]},
            ),
            "unchecked": array("What could not be decided, and why."),
        },
    )
