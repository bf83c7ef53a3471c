"""Runs one benchmark point N times in a fresh process: the payload of instruction counting.

``python -m cuship.bench.timers._callgrind_worker ROOT MODULE CASE PARAMS_JSON SEED CALLS`` imports the module,
builds the inputs, calls the case once (warm-up) and then CALLS more times, inside a ctypes
callback run by libc's ``bsearch``: callgrind collects only within libffi's ``ffi_call``
(``--toggle-collect=ffi_call``), so start-up, imports and setup are never counted.
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

from cuship import _read


def main(argv: list[str]) -> int:
    from cuship.bench.registry import discover

    root, module, name, params, seed, calls = argv
    cases = {c.name: c for c in discover((module,), Path(root))}
    case = cases[name]
    kwargs = case.inputs(_read.loads(params), int(seed))
    case.fn(**kwargs)
    count = int(calls)

    def body(_key: int | None, _item: int | None) -> int:
        for _ in range(count):
            case.fn(**kwargs)
        return 0

    compare = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(body)
    libc = ctypes.CDLL(None)
    libc.bsearch.restype = ctypes.c_void_p
    items, key = (ctypes.c_int * 1)(0), ctypes.c_int(0)
    libc.bsearch(ctypes.byref(key), items, 1, ctypes.sizeof(ctypes.c_int), compare)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
