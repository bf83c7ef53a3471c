"""An :class:`ObjectReport` with only its device code set, for tests that decide from arches."""

from __future__ import annotations

from cuship.wheel.audit import ObjectReport

EXT = "cuvecops/_cuda.cpython-311-x86_64-linux-gnu.so"


def object_report(
    path: str = EXT, *, sass: tuple[str, ...] = (), ptx: tuple[str, ...] = ()
) -> ObjectReport:
    """A shared object at ``path`` (inside a wheel or package) with this SASS and PTX."""
    return ObjectReport(
        path=path,
        size=1,
        machine="x86_64",
        soname=None,
        needed=(),
        sass=sass,
        ptx=ptx,
        lto=(),
        ptx_compressed=False,
        sass_compressed=False,
        fatbin_size=0,
        entries=len(sass) + len(ptx),
        containers=1,
    )
