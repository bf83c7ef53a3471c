"""Peak memory of `cuship index`, `cuship inspect` and the backend's provenance rewrite on wheels
that inflate, and the time a dripped or endless download takes to end in a clean error.

    python3 benchmarks/bench_hostile_reads.py [--bomb-mib 3900] [--big-mib 256] [--before SRC]

Wheels, made in a temporary directory:
- ``bomb``: the issue's 3.8 MB wheel whose ``_C.so`` (an ELF header, then zeros) inflates to
  --bomb-mib MiB, its size declared honestly;
- ``liar``: the same, its central directory claiming 4096 bytes;
- ``big``: an honest wheel whose ``_C.so`` is --big-mib MiB of random bytes (it does not
  compress: the member is read, through the temporary file, not refused).

Each command runs as its own process, measured from a small interpreter of its own with
wait4 (peak RSS of the command alone). ``--before SRC`` also runs each with another checkout's
``src`` (e.g. /work/main/src) for a before/after table. Downloads: a loopback server drips a
wheel a byte every 0.2 s, or sends a wheel without end; `cuship install --timeout 1` runs with
CUSHIP_FETCH_DEADLINE=5 (drip) or the index's declared size (endless); reported: seconds to the
error and its exit code.

Measured (issue 34; a shared 2-core VM, no GPU; `--bomb-mib 3900 --big-mib 512 --before
/work/main/src`; peak RSS from wait4, MB; "before" = main at 4687d76):

    wheel (on disk)        command   before: exit  peak MB    s   after: exit  peak MB    s
    bomb 4.0 MB -> 3.9 GB  index             0      7826  62.0           4       29   0.3
                           inspect           0      7820  33.5           2       26   0.8
                           rewrite           0      7825  44.5           2       25   0.5
    liar 4.0 MB (claims 4 kB)  index         2        30   0.4           4*      30   0.5
                           inspect           2        22   0.4           2       26   0.4
                           rewrite           2      2079   5.0           2       41   0.5
    big 537 MB (512 MiB .so)   index         0      1562   4.2           0       42   8.6
                           inspect           0      1556   3.6           0       39   2.6
                           rewrite           0      1561  32.1           0       41  42.3

    * skipped with its reason; the run exits 4 here because it was the only wheel (1 with
      others beside it, 0 with --skip-bad). Before, one such wheel aborted the whole run.

The bomb is now refused from its central directory entry (1011:1, over the 200:1 limit)
before a byte is inflated; the big honest member is inflated through a temporary file and
mapped, so memory stays ~40 MB instead of three times the member (the before/after time of
`index` on it is the cost of writing 512 MiB to the temporary file on this VM's disk).
Downloads, after: a wheel dripped at 5 bytes/s with CUSHIP_FETCH_DEADLINE=5 ends in 5.9 s
(exit 2, process start included; before, it ran until killed); a wheel sent without end
stops at the 855 bytes the index declares in 1.3 s (exit 1; before, every byte was written).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "src")]

_MEASURE = """
import os, subprocess, sys
with open(os.devnull, "wb") as out:
    proc = subprocess.Popen(sys.argv[1:], stdout=out, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    lines = proc.stderr.read().decode(errors="replace").strip().splitlines()
said = [l for l in lines if l.startswith(("error:", "warning:"))][:1] or lines[-1:] or [""]
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, said[0][:160])
"""
_REWRITE = """
import sys
from pathlib import Path
from cuship.resolve.provenance import Handover, add_to_wheel
from cuship.errors import CushipError
p = Handover(name="x", version="1.0", kind="prebuilt", why="bench")
try:
    add_to_wheel(Path(sys.argv[1]), p, out_dir=Path(sys.argv[2]))
except CushipError as err:
    print(f"error: {err.message}", file=sys.stderr)
    sys.exit(err.exit_code)
