"""The index at community scale: 5,000 and 50,000 small wheels on a real disk, cold and incremental.

    python3 benchmarks/bench_index_scale.py [--sizes 5000,50000] [--repeat 3] [--quick]
        [--work-dir /var/tmp/cuship-index-scale] [--dumb-pypi PATH]
        [--parts cold,incremental,rerun,resolve]
        [--allow-tmpfs] [--json FILE]

Each size is N wheels of about 3.3 kB (valid zips: METADATA, WHEEL, a RECORD with real hashes)
in N/10 projects; per project six plain releases and four local-label variants of the newest
(+cu128, +cu130, +cu128torch2.8, +cu130torch2.9), so cuship writes four sub-indexes. They are
generated once into WORK/wheels-N and reused; generating is never timed. Everything runs in the
work directory, which must be a disk: tmpfs is refused (it hides the metadata cost a site of
100,000 small files has on the disks people index on) unless --allow-tmpfs.

Cold (each run into a new directory, with no scan cache; the page cache is warm; before each
step dirty pages are synced and the disk is left idle for 3 s; floor and cuship swap which goes
first every repeat, and each repeat's cuship/floor is reported too). Nothing is deleted while
the cold part runs, and it starts at least 6 minutes after the bench last deleted a tree: on ext4
without a journal (this machine's disk) each new inode is checked against inodes deleted in the
last 60 s, or 360 s when their inode table block is dirty (``recently_deleted`` in the kernel's
ialloc.c), and skipped if recent, one buffer lookup each. Creating a site right after deleting
the last one scanned past hundreds of thousands of them: the same floor took 3 s on a quiet disk
and 12 to 30 s after a deletion, and which step followed which deletion decided the ratio.

* floor: the index's floor (benchmarks/_floor.py, the one definition every index bench
  uses), a process: the folder stated, every wheel read, hashed and its METADATA and RECORD
  inflated and hashed, then the tree of a cuship-written site (learned once by walking one)
  written again with plain os calls and the wheels hard-linked. No parsing, no rendering;
* cuship: ``python -m cuship index WHEELS -o SITE --json``; its peak RSS comes from wait4 in a
  small spawner process (a process started from this bench would inherit its peak RSS);
* hash list + dumb-pypi: what dumb-pypi's README asks of a user, a JSON-lines package list with
  sha256 computed by hashlib here, then ``dumb-pypi --package-list-json ... --output-dir ...``.

Incremental, each run on its own copy of a finished site with its scan cache (copying is not
timed; every copy is made before the first update, and none is deleted until the bench ends,
so no update follows a deletion): +1 wheel of an existing project, +1 wheel of a new
project, and yanking one file, each as ``python -m cuship index [NEW.whl] --keep-existing
[--yank FILE] -o SITE`` and in this process as ``cuship.index.write`` (the same call the CLI
makes, describe included), to tell Python's start-up from the work; and its floor (a process:
benchmarks/_floor.py, the files the update writes learnt from a run of it on a copy). dumb-pypi's own partial
rebuild (--previous-package-list-json) is timed beside +1 wheel. The goal is under 0.3 s at
50,000 wheels and flat in index size.

Folder rerun: what a community index's CI runs after adding files, ``cuship index FOLDER -o
SITE`` over the whole folder with the site and its scan cache of the last run: a cold index of
a private copy of the wheels, then, beside the floor (a process that lists the folder and
states each wheel: benchmarks/_floor.py) and ``find FOLDER -newer SITE/cuship-index.json``, the unchanged rerun naming the wheels three ways
(the absolute folder, the folder relative to the working directory, the shell's
``wheels/*.whl`` list: not run where that list is over ARG_MAX, as a shell would refuse it),
and +1 wheel over the absolute folder. The goal: each rerun at most 0.1x the cold index.

Resolve: ``cuship serve SITE`` behind a counting reverse proxy in this process (it counts the
requests and the response body bytes of each contender), then ``cuship resolve PROJECT`` (picks a
file, downloads nothing), the same resolution plus the verified download through cuship's library
(what ``cuship install`` does before it runs pip), and ``pip download --no-deps``. The machine is
fixed by CUSHIP_GPUS and friends, so no probe of this host is timed. The goals: bytes per resolve
that do not grow with the index, and resolve+download at most half of pip's time.

All times are medians over --repeat runs, peak RSS the largest (raw samples go to --json);
"growth" is the largest size's value over the smallest's. --quick is a smoke run (sizes 500 and
5,000, one run each); --parts picks among cold, incremental and resolve. Every cuship process gets
this checkout's src on PYTHONPATH, whatever cuship is installed, with its bytecode compiled
first (as an installed package has it). dumb-pypi is found by --dumb-pypi, $DUMB_PYPI or PATH (e.g.
``python3 -m venv /tmp/dumbpypi && /tmp/dumbpypi/bin/pip install dumb-pypi``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
sys.path[:0] = [str(SRC), str(REPO)]  # this checkout's cuship; the helpers beside this script

from benchmarks import _floor  # noqa: E402
from benchmarks._index_scale import (  # noqa: E402
    Outcome,
    Results,
    Spawner,
    WheelSpec,
    copy_site,
    fresh,
    generate,
    mount_of,
    served,
    spec_at,
    table,
    write_wheel,
)

# The machine cuship resolves for: fixed, so that no GPU, driver or torch probe is timed.
TARGET_ENV = {
    "CUSHIP_GPUS": "H100:9.0:80GiB",
    "CUSHIP_CUDA_DRIVER_VERSION": "580.65.06",
    "CUSHIP_DRIVER_CUDA": "13.0",
    "CUSHIP_TORCH": "2.9.0+cu130",
    "CUSHIP_NVCC": "none",
}
PARTS = ("cold", "incremental", "rerun", "resolve")


# --- the disk -----------------------------------------------------------------------------------


def check_disk(work: Path, allow_tmpfs: bool) -> str:
    """Say which filesystem ``work`` is on; refuse tmpfs unless allowed."""
    work.mkdir(parents=True, exist_ok=True)
    try:
        mounts = Path("/proc/mounts").read_text()
    except OSError:
        mounts = ""
    kind, point = mount_of(os.path.realpath(work), mounts)
    print(f"work dir {work} is on {kind} (mounted at {point or '?'})", flush=True)
    if kind in ("tmpfs", "ramfs"):
        if not allow_tmpfs:
            sys.exit(f"{work} is on {kind}: pick a disk with --work-dir, or pass --allow-tmpfs")
        print(f"warning: {kind} hides the disk's metadata cost; these are not disk numbers")
    return kind


# --- processes ----------------------------------------------------------------------------------


def cuship_env() -> dict[str, str]:
    return {
        **os.environ,
        **TARGET_ENV,
        "PYTHONPATH": str(SRC),
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


SPAWNER = Spawner()


def spawn(argv: Sequence[str], env: dict[str, str], cwd: Path | None = None) -> Outcome:
    """Run ``argv``: wall time, exit status and peak RSS (wait4), stderr kept for failures."""
    return SPAWNER.run(argv, env, cwd)


def gist(text: str) -> str:
    """The line of a failure's output that says what went wrong: the first error, else the last."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["(no output)"])[0 if errors else -1]


