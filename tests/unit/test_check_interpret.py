"""The interpreter under cuship's adaptation gives each construct compiled Triton's meaning: the
kernels of tests/fixtures/interpret, run on CPU tensors, against what a GPU computes."""

from __future__ import annotations

import importlib.util
import os
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
# As in a check worker, the interpreter is on when Triton is imported: Triton's own jit functions
# (tl.zeros, tl.sum) are then interpreted too. The flag goes back at once; the fixtures set it.
_FLAG = os.environ.get("TRITON_INTERPRET")
os.environ["TRITON_INTERPRET"] = "1"
try:
    language = pytest.importorskip("triton.language")
finally:
    if _FLAG is None:
        del os.environ["TRITON_INTERPRET"]
    else:
        os.environ["TRITON_INTERPRET"] = _FLAG

from cuship.check.interpret._bf16 import from_f32, to_f32  # noqa: E402
from cuship.check.interpret.adapt import adapted  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "interpret"


@pytest.fixture(scope="module")
def kernels() -> Iterator[ModuleType]:
    """The fixture's kernels, decorated as a check worker decorates them: interpreter on, under
    the adaptation."""
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(language.zeros, InterpretedFunction):
        pytest.fail("triton was imported before this module, without TRITON_INTERPRET=1")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_INTERPRET", "1")
        patch.syspath_prepend(str(FIXTURE))
        spec = importlib.util.spec_from_file_location("_interpret_kernels", FIXTURE / "kernels.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        with adapted():
            spec.loader.exec_module(module)
        yield module
        sys.modules.pop(spec.name, None)


@pytest.fixture
def interpreting(kernels: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with adapted():
        yield kernels


def _bf16(values: Any) -> Any:
    return torch.tensor(values, dtype=torch.float32).to(torch.bfloat16)


def test_a_bf16_constant_times_a_bf16_tensor_rounds_once(interpreting: ModuleType) -> None:
    x = _bf16([1.0, -3.0, 0.3, 7.5, 1e-3, 2.0, -0.7, 5.0])
    y = torch.empty_like(x)
    interpreting.half[(1,)](x, y, 8, BLOCK=8)
    assert torch.equal(y, (0.5 * x.float()).to(torch.bfloat16))


def test_dot_of_bf16_multiplies_values_not_bit_patterns(interpreting: ModuleType) -> None:
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(16, 16, generator=gen).to(torch.bfloat16)
    b = torch.randn(16, 16, generator=gen).to(torch.bfloat16)
    c = torch.empty(16, 16)
    interpreting.matmul[(1,)](a, b, c, BLOCK=16)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-5, atol=1e-5)


def test_a_bf16_sum_to_a_scalar_is_rounded_to_bf16(interpreting: ModuleType) -> None:
    x = _bf16([0.1 * i - 0.3 for i in range(8)])
    y = torch.empty(1, dtype=torch.bfloat16)
    interpreting.total[(1,)](x, y, BLOCK=8)
    torch.testing.assert_close(y.float(), x.float().sum().to(torch.bfloat16).float().reshape(1))


def test_zero_dimensional_bf16_rounding_keeps_integer_arithmetic() -> None:
    # a reduction's result is 0-d; under NumPy 1.x a 0-d uint64 with a Python int became float64
    bits = from_f32(np.float32(1.0 + 2.0**-8 + 2.0**-9))
    assert bits.shape == () and bits.dtype == np.uint16
    assert float(to_f32(bits)) == 1.0 + 2.0**-7  # past the tie: rounded up


def test_and_or_not_between_tensors_are_logical(interpreting: ModuleType) -> None:
    x = torch.arange(8, dtype=torch.float32)
    y = torch.zeros(16)
    interpreting.window[(1,)](x, y, 2, 6, BLOCK=8)
    assert y[:8].tolist() == [0, 0, 2, 3, 4, 5, 0, 0]
    assert y[8:].tolist() == [11, 11, 0, 0, 0, 0, 11, 11]


def test_a_constant_false_decides_an_and_on_its_own(interpreting: ModuleType) -> None:
    x = torch.arange(4, dtype=torch.float32)
    y = torch.zeros(4)
    interpreting.constant_and[(1,)](x, y, 2, USE=False, BLOCK=4)
    assert y.tolist() == [-1, -1, -1, -1]
    interpreting.constant_and[(1,)](x, y, 2, USE=True, BLOCK=4)
    assert y.tolist() == [0, 1, -1, -1]


def test_grid_dimensions_past_the_third_are_ignored(interpreting: ModuleType) -> None:
    y = torch.zeros(6)
    interpreting.cells[(2, 3, 1, 1)](y, WIDTH=3)
    assert y.tolist() == [1, 1, 1, 2, 2, 2]
    y.zero_()
    interpreting.cells[lambda meta: (2, 3, 1, 1)](y, WIDTH=3)
    assert y.tolist() == [1, 1, 1, 2, 2, 2]


def test_range_over_a_runtime_int(interpreting: ModuleType) -> None:
    x = torch.arange(10, dtype=torch.float32)
    y = torch.zeros(4)
    interpreting.running_sum[(1,)](x, y, 10, BLOCK=4)
    assert y.tolist() == [12, 15, 8, 10]


def test_a_dtype_passed_as_a_constexpr_has_its_value(interpreting: ModuleType) -> None:
    import triton.language as tl

    y = torch.zeros(1)
    interpreting.fill_largest[(1,)](y, DTYPE=tl.float32)
    assert y.tolist() == [float("inf")]


def test_a_helper_whose_module_imports_only_triton(interpreting: ModuleType) -> None:
    x = torch.arange(4, dtype=torch.float32)
    y = torch.zeros(4)
    interpreting.doubled[(1,)](x, y, BLOCK=4)
    assert y.tolist() == [0, 2, 4, 6]


def _picks(kernels: ModuleType, sizes: range) -> list[int]:
    picked = []
    for n in sizes:
        x = torch.arange(float(n))
        y = torch.zeros(n)
        kernels.plus_one[lambda meta, n=n: ((n + meta["BLOCK"] - 1) // meta["BLOCK"],)](x, y, n)
        assert torch.equal(y, x + 1), n
        picked.append(kernels.plus_one.best_config.kwargs["BLOCK"])
    return picked


def test_autotune_with_several_configs_picks_one_per_shape_without_a_gpu(
    interpreting: ModuleType,
) -> None:
    picked = _picks(interpreting, range(1, 13))
    assert len(set(picked)) > 1  # shapes exercise different configs
    interpreting.plus_one.cache.clear()
    assert _picks(interpreting, range(1, 13)) == picked  # the same shape, the same config


def test_jit_functions_are_jit_functions_to_the_libraries_that_wrap_them(
    interpreting: ModuleType,
) -> None:
    from triton.runtime.jit import JITFunction

    kernel = interpreting.triple
    found: Any = interpreting.plus_one
    while not isinstance(found, JITFunction):  # a libentry-style walk down .fn
        found = found.fn
    assert found is interpreting.plus_one.fn
    assert isinstance(kernel, JITFunction)
    assert kernel.src.startswith("def triple(")
    assert kernel.__globals__ is vars(interpreting)
    assert isinstance(kernel.cache_key, str) and kernel.cache_key
    assert [(p.name, p.is_constexpr) for p in kernel.params][-1] == ("BLOCK", True)
    x = torch.arange(4, dtype=torch.float32)
    y = torch.zeros(4)
    launched = kernel.run(x, y, 4, BLOCK=4, grid=(1,), warmup=False)
    assert y.tolist() == [0, 3, 6, 9]
    y.zero_()
    launched[(1, 1, 1)](x, y, 4)  # newer launchers pass the runtime arguments only
    assert y.tolist() == [0, 3, 6, 9]
    y.zero_()
    launched[(1, 1, 1)](x, y, 4, 4)  # Triton 3.3-3.6 launchers pass every argument
    assert y.tolist() == [0, 3, 6, 9]


def test_the_adaptation_is_gone_after_the_case(kernels: ModuleType) -> None:
    import triton.language as tl
    from triton.runtime import interpreter

    before = (interpreter.InterpretedFunction, interpreter.FunctionRewriter.ast_transformer)
    with adapted():
        assert interpreter.InterpretedFunction is not before[0]
        assert tl.float32.value is tl.float32
    assert (interpreter.InterpretedFunction, interpreter.FunctionRewriter.ast_transformer) == before
    assert not hasattr(tl.float32, "value")


def test_the_pick_is_a_stable_hash_of_the_launch() -> None:
    from cuship.check.interpret._kernels import pick_timings

    class Tuner:
        configs = ("a", "b", "c")
        arg_names = ("X", "n")

    x = np.zeros((5, 3), dtype=np.float32)
    timings = [pick_timings(Tuner(), (x, 7), c, {"grid": None})[0] for c in Tuner.configs]
    pick = zlib.crc32(b"X=(5, 3):float32|n=7") % 3
    assert timings.index(0.0) == pick
    assert sorted(timings) == [0.0, 1.0, 2.0]


def test_a_range_loop_variable_is_a_tensor(interpreting: ModuleType) -> None:
    y = torch.zeros(6)
    interpreting.steps[(1,)](y, 4)
    assert y.tolist() == [0, 2, 4, 6, 0.5, 1.5]


class _Strided:
    """A library's buffer over a tensor's memory: data_ptr and dtype, no torch storage."""

    def __init__(self, base: Any) -> None:
        self.base = base
        self.dtype = base.dtype
        self.device = base.device

    def data_ptr(self) -> int:
        return int(self.base.data_ptr())


def test_a_pointer_argument_that_is_not_a_tensor(interpreting: ModuleType) -> None:
    x = torch.arange(4, dtype=torch.float32)
    y = torch.zeros(4)
    interpreting.triple[(1,)](_Strided(x), _Strided(y), 4, BLOCK=4)
    assert y.tolist() == [0, 3, 6, 9]


def test_cache_key_hashes_triton_s_own_functions_and_libdevice(interpreting: ModuleType) -> None:
    assert interpreting.running_sum.cache_key  # references tl.zeros, interpreted before us
    assert interpreting.erf_of.cache_key  # references libdevice.erf, emulated
    x = torch.tensor([0.0, 0.5, -1.0, 2.0])
    y = torch.zeros(4)
    interpreting.erf_of[(1,)](x, y, BLOCK=4)
    torch.testing.assert_close(y, torch.erf(x))
