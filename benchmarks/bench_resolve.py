"""`cuship resolve` vs `pip download --no-deps` on one project with 10,000 files, same server.

    python3 benchmarks/bench_resolve.py [--files 10000] [--runs 5] [--cache-dir /tmp/cuship-bench-resolve]

The index is written directly (PEP 503 HTML, PEP 691 JSON and a cuship manifest with arches for
every file): 250 versions x 10 local labels (cu126/cu128/cu129/cu130, torch 2.7-2.9, both C++
ABIs) x 4 CPython tags. Only the newest version's files are real wheels (nobody downloads the
others). `cuship serve` serves it on loopback. Each run is a fresh process, as a user types it:

* cuship: `python -m cuship resolve bench-cuda --index URL --json` (JSON page + manifest, judges
  all 10,000 files for an H100 with a CUDA 12.8 driver and torch 2.8, explains every rejection);
* pip: `python -m pip download --no-deps bench-cuda --index-url URL -d TMP` (JSON page, picks by
  tags and version, downloads the one wheel it picked).

Runs alternate between the two; medians and the ratio are printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROJECT = "bench-cuda"
DIST = "bench_cuda"
PYTHONS = ("cp310", "cp311", "cp312", "cp313")
LABELS = (
    ("cu126torch2.7cxx11abiTRUE", "12.6", "2.7", True),
    ("cu128torch2.7cxx11abiTRUE", "12.8", "2.7", True),
    ("cu128torch2.8cxx11abiTRUE", "12.8", "2.8", True),
    ("cu128torch2.8cxx11abiFALSE", "12.8", "2.8", False),
    ("cu129torch2.8cxx11abiTRUE", "12.9", "2.8", True),
    ("cu129torch2.9cxx11abiTRUE", "12.9", "2.9", True),
    ("cu130torch2.9cxx11abiTRUE", "13.0", "2.9", True),
    ("cu130torch2.9cxx11abiFALSE", "13.0", "2.9", False),
    ("cu126torch2.8cxx11abiTRUE", "12.6", "2.8", True),
    ("cu130torch2.8cxx11abiTRUE", "13.0", "2.8", True),
)
ENV = {
    "CUSHIP_GPUS": "H100",
    "CUSHIP_DRIVER_CUDA": "12.8",
    "CUSHIP_TORCH": "2.8.0+cu128",
    "CUSHIP_TORCH_CXX11ABI": "1",
}


def _wheel(path: Path, version: str, tag: str) -> bytes:
    info = f"{DIST}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{DIST}/__init__.py", f"VERSION = {version!r}\n")
        archive.writestr(
            f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {PROJECT}\nVersion: {version}\n"
        )
        archive.writestr(
            f"{info}/WHEEL", f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n"
        )
        archive.writestr(f"{info}/RECORD", "")
    return path.read_bytes()


def _files(count: int, site: Path) -> list[dict[str, object]]:
    per_version = len(LABELS) * len(PYTHONS)
    versions = max(1, count // per_version)
    rows = []
    for v in range(versions):
        newest = v == versions - 1
        for label, cuda, torch, abi in LABELS:
            for py in PYTHONS:
                version = f"1.{v // 10}.{v % 10}+{label}"
                tag = f"{py}-{py}-manylinux_2_28_x86_64"
                filename = f"{DIST}-{version}-{tag}.whl"
                if newest:
                    sha = hashlib.sha256(
                        _wheel(site / "files" / filename, version, tag)
                    ).hexdigest()
                else:
                    sha = hashlib.sha256(filename.encode()).hexdigest()
                sass = ["80", "90a"] if cuda < "12.8" else ["80", "90a", "100", "120"]
                rows.append(
                    {
                        "filename": filename,
                        "version": version,
                        "sha256": sha,
                        "describe": {
                            "cuda": cuda,
                            "torch": torch,
                            "cxx11abi": abi,
                            "sass": sass,
                            "ptx": ["120"],
                        },
                    }
                )
    return rows


def write_site(site: Path, count: int) -> None:
    """The index tree, written directly (no scanning): pages, manifest, the newest wheels."""
    shutil.rmtree(site, ignore_errors=True)
    (site / "files").mkdir(parents=True)
    (site / "simple" / PROJECT).mkdir(parents=True)
    rows = _files(count, site)
    links = "".join(
        f'<a href="../../files/{str(r["filename"]).replace("+", "%2B")}#sha256={r["sha256"]}" data-requires-python="&gt;=3.10">{r["filename"]}</a><br>\n'
        for r in rows
    )
    page = f"<!DOCTYPE html><html><body>\n{links}</body></html>\n"
    (site / "simple" / PROJECT / "index.html").write_text(page)
    files = [
        {
            "filename": r["filename"],
            "url": f"../../files/{str(r['filename']).replace('+', '%2B')}",
            "hashes": {"sha256": r["sha256"]},
            "requires-python": ">=3.10",
            "yanked": False,
        }
        for r in rows
    ]
    versions = sorted({str(r["version"]) for r in rows})
    document = {
        "meta": {"api-version": "1.1"},
        "name": PROJECT,
        "versions": versions,
        "files": files,
    }
    (site / "simple" / PROJECT / "index.json").write_text(json.dumps(document))
    (site / "simple" / "index.html").write_text(f'<a href="{PROJECT}/">{PROJECT}</a>\n')
    root = {"meta": {"api-version": "1.1"}, "projects": [{"name": PROJECT}]}
    (site / "simple" / "index.json").write_text(json.dumps(root))
    manifest = {"schema": "cuship-index/1", "wheels": rows}
    (site / "cuship-index.json").write_text(json.dumps(manifest))


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "CUSHIP_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    env.update(ENV, PYTHONPATH=str(REPO / "src"))
    return env


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(
            f"{args[:5]} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    return took, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "cuship-bench-resolve"
    )
    args = parser.parse_args()
    site = args.cache_dir / "site"
    write_site(site, args.files)
    env = _clean_env()
    server = subprocess.Popen(
        [sys.executable, "-m", "cuship", "serve", str(site), "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        index = server.stdout.readline().strip() + "simple"
        cuship_cmd = [
            sys.executable,
            "-m",
            "cuship",
            "resolve",
            PROJECT,
            "--index",
            index,
            "--json",
        ]
        times: dict[str, list[float]] = {"cuship resolve": [], "pip download": []}
        chosen = picked = ""
        for _ in range(args.runs):
            took, out = _timed(cuship_cmd, env)
            times["cuship resolve"].append(took)
            chosen = json.loads(out)["chosen"]["filename"]
            with tempfile.TemporaryDirectory() as dest:
                pip_cmd = [sys.executable, "-m", "pip", "download", "--no-deps", PROJECT]
                took, _ = _timed([*pip_cmd, "--index-url", index, "-d", dest], env)
                times["pip download"].append(took)
                picked = next(Path(dest).iterdir()).name
    finally:
        server.terminate()
        server.wait(timeout=10)
    count = sum(1 for _ in json.loads((site / "cuship-index.json").read_text())["wheels"])
    print(f"{count} files of {PROJECT!r}, {args.runs} runs each, fingerprint {ENV}")
    print(f"cuship chose {chosen}")
    print(f"pip picked   {picked}  (tags and version only: no torch, CUDA or GPU check)")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(
            f"{name:16} median {medians[name]:.3f} s  (min {min(values):.3f}, max {max(values):.3f})"
        )
    ratio = medians["cuship resolve"] / medians["pip download"]
    print(f"ratio cuship/pip: {ratio:.2f}x")


if __name__ == "__main__":
    main()
