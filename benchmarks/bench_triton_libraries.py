"""Two real Triton libraries nobody here wrote, checked unpatched on a CPU with `cuship check`:
FlagGems 5.0.2 (Triton implementations of torch operators; it pins triton 3.5.1 and numpy
1.26.4) and flash-linear-attention (fla-core 0.6.0: norms, gated activations, chunked cumsums,
the simple-GLA recurrence), each installed from PyPI into a venv of its own over this Python.

Their declarations are benchmarks/triton_libraries/<library>/checks.py (ops against float64
references); the only other code is FlagGems' device selection (device.py: torch.cuda answers
for one CPU device). For each library:
  * the suite, quick and thorough: per op status and seconds (the groups' wall time);
  * planted bugs, one source line each, patched at run time into a scratch copy of the installed
    package (never committed) that PYTHONPATH puts first: caught by the quick check, the
    thorough check (each for the bug's op), and the library's own tests of that op on the CPU
    (from the library's repository, given with --flaggems-tests / --fla-tests: the wheels ship
    none), run under the same interpreter adaptation by a pytest plugin (cpu_tests.py) in the
    library's smallest parametrization or quick mode, the only ones a CPU affords;
  * the lines of shim a maintainer still writes (code lines of device.py and cpu_tests.py).

Not run by CI (downloads, minutes). Usage:
  python benchmarks/bench_triton_libraries.py [--library flaggems|fla]... [--venvs DIR]
      [--flaggems-tests DIR] [--fla-tests DIR] [--no-thorough] [--only BUG]... [--json OUT]
"""

from __future__ import annotations

import argparse
import ast
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
HERE = REPO / "benchmarks" / "triton_libraries"


@dataclass(frozen=True, slots=True, kw_only=True)
class Bug:
    name: str
    op: str
    file: str  # relative to the package directory
    old: str
    new: str
    tests: tuple[str, ...]  # the library's tests of the op: a file and pytest's -k, or none


@dataclass(frozen=True, slots=True, kw_only=True)
class Library:
    key: str
    title: str
    package: str
    requirements: tuple[str, ...]
    shims: tuple[str, ...]  # files a maintainer writes beyond declarations
    test_options: tuple[str, ...]
    bugs: tuple[Bug, ...]


# the looped path of the inner softmax (N > 32768), its full tiles: the line after the comment
_SOFTMAX_LOOP = (
    '            all_neg_inf = m_new == float("-inf")\n'
    "            z = tl.where(all_neg_inf, z, z * tl.exp(m - m_new) + tl.exp(inp - m_new))\n"
    "            m = m_new\n"
    "        # specialize the last iteration"
)
# the kernel for N <= 128 (several rows a program)
_LAYER_NORM_SMALL = (
    "    var = sum_square / N\n    rstd = tl.math.rsqrt(var + eps)\n\n"
    "    tl.store(out_mean_ptr + m_offsets"
)
FLAGGEMS = Library(
    key="flaggems",
    title="FlagGems 5.0.2",
    package="flag_gems",
    requirements=("triton==3.5.1", "numpy==1.26.4", "flag-gems==5.0.2"),
    shims=("device.py", "cpu_tests.py"),
    test_options=("--mode", "quick"),
    bugs=(
        Bug(
            name="softmax-no-rescale-past-32768",
            op="softmax",
            file="ops/softmax.py",
            old=_SOFTMAX_LOOP,
            new=_SOFTMAX_LOOP.replace("z * tl.exp(m - m_new) + ", "z + "),
            tests=("tests/test_reduction_ops.py", "test_accuracy_softmax and not backward"),
        ),
        Bug(
            name="rms-norm-eps-outside-sqrt",
            op="rms_norm",
            file="ops/rms_norm.py",
            old="rrms = 1 / tl.sqrt(var + eps)",
            new="rrms = 1 / (tl.sqrt(var) + eps)",
            tests=("tests/test_norm_ops.py", "test_accuracy_rmsnorm"),
        ),
        Bug(
            name="layer-norm-unbiased-variance",
            op="layer_norm",
            file="ops/layernorm.py",
            old=_LAYER_NORM_SMALL,
            new=_LAYER_NORM_SMALL.replace("sum_square / N", "sum_square / (N - 1)"),
            tests=("tests/test_norm_ops.py", "test_accuracy_layernorm and not backward"),
        ),
        Bug(
            name="gelu-truncated-constant",
            op="gelu",
            file="ops/gelu.py",
            old="scale: tl.constexpr = 0.7071067811  # 1 / math.sqrt(2)\n    output",
            new="scale: tl.constexpr = 0.7071  # 1 / math.sqrt(2)\n    output",
            tests=("tests/test_unary_pointwise_ops.py", "test_accuracy_gelu and not backward"),
        ),
        Bug(
            name="amax-pads-with-zero",
            op="amax",
            file="ops/amax.py",
            old="a = tl.load(inp + cols, mask, other=min_value)",
            new="a = tl.load(inp + cols, mask, other=0)",
            tests=("tests/test_reduction_ops.py", "test_accuracy_amax"),
        ),
        Bug(
            name="addmm-drops-last-k",
            op="addmm",
            file="ops/addmm.py",
            old="mask=(offs_am[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_SIZE_K),",
            new="mask=(offs_am[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_SIZE_K - 1),",
            tests=("tests/test_blas_ops.py", "test_accuracy_addmm and not out"),
        ),
    ),
)