def floor_process(plan: Path, dest: Path | None = None) -> Outcome:
    """The floor (benchmarks/_floor.py) of the plan at ``plan``, as a process, writing at
    ``dest`` (default: the plan's)."""
    argv = [sys.executable, str(REPO / "benchmarks" / "_floor.py"), str(plan)]
    outcome = spawn([*argv, *([str(dest)] if dest else [])], cuship_env())
    if outcome.returncode != 0:
        raise SystemExit(f"the floor failed: {gist(outcome.stderr)}")
    return outcome


def cuship_index(args: Sequence[str], site: Path | str, cwd: Path | None = None) -> Outcome:
    argv = [sys.executable, "-m", "cuship", "index", *args, "-o", str(site), "--json"]
    return spawn(argv, cuship_env(), cwd)


# --- one size under test ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Size:
    """One index size under test: its wheels, its working folder, its finished site."""

    count: int
    wheel_dir: Path
    wheels: list[Path]
    run: Path
    template: Path
    floor: Path  # the plan of a cold index's floor (benchmarks/_floor.py)
    repeat: int
    dumb_pypi: str | None


# --- cold ---------------------------------------------------------------------------------------


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def package_list(wheels: Sequence[Path], out: Path, mode: str = "w") -> None:
    """dumb-pypi's package list: one JSON object per wheel, sha256 from hashlib."""
    with out.open(mode) as listing:
        for path in wheels:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            listing.write(json.dumps({"filename": path.name, "hash": f"sha256={digest}"}) + "\n")