"""


def measure(args: list[str], src: Path) -> tuple[int, float, float, str]:
    """(exit code, peak RSS in MB, seconds, last line of stderr) of ``args``."""
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{REPO}"}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, *args], env=env, capture_output=True, text=True, check=True
    )
    seconds = time.perf_counter() - started
    code, kib, *tail = done.stdout.strip().split(" ", 2)
    return int(code), int(kib) / 1024, seconds, "".join(tail)


def make_wheels(root: Path, bomb_mib: int, big_mib: int) -> dict[str, Path]:
    import zipfile

    from tests.elf_factory import make_elf
    from tests.hostile_wheels import so_bomb

    elf = make_elf(needed=["libc.so.6"])
    made = {
        "bomb": so_bomb(root / "bomb", "bomb", bomb_mib, elf=elf),
        "liar": so_bomb(root / "liar", "liar", bomb_mib, honest_size=False, elf=elf),
    }
    big = root / "big" / "big-1.0-cp311-cp311-linux_x86_64.whl"
    big.parent.mkdir(parents=True)
    with (
        zipfile.ZipFile(big, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open("big/_C.so", "w", force_zip64=True) as member,
    ):
        member.write(elf)
        for _ in range(big_mib):
            member.write(os.urandom(1 << 20))
    with zipfile.ZipFile(big, "a") as archive:
        archive.writestr(
            "big-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: big\nVersion: 1.0\n\n"
        )
        archive.writestr("big-1.0.dist-info/RECORD", "")
    made["big"] = big
    return made


def memory_rows(wheels: dict[str, Path], srcs: dict[str, Path], root: Path) -> None:
    print(f"{'wheel':6} {'command':8} {'code':>4} {'peak MB':>8} {'s':>6}  cuship   said")
    for name, wheel in wheels.items():
        for command in ("index", "inspect", "rewrite"):
            for label, src in srcs.items():
                out = root / f"{command}-{name}-{label}"  # a site (and its cache) per run
                args = {
                    "index": ["-m", "cuship", "index", str(wheel), "-o", str(out)],
                    "inspect": ["-m", "cuship", "inspect", str(wheel)],
                    "rewrite": ["-c", _REWRITE, str(wheel), str(out)],
                }[command]
                code, peak, seconds, said = measure([sys.executable, *args], src)
                print(
                    f"{name:6} {command:8} {code:>4} {peak:>8.0f} {seconds:>6.1f}  {label:8} {said}"
                )


def download_rows(root: Path) -> None:
    from tests.integration.hostileserver import hostile_server
    from tests.wheel_factory import make_wheel

    from cuship.index import write

    make_wheel(root / "dl-wheels", "tinyp", "0.1.0", modules={"tinyp": "X = 1\n" * 200})
    write([root / "dl-wheels"], root / "dl-site")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "CUSHIP_GPUS": "none",
        "CUSHIP_TORCH": "none",
    }
    print(f"\n{'download':14} {'code':>4} {'s to error':>10}  said")
    for mode, extra in (("drip-wheel", {"CUSHIP_FETCH_DEADLINE": "5"}), ("endless-wheel", {})):
        with hostile_server(root / "dl-site", mode, pause=0.2) as (url, _):
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "cuship", "install", "tinyp", "--index", url, "--timeout", "1",
                 "--retries", "2", "--download-dir", str(root / f"dl-{mode}")],
                env={**env, **extra}, capture_output=True, text=True, timeout=300, check=False,
            )  # fmt: skip
            seconds = time.perf_counter() - started
        said = [line for line in done.stderr.splitlines() if line.startswith("error:")][:1] or [""]
        print(f"{mode:14} {done.returncode:>4} {seconds:>10.1f}  {said[0][:150]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bomb-mib", type=int, default=3900)
    parser.add_argument("--big-mib", type=int, default=256)
    parser.add_argument("--before", type=Path, default=None, help="another checkout's src/")
    parser.add_argument("--no-downloads", action="store_true")
    options = parser.parse_args()
    srcs = {"this": REPO / "src"}
    if options.before is not None:
        srcs = {"before": options.before, **srcs}
    with tempfile.TemporaryDirectory(prefix="cuship-bench-hostile-") as temp:
        root = Path(temp)
        wheels = make_wheels(root, options.bomb_mib, options.big_mib)
        for name, wheel in wheels.items():
            print(f"{name}: {wheel.name} {wheel.stat().st_size / 1e6:.1f} MB on disk")
        memory_rows(wheels, srcs, root)
        if not options.no_downloads:
            download_rows(root)


if __name__ == "__main__":
    main()
