"""``cuship check``'s request is made in the library (as bench's is): flags in, a CheckRequest
out, the sanitizer's tools parsed and the device chosen by the same rules the CLI had."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuship.check.run.session import CheckFlags, check_request
from cuship.errors import UsageError

NO_GPU = {"CUSHIP_GPUS": "none"}


def test_defaults_ask_for_the_configured_run_on_this_machine(tmp_path: Path) -> None:
    request = check_request(tmp_path, CheckFlags(), environ=NO_GPU, cwd=tmp_path)
    assert request.device == "cpu"  # auto, and no GPU here
    assert request.store and request.sanitize == () and request.require_engines is None
    assert (request.path, request.target, request.cwd) == (tmp_path, str(tmp_path), tmp_path)


def test_each_flag_reaches_the_request(tmp_path: Path) -> None:
    flags = CheckFlags(
        quick=True,
        ops=["saxpy"],
        engines=["triton-interpret"],
        dtypes=["float32"],
        case=3,
        seed=7,
        include_broken=True,
        parallel=2,
        baseline=tmp_path / "b.json",
        fail_on_regression=True,
        require_engines=True,
        no_store=True,
        installed=True,
    )
    request = check_request(tmp_path, flags, environ={"CUSHIP_GPUS": "H100"}, cwd=tmp_path)
    assert request.device == "cpu"  # every engine named runs on the CPU, GPU or not
    assert (request.ops, request.engines, request.dtypes) == (
        ("saxpy",),
        ("triton-interpret",),
        ("float32",),
    )
    assert (request.case, request.seed, request.parallel) == (3, 7, 2)
    assert request.quick and request.include_broken and request.fail_on_regression
    assert request.require_engines is True and request.installed and not request.store
    assert request.baseline == tmp_path / "b.json"


def test_sanitize_and_forced_ptx_ask_for_the_gpu(tmp_path: Path) -> None:
    sanitized = check_request(tmp_path, CheckFlags(sanitize="all"), environ=NO_GPU, cwd=tmp_path)
    assert sanitized.device == "cuda" and len(sanitized.sanitize) == 4
    assert "memcheck" in sanitized.sanitize
    ptx = check_request(tmp_path, CheckFlags(force_ptx=True), environ=NO_GPU, cwd=tmp_path)
    assert ptx.device == "cuda" and ptx.force_ptx
    cpu = check_request(
        tmp_path, CheckFlags(device="cpu"), environ={"CUSHIP_GPUS": "H100"}, cwd=tmp_path
    )
    assert cpu.device == "cpu"


def test_an_unknown_sanitizer_tool_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="leakcheck"):
        check_request(tmp_path, CheckFlags(sanitize="leakcheck"), environ=NO_GPU, cwd=tmp_path)
