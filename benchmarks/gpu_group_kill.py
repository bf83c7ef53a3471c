"""On a GPU machine: does a timed-out GPU job give the GPU back?

A job (a shell, as CI steps are) starts a Python that holds a CUDA context and 1 GiB of device
memory, then waits. Past a time limit, cuship's process runner kills the job's whole process
group; ``subprocess.run(timeout=…)`` — what a script would use instead — kills the shell alone.
For each: whether the grandchild is still alive afterwards and whether nvidia-smi still lists
it as a compute process holding memory.

Usage: python benchmarks/gpu_group_kill.py  (prints one line per runner; exit 1 if cuship's
left the GPU held)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cuship import process
from cuship.errors import TimedOut

HOLD = (
    "import os, sys, time, torch\n"
    "x = torch.empty(1 << 28, device='cuda')\n"
    "torch.cuda.synchronize()\n"
    "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "time.sleep(600)\n"
)


def _job(pidfile: Path) -> list[str]:
    return ["sh", "-c", f'"{sys.executable}" -c "$HOLD" {pidfile} & wait', "job"]


def _gpu_pids() -> set[int]:
    argv = ["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return {int(x) for x in done.stdout.split() if x.strip().isdigit()}


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper holds no GPU: it counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_for(pidfile: Path, limit: float) -> int:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if pidfile.exists() and pidfile.read_text().strip():
            return int(pidfile.read_text())
        time.sleep(0.2)
    raise SystemExit(f"the GPU holder never started ({limit:.0f} s)")


def _verdict(runner: str, pid: int, timed_out: bool) -> bool:
    time.sleep(2.0)  # the driver frees a killed context's memory asynchronously
    alive, listed = _alive(pid), pid in _gpu_pids()
    print(
        f"{runner}: timed out={timed_out}, holder pid {pid} alive={alive}, "
        f"listed by nvidia-smi={listed}"
    )
    if alive:
        os.kill(pid, signal.SIGKILL)
    return not alive and not listed


def main() -> int:
    env = {**os.environ, "HOLD": HOLD}
    with tempfile.TemporaryDirectory() as tmp:
        pidfile = Path(tmp) / "cuship.pid"
        started = time.monotonic()
        try:
            process.run(_job(pidfile), env=env, timeout=25)
            timed_out = False
        except TimedOut:
            timed_out = True
        pid = _wait_for(pidfile, 1)
        print(f"cuship's runner returned after {time.monotonic() - started:.1f} s")
        ours = _verdict("cuship process.run", pid, timed_out)

        pidfile = Path(tmp) / "plain.pid"
        try:
            subprocess.run(_job(pidfile), env=env, timeout=25, check=False)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        pid = _wait_for(pidfile, 1)
        _verdict("subprocess.run(timeout=25)", pid, timed_out)
    return 0 if ours else 1


if __name__ == "__main__":
    raise SystemExit(main())
