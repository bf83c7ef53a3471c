"""The compiled extension's argument checking and error reporting, which need no GPU.

Skipped only when the extension is not built (a source checkout); cuship's integration tests
run this file against the built wheel.
"""

from __future__ import annotations

import importlib
import re
from typing import cast

import cuvecops
import numpy as np
import pytest
from cuvecops._loader import CudaOps

F32 = np.float32


@pytest.fixture(scope="module")
def ext() -> CudaOps:
    pytest.importorskip("cuvecops._cuda", reason="the extension is not built here")
    return cast(CudaOps, importlib.import_module("cuvecops._cuda"))


@pytest.fixture(scope="module")
def no_device(ext: CudaOps) -> str:
    """The CUDA error text of this machine's failed device query."""
    count, error = ext.probe()
    if count:
        pytest.skip("a CUDA device is present: the gpu tests cover this machine")
    return error


def test_device_count_never_raises(ext: CudaOps) -> None:
    count = ext.device_count()
    assert isinstance(count, int) and count >= 0
    assert ext.probe()[0] == count


def test_backend_quotes_cuda_when_no_device(no_device: str) -> None:
    assert no_device
    assert cuvecops.backend() == f"cpu: no CUDA device (cudaGetDeviceCount: {no_device})"


@pytest.mark.parametrize(
    "call",
    [
        lambda e: e.saxpy(1.0, np.ones(3, F32), np.ones(3, F32)),
        lambda e: e.softmax_rows(np.ones(6, F32), 2, 3),
        lambda e: e.reduce_sum(np.ones(3, np.int64)),
        lambda e: e.saxpy_device(1.0, 0x1000, 0x2000, 0x3000, 3),
        lambda e: e.softmax_rows_device(0x1000, 0x2000, 2, 3),
        lambda e: e.reduce_sum_device("float32", 0x1000, 3, 0x2000),
    ],
    ids=[
        "saxpy",
        "softmax_rows",
        "reduce_sum",
        "saxpy_device",
        "softmax_rows_device",
        "reduce_sum_device",
    ],
)
def test_cuda_errors_become_runtime_errors(ext: CudaOps, no_device: str, call: object) -> None:
    with pytest.raises(RuntimeError, match=r"^cuvecops\.\w+: CUDA error \d+: ") as info:
        call(ext)  # type: ignore[operator]
    assert str(info.value).endswith(no_device)


def test_empty_inputs_need_no_device(ext: CudaOps) -> None:
    assert ext.saxpy(2.0, np.ones(0, F32), np.ones(0, F32)) == bytearray()
    assert ext.softmax_rows(np.ones(0, F32), 0, 5) == bytearray()
    assert ext.reduce_sum(np.ones(0, np.int32)) == 0
    assert ext.reduce_sum(np.ones(0, np.float64)) == 0.0


def test_wrong_dtype_is_a_type_error(ext: CudaOps) -> None:
    with pytest.raises(
        TypeError, match=re.escape("x: expected float32 values (format 'f'), got format 'd'")
    ):
        ext.saxpy(1.0, np.ones(3), np.ones(3, F32))
    with pytest.raises(TypeError, match="float32, float64, int32 or int64"):
        ext.reduce_sum(np.ones(3, np.int16))


def test_non_contiguous_input_is_a_type_error(ext: CudaOps) -> None:
    strided = np.ones(8, F32)[::2]
    with pytest.raises(TypeError, match="C-contiguous"):
        ext.saxpy(1.0, strided, strided)


def test_shape_errors_are_value_errors(ext: CudaOps) -> None:
    with pytest.raises(ValueError, match="x has 3 values but y has 4"):
        ext.saxpy(1.0, np.ones(3, F32), np.ones(4, F32))
    with pytest.raises(ValueError, match="rows\\*cols is 8"):
        ext.softmax_rows(np.ones(6, F32), 4, 2)
    with pytest.raises(ValueError, match="out: expected 3 float32 values, got 2"):
        ext.saxpy(1.0, np.ones(3, F32), np.ones(3, F32), np.zeros(2, F32))


def test_read_only_out_is_refused(ext: CudaOps) -> None:
    with pytest.raises(TypeError, match="writable"):
        ext.saxpy(1.0, np.ones(3, F32), np.ones(3, F32), bytes(12))


# --- the device-pointer entry points: argument checks that come before any CUDA call ---------


def test_device_calls_with_nothing_to_do_need_no_device(ext: CudaOps) -> None:
    # nothing to launch: they return before asking CUDA anything (which would fail here)
    ext.saxpy_device(1.0, 0, 0, 0, 0)
    ext.softmax_rows_device(0, 0, 0, 7)
    ext.softmax_rows_device(0, 0, 7, 0, stream=2, wait=(5,))


def test_device_sizes_and_addresses_are_checked(ext: CudaOps) -> None:
    with pytest.raises(ValueError, match=r"saxpy_device: n must be >= 0, got -1"):
        ext.saxpy_device(1.0, 0x1000, 0x2000, 0x3000, -1)
    with pytest.raises(ValueError, match="cols must be >= 0"):
        ext.softmax_rows_device(0x1000, 0x2000, 2, -3)
    with pytest.raises(ValueError, match="y is a null device pointer"):
        ext.saxpy_device(1.0, 0x1000, 0, 0x3000, 4)
    with pytest.raises(OverflowError):
        ext.saxpy_device(1.0, -8, 0x2000, 0x3000, 4)
    with pytest.raises(TypeError, match="expected an integer address, got float"):
        ext.saxpy_device(1.0, 4096.0, 0x2000, 0x3000, 4)  # type: ignore[arg-type]


def test_device_dtype_and_streams_are_checked(ext: CudaOps) -> None:
    with pytest.raises(
        TypeError, match="expected dtype float32, float64, int32 or int64, got 'int16'"
    ):
        ext.reduce_sum_device("int16", 0x1000, 3, 0x2000)
    with pytest.raises(TypeError, match="wait: expected a tuple of stream handles, got list"):
        ext.saxpy_device(1.0, 0x1000, 0x2000, 0x3000, 4, wait=[1])  # type: ignore[arg-type]
