"""The schemas of the judge's pieces that ``cuship doctor``, ``cuship resolve`` and ``cuship
install`` print: one check, the machine's NVIDIA libraries and torch build, and the reach of PTX."""

from __future__ import annotations

from typing import get_args

from cuship.docs.documents._parts import Schema, closed, enum, maybe, of
from cuship.judge.model import Area, Status
from cuship.judge.ptx import Rule

__all__ = ["check", "cuda_libraries", "nullable", "ptx_reach", "torch_build"]


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
