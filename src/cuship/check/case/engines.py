"""Engines: where an op's entry point runs, which gaps each engine has, and running one case.

``native`` runs Python callables on NumPy arrays; ``triton-interpret`` runs Triton kernels on CPU
tensors (TRITON_INTERPRET=1); ``numba-sim`` runs Numba CUDA kernels in the simulator
(NUMBA_ENABLE_CUDASIM=1); ``cuda`` runs the compiled extension, and ``triton``/``numba`` run
those kernels, on a real GPU. The flags must be set before triton or numba is imported, so
cases run in worker processes started with :func:`worker_env`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from cuship.check.declare.registry import Impl, ImplKind, Op

__all__ = [
    "ENGINES",
    "FORCE_PTX_VAR",
    "Engine",
    "engine_imports",
    "engines_for",
    "run_case",
    "skip_reason",
    "worker_env",
]

Device = Literal["cpu", "cuda"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Engine:
    name: str
    kind: ImplKind
    device: Device
    description: str


ENGINES: Mapping[str, Engine] = {
    e.name: e
    for e in (
        Engine(name="native", kind="native", device="cpu", description="Python on NumPy arrays"),
        Engine(
            name="triton-interpret",
            kind="triton",
            device="cpu",
            description="Triton interpreter on CPU tensors (TRITON_INTERPRET=1)",
        ),
        Engine(
            name="numba-sim",
            kind="numba",
            device="cpu",
            description="Numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1)",
        ),
        Engine(name="triton", kind="triton", device="cuda", description="Triton on the GPU"),
        Engine(name="numba", kind="numba", device="cuda", description="Numba CUDA on the GPU"),
        Engine(name="cuda", kind="cuda", device="cuda", description="compiled CUDA extension"),
    )
}

# Engines a device selects; on a CPU run ``cuda`` is listed so its cases show up as skipped.
_BY_DEVICE: Mapping[Device, tuple[str, ...]] = {
    "cpu": ("native", "triton-interpret", "numba-sim", "cuda"),
    "cuda": ("native", "triton", "numba", "cuda"),
}

# Known gaps: (engine, feature an impl declares in ``uses``) -> why it cannot run there.
# libdevice math and bf16 arithmetic run in the interpreter through cuship.check.interpret.adapt.
_GAPS: Mapping[tuple[str, str], str] = {
    ("triton-interpret", "inline_asm"): "inline_asm_elementwise is not implemented in the Triton "
    "interpreter (NotImplementedError); check this op with --device cuda",
    ("numba-sim", "warp_intrinsics"): "the Numba CUDA simulator has no warp intrinsics "
    "(shfl_*_sync); check this op with --device cuda",
}
_CUDA_ON_CPU = "needs a CUDA GPU and the compiled extension; this run is --device cpu"

# Flags per device: interpreters on for a CPU run, off on a GPU run.
_DEVICE_ENV: Mapping[Device, Mapping[str, str]] = {
    "cpu": {"TRITON_INTERPRET": "1", "NUMBA_ENABLE_CUDASIM": "1"},
    "cuda": {"TRITON_INTERPRET": "0", "NUMBA_ENABLE_CUDASIM": "0"},
}


# The driver's switch: ignore SASS, JIT-compile the embedded PTX (``cuship check --force-ptx``).
FORCE_PTX_VAR = "CUDA_FORCE_PTX_JIT"


def engines_for(device: Device) -> tuple[str, ...]:
    return _BY_DEVICE[device]


def skip_reason(engine: str, impl: Impl, dtype: str, device: Device) -> str | None:
    """Why ``impl`` cannot run on ``engine`` for ``dtype`` here, or None if it can."""
    if ENGINES[engine].device == "cuda" and device == "cpu":
        return _CUDA_ON_CPU
    for feature in impl.uses:
        reason = _GAPS.get((engine, feature))
        if reason is not None:
            return f"uses {feature}: {reason}"
    return None


def worker_env(
    device: Device, base: Mapping[str, str], *, force_ptx: bool = False
) -> dict[str, str]:
    """Environment of a worker process: ``base`` plus the interpreter flags of ``device``;
    with ``force_ptx``, ``CUDA_FORCE_PTX_JIT=1`` (the driver JIT-compiles PTX, ignoring SASS),
    else without it, whatever the shell exported: a forced run is one the report says is."""
    env = {k: v for k, v in base.items() if k != FORCE_PTX_VAR}
    return {**env, **_DEVICE_ENV[device], **({FORCE_PTX_VAR: "1"} if force_ptx else {})}


# Modules an engine's entry points need, imported before the first case is timed.
_ENGINE_IMPORTS: Mapping[ImplKind, tuple[str, ...]] = {
    "native": (),
    "triton": ("torch", "triton", "triton.language"),
    "numba": ("numba", "numba.cuda"),
    "cuda": (),
}


def engine_imports(engine: str) -> tuple[str, ...]:
    """The modules ``engine``'s entry points need, in import order (none for native and cuda)."""
    return _ENGINE_IMPORTS[ENGINES[engine].kind]