FLA = Library(
    key="fla",
    title="flash-linear-attention (fla-core 0.6.0)",
    package="fla",
    requirements=("fla-core==0.6.0", "einops"),
    shims=("cpu_tests.py",),
    test_options=(),
    bugs=(
        Bug(
            name="l2norm-eps-outside-sqrt",
            op="l2norm",
            file="modules/norm/l2norm.py",
            old="b_rstd = 1 / tl.sqrt(tl.sum(b_x * b_x, 1) + eps)",
            new="b_rstd = 1 / (tl.sqrt(tl.sum(b_x * b_x, 1)) + eps)",
            tests=("tests/modules/test_l2norm.py", "B1-T63"),
        ),
        Bug(
            name="layer-norm-unbiased-variance",
            op="layer_norm",
            file="modules/norm/layernorm.py",
            old="b_var = tl.sum(b_xbar * b_xbar, axis=1) / D",
            new="b_var = tl.sum(b_xbar * b_xbar, axis=1) / (D - 1)",
            tests=("tests/modules/test_layernorm.py", "test_layernorm and B1-T63"),
        ),
        Bug(
            name="cumsum-exclusive",
            op="chunk_local_cumsum",
            file="ops/utils/cumsum.py",
            old="        b_o = tl.cumsum(b_s, axis=0)\n",
            new="        b_o = tl.cumsum(b_s, axis=0) - b_s\n",
            tests=("tests/ops/utils/test_cumsum.py", "test_local_cumsum and B1-T63"),
        ),
        Bug(
            name="gla-gate-stride-without-heads",
            op="fused_recurrent_simple_gla",
            file="ops/common/fused_recurrent.py",
            old="            p_g += (-1 if REVERSE else 1) * H\n",
            new="            p_g += (-1 if REVERSE else 1)\n",
            tests=("tests/ops/test_simple_gla.py", "test_fused_recurrent and B1-T63"),
        ),
        Bug(
            name="swiglu-gates-the-wrong-input",
            op="swiglu",
            file="modules/activations/ops.py",
            old="b_z = b_x * tl.sigmoid(b_x) * b_y",
            new="b_z = b_x * tl.sigmoid(b_y) * b_y",
            tests=("tests/modules/test_activation.py", "swiglu"),
        ),
        Bug(
            name="softmax-pads-with-zero",
            op="softmax",
            file="ops/utils/softmax.py",
            old="b_x = tl.load(x + i_n * D + o_d, mask=m_d, other=-float('inf'))",
            new="b_x = tl.load(x + i_n * D + o_d, mask=m_d, other=0.)",
            tests=(),
        ),
    ),
)

LIBRARIES = {lib.key: lib for lib in (FLAGGEMS, FLA)}


def _venv(lib: Library, root: Path) -> Path:
    """The library's venv (made once, over this Python's site-packages); its python."""
    where = root / lib.key
    python = where / "bin" / "python"
    if not (where / ".complete").exists():
        subprocess.run(
            [sys.executable, "-m", "venv", "--system-site-packages", str(where)], check=True
        )
        subprocess.run([str(python), "-m", "pip", "install", "-q", *lib.requirements], check=True)
        (where / ".complete").write_text("")
    return python


