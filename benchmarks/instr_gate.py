"""The instruction-count gate: cuship's everyday paths counted under callgrind, each held to a
stored baseline (benchmarks/instr_baseline.json); a path fails when its count grows past the
margin (5 %), and the failure names the path and its ratio.

    python3 benchmarks/instr_gate.py                   # count every path, compare (exit 1: grew)
    python3 benchmarks/instr_gate.py --record          # count every path, store the baseline
    python3 benchmarks/instr_gate.py --paths help,resolve --repeat 3   # how stable the counts are

The paths, each a whole ``cuship`` process as a user starts it (the console script's two
lines, interpreter start-up and imports included):

* ``help``: ``cuship --help``;
* ``index-plus1``: ``cuship index NEW.whl --keep-existing -o SITE`` on a copy of a 5,000-wheel
  site (500 projects, four local-label variants each: bench_index_scale's wheels);
* ``index-rerun``: ``cuship index FOLDER -o SITE`` over the 5,000 wheels SITE was made from,
  nothing changed (the scan cache and the site of the last run kept);
* ``resolve``: ``cuship resolve PROJECT --index file://SITE/simple`` for a fixed machine
  (CUSHIP_GPUS and friends: nothing is probed);
* ``inspect``: ``cuship inspect`` of a real CUDA wheel from PyPI (xformers 0.0.35, 3.1 MiB, an
  11 MiB extension with SASS for sm_75/80/90a and PTX; downloaded once, sha256-pinned);
* ``doctor``: ``cuship doctor torch`` over this environment's torch.

What makes a count repeatable: PYTHONHASHSEED=0; cuship's bytecode compiled before and none
written (PYTHONDONTWRITEBYTECODE); a fixed environment (no CUSHIP_* setting of the caller, a
fixed machine, terminal width and progress cadence); inputs made deterministically (fixed
wheel bytes, fixed zip dates), the sites made anew by each gate run outside callgrind, then
one warm-up of each index path outside callgrind so that the counted run is the steady
state; forked children and started programs counted (``--trace-children=yes``, an output
file per process). Runs go two at a time (one per core); the whole gate takes about two
minutes on two cores, about a minute of it making the inputs.
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks._index_scale import WheelSpec, plan_wheels, spec_at, write_wheel  # noqa: E402
from benchmarks._instr import (  # noqa: E402
    RECORD_COMMAND,
    Baseline,
    callgrind_argv,
    compare,
    environment,
    sum_totals,
)

BASELINE = REPO / "benchmarks" / "instr_baseline.json"
PATHS = ("help", "index-plus1", "index-rerun", "resolve", "inspect", "doctor")
WHEELS = 5000
# The machine cuship judges for: fixed, so that no GPU, driver or torch probe runs.
MACHINE = {
    "CUSHIP_GPUS": "H100:9.0:80GiB",
    "CUSHIP_CUDA_DRIVER_VERSION": "580.65.06",
    "CUSHIP_DRIVER_CUDA": "13.0",
    "CUSHIP_NVCC": "none",
}
CUDA_WHEEL = "xformers-0.0.35-py39-none-manylinux_2_28_x86_64.whl"
CUDA_WHEEL_URL = (
    "https://files.pythonhosted.org/packages/a4/85/"
    "6d71f9b16f2ac647877e66ed4af723b3fbd477806ab8b8a89d39a362b85f/" + CUDA_WHEEL
)
CUDA_WHEEL_SHA256 = "ccc73c7db9890224ab05f5fb60e2034f9e6c8672a10be0cf00e95cbbae3eda7c"
# What the console script runs (pip's generated `cuship` script, its two lines); with a plant
# (tests only: a slowdown planted on purpose), benchmarks/_plant.py patches cuship first.
LAUNCH = "import sys; sys.argv[0] = 'cuship'; from cuship.cli import main; sys.exit(main())"
PLANTED = (
    "import sys; sys.argv[0] = 'cuship'; sys.path.insert(0, {repo!r}); "
    "from benchmarks._plant import install; install({plant!r}); "
    "from cuship.cli import main; sys.exit(main())"
)


class GateError(Exception):
    """The gate could not count (a tool missing, a path that failed, an input not made)."""


def fixed_env(work: Path) -> dict[str, str]:
    """The one environment every counted process gets (the caller's is not passed on)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(work / "home"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "COLUMNS": "120",
        "PYTHONPATH": str(SRC),
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "CUSHIP_PROGRESS_INTERVAL": "86400",  # only a topic's first and last line: no clock
        "XDG_CACHE_HOME": str(work / "home" / "cache"),
        **MACHINE,
    }


