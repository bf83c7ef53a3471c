"""`cuship check --device auto` (the default): which device the run takes, decided in the library."""

from __future__ import annotations

import pytest

from cuship.check.run.device import choose_device

GPU = {"CUSHIP_GPUS": "H100:9.0:80GiB"}
NO_GPU = {"CUSHIP_GPUS": "none"}


@pytest.mark.parametrize("asked", ["cpu", "cuda"])
def test_a_device_asked_for_is_the_device(asked: str) -> None:
    assert choose_device(asked, GPU) == asked
    assert choose_device(asked, NO_GPU, force_ptx=True) == asked  # the session says why not


def test_auto_is_cuda_on_a_machine_with_a_gpu_and_cpu_without_one() -> None:
    assert choose_device("auto", GPU) == "cuda"
    assert choose_device("auto", NO_GPU) == "cpu"


def test_auto_with_only_interpreter_engines_named_is_a_cpu_run_even_on_a_gpu() -> None:
    assert choose_device("auto", GPU, engines=("triton-interpret", "numba-sim")) == "cpu"
    assert choose_device("auto", GPU, engines=("triton-interpret", "triton")) == "cuda"


def test_auto_with_force_ptx_or_sanitize_is_a_gpu_run_even_without_a_gpu() -> None:
    assert choose_device("auto", NO_GPU, force_ptx=True) == "cuda"
    assert choose_device("auto", NO_GPU, sanitize=True) == "cuda"