def _package_dir(python: Path, package: str) -> Path:
    found = subprocess.run(
        [str(python), "-c", f"import importlib.util as u; print(u.find_spec({package!r}).origin)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(found.stdout.strip()).parent


def _env(pythonpath: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    env["PYTHONPATH"] = pythonpath
    return env


def _check(python: Path, lib: Library, extra: list[str], pythonpath: str) -> tuple[int, float, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        argv = [str(python), "-m", "cuship", "check", str(HERE / lib.key), "--device", "cpu"]
        started = time.perf_counter()
        done = subprocess.run(
            [*argv, "--no-store", "--format", "json", "-o", str(out), *extra],
            capture_output=True,
            text=True,
            env=_env(pythonpath),
            timeout=3600,
        )
        seconds = time.perf_counter() - started
        report = json.loads(out.read_text()) if out.exists() else None
    if report is None:
        print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
    return done.returncode, seconds, report


def _per_op(report: Any) -> dict[str, dict[str, Any]]:
    ops: dict[str, dict[str, Any]] = {}
    for group in report["groups"]:
        entry = ops.setdefault(group["op"], {"status": "passed", "cases": 0, "seconds": 0.0})
        entry["cases"] += len(group["cases"])
        entry["seconds"] += group["wall_s"]
        if group["status"] != "passed":
            entry["status"] = group["status"]
    return ops


def _planted(bug: Bug, source: Path, scratch: Path, package: str) -> Path:
    copy = scratch / bug.name / package
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / bug.file
    text = target.read_text()
    if bug.old not in text:
        raise SystemExit(f"{bug.name}: {bug.old!r} is not in {bug.file}; the planted bug is stale")
    target.write_text(text.replace(bug.old, bug.new, 1))
    return copy.parent


_PYTEST = ("-m", "pytest", "-p", "cpu_tests", "-p", "no:cacheprovider", "-q")


def _library_tests(python: Path, lib: Library, bug: Bug, tests: Path | None, first: str) -> Any:
    if tests is None or not bug.tests:
        return None
    file, select = bug.tests
    path = [first, str(REPO / "src"), str(HERE / lib.key), str(tests)]
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [str(python), *_PYTEST, "-x", "-k", select, file, *lib.test_options],
            capture_output=True,
            text=True,
            cwd=tests,
            env=_env(os.pathsep.join(path)),
            timeout=900,
        )
        code: int | str = done.returncode
    except subprocess.TimeoutExpired:
        code = "timeout"
    return {"caught": code == 1, "exit": code, "seconds": round(time.perf_counter() - started, 1)}


def _shim_lines(lib: Library) -> dict[str, int]:
    """Code lines (not blank, comment or docstring) of each shim file."""
    counts = {}
    for name in lib.shims:
        text = (HERE / lib.key / name).read_text()
        docstrings = {
            line
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
        }
        counts[name] = sum(
            1
            for number, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.strip().startswith("#") and number not in docstrings
        )
    return counts


def run_library(lib: Library, args: argparse.Namespace) -> dict[str, Any]:
    python = _venv(lib, args.venvs)
    src = str(REPO / "src")
    result: dict[str, Any] = {"library": lib.title, "shim_lines": _shim_lines(lib)}
    for mode, extra in (("quick", ["--quick"]), ("thorough", [])):
        if args.only or (mode == "thorough" and args.no_thorough):
            continue
        code, seconds, report = _check(python, lib, extra, src)
        result[mode] = {"exit": code, "seconds": round(seconds, 1), "ops": _per_op(report)}
    tests = getattr(args, f"{lib.key}_tests")
    source = _package_dir(python, lib.package)
    bugs = []
    with tempfile.TemporaryDirectory() as tmp:
        for bug in (b for b in lib.bugs if not args.only or b.name in args.only):
            first = str(_planted(bug, source, Path(tmp), lib.package))
            path = os.pathsep.join((first, src))
            row: dict[str, Any] = {"bug": bug.name, "op": bug.op}
            for mode, extra in (("quick", ["--quick"]), ("thorough", [])):
                code, seconds, _ = _check(python, lib, [*extra, "--op", bug.op], path)
                row[mode] = {"caught": code == 1, "exit": code, "seconds": round(seconds, 1)}
            row["library_tests"] = _library_tests(python, lib, bug, tests, first)
            bugs.append(row)
            print(json.dumps(row), flush=True)
    result["bugs"] = bugs
    return result


def _verdict(run: dict[str, Any]) -> str:
    """caught / missed, or why the library's tests did not run (exit 2-5: pytest's own)."""
    if run["caught"]:
        return f"caught ({run['seconds']} s)"
    if run["exit"] in (0,):
        return f"missed ({run['seconds']} s)"
    return f"did not run (exit {run['exit']})"


def _table(result: dict[str, Any]) -> str:
    lines = [
        f"## {result['library']}",
        "",
        "| op | quick | s | thorough | s |",
        "|---|---|---|---|---|",
    ]
    quick = result.get("quick", {}).get("ops", {})
    thorough = result.get("thorough", {}).get("ops", {})
    for op, q in quick.items():
        t = thorough.get(op, {})
        lines.append(
            f"| {op} | {q['status']} ({q['cases']}) | {q['seconds']:.1f} | "
            f"{t.get('status', '-')} ({t.get('cases', '-')}) | {t.get('seconds', 0):.1f} |"
        )
    lines += [
        "",
        "| planted bug | op | quick | thorough | library tests |",
        "|---|---|---|---|---|",
    ]
    for bug in result["bugs"]:
        tests = bug["library_tests"]
        said = "-" if tests is None else _verdict(tests)
        lines.append(
            f"| {bug['bug']} | {bug['op']} | "
            + " | ".join(
                f"{'caught' if bug[m]['caught'] else 'missed'} ({bug[m]['seconds']} s)"
                for m in ("quick", "thorough")
            )
            + f" | {said} |"
        )
    lines.append(f"\nshim lines: {result['shim_lines']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", action="append", choices=sorted(LIBRARIES))
    parser.add_argument("--venvs", type=Path, default=REPO / "build" / "bench-venvs")
    parser.add_argument("--flaggems-tests", type=Path, help="FlagGems' repository checkout")
    parser.add_argument("--fla-tests", type=Path, help="flash-linear-attention's checkout")
    parser.add_argument("--no-thorough", action="store_true")
    parser.add_argument("--only", action="append", help="planted bugs to run (no suite runs)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = [run_library(LIBRARIES[key], args) for key in args.library or sorted(LIBRARIES)]
    for result in results:
        print(_table(result), "\n")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