def prepare(engine: Engine) -> None:
    """Import what the engine needs, so that import time is not counted as kernel time."""
    import importlib

    for name in _ENGINE_IMPORTS[engine.kind]:
        importlib.import_module(name)


def _torch_dtype(dtype: str) -> Any:
    import torch

    return getattr(torch, dtype)


def _to_engine(value: Any, engine: Engine, dtype: str) -> Any:
    """NumPy input -> what the engine's entry point takes (torch tensors for Triton)."""
    import numpy as np

    if engine.kind != "triton" or not isinstance(value, np.ndarray):
        return value
    import torch

    device = "cpu" if engine.device == "cpu" else "cuda"
    target = _torch_dtype(dtype) if value.dtype == np.float32 and dtype == "bfloat16" else None
    tensor = torch.from_numpy(np.ascontiguousarray(value))
    return tensor.to(device=device, dtype=target) if target is not None else tensor.to(device)


def _from_engine(value: Any) -> Any:
    """An entry point's output -> float64/int64 NumPy (tensors are moved to the CPU)."""
    import numpy as np

    if hasattr(value, "detach"):
        tensor = value.detach().cpu()
        if tensor.is_floating_point():
            tensor = tensor.double()
        return tensor.numpy()
    arr = np.asarray(value)
    return arr.astype(np.float64) if arr.dtype.kind == "f" else arr


def _poisoned(
    op: Op, engine: Engine, dtype: str, sizes: Mapping[str, int], args: Mapping[str, Any]
) -> dict[str, Any]:
    """Output buffers filled with NaN (integers: the most negative value) before each run; an
    output named like an input is written in place, into that input's buffer."""
    import numpy as np

    buffers: dict[str, Any] = {}
    for out in op.outputs:
        if out.name in args:
            buffers[out.name] = args[out.name]
            continue
        name = out.dtype or dtype
        shape = out.shape(sizes)
        if name.startswith("int"):
            arr = np.full(shape, np.iinfo(np.dtype(name)).min, dtype=name)
        else:
            arr = np.full(shape, np.nan, dtype=np.float32 if name == "bfloat16" else name)
        buffers[out.name] = _to_engine(arr, engine, name)
    return buffers


def _synchronize(engine: Engine) -> None:
    if engine.kind == "triton" and engine.device == "cuda":
        import torch

        torch.cuda.synchronize()


def _outputs(op: Op, buffers: Mapping[str, Any], returned: Any) -> dict[str, Any]:
    if op.outputs:
        return {name: _from_engine(buf) for name, buf in buffers.items()}
    return {"return": _from_engine(returned)}


def _reference_outputs(op: Op, reference: Mapping[str, Any], dtype: str) -> dict[str, Any]:
    return _by_output(op, op.reference, reference, dtype)


def _scales(op: Op, reference: Mapping[str, Any], dtype: str) -> dict[str, Any]:
    """Each output's round-off yardstick from the op's ``scale`` (none: ``|reference|``)."""
    return {} if op.scale is None else _by_output(op, op.scale, reference, dtype)


def _by_output(
    op: Op, fn: Callable[..., Any], reference: Mapping[str, Any], dtype: str
) -> dict[str, Any]:
    """``fn`` (the reference, or the scale) called as the reference is, its result by output
    name."""
    extra = {"dtype": dtype} if op.reference_takes_dtype else {}
    result = fn(**reference, **extra)
    if op.outputs:
        if len(op.outputs) == 1 and not isinstance(result, tuple | dict):
            result = (result,)
        if isinstance(result, dict):
            return dict(result)
        return {out.name: value for out, value in zip(op.outputs, result, strict=True)}
    return {"return": result}


def _adaptation(engine: Engine) -> contextlib.AbstractContextManager[None]:
    """The interpreter adaptation (see :mod:`cuship.check.interpret.adapt`) for triton-interpret."""
    if engine.name != "triton-interpret":
        return contextlib.nullcontext()
    from cuship.check.interpret.adapt import adapted

    return adapted()


