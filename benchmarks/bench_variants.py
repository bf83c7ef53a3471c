"""Wheel variants from one index: what uv 0.13.8 with and without ``--preview-features
wheel-variants``, pip and ``cuship resolve`` install on forced machines, and whether it runs there
(the judge's verdict on that file for that machine).

Run: python benchmarks/bench_variants.py [--json OUT]

Builds (``cuship build``, the host's nvcc) the example twice for this Python: as configured
(SASS 80/90/100/120, PTX 80/120) and with ``arch = "7.5;8.6+PTX"``; with no CUDA 12 toolkit at
hand, a third build stands for a CUDA 12.8 one: the first, its runtime relinked to
``libcudart.so.12`` (patchelf; the judge reads the CUDA a wheel needs from that). Variants:
``cu130`` (the first), ``cu130_sm75`` (the second), ``cu128`` (the third), ``null``; the plain
wheel is the third (the oldest CUDA). The index is served on loopback; each install is into a
fresh venv with ``--no-deps``; uv's machine is forced with
``NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION``/``_SM_ARCH``, cuship's with ``CUSHIP_GPUS``
and ``CUSHIP_DRIVER_CUDA`` (the NVIDIA libraries of CUDA 12 and 13 offered).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

MACHINES = (  # (driver CUDA, compute capability)
    ("13.0", "9.0"),
    ("12.8", "9.0"),
    ("13.0", "7.5"),
    ("13.0", "8.6"),
    ("13.0", "11.0"),
    ("12.4", "12.0"),
    ("13.0", "6.1"),
    ("12.8", "10.3"),
)
CP = f"cp{sys.version_info.major}{sys.version_info.minor}"


def _run(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def build(scratch: Path, arch: str | None, name: str) -> Path:
    """The example built for this Python (``arch``: another arch list)."""
    project = scratch / name
    shutil.copytree(REPO / "examples/cuvecops", project, ignore=shutil.ignore_patterns("dist"))
    config = (project / "cuship.toml").read_text().replace("enabled = true", "enabled = false")
    if arch is not None:
        config = config.replace('arch = "8.0+PTX;9.0;10.0;12.0+PTX"', f'arch = "{arch}"')
    (project / "cuship.toml").write_text(config)
    out = scratch / f"{name}-wheels"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    job = f"cuvecops-0.1.0-{CP}-cu130"
    _run([sys.executable, "-m", "cuship", "build", str(project), "--job", job, "-o", str(out)], env)
    (wheel,) = out.glob("cuvecops-*.whl")
    return wheel


def publish(scratch: Path) -> Path:
    from tests.integration.cudawheel import relabel_for_cuda

    from cuship.judge.variants import make_variant
    from cuship.wheel.write.retag import strip_label

    wheels = scratch / "index-wheels"
    wheels.mkdir()
    first = build(scratch, None, "a")
    second = build(scratch, "7.5;8.6+PTX", "b")
    cu128 = relabel_for_cuda(first, "cu128", scratch / "relinked")
    make_variant(first, out_dir=wheels, label="cu130")
    make_variant(second, out_dir=wheels, label="cu130_sm75")
    make_variant(cu128, out_dir=wheels, label="cu128")
    make_variant(cu128, out_dir=wheels, null=True)
    strip_label(cu128, out_dir=wheels)
    return wheels


def _label(venv: Path) -> str:
    (info,) = venv.glob("lib/python3.*/site-packages/cuvecops-*.dist-info")
    variant = info / "variant.json"
    if not variant.exists():
        return "plain"
    return next(iter(json.loads(variant.read_text())["variants"]))


def install(tool: str, index: str, machine: tuple[str, str], scratch: Path) -> str:
    venv = scratch / f"venv-{tool}-{machine[0]}-{machine[1]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env |= {"PIP_CONFIG_FILE": os.devnull, "UV_NO_CONFIG": "1", "UV_PYTHON_DOWNLOADS": "never"}
    env |= {
        "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": machine[0],
        "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": machine[1],
    }
    if tool == "pip":
        _run([sys.executable, "-m", "venv", str(venv)])
        pip = [str(venv / "bin/python"), "-m", "pip", "install", "-q", "--no-deps"]
        _run([*pip, "--index-url", index, "cuvecops"], env)
    else:
        _run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], env)
        args = ["uv", "pip", "install", "-q", "--refresh", "--no-deps", "--index-url", index]
        args += ["--python", str(venv / "bin/python")]
        if tool == "uv+variants":
            args += ["--preview-features", "wheel-variants"]
        _run([*args, "cuvecops"], env)
    return _label(venv)


def judged(index: str, machine: tuple[str, str]) -> dict[str, Any]:
    from cuship.resolve.install import resolve_index, target_from_env

    env = {
        "CUSHIP_GPUS": f"GPU:{machine[1]}",
        "CUSHIP_DRIVER_CUDA": machine[0],
        "CUSHIP_TORCH": "none",
        "CUSHIP_CUDA_LIBS": "12,13",
        "CUSHIP_NVCC": "none",
        "PATH": os.environ["PATH"],
    }
    _, resolution = resolve_index("cuvecops", index, target_from_env(env))
    runs = {v.candidate.filename: v.accepted for v in (*resolution.ranked, *resolution.rejected)}
    chosen = resolution.chosen.candidate.filename if resolution.chosen else None
    return {"runs": runs, "chosen": chosen, "uv": resolution.uv}


def _label_of(filename: str | None) -> str:
    if filename is None:
        return "none"
    from cuship.wheel.variant import split_variant

    return split_variant(filename)[1] or "plain"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from cuship.index import write
    from cuship.index.describe import describe_wheel
    from cuship.serve.site import serve

    scratch = Path(tempfile.mkdtemp(prefix="bench-variants-"))
    wheels = publish(scratch)
    site = scratch / "site"
    write([wheels], site, describe=describe_wheel)
    rows = []
    with serve(site, "127.0.0.1", 0) as server:
        index = f"{server.url}simple"
        for machine in MACHINES:
            verdicts = judged(index, machine)
            by_label = {_label_of(f): ok for f, ok in verdicts["runs"].items()}
            row: dict[str, Any] = {"driver": machine[0], "cc": machine[1]}
            for tool in ("uv+variants", "uv", "pip"):
                label = install(tool, index, machine, scratch)
                row[tool] = {"label": label, "runs": by_label.get(label)}
            row["cuship"] = {
                "label": _label_of(verdicts["chosen"]),
                "runs": verdicts["chosen"] is not None,
            }
            row["cuship_says_uv"] = _label_of(verdicts["uv"])
            rows.append(row)
    print(f"{'driver':<7} {'GPU':<5} {'uv + variants':<22} {'uv':<14} {'pip':<14} cuship resolve")
    for row in rows:
        cells = [
            f"{row[t]['label']} ({'runs' if row[t]['runs'] else 'fails'})"
            for t in ("uv+variants", "uv", "pip")
        ]
        cuship = row["cuship"]["label"] if row["cuship"]["runs"] else "none fits"
        print(
            f"{row['driver']:<7} {row['cc']:<5} {cells[0]:<22} {cells[1]:<14} {cells[2]:<14} {cuship}"
        )
    agree = sum(
        1
        for r in rows
        if r["uv+variants"]["label"] == r["cuship"]["label"]
        or (not r["cuship"]["runs"] and not r["uv+variants"]["runs"])
    )
    predicted = sum(1 for r in rows if r["cuship_says_uv"] == r["uv+variants"]["label"])
    print(
        f"uv with the flag and cuship agree on {agree} of {len(rows)} machines (where none fits, "
        f"uv's pick fails); cuship's model of uv's pick matched uv on {predicted} of {len(rows)}"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
