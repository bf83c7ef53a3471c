"""Index 5,000 synthetic wheels: cuship vs the index's floor vs dumb-pypi, cold and incremental.

    python3 benchmarks/bench_index.py [--wheels 5000] [--cache-dir /tmp/cuship-bench] [--repeat 3]
                                      [--bomb-mib 1536]

The wheels (about 40 kB each, about 200 MB in all, 500 projects, some with CUDA/torch local
labels) are generated once into the cache directory. Every contender reads the same files from a
warm page cache:

* floor: the index's floor (benchmarks/_floor.py, one definition for every index bench), a
  process: the folder stated, every wheel read and hashed, its METADATA and RECORD inflated and
  hashed, the site's tree (learnt from cuship's) written and its wheels linked;
* cuship: `python -m cuship index DIR -o SITE` (hash + METADATA + PEP 503/691/658 + sub-indexes);
* dumb-pypi: what its README asks of a user: a package list with sha256 hashes (computed here with
  hashlib, the floor's work), then the `dumb-pypi` command (PEP 503 HTML and its JSON pages).

Memory: the peak resident set of each `cuship index` process (wait4's ru_maxrss), for the cold
and incremental runs and for one hostile wheel whose METADATA inflates to --bomb-mib MiB (beside
a good wheel; refused, goal under 100 MB). The goal for 5,000 wheels is under 300 MB.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LABELS = ("", "", "cu128torch2.8", "cu130torch2.9")


def _wheel(directory: Path, name: str, version: str, payload: bytes) -> Path:
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    path = directory / f"{dist}-{version}-py3-none-any.whl"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Python: >=3.9\n"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(f"{dist}/__init__.py", f"VERSION = {version!r}\n")
        archive.writestr(f"{dist}/_blob.bin", payload)
        archive.writestr(f"{info}/METADATA", metadata)
        archive.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr(f"{info}/RECORD", "")
    return path


def generate(directory: Path, count: int) -> list[Path]:
    """``count`` wheels in ``directory`` (kept between runs); returns them sorted."""
    existing = sorted(directory.glob("*.whl")) if directory.is_dir() else []
    if len(existing) == count:
        return existing
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    rng = random.Random(0)
    for i in range(count):
        project, release = divmod(i, 10)
        label = LABELS[release % len(LABELS)]
        version = f"1.{release // len(LABELS)}.{release}" + (f"+{label}" if label else "")
        _wheel(directory, f"bench-pkg{project:04d}", version, rng.randbytes(40_000))
    return sorted(directory.glob("*.whl"))


def warm(wheels: list[Path]) -> None:
    """Every wheel read once: the page cache warm for every contender."""
    for path in wheels:
        path.read_bytes()


def floor_plan(wheel_dir: Path, wheels: list[Path], work: Path) -> Path:
    """The plan of the cold index's floor, learnt from a site cuship writes once."""
    sys.path.insert(0, str(REPO))
    from benchmarks import _floor

    site = work.parent / "floor-template"
    shutil.rmtree(site, ignore_errors=True)
    cuship_index(wheel_dir, site)
    plan = _floor.cold_plan(site, wheels, work / "floor", given=[str(wheel_dir)])
    return _floor.write_plan(plan, work.parent / "floor.plan")


def floor(plan: Path, work: Path) -> None:
    """The floor as a process, as cuship runs (benchmarks/_floor.py)."""
    argv = [sys.executable, str(REPO / "benchmarks" / "_floor.py"), str(plan), str(work / "floor")]
    subprocess.run(argv, check=True)


def cuship_in_process(wheel_dir: Path, site: Path) -> None:
    sys.path.insert(0, str(REPO / "src"))
    from cuship.index import write

    write([wheel_dir], site)


PEAK_MB: dict[str, list[float]] = {}