def run_case(op: Op, engine_name: str, dtype: str, case: Any, tol: Any) -> dict[str, Any]:
    """Run one case in this process and compare it; returns a JSON-able result (worker side).
    An op with ``grads`` runs forward and backward (see :mod:`cuship.check.case.grads`)."""
    from cuship.check.case.compare import compare
    from cuship.check.declare.inputs import make_inputs

    engine = ENGINES[engine_name]
    impl = op.impl(engine.kind)
    assert impl is not None
    prepare(engine)
    started = time.perf_counter()
    inputs = make_inputs(op, dtype, case)
    if op.grads:
        return _run_differentiated(op, engine, impl, dtype, case, tol, inputs, started)
    args = {k: _to_engine(v, engine, dtype) for k, v in inputs.values.items()}
    buffers = _poisoned(op, engine, dtype, dict(case.sizes), args)
    kernel_started = time.perf_counter()
    try:
        with _adaptation(engine):
            returned = impl.fn(**{**args, **buffers})
        _synchronize(engine)
    except Exception as err:
        return _error_result(err, started)
    kernel_s = time.perf_counter() - kernel_started
    actual = _outputs(op, buffers, returned)
    expected = _reference_outputs(op, inputs.reference, dtype)
    scales = _scales(op, inputs.reference, dtype)
    comparisons = {
        name: compare(actual[name], expected[name], tol, scale=scales.get(name))
        for name in expected
    }
    return _finish(op, comparisons, inputs.reference, actual, tol, (started, kernel_s))


def _run_differentiated(
    op: Op, engine: Engine, impl: Impl, dtype: str, case: Any, tol: Any, inputs: Any, started: float
) -> dict[str, Any]:
    """Forward and backward of a differentiable entry point against the torch reference's."""
    from cuship.check.case import grads

    expected, seeds = grads.reference(op, inputs, dtype, case)
    device = "cpu" if engine.device == "cpu" else "cuda"
    kernel_started = time.perf_counter()
    try:
        with _adaptation(engine):
            actual = grads.implementation(op, impl.fn, inputs, seeds, dtype=dtype, device=device)
        _synchronize(engine)
    except Exception as err:
        return _error_result(err, started)
    kernel_s = time.perf_counter() - kernel_started
    comparisons = grads.comparisons(op, actual, expected, tol, dtype)
    return _finish(op, comparisons, inputs.reference, actual.outputs, tol, (started, kernel_s))


def _finish(
    op: Op,
    comparisons: Mapping[str, Any],
    reference: Mapping[str, Any],
    actual: Mapping[str, Any],
    tol: Any,
    times: tuple[float, float],
) -> dict[str, Any]:
    """The merged comparisons, the invariants of a passing case, and the case's times."""
    result = _merge(comparisons)
    if result["status"] == "passed":
        result["message"] = _invariants(op, reference, actual, tol)
        result["status"] = "passed" if result["message"] is None else "failed"
    result["kernel_s"] = times[1]
    result["case_s"] = time.perf_counter() - times[0]
    return result


def _error_result(err: BaseException, started: float) -> dict[str, Any]:
    from cuship.check.case.frames import describe

    return {
        "status": "error",
        "message": describe(err),
        "kernel_s": 0.0,
        "case_s": time.perf_counter() - started,
    }


def _merge(comparisons: Mapping[str, Any]) -> dict[str, Any]:
    worst_name = max(comparisons, key=lambda n: (comparisons[n].mismatches, comparisons[n].max_abs))
    worst = comparisons[worst_name]
    several = len(comparisons) > 1
    messages = [
        _output_line(n, c) for n, c in comparisons.items() if c.message or (several and not c.ok)
    ]
    failed = any(not c.ok for c in comparisons.values())
    return {
        "status": "failed" if failed else "passed",
        "message": "; ".join(messages) or None,
        "output": worst_name,
        "total": sum(c.total for c in comparisons.values()),
        "mismatches": sum(c.mismatches for c in comparisons.values()),
        "max_abs": max(c.max_abs for c in comparisons.values()),
        "max_rel": max(c.max_rel for c in comparisons.values()),
        "worst_index": list(worst.worst_index) if worst.worst_index is not None else None,
        "worst_actual": worst.worst_actual,
        "worst_expected": worst.worst_expected,
    }


def _output_line(name: str, comparison: Any) -> str:
    from cuship.check.case.compare import output_label

    if comparison.message:
        return f"{output_label(name)}: {comparison.message}"
    return (
        f"{output_label(name)}: {comparison.mismatches} of {comparison.total} elements differ "
        f"(max abs error {comparison.max_abs:.3g}, max rel error {comparison.max_rel:.3g})"
    )


def _invariants(
    op: Op, inputs: Mapping[str, Any], actual: Mapping[str, Any], tol: Any
) -> str | None:
    out = next(iter(actual.values()))
    for invariant in op.invariants:
        problem = invariant.check(inputs, out, tol.rtol, tol.atol)
        if problem:
            return f"invariant {invariant.name!r} violated: {problem}"
    return None
