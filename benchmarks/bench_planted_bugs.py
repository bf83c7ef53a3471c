"""Planted bugs in Triton kernels written the way real libraries write them: does `cuship check`
catch each one, in quick and thorough mode, and what does it cost next to pytest?

The kernels are tests/fixtures/idioms (RMSNorm, LayerNorm, SwiGLU, GeGLU and its in-place
backward, RMSNorm's autograd backward, RoPE in place, softmax cross-entropy with an online softmax), written here in the
idioms of real libraries: float eps arguments, libdevice rsqrt/tanh, fp32 upcasts, column-block
loops. Each planted bug is one source edit of a copy of the fixture. For each bug:
  * `cuship check COPY --quick --device cpu` and the thorough run (`cuship check COPY --device
    cpu`): caught when the run exits 1 with the bug's op failing;
  * pytest on benchmarks/planted/test_idioms_pytest.py (the same kernels' tests as a project
    would write them, fixed shapes, all three dtypes) under TRITON_INTERPRET=1, for wall time and
    its own catch count.
Goals: every bug caught in thorough mode; the mask and block bugs in quick mode; quick < 30 s.

On a GPU machine, `--device cuda --no-pytest` runs the same planted bugs through real Triton
(compiled kernels on the GPU) instead of the interpreter.

Usage: python benchmarks/bench_planted_bugs.py [--only NAME]... [--no-pytest] [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "idioms"
PYTEST_FILE = REPO / "benchmarks" / "planted" / "test_idioms_pytest.py"


@dataclass(frozen=True, slots=True, kw_only=True)
class Bug:
    name: str
    op: str
    kind: str  # what sort of bug: the goals name mask and block bugs for quick mode
    file: str
    old: str
    new: str


# the forward's two loads (the backward loads X and W the same way, then RSTD)
_RMS_LOADS = (
    "x = tl.load(X + row * stride + cols{x_mask}).to(tl.float32)\n"
    "    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)\n"
    "    mean_square"
)

BUGS = (
    Bug(
        name="rms-eps-outside-sqrt",
        op="rms_norm",
        kind="epsilon",
        file="norms.py",
        old="rstd = rsqrt(mean_square + eps.to(tl.float32))",
        new="rstd = 1.0 / (tl.sqrt(mean_square) + eps.to(tl.float32))",
    ),
    Bug(
        name="rms-missing-load-mask",
        op="rms_norm",
        kind="mask",
        file="norms.py",
        old=_RMS_LOADS.format(x_mask=", mask=mask, other=0.0"),
        new=_RMS_LOADS.format(x_mask=""),
    ),
    Bug(
        name="rms-backward-wrong-gradient",
        op="rms_norm_autograd",
        kind="gradient",
        file="norms.py",
        old="dot = tl.sum(dyw * x_hat, axis=0) / n_cols",
        new="dot = tl.sum(dyw * x, axis=0) / n_cols",
    ),
    Bug(
        name="layernorm-missing-fp32-upcast",
        op="layer_norm",
        kind="upcast",
        file="norms.py",
        old="x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)\n    mean",
        new="x = tl.load(X + row * stride + cols, mask=mask, other=0.0)\n    mean",
    ),
    Bug(
        name="swiglu-tail-block-skipped",
        op="swiglu",
        kind="block",
        file="activations.py",
        old="for start in range(0, tl.cdiv(n_cols, BLOCK)):\n        cols = start * BLOCK + tl.arange(0, BLOCK)\n        mask = cols < n_cols\n        a = tl.load(A + row * stride + cols, mask=mask, other=0.0).to(tl.float32)\n        b = tl.load(B + row * stride + cols, mask=mask, other=0.0)\n        c =",
        new="for start in range(0, n_cols // BLOCK):\n        cols = start * BLOCK + tl.arange(0, BLOCK)\n        mask = cols < n_cols\n        a = tl.load(A + row * stride + cols, mask=mask, other=0.0).to(tl.float32)\n        b = tl.load(B + row * stride + cols, mask=mask, other=0.0)\n        c =",
    ),
    Bug(
        name="geglu-backward-wrong-in-place-write",
        op="geglu_backward",
        kind="in-place",
        file="activations.py",
        old="tl.store(B + row * stride + cols, (dc * gelu)",
        new="tl.store(A + row * stride + cols, (dc * gelu)",
    ),
    Bug(
        name="rope-missing-store-mask",
        op="rope",
        kind="mask",
        file="rope.py",
        old="tl.store(first, (x1 * cos - x2 * sin).to(Q.dtype.element_ty), mask=mask)",
        new="tl.store(first, (x1 * cos - x2 * sin).to(Q.dtype.element_ty))",
    ),
    Bug(
        name="cross-entropy-missing-rescale",
        op="cross_entropy",
        kind="block",
        file="cross_entropy.py",
        old="running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum",
        new="running_sum = running_sum + tl.sum",
    ),
)


def _env() -> dict[str, str]:
    drop = ("CI", "GITHUB_ACTIONS", "TRITON_INTERPRET")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return {**env, "PYTHONPATH": str(REPO / "src")}


def _copy(bug: Bug | None, into: Path) -> Path:
    project = into / (bug.name if bug else "clean")
    shutil.copytree(FIXTURE, project, ignore=shutil.ignore_patterns("__pycache__"))
    if bug is not None:
        path = project / "idioms" / bug.file
        text = path.read_text()
        if text.count(bug.old) != 1:
            raise SystemExit(f"{bug.name}: the text to replace is not in {bug.file} exactly once")
        path.write_text(text.replace(bug.old, bug.new))
    return project


def run_check(
    project: Path, *, quick: bool, device: str = "cpu"
) -> tuple[float, int, dict[str, Any]]:
    argv = [sys.executable, "-m", "cuship", "check", str(project), "--device", device]
    argv += ["--no-store", "--format", "json", *(["--quick"] if quick else [])]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=_env(), check=False)
    took = time.perf_counter() - started
    if not done.stdout:
        raise SystemExit(f"cuship check wrote no report:\n{done.stderr}")
    report: dict[str, Any] = json.loads(done.stdout)
    return took, done.returncode, report


def _failed_ops(report: dict[str, Any]) -> set[str]:
    return {g["op"] for g in report["groups"] if g["status"] in ("failed", "error")}


def run_pytest(project: Path) -> tuple[float, bool]:
    env = {**_env(), "TRITON_INTERPRET": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(project)])
    argv = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", str(PYTEST_FILE)]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, check=False)
    return time.perf_counter() - started, done.returncode != 0


def _row(name: str, kind: str, cells: list[str]) -> str:
    return f"| {name} | {kind} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="Only this bug (repeatable).")
    parser.add_argument("--no-pytest", action="store_true", help="Skip the pytest comparison.")
    parser.add_argument(
        "--device", default="cpu", choices=("cpu", "cuda"), help="cuda: real Triton on a GPU."
    )
    args = parser.parse_args()
    bugs = [b for b in BUGS if not args.only or b.name in args.only]
    header = "| planted bug | kind | quick | quick s | thorough | thorough s | pytest | pytest s |"
    rows = [header, "|" + "---|" * 8]
    caught = {"quick": 0, "thorough": 0, "pytest": 0}
    with tempfile.TemporaryDirectory(prefix="cuship-planted-") as tmp:
        for bug in [None, *bugs]:
            project = _copy(bug, Path(tmp))
            cells = []
            for quick in (True, False):
                took, code, report = run_check(project, quick=quick, device=args.device)
                hit = code == 1 and bug is not None and bug.op in _failed_ops(report)
                if bug is None:
                    cells += ["passes" if code == 0 else f"exit {code}", f"{took:.1f}"]
                    continue
                caught["quick" if quick else "thorough"] += hit
                cells += ["caught" if hit else "missed", f"{took:.1f}"]
            if args.no_pytest:
                cells += ["-", "-"]
            else:
                took, failed = run_pytest(project)
                if bug is not None:
                    caught["pytest"] += failed
                label = (
                    ("fails" if failed else "passes")
                    if bug is None
                    else ("caught" if failed else "missed")
                )
                cells += [label, f"{took:.1f}"]
            rows.append(
                _row(bug.name if bug else "(clean kernels)", bug.kind if bug else "-", cells)
            )
            print(rows[-1], flush=True)
    print()
    print("\n".join(rows))
    total = len(bugs)
    print(
        f"\ncaught: quick {caught['quick']}/{total}, thorough {caught['thorough']}/{total}, "
        f"pytest {caught['pytest']}/{total} (pytest -x stops at its first failure)"
    )


if __name__ == "__main__":
    main()