def dumb_pypi(tool: str, listing: Path, site: Path, previous: Path | None = None) -> None:
    argv = [tool, "--package-list-json", str(listing), "--output-dir", str(site)]
    argv += ["--packages-url", "../../files/"]
    if previous is not None:
        argv += ["--previous-package-list-json", str(previous)]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)


def dumb_cold(size: Size, folder: Path) -> None:
    folder.mkdir()
    package_list(size.wheels, folder / "packages.json")
    assert size.dumb_pypi is not None
    dumb_pypi(size.dumb_pypi, folder / "packages.json", folder / "site")


SETTLE_S = 3.0  # idle after a sync before each cold step: the disk's backlog drains first
# ext4 without a journal skips, on every inode it allocates, inodes deleted in the last 60 s, or
# 360 s while their inode table block is dirty: the cold part waits that long after a deletion.
RECENTLY_DELETED_S = 360.0


def settle() -> None:
    """Sync, wait, sync: the step that follows does not pay for the last one's writeback."""
    os.sync()
    time.sleep(SETTLE_S)
    os.sync()


@dataclass
class Quiet:
    """When this bench last deleted a tree on the work disk, kept in ``WORK/.deleted-at`` so
    that a run started right after another waits too."""

    marker: Path | None = None

    def _last(self) -> float:
        try:
            return float(self.marker.read_text()) if self.marker else 0.0
        except (OSError, ValueError):
            return 0.0

    def remove(self, path: Path) -> None:
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
            os.sync()
            if self.marker:
                self.marker.write_text(f"{time.time()}\n")

    def wait(self) -> None:
        """Until no inode this bench deleted still counts as recently deleted."""
        left = self._last() + RECENTLY_DELETED_S - time.time()
        if left > 0:
            print(f"waiting {left:.0f} s for deleted inodes to age (ext4 recently_deleted)")
            time.sleep(left)


QUIET = Quiet()


def measure_cold(size: Size, results: Results) -> None:
    """Floor, cuship and dumb-pypi, each into a new directory after ``settle``; floor and
    cuship swap places every repeat, and each repeat's cuship/floor is kept. Nothing is deleted
    here (see :data:`RECENTLY_DELETED_S`); ``main`` removes ``size.run / "cold"`` afterwards."""
    n = size.count
    QUIET.wait()

    def run_floor(folder: Path) -> float:
        settle()
        outcome = floor_process(size.floor, folder / "floor")
        results.add("cold.floor", n, outcome.seconds)
        return outcome.seconds

    def run_cuship(folder: Path) -> float:
        settle()
        outcome = cuship_index([str(size.wheel_dir)], folder / "site")
        if outcome.returncode != 0:
            raise SystemExit(f"cuship index failed: {gist(outcome.stderr)}")
        results.add("cold.cuship", n, outcome.seconds)
        results.add("rss.cold", n, outcome.peak_mb)
        return outcome.seconds

    for i in range(size.repeat):
        folder = size.run / "cold" / str(i)
        folder.mkdir(parents=True)
        if i % 2 == 0:
            below, above = run_floor(folder), run_cuship(folder)
        else:
            above, below = run_cuship(folder), run_floor(folder)
        results.add("cold.pair", n, above / below)
        if size.dumb_pypi:
            settle()
            dumb = folder / "dumb"
            results.add("cold.dumb", n, timed(lambda: dumb_cold(size, dumb)))  # noqa: B023


# --- incremental --------------------------------------------------------------------------------


class Op(NamedTuple):
    key: str
    wheel: Path | None
    yank: str | None


