"""The torch ABI of the torch example's wheels: cuship's inspect vs `nm -D --undefined-only` +
`readelf -d`.

Both variants of examples/cushiptorchops are built here against the installed torch (once, with
the example's default arch list, cached under .cuship/bench/), unless ``--wheel`` names wheels.
For each wheel:

- cuship: ``cuship.wheel.audit.inspect_wheel`` on the .whl (reads the zip, every shared object's
  ELF headers, dynamic symbols and fatbin, and the METADATA), and ``inspect_object`` on the
  extracted .so (the same work as binutils, minus the zip and the fatbin's arch list);
- binutils: ``nm -D --undefined-only`` and ``readelf -d`` on the extracted .so, their output
  parsed and classified by the same rules (``cuship.wheel.torchabi.classify``); also timed with
  the extraction from the wheel that binutils needs first.

The verdicts must agree. Median wall time of ``--repeat`` runs each.

    python3 benchmarks/bench_torch_abi.py [--wheel W.whl ...] [--repeat 21]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cushiptorchops"
CACHE = ROOT / ".cuship" / "bench" / "torchabi"
sys.path.insert(0, str(ROOT / "src"))

from cuship.wheel.audit import inspect_object, inspect_wheel  # noqa: E402
from cuship.wheel.torchabi import TorchAbi, classify  # noqa: E402

_NEEDED = re.compile(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]")


def build(variant: str) -> Path:
    """The example's wheel for ``variant``, built with pip against the installed torch (cached)."""
    out = CACHE / variant
    found = sorted(out.glob("cushiptorchops-*.whl"))
    if found:
        return found[0]
    env = {**os.environ, "CUSHIPTORCHOPS_VARIANT": variant}
    env.pop("TORCH_CUDA_ARCH_LIST", None)  # the example's default: 4 SASS + 2 PTX arches
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "src"
        subprocess.run(["cp", "-r", str(EXAMPLE), str(source)], check=True)
        subprocess.run(["rm", "-rf", str(source / "build")], check=True)
        cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps"]
        print(f"building the {variant} example wheel ...", file=sys.stderr)
        started = time.perf_counter()
        subprocess.run([*cmd, "-w", str(out), str(source)], env=env, check=True)
        print(f"  built in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return sorted(out.glob("cushiptorchops-*.whl"))[0]


def extract_so(wheel: Path, dest: Path) -> Path:
    with zipfile.ZipFile(wheel) as archive:
        (member,) = [n for n in archive.namelist() if n.endswith(".so")]
        return Path(archive.extract(member, dest))


def binutils_abi(so: Path) -> TorchAbi:
    nm = subprocess.run(
        ["nm", "-D", "--undefined-only", str(so)], capture_output=True, text=True, check=True
    ).stdout
    readelf = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True, check=True)
    undefined = [line.split()[-1].split("@")[0] for line in nm.splitlines() if line.strip()]
    return classify(_NEEDED.findall(readelf.stdout), undefined).abi


def binutils_from_wheel(wheel: Path) -> TorchAbi:
    with tempfile.TemporaryDirectory() as work:
        return binutils_abi(extract_so(wheel, Path(work)))


def median_ms(action: Callable[[], object], repeat: int) -> float:
    action()  # warm the page cache and imports
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e3


def bench(wheel: Path, repeat: int, work: Path) -> bool:
    so = extract_so(wheel, work / wheel.stem)
    report = inspect_wheel(wheel)
    (ext,) = report.extensions
    ours, theirs = report.torch_abi, binutils_abi(so)
    agree = ours == theirs == inspect_object(so).torch_abi
    t_wheel = median_ms(lambda: inspect_wheel(wheel), repeat)
    t_object = median_ms(lambda: inspect_object(so), repeat)
    t_binutils = median_ms(lambda: binutils_abi(so), repeat)
    t_binutils_wheel = median_ms(lambda: binutils_from_wheel(wheel), repeat)
    print(
        f"{wheel.name}: {wheel.stat().st_size / 1e6:.1f} MB wheel, {ext.path} {ext.size / 1e6:.1f} MB"
    )
    print(
        f"  verdict: cuship {ours!r}, nm + readelf {theirs!r}: {'same' if agree else 'DIFFERENT'}"
    )
    print(f"  evidence: {ext.torch.reason}")
    print(f"  median of {repeat}:")
    print(f"    cuship inspect_wheel (.whl)                 {t_wheel:7.2f} ms")
    print(
        f"    nm -D --undefined-only + readelf -d (.so)   {t_binutils:7.2f} ms"
        f"   ratio binutils/inspect_wheel = {t_binutils / t_wheel:5.2f}x"
    )
    print(
        f"      + extracting the .so from the wheel       {t_binutils_wheel:7.2f} ms"
        f"   ratio = {t_binutils_wheel / t_wheel:5.2f}x"
    )
    print(
        f"    cuship inspect_object (.so)                 {t_object:7.2f} ms"
        f"   ratio binutils/inspect_object = {t_binutils / t_object:5.2f}x"
    )
    return agree


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, action="append", default=[])
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    wheels = args.wheel or [build("exact"), build("stable")]
    with tempfile.TemporaryDirectory() as work:
        agreed = [bench(wheel, args.repeat, Path(work)) for wheel in wheels]
    return 0 if all(agreed) else 1


if __name__ == "__main__":
    raise SystemExit(main())
