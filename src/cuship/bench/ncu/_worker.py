"""Runs one benchmark point once under Nsight Compute: the payload of ``--profile ncu``.

``python -m cuship.bench.ncu._worker SPEC_JSON`` (SPEC: root, module, key, seed, pythonpath)
imports the benchmark module, builds the point's inputs, calls it once to warm up (compile,
allocate, load modules), synchronizes, then calls it ONCE between ``cuProfilerStart`` and
``cuProfilerStop`` (libcuda through ctypes), so ncu, started with ``--profile-from-start off``,
profiles exactly the kernels of one call. The program's own output goes to stderr: ncu's CSV
is the only thing on stdout.

Exit codes: 0 profiled; 2 the point is not found; 3 no CUDA driver library; 4 the call made no
CUDA context current (it launched nothing on the GPU).
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path
from typing import Any

from cuship import _read

# No GPU work happened in this process: CUDA_ERROR_NOT_INITIALIZED (nothing called cuInit, what a
# real driver answers after a NumPy call, as on the H100) or CUDA_ERROR_INVALID_CONTEXT (cuInit
# ran, no context is current on this thread)
_NO_CONTEXT = (3, 201)


class _Driver:
    """The three driver calls the worker needs; each raises RuntimeError on a CUDA error."""

    def __init__(self) -> None:
        self.lib: Any = ctypes.CDLL("libcuda.so.1")

    def call(self, name: str) -> int:
        code = int(getattr(self.lib, name)())
        if code != 0 and code not in _NO_CONTEXT:
            raise RuntimeError(f"{name} failed: CUDA error {code}")
        return code


def _say(text: str) -> None:
    sys.stderr.write(text + "\n")


def main(argv: list[str]) -> int:
    from cuship.bench.registry import discover, points

    os.dup2(2, 1)  # the case's prints go to stderr; stdout is ncu's
    spec = _read.loads(argv[0])
    pythonpath = tuple(Path(p) for p in spec.get("pythonpath", ()))
    cases = discover((spec["module"],), Path(spec["root"]), pythonpath)
    found = [p for p in points(cases) if p.key == spec["key"]]
    if not found:
        _say(f"no benchmark point {spec['key']!r} in {spec['module']!r}")
        return 2
    point = found[0]
    kwargs = point.case.inputs(point.params, int(spec.get("seed", 0)))
    point.case.fn(**kwargs)  # warm-up: nothing before cuProfilerStart is profiled
    try:
        driver = _Driver()
    except OSError as err:
        _say(f"cannot load libcuda.so.1: {err}")
        return 3
    if driver.call("cuCtxSynchronize") in _NO_CONTEXT:
        _say("the call made no CUDA context current: it launched no GPU work")
        return 4
    driver.call("cuProfilerStart")
    point.case.fn(**kwargs)
    driver.call("cuCtxSynchronize")
    driver.call("cuProfilerStop")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
