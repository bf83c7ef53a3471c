"""What a shared object's strings say of the CUDA it runs with: the libraries it opens itself
with ``dlopen``, a CUDA runtime linked statically, the toolkit release that compiled its device
code.

- **Opened at run time**: an object that imports ``dlopen`` and names ``libcublas.so.12`` in
  ``.rodata`` (ctranslate2 4.8.5 links no CUDA library and opens cuBLAS 12 itself) needs that
  library when it runs, found as ld.so finds it for that object. A name built at run time
  (XLA's ``"lib" + name + ".so." + version``) leaves no such string: what it opens is then
  unknown, and said so.
- **A static CUDA runtime** (``libcudart_static.a``, nvcc's default) leaves no ``DT_NEEDED``;
  its own strings stay in ``.rodata``: ``/cudart.shm.`` (the name of its shared-memory segment,
  in every libcudart_static from CUDA 11 to 13; checked in ctranslate2 4.8.5, xgboost 3.2.0,
  cucim 26.10 and an nvcc 13.0 build).
- **The toolkit**: each cubin nvcc writes carries ``Cuda compilation tools, release 12.9`` in
  its ``.note.nv.tkinfo``; in an uncompressed cubin the string lies in ``.nv_fatbin``. Only the
  first 4 MiB of that section are searched (the first cubin lies there), so a 500 MB fatbin
  costs no more than a small one.

Each search is bounded to one section and done in C (``find``, a regular expression with a
literal prefix) on the caller's buffer (an mmap): nothing is copied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cuship.wheel.read.elf import Buffer, ElfFacts

__all__ = ["RUNTIME_SECTIONS", "RuntimeFacts", "runtime_facts"]

RUNTIME_SECTIONS = (".rodata",)  # the spans runtime_facts reads beside the fatbin's
_LIBRARY = re.compile(rb"lib[A-Za-z0-9_+-]{1,80}\.so(?:\.[0-9]{1,6}){0,3}")
_TOOLKIT = re.compile(rb"Cuda compilation tools, release (\d{1,2}\.\d{1,2})")
_STATIC_MARK = re.compile(re.escape(b"/cudart.shm."))
_TOOLKIT_WINDOW = 4 << 20
_MAX_NAMES = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeFacts:
    """``opens``: the library names in its strings when it imports ``dlopen`` (None: it does
    not import it); ``static_runtime``: a CUDA runtime is linked in; ``toolkit``: the CUDA
    release its cubins say made them ("12.9"), None when none says."""

    opens: tuple[str, ...] | None = None
    static_runtime: bool = False
    toolkit: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "opens": None if self.opens is None else list(self.opens),
            "static_runtime": self.static_runtime,
            "toolkit": self.toolkit,
        }


def runtime_facts(data: Buffer, facts: ElfFacts) -> RuntimeFacts:
    """The facts of one object whose ``facts`` located ``.rodata`` and ``.nv_fatbin``."""
    rodata = facts.section(".rodata")
    fatbin = facts.section(".nv_fatbin")
    opens: tuple[str, ...] | None = None
    if "dlopen" in facts.undefined:
        found = (
            _LIBRARY.findall(data, rodata.offset, rodata.offset + rodata.size)
            if rodata is not None
            else []
        )
        names = dict.fromkeys(bytes(name).decode("ascii") for name in found)
        opens = tuple(sorted(names))[:_MAX_NAMES]
    own_runtime = not any(name.startswith("libcudart.so") for name in facts.needed)
    static = False
    if rodata is not None and own_runtime and (fatbin is not None or opens is not None):
        static = _STATIC_MARK.search(data, rodata.offset, rodata.offset + rodata.size) is not None
    toolkit = None
    if fatbin is not None:
        end = fatbin.offset + min(fatbin.size, _TOOLKIT_WINDOW)
        match = _TOOLKIT.search(data, fatbin.offset, end)
        toolkit = match[1].decode("ascii") if match else None
    return RuntimeFacts(opens=opens, static_runtime=static, toolkit=toolkit)