# --- inputs -------------------------------------------------------------------------------------


def default_work() -> Path:
    return Path(tempfile.gettempdir()) / "cuship-instr-gate"


def make_wheels(folder: Path, count: int) -> None:
    """bench_index_scale's first ``count`` wheels in ``folder``, made once (written beside it
    and renamed into place, so that gates running at once share them): the same bytes on
    every machine."""
    if folder.is_dir():
        return
    staging = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for i, spec in enumerate(plan_wheels(count)):
        write_wheel(staging, spec, hashlib.sha256(str(i).encode()).digest() * 64)
    try:
        staging.rename(folder)
    except OSError:  # another gate made them meanwhile
        shutil.rmtree(staging, ignore_errors=True)


def precompile(env: Mapping[str, str]) -> None:
    """What an installed cuship has before its first counted run: its bytecode, and the
    parse of its data files (:func:`cuship.schema.read_toml`'s cache), written now."""
    compileall.compile_dir(SRC / "cuship", quiet=1)
    code = (
        "import sys; sys.dont_write_bytecode = False\n"
        "from cuship.schema import read_toml; from cuship.version import PACKAGE\n"
        "for path in sorted((PACKAGE / 'data').glob('*.toml')): read_toml(path)\n"
    )
    subprocess.run([sys.executable, "-c", code], env=dict(env), check=True)


