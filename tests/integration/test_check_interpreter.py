"""Triton kernels written as real libraries write them pass in the interpreter, with no patch by
the user: float eps arguments, libdevice rsqrt/tanh, bf16 arithmetic, in-place outputs; a kernel
error names the kernel's own file and line; the adaptation is gone after the case."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.integration import clirun

pytest.importorskip("torch")
if importlib.util.find_spec("triton") is None:  # looked for, never imported: an in-process
    # import without TRITON_INTERPRET=1 would break tests/unit/test_check_interpret.py after it
    pytest.skip("triton is not installed", allow_module_level=True)

cuship = partial(clirun.cuship, drop=("GITHUB_ACTIONS", "CI"))
IDIOMS = Path(__file__).resolve().parents[1] / "fixtures" / "idioms"


def _report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.stdout, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_idiom_kernels_pass_in_every_dtype_with_nothing_skipped() -> None:
    done = cuship("check", str(IDIOMS), "--device", "cpu", "--no-store", "--format", "json")
    report = _report(done)
    statuses = {f"{g['op']}/{g['engine']}/{g['dtype']}": g["status"] for g in report["groups"]}
    assert done.returncode == 0, done.stdout
    assert set(statuses.values()) == {"passed"}
    assert {"rms_norm/triton-interpret/bfloat16", "geglu/triton-interpret/bfloat16"} <= set(
        statuses
    )
    rms = [c for g in report["groups"] if g["op"] == "rms_norm" for c in g["cases"]]
    eps = {c["case"]["scalars"]["eps"] for c in rms}
    assert eps == {1e-6, 1e-5}  # a thorough run covers every declared value


def test_a_wrong_triton_backward_fails_naming_the_gradient(tmp_path: Path) -> None:
    project = tmp_path / "idioms"
    shutil.copytree(IDIOMS, project, ignore=shutil.ignore_patterns("__pycache__"))
    norms = project / "idioms" / "norms.py"
    right = "dot = tl.sum(dyw * x_hat, axis=0) / n_cols"
    assert right in norms.read_text()
    norms.write_text(norms.read_text().replace(right, "dot = tl.sum(dyw * x, axis=0) / n_cols"))
    done = cuship(
        "check",
        str(project),
        "--quick",
        "--device",
        "cpu",
        "--no-store",
        "--op",
        "rms_norm_autograd",
    )
    assert done.returncode == 1, done.stdout
    assert "worst at grad of x index" in done.stdout
    assert "grad of w" not in done.stdout  # the weight's gradient does not use the bad term


_BROKEN = """
    import numpy as np
    from cuship.check import Impl, Op, Tensor

    def ref(x):
        return 2 * x

    def double(x, out):
        import kernel

        kernel.double(x, out)

    OP = Op(
        name="double",
        reference=ref,
        inputs=(Tensor(name="x", dims=("n",)),),
        outputs=(Tensor(name="out", dims=("n",)),),
        shapes=({"n": 8},),
        impls=(Impl(kind="triton", fn=double),),
    )
"""

_KERNEL = """
    import triton
    import triton.language as tl


    @triton.jit
    def _double(X, OUT, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n)
        y = x.no_such_method()
        tl.store(OUT + offs, y, mask=offs < n)


    def double(x, out):
        _double[(1,)](x, out, x.numel(), BLOCK=8)
"""


def test_a_kernel_error_names_the_kernels_file_and_line(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "cuship.toml").write_text('[check]\nmodules = ["checks.py"]\npythonpath = ["."]\n')
    (root / "checks.py").write_text(textwrap.dedent(_BROKEN))
    kernel = textwrap.dedent(_KERNEL)
    (root / "kernel.py").write_text(kernel)
    line = kernel.splitlines().index("    y = x.no_such_method()") + 1
    done = cuship("check", str(root), "--device", "cpu", "--no-store")
    assert done.returncode == 1
    assert f"{root / 'kernel.py'}:{line} in _double: y = x.no_such_method()" in done.stdout


_ROUND_TRIP = """
import os
os.environ["TRITON_INTERPRET"] = "1"
import triton.language as tl
from triton.runtime import interpreter
from triton.language.extra import libdevice
from cuship.check.interpret.adapt import adapted

before = (interpreter._implicit_cvt, libdevice.rsqrt, interpreter.GridExecutor.__call__)
with adapted():
    inside = (interpreter._implicit_cvt, libdevice.rsqrt, interpreter.GridExecutor.__call__)
after = (interpreter._implicit_cvt, libdevice.rsqrt, interpreter.GridExecutor.__call__)
print(all(a is b for a, b in zip(before, after)), any(a is b for a, b in zip(before, inside)))
"""


def test_the_adaptation_is_undone_after_the_case() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _ROUND_TRIP],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(clirun.SRC)},
        check=True,
    )
    assert done.stdout.split() == ["True", "False"]