def cuship_index(wheel_dir: Path, site: Path, label: str = "", expect: int = 0) -> None:
    """`cuship index` as a process; its peak RSS (MB) goes to ``PEAK_MB[label]``."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    args = [sys.executable, "-m", "cuship", "index", str(wheel_dir), "-o", str(site), "--json"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != expect:
        raise subprocess.CalledProcessError(proc.returncode, args)
    if label:
        PEAK_MB.setdefault(label, []).append(usage.ru_maxrss / 1024)


def bomb_peak(work: Path, mib: int) -> None:
    """Peak RSS of indexing a METADATA bomb beside a good wheel (the bomb is refused: exit 1)."""
    sys.path.insert(0, str(REPO))
    from tests.hostile_wheels import metadata_bomb

    wheels = work / "bomb-wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    bomb = metadata_bomb(wheels, "bomb", mib)
    _wheel(wheels, "good", "1.0", b"x" * 40_000)
    label = f"1 good + a {bomb.stat().st_size // 1000} kB wheel, METADATA {mib} MiB"
    cuship_index(wheels, work / "bomb-site", label, expect=1)


def dumb_pypi(wheels: list[Path], work: Path) -> None:
    listing = work / "packages.json"
    with listing.open("w") as out:
        for path in wheels:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            out.write(json.dumps({"filename": path.name, "hash": f"sha256={digest}"}) + "\n")
    args = ["dumb-pypi", "--package-list-json", str(listing), "--output-dir", str(work / "site")]
    subprocess.run([*args, "--packages-url", "../../files/"], check=True, stdout=subprocess.DEVNULL)


def timed(action: Callable[[], None], reset: Callable[[], None], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        reset()
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=int, default=5000)
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path("/dev/shm/cuship-bench" if Path("/dev/shm").is_dir() else "/tmp/cuship-bench"),
        help="where wheels and sites go (default tmpfs: disk metadata latency is not the tool's)",
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bomb-mib", type=int, default=1536)
    opts = parser.parse_args()
    wheel_dir = opts.cache_dir / f"wheels-{opts.wheels}"
    wheels = generate(wheel_dir, opts.wheels)
    total = sum(p.stat().st_size for p in wheels)
    print(f"{len(wheels)} wheels, {total / 1e6:.0f} MB in {wheel_dir}", flush=True)
    warm(wheels)
    work = opts.cache_dir / "work"
    site = work / "cuship-site"

    def clean() -> None:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)

    plan = floor_plan(wheel_dir, wheels, work)
    results = {
        "floor": timed(lambda: floor(plan, work), clean, opts.repeat),
        "cuship index (cold)": timed(
            lambda: cuship_index(wheel_dir, site, f"{len(wheels)} wheels, cold"), clean, opts.repeat
        ),
        "cuship write() in-process": timed(
            lambda: cuship_in_process(wheel_dir, site), clean, opts.repeat
        ),
    }
    if shutil.which("dumb-pypi"):
        results["hash list + dumb-pypi"] = timed(
            lambda: dumb_pypi(wheels, work), clean, opts.repeat
        )
    extra_dir = opts.cache_dir / "extra"
    added = wheel_dir / "bench_pkg9999-9.9-py3-none-any.whl"

    def add_one() -> None:
        added.unlink(missing_ok=True)
        clean()
        cuship_index(wheel_dir, site)
        extra_dir.mkdir(parents=True, exist_ok=True)
        _wheel(extra_dir, "bench-pkg9999", "9.9", b"x" * 40_000)
        shutil.move(extra_dir / added.name, added)

    try:
        results["cuship index (+1 wheel)"] = timed(
            lambda: cuship_index(wheel_dir, site, f"{len(wheels)} wheels, +1 wheel"),
            add_one,
            opts.repeat,
        )
    finally:
        added.unlink(missing_ok=True)
    base = statistics.median(results["floor"])
    print(f"\n{'contender':<26}{'median s':>10}{'min s':>9}{'vs floor':>10}")
    for name, times in results.items():
        median = statistics.median(times)
        print(f"{name:<26}{median:>10.3f}{min(times):>9.3f}{median / base:>9.2f}x")
    if "hash list + dumb-pypi" in results:
        ratio = statistics.median(results["hash list + dumb-pypi"]) / statistics.median(
            results["cuship index (cold)"]
        )
        print(f"\ncuship cold is {ratio:.2f}x faster than hash list + dumb-pypi")
    clean()
    bomb_peak(work, opts.bomb_mib)
    print(f"\n{'cuship index peak RSS':<60}{'max MB':>8}")
    for label, peaks in PEAK_MB.items():
        print(f"{label:<60}{max(peaks):>8.0f}")


if __name__ == "__main__":
    main()