def native(args: Sequence[str], env: Mapping[str, str], cwd: Path | None = None) -> str:
    """``cuship ARGS`` without callgrind (making inputs, warm-ups); its output."""
    argv = [sys.executable, "-c", LAUNCH, *args]
    proc = subprocess.run(argv, env=dict(env), cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise GateError(f"cuship {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr}")
    return proc.stdout + proc.stderr


def cuda_wheel(cache: Path) -> Path:
    """The real CUDA wheel ``inspect`` reads: downloaded once into ``cache``, sha256 checked."""
    path = cache / CUDA_WHEEL
    if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == CUDA_WHEEL_SHA256:
        return path
    cache.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(CUDA_WHEEL_URL, timeout=120) as answer:
            data = answer.read()
    except OSError as err:
        raise GateError(f"cannot download {CUDA_WHEEL_URL}: {err}") from err
    if hashlib.sha256(data).hexdigest() != CUDA_WHEEL_SHA256:
        raise GateError(f"{CUDA_WHEEL} from PyPI does not have the pinned sha256")
    partial = path.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(path)
    return path


def _copy_site(site: Path, dest: Path) -> None:
    """A copy of ``site`` and its scan cache at ``dest``: pages copied, wheels hard-linked."""

    def link_wheels(src: str, dst: str) -> str:
        if src.endswith(".whl"):
            os.link(src, dst)
        else:
            shutil.copy2(src, dst)
        return dst

    shutil.copytree(site, dest, copy_function=link_wheels)
    cache = site.parent / f".{site.name}.cuship-cache.sqlite"
    if cache.exists():
        shutil.copy2(cache, dest.parent / f".{dest.name}.cuship-cache.sqlite")


@dataclass(frozen=True, slots=True)
class Inputs:
    """What the paths run on, made by :func:`prepare`."""

    runs: Path  # this gate's folder (removed by close)
    env: dict[str, str]
    template: Path  # a 5,000-wheel site, copied for each +1 wheel
    new_wheel: Path
    folder: Path  # the wheels of ``rerun_site``, nothing changed since
    rerun_site: Path
    cuda_wheel: Path | None

    def command(self, path: str, run: int) -> tuple[list[str], Path | None]:
        """The ``cuship`` arguments of ``path``'s ``run``-th count, and its working folder."""
        if path == "help":
            return ["--help"], None
        if path == "index-plus1":
            site = Path(tempfile.mkdtemp(prefix="plus1-", dir=self.runs)) / "site"  # a copy each
            _copy_site(self.template, site)
            return ["index", str(self.new_wheel), "--keep-existing", "-o", str(site)], None
        if path == "index-rerun":
            return ["index", str(self.folder), "-o", str(self.rerun_site)], None
        if path == "resolve":
            index = f"file://{self.template}/simple"
            return ["resolve", spec_at(WHEELS // 2).project, "--index", index], None
        if path == "inspect":
            if self.cuda_wheel is None:
                raise GateError("the real CUDA wheel was not downloaded")
            return ["inspect", str(self.cuda_wheel)], None
        if path == "doctor":
            return ["doctor", "torch"], None
        raise GateError(f"unknown path {path!r}; the paths: {', '.join(PATHS)}")

    def close(self) -> None:
        shutil.rmtree(self.runs, ignore_errors=True)


def prepare(work: Path, paths: Sequence[str]) -> Inputs:
    """Make what ``paths`` need under ``work``: the wheels once, the sites anew each run."""
    work.mkdir(parents=True, exist_ok=True)
    runs = Path(tempfile.mkdtemp(prefix="runs-", dir=work))  # this gate's; a name of one length
    env = fixed_env(runs)
    Path(env["HOME"]).mkdir(parents=True)
    precompile(env)
    wheels, folder = work / f"wheels-{WHEELS}", runs / "rerun" / "wheels"
    template, rerun_site = runs / "template", runs / "rerun" / "site"
    new = runs / "new"
    new.mkdir()
    new_wheel = write_wheel(new, WheelSpec(spec_at(0).project, "9.0.0"), b"new wheel" * 200)
    if {"index-plus1", "resolve"} & set(paths):
        make_wheels(wheels, WHEELS)
        native(["index", str(wheels), "-o", str(template)], env)
    if "index-rerun" in paths:
        make_wheels(wheels, WHEELS)
        folder.mkdir(parents=True)
        for path in sorted(wheels.iterdir()):  # own copies: a site linking the others' wheels
            shutil.copyfile(path, folder / path.name)  # moves their ctimes
        native(["index", str(folder), "-o", str(rerun_site)], env)
        native(["index", str(folder), "-o", str(rerun_site)], env)  # the steady state
    wheel = None
    if "inspect" in paths:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        wheel = cuda_wheel(cache / "cuship" / "instr-gate")
    return Inputs(runs, env, template, new_wheel, folder, rerun_site, wheel)


# --- counting -----------------------------------------------------------------------------------


def find_valgrind() -> str:
    found = shutil.which("valgrind")
    if found is None:
        raise GateError(
            "valgrind is not on PATH: the gate counts instructions with callgrind "
            "(Debian/Ubuntu: apt-get install valgrind; tools/test-deps installs it)"
        )
    return found


def count(inputs: Inputs, path: str, run: int, valgrind: str, plant: str | None) -> int:
    """The instructions of one run of ``path`` under callgrind."""
    args, cwd = inputs.command(path, run)
    out_dir = Path(tempfile.mkdtemp(prefix=f"callgrind-{path}-", dir=inputs.runs))
    code = LAUNCH if plant is None else PLANTED.format(repo=str(REPO), plant=plant)
    argv = callgrind_argv(valgrind, out_dir, [sys.executable, "-c", code, *args])
    proc = subprocess.run(argv, env=inputs.env, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-12:])
        raise GateError(f"{path}: cuship {' '.join(args)} exited {proc.returncode}:\n{tail}")
    check_output(path, proc.stdout + proc.stderr)
    total, _processes = sum_totals(out_dir)
    return total


def check_output(path: str, text: str) -> None:
    """Refuse a count of a run that did not do its path's work."""
    expected = {
        "index-plus1": "rewrote 1 of 500 projects",
        "index-rerun": "rewrote 0 of 500 projects; 0 files read",
        "resolve": "chosen:",
        "inspect": "SASS 75 80 90a",
        "doctor": "torch",
        "help": "Commands:",
    }[path]
    if expected not in text:
        raise GateError(f"{path}: the run did not say {expected!r}; it said:\n{text[-2000:]}")


def count_all(
    inputs: Inputs, paths: Sequence[str], repeat: int, jobs: int, plant: str | None
) -> dict[str, list[int]]:
    """``repeat`` counts of each path, ``jobs`` at a time."""
    valgrind = find_valgrind()
    runs = [(path, run) for run in range(repeat) for path in paths]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(count, inputs, path, run, valgrind, plant) for path, run in runs]
        results = [future.result() for future in futures]
    counts: dict[str, list[int]] = {path: [] for path in paths}
    for (path, _run), total in zip(runs, results, strict=True):
        counts[path].append(total)
    return counts


# --- main ---------------------------------------------------------------------------------------


def spread(values: Sequence[int]) -> str:
    low, high = min(values), max(values)
    return f"min {low:,}, max {high:,}, spread {(high - low) / low:.4%}"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--record", action="store_true", help="store the counts as the baseline")
    parser.add_argument("--paths", default=",".join(PATHS), help="which paths (comma-separated)")
    parser.add_argument(
        "--repeat", type=int, default=1, help="counts per path (the minimum is used)"
    )
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--work", type=Path, default=None, help="inputs and runs (default: tmp)")
    parser.add_argument("--plant", default=None, help=argparse.SUPPRESS)  # tests only
    opts = parser.parse_args(argv)
    opts.paths = [p for p in opts.paths.split(",") if p]
    if unknown := set(opts.paths) - set(PATHS):
        parser.error(f"unknown paths {sorted(unknown)}; pick from {', '.join(PATHS)}")
    return opts


def judge(
    counts: Mapping[str, Sequence[int]], baseline_file: Path, say: Callable[[str], None]
) -> int:
    """Each path's lowest count against the baseline: 0 within the margin, 1 past it."""
    lowest = {path: min(values) for path, values in counts.items()}
    baseline = Baseline.read(baseline_file)
    verdicts, message = compare(lowest, baseline, environment())
    for verdict in verdicts:
        say(verdict.line())
    if message:
        say(message)
        return 1
    say(f"every path within +{baseline.margin:.0%} of its baseline (re-record: {RECORD_COMMAND})")
    return 0


def main(argv: Sequence[str] | None = None, say: Callable[[str], None] = print) -> int:
    """Count, then record or compare; 0 when every path is within the margin."""
    opts = parse_args(argv)
    work = (opts.work or default_work()).absolute()
    try:
        inputs = prepare(work, opts.paths)
        try:
            counts = count_all(inputs, opts.paths, opts.repeat, opts.jobs, opts.plant)
        finally:
            inputs.close()
    except GateError as err:
        say(f"instr_gate: {err}")
        return 2
    if opts.repeat > 1:
        for path, values in counts.items():
            say(f"{path}: {len(values)} counts, {spread(values)}")
    if opts.record:
        lowest = {path: min(values) for path, values in counts.items()}
        Baseline.read(opts.baseline).with_counts(lowest, environment()).write(opts.baseline)
        for path, total in lowest.items():
            say(f"recorded {path}: {total:,} instructions")
        return 0
    return judge(counts, opts.baseline, say)


if __name__ == "__main__":
    raise SystemExit(main())
