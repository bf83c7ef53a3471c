"""Declaration mistakes are config errors naming the user's file and line and the valid choices;
the interpreter's bf16 helpers round as a GPU does; errors point at the user's frame."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from cuship.check.case.frames import describe
from cuship.check.declare.registry import discover
from cuship.check.interpret._bf16 import from_f32, to_f32
from cuship.errors import ConfigError


def test_a_wrong_impl_kind_names_the_file_line_and_valid_kinds(tmp_path: Path) -> None:
    checks = tmp_path / "checks.py"
    checks.write_text(
        textwrap.dedent(
            """\
            from cuship.check import Impl, Op, Tensor

            OP = Op(
                name="copy",
                reference=lambda x: x,
                inputs=(Tensor(name="x", dims=("n",)),),
                shapes=({"n": 4},),
                impls=(Impl(kind="trtion", fn=lambda x: x),),
            )
            """
        )
    )
    with pytest.raises(ConfigError) as caught:
        discover(["checks.py"], tmp_path)
    assert f"{checks}:8" in str(caught.value)
    assert "unknown kind 'trtion'" in str(caught.value)
    assert caught.value.hint == "valid: native, triton, numba, cuda"
    assert caught.value.exit_code == 2


def test_bf16_rounds_to_nearest_even_and_keeps_nan() -> None:
    values = np.array([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.5, np.nan], dtype=np.float32)
    back = to_f32(from_f32(values))
    assert back[:4].tolist() == [1.0, 1.0, 1.0 + 2**-6, -2.5]
    assert np.isnan(back[4])


def _user_code() -> None:
    raise ValueError("bad block size")


def test_describe_names_the_innermost_user_frame_over_the_cause_chain() -> None:
    try:
        try:
            _user_code()
        except ValueError as err:
            raise RuntimeError("engine wrapper") from err
    except RuntimeError as outer:
        text = describe(outer, engine_dirs=())
    assert text.splitlines()[0] == "ValueError: bad block size (raised as RuntimeError)"
    assert f"{__file__}:" in text and "in _user_code" in text


def test_a_chain_ended_with_from_none_is_told_by_its_outer_message() -> None:
    """``raise ... from None`` (a user's own wrapping, with the context it means to add) ends
    the chain, as Python's own traceback shows it."""
    try:
        try:
            _user_code()
        except ValueError as err:
            raise RuntimeError(f"{err} (CUDA_FORCE_PTX_JIT=1)") from None
    except RuntimeError as outer:
        text = describe(outer, engine_dirs=())
    assert text.splitlines()[0] == "RuntimeError: bad block size (CUDA_FORCE_PTX_JIT=1)"


def test_a_missing_engine_fails_a_ci_run_with_its_cause_and_fix() -> None:
    from cuship.check.run.availability import Unavailable
    from cuship.check.run.session import CheckRequest, engines_required, require_engines
    from cuship.errors import ToolMissing

    request = CheckRequest(path=Path(), target=".")
    assert engines_required(request, {"CI": "true"})
    assert not engines_required(request, {"CI": "false"})
    assert not engines_required(request, {})
    assert engines_required(CheckRequest(path=Path(), target=".", require_engines=True), {})
    missing = Unavailable(
        engine="triton-interpret",
        error="importing torch failed: No module named 'torch'",
        fix="pip install torch --index-url https://download.pytorch.org/whl/cpu",
    )
    with pytest.raises(ToolMissing) as caught:
        require_engines([missing])
    assert caught.value.exit_code == 3
    assert "triton-interpret: importing torch failed" in str(caught.value)
    assert "download.pytorch.org/whl/cpu" in str(caught.value.hint)
    require_engines([])  # nothing missing: nothing to say


def test_fail_on_regression_without_a_baseline_is_a_usage_error() -> None:
    from cuship.check.run.session import CheckRequest, run_check
    from cuship.errors import UsageError

    request = CheckRequest(path=Path(), target=".", fail_on_regression=True)
    with pytest.raises(UsageError, match="--baseline"):
        run_check(request, environ={})
