"""How the backend is chosen, and the reasons it gives."""

from __future__ import annotations

from collections.abc import Callable

import cuvecops
import pytest
from cuvecops import _loader


class FakeExtension:
    """Stands in for cuvecops._cuda with a chosen device probe result."""

    def __init__(self, count: int, error: str) -> None:
        self.count = count
        self.error = error

    def probe(self) -> tuple[int, str]:
        return self.count, self.error


def raising(message: str) -> Callable[[str], object]:
    """An importer that fails the way a broken extension import does."""

    def importer(name: str) -> object:
        raise ImportError(message)

    return importer


def test_forced_cpu_says_so() -> None:
    info = _loader.detect({"CUVECOPS_BACKEND": "cpu"})
    assert info.describe() == "cpu: forced by CUVECOPS_BACKEND=cpu"
    assert info.module is None


def test_unknown_choice_is_reported() -> None:
    info = _loader.detect({"CUVECOPS_BACKEND": "tpu"})
    assert info.name == "cpu"
    assert "'tpu'" in info.reason


def test_missing_cudart_is_named() -> None:
    message = "libcudart.so.13: cannot open shared object file: No such file or directory"
    info = _loader.detect({}, importer=raising(message))
    assert info.describe() == "cpu: extension not importable: libcudart.so.13 not found"


def test_other_import_errors_are_kept() -> None:
    info = _loader.detect({}, importer=raising("No module named 'x'"))
    assert info.describe() == "cpu: extension not importable: No module named 'x'"


def test_no_device_quotes_cuda() -> None:
    fake = FakeExtension(0, "no CUDA-capable device is detected")
    info = _loader.detect({}, importer=lambda name: fake)
    assert info.describe() == (
        "cpu: no CUDA device (cudaGetDeviceCount: no CUDA-capable device is detected)"
    )


def test_device_present_selects_cuda() -> None:
    fake = FakeExtension(2, "")
    info = _loader.detect({}, importer=lambda name: fake)
    assert info.name == "cuda"
    assert info.reason.startswith("2 CUDA device(s)")
    assert info.module is not None and info.module.probe() == (2, "")


def test_forced_cuda_fails_loudly_when_unusable(monkeypatch: pytest.MonkeyPatch) -> None:
    if cuvecops.backend_info().name == "cuda":
        pytest.skip("a CUDA device is usable here")  # the GPU suite covers this machine
    monkeypatch.setenv("CUVECOPS_BACKEND", "cuda")
    with pytest.raises(RuntimeError, match="CUVECOPS_BACKEND=cuda"):
        cuvecops.saxpy(1.0, [1.0], [2.0])


def test_auto_detection_gives_a_reason() -> None:
    info = _loader.detect({})
    assert info.name in ("cpu", "cuda")
    assert info.reason