def ops_for(size: Size) -> list[Op]:
    folder = size.run / "new"
    folder.mkdir(parents=True, exist_ok=True)
    first = spec_at(0)
    added = write_wheel(folder, WheelSpec(first.project, "9.0.0"), b"new wheel" * 200)
    project = write_wheel(folder, WheelSpec("scale-new-project", "1.0.0"), b"new project" * 200)
    return [
        Op("+1 wheel", added, None),
        Op("+1 project", project, None),
        Op("yank 1 wheel", None, spec_at(size.count // 2).filename),
    ]


def check_op(site: Path, op: Op) -> None:
    """Refuse a timing of an operation that did not do its job."""
    if op.wheel is not None and not (site / "files" / op.wheel.name).is_file():
        raise SystemExit(f"{op.key}: {op.wheel.name} is not in {site}/files")
    if op.yank is not None:
        project = op.yank.split("-", 1)[0].replace("_", "-")
        page = json.loads((site / "simple" / project / "index.json").read_bytes())
        if not any(f["filename"] == op.yank and f.get("yanked") for f in page["files"]):
            raise SystemExit(f"{op.key}: {op.yank} is not marked yanked in {site}")


def _failed(op: Op, message: str) -> str:
    return ("not supported yet: " if op.yank else "failed: ") + message


def op_cli(size: Size, op: Op, site: Path, results: Results) -> bool:
    args = [str(op.wheel)] if op.wheel else []
    args += ["--keep-existing", *(["--yank", op.yank] if op.yank else [])]
    outcome = cuship_index(args, site)
    if outcome.returncode != 0:
        message = f"exit {outcome.returncode}, {gist(outcome.stderr)}"
        results.note(f"inc.{op.key}.cli", size.count, _failed(op, message))
        return False
    check_op(site, op)
    results.add(f"inc.{op.key}.cli", size.count, outcome.seconds)
    results.add(f"rss.{op.key}", size.count, outcome.peak_mb)
    return True


def op_in_process(size: Size, op: Op, site: Path, results: Results) -> bool:
    from cuship.errors import CushipError
    from cuship.index import write
    from cuship.index.describe import describe_wheel

    wheels = [op.wheel] if op.wheel else []
    yanked = {op.yank: ""} if op.yank else None
    started = time.perf_counter()
    try:
        write(wheels, site, keep_existing=True, yanked=yanked, describe=describe_wheel)
    except CushipError as err:
        results.note(
            f"inc.{op.key}.lib",
            size.count,
            _failed(op, f"{type(err).__name__}: {str(err).splitlines()[0]}"),
        )
        return False
    results.add(f"inc.{op.key}.lib", size.count, time.perf_counter() - started)
    check_op(site, op)
    return True


def dumb_plus_one(size: Size, wheel: Path, results: Results) -> None:
    """dumb-pypi's partial rebuild: the old list plus one hashed line, --previous-package-list."""
    assert size.dumb_pypi is not None
    template = size.run / "dumb-template"
    fresh(template).mkdir()
    package_list(size.wheels, template / "packages.json")
    dumb_pypi(size.dumb_pypi, template / "packages.json", template / "site")
    work = size.run / "dumb-inc"
    for _ in range(size.repeat):
        fresh(work).mkdir()
        shutil.copytree(template / "site", work / "site")
        os.sync()

        def add() -> None:
            shutil.copyfile(template / "packages.json", work / "packages.json")
            package_list([wheel], work / "packages.json", mode="a")
            previous = template / "packages.json"
            dumb_pypi(str(size.dumb_pypi), work / "packages.json", work / "site", previous)

        results.add("inc.dumb", size.count, timed(add))
    shutil.rmtree(template, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)


def warm_up(site: Path, op: Op) -> None:
    """Index one wheel in this process, untimed, so that imports (cuship's lazy ones included)
    are not counted in the first in-process sample."""
    from cuship.index import write
    from cuship.index.describe import describe_wheel

    assert op.wheel is not None
    write([op.wheel], fresh(site), describe=describe_wheel)
    shutil.rmtree(site.parent, ignore_errors=True)


def update_floor(size: Size, op: Op) -> Path:
    """The plan of ``op``'s floor (benchmarks/_floor.py), learnt from the files cuship writes
    doing it once on a copy of the site of its own."""
    site = copy_site(size.template, size.run / "learn" / op.key.replace(" ", "-") / "site")
    before = _floor.snapshot(site)
    if not op_cli(size, op, site, Results()):
        raise SystemExit(f"{op.key} failed on {site}")
    project = (op.wheel.name if op.wheel else str(op.yank)).split("-", 1)[0].replace("_", "-")
    new = [op.wheel] if op.wheel else []
    plan = _floor.update_plan(before, site, new, size.template, projects=[project])
    return _floor.write_plan(plan, site.parent / "floor.plan")


def measure_incremental(size: Size, results: Results) -> None:
    """Every copy is made first and every update then runs on its own: none follows a
    deletion (see the cold part; an update right after the bench deleted a copy of the site
    paid for the inodes it creates, +1 project the most: 0.34 s where a quiet disk gave
    0.19 s). Each update's floor runs on a copy of its own, its order swapped with the CLI's
    every repeat. The copies go with the run directory at the end."""
    ops = ops_for(size)
    warm_up(size.run / "warm-up" / "site", ops[0])
    floors = {op.key: update_floor(size, op) for op in ops}
    runs = [
        (op.key, how, i)
        for op in ops
        for i in range(size.repeat)
        for how in ("cli", "lib", "floor")
    ]
    sites = {
        run: copy_site(size.template, size.run / "inc" / f"{n}" / "site")
        for n, run in enumerate(runs)
    }
    QUIET.wait()
    for op in ops:
        cli = lib = True
        for i in range(size.repeat):
            floor = sites[op.key, "floor", i]
            if i % 2:
                results.add(
                    f"inc.{op.key}.floor", size.count, floor_process(floors[op.key], floor).seconds
                )
            cli = cli and op_cli(size, op, sites[op.key, "cli", i], results)
            if not i % 2:
                results.add(
                    f"inc.{op.key}.floor", size.count, floor_process(floors[op.key], floor).seconds
                )
            lib = lib and op_in_process(size, op, sites[op.key, "lib", i], results)
    if size.dumb_pypi and ops[0].wheel is not None:
        dumb_plus_one(size, ops[0].wheel, results)


# --- folder rerun -------------------------------------------------------------------------------


def find_newer(folder: Path, site: Path) -> None:
    """The shell's way: ``find FOLDER -newer SITE/cuship-index.json`` (new or touched files)."""
    argv = ["find", str(folder), "-newer", str(site / "cuship-index.json")]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)


_ARGV_ROOM = 128 * 1024  # left of ARG_MAX for the environment and the other arguments


def fits_argv(args: Sequence[str]) -> bool:
    """Whether a shell could pass ``args`` to one command (ARG_MAX, less room for the rest)."""
    limit = os.sysconf("SC_ARG_MAX") if hasattr(os, "sysconf") else 2 * 1024 * 1024
    return sum(len(a) + 1 + 8 for a in args) < limit - _ARGV_ROOM  # the string and its pointer


def rerun_once(size: Size, folder: Path, site: Path, extra: Path, results: Results) -> None:
    """One repeat of the folder-rerun workflow on ``site``: a cold index of ``folder``, the
    stat floor, unchanged reruns naming the wheels each way, then +1 wheel (``extra``,
    copied into the folder) over the absolute folder."""
    n = size.count

    def timed_index(key: str, args: Sequence[str], cwd: Path | None = None) -> None:
        settle()
        outcome = cuship_index(args, site if cwd is None else site.name, cwd)
        if outcome.returncode != 0:
            results.note(key, n, f"failed: exit {outcome.returncode}, {gist(outcome.stderr)}")
        else:
            results.add(key, n, outcome.seconds)

    timed_index("rerun.cold", [str(folder)])
    settle()
    plan = _floor.write_plan(_floor.rerun_plan([folder]), folder.parent / "rerun-floor.plan")
    results.add("rerun.floor.stat", n, floor_process(plan).seconds)
    results.add("rerun.floor.find", n, timed(lambda: find_newer(folder, site)))
    timed_index("rerun.same.folder", [str(folder)])
    timed_index("rerun.same.relative", [folder.name], cwd=folder.parent)
    names = sorted(f"{folder.name}/{path.name}" for path in folder.iterdir())
    if fits_argv(names):
        timed_index("rerun.same.list", names, cwd=folder.parent)
    else:
        results.note("rerun.same.list", n, "not run: the list is over ARG_MAX (a shell refuses)")
    shutil.copyfile(extra, folder / extra.name)
    timed_index("rerun.plus1.folder", [str(folder)])
    (folder / extra.name).unlink()


def measure_rerun(size: Size, results: Results) -> None:
    """What a community index's CI runs after adding files: ``cuship index FOLDER -o SITE``
    over the whole folder, the site and its scan cache kept from the last run. The folder is
    a copy of the wheels of its own (linking the shared ones into other sites would move
    their ctimes, which the scan cache checks); each repeat starts from a cold index of it
    into a new site. Nothing is deleted until the part ends (see the cold part)."""
    base = size.run / "rerun"
    folder = base / "wheels"
    folder.mkdir(parents=True)
    for path in size.wheels:
        shutil.copyfile(path, folder / path.name)
        (folder / path.name).chmod(0o644)
    extra = write_wheel(base, WheelSpec(spec_at(0).project, "9.1.0"), b"one more wheel" * 150)
    QUIET.wait()
    for i in range(size.repeat):
        rerun_once(size, folder, base / f"site-{i}", extra, results)


# --- resolve ------------------------------------------------------------------------------------


_DOWNLOAD = """\
import os, sys
from pathlib import Path
from cuship.resolve.fetch import download
from cuship.resolve.install import resolve_index, target_from_env
page, resolution = resolve_index(sys.argv[1], sys.argv[2], target_from_env(os.environ))
assert resolution.chosen is not None, "nothing chosen"
download(resolution.chosen.candidate, Path(sys.argv[3]))
"""


def resolvers(project: str, index: str, dest: Path) -> dict[str, tuple[list[str], int]]:
    """Each contender: its command line and how many files it must leave in ``dest``."""
    py = sys.executable
    pip = [py, "-m", "pip", "--isolated", "--disable-pip-version-check", "download", "--no-deps"]
    pip += ["--no-cache-dir", "--index-url", index, "-d", str(dest), project]
    return {
        "cuship": ([py, "-m", "cuship", "resolve", project, "--index", index, "--json"], 0),
        "cuship+dl": ([py, "-c", _DOWNLOAD, project, index, str(dest)], 1),
        "pip": (pip, 1),
    }


def measure_resolve(size: Size, results: Results) -> None:
    project = spec_at(size.count // 2).project
    dest = size.run / "downloads"
    with served(size.template, cuship_env()) as proxy:
        index = f"{proxy.url}/simple/"
        for _ in range(size.repeat):
            for key, (argv, files) in resolvers(project, index, dest).items():
                fresh(dest).mkdir()
                proxy.reset()
                outcome = spawn(argv, cuship_env())
                got = len(list(dest.iterdir()))
                if outcome.returncode != 0 or got != files:
                    why = f"exit {outcome.returncode}, {got} files, {gist(outcome.stderr)}"
                    results.note(f"resolve.{key}", size.count, f"failed: {why}")
                    continue
                results.add(f"resolve.{key}", size.count, outcome.seconds)
                results.add(f"bytes.{key}", size.count, proxy.body_bytes)
                results.add(f"requests.{key}", size.count, proxy.requests)
    shutil.rmtree(dest, ignore_errors=True)


# --- one size, the table, main ------------------------------------------------------------------


def prepare(count: int, opts: argparse.Namespace) -> Size:
    wheel_dir = opts.work_dir / f"wheels-{count}"
    started = time.perf_counter()
    wheels, made = generate(wheel_dir, count)
    if made:
        print(f"generated {count} wheels in {time.perf_counter() - started:.1f} s", flush=True)
    for path in wheels:  # warm the page cache for everyone
        path.read_bytes()
    run = opts.work_dir / "run" / str(count)
    template = run / "template" / "site"
    template.parent.mkdir(parents=True)
    warmup = cuship_index([str(wheel_dir)], template)
    if warmup.returncode != 0:
        raise SystemExit(f"cuship index failed: {gist(warmup.stderr)}")
    cold = _floor.cold_plan(template, wheels, run / "floor", given=[str(wheel_dir)])
    floor = _floor.write_plan(cold, run / "floor.plan")
    data = sum(len(b) for _, b in cold["files"])
    print(
        f"{count} wheels: the site has {len(cold['folders'])} folders, {len(cold['files'])} "
        f"files ({data / 1e6:.1f} MB) and {len(cold['links'])} linked wheels",
        flush=True,
    )
    return Size(count, wheel_dir, wheels, run, template, floor, opts.repeat, opts.dumb_pypi)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=None,
        help="wheel counts (default 5000,50000; --quick: 500,5000)",
    )
    parser.add_argument("--repeat", type=int, default=None, help="runs per measure (default 3)")
    parser.add_argument("--quick", action="store_true", help="smoke run: sizes 500,5000, repeat 1")
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=Path("/var/tmp/cuship-index-scale"),
        help="where wheels (kept) and sites (removed) go; must be a disk (default %(default)s)",
    )
    parser.add_argument("--allow-tmpfs", action="store_true", help="run on tmpfs, with a warning")
    parser.add_argument(
        "--dumb-pypi",
        default=os.environ.get("DUMB_PYPI") or shutil.which("dumb-pypi"),
        help="the dumb-pypi command (default $DUMB_PYPI, then PATH)",
    )
    parser.add_argument(
        "--parts", default=",".join(PARTS), help="which of cold,incremental,rerun,resolve"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the raw samples here")
    opts = parser.parse_args(argv)
    opts.sizes = opts.sizes or ([500, 5000] if opts.quick else [5000, 50000])
    opts.repeat = opts.repeat or (1 if opts.quick else 3)
    opts.parts = [p for p in opts.parts.split(",") if p]
    if unknown := set(opts.parts) - set(PARTS):
        parser.error(f"unknown parts {sorted(unknown)}; pick from {', '.join(PARTS)}")
    return opts


def main() -> None:
    opts = parse_args()
    opts.work_dir = opts.work_dir.absolute()
    filesystem = check_disk(opts.work_dir, opts.allow_tmpfs)
    if not opts.dumb_pypi:
        print("dumb-pypi not found (--dumb-pypi, $DUMB_PYPI or PATH): its rows stay empty")
    # An installed cuship has its bytecode; a checkout run with PYTHONDONTWRITEBYTECODE set
    # would compile its modules again in every timed process (~30 ms of a 0.25 s update).
    from benchmarks.instr_gate import precompile  # bytecode, and the data files' parse

    precompile(cuship_env())
    SPAWNER.start()  # while this process is small (see _SPAWNER)
    results = Results()
    steps = {
        "cold": measure_cold,
        "incremental": measure_incremental,
        "rerun": measure_rerun,
        "resolve": measure_resolve,
    }
    QUIET.marker = opts.work_dir / ".deleted-at"
    QUIET.remove(opts.work_dir / "run")  # a run that was cut short
    sizes = [prepare(count, opts) for count in opts.sizes]
    # Every size's cold part first, before the other parts delete anything.
    order = [(part, size) for part in opts.parts for size in sizes]
    order.sort(key=lambda step: step[0] != "cold")
    for part, size in order:
        if part != "cold":
            QUIET.remove(size.run / "cold")
        started = time.perf_counter()
        steps[part](size, results)
        print(
            f"  {part} at {size.count:,} done in {time.perf_counter() - started:.0f} s",
            flush=True,
        )
    SPAWNER.close()
    print("\n" + table(results, opts.sizes), flush=True)
    if opts.json:
        document = {"filesystem": filesystem, "sizes": opts.sizes, "repeat": opts.repeat}
        document |= {"samples": results.samples, "notes": results.notes}
        opts.json.write_text(json.dumps(document, indent=1) + "\n")
    QUIET.remove(opts.work_dir / "run")  # after the results: a large run's copies take minutes


if __name__ == "__main__":
    main()
