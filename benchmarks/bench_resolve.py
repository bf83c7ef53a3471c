"""`cuship resolve` vs `pip download --no-deps` on one project with 10,000 files, same server.

    python3 benchmarks/bench_resolve.py [--files 10000] [--runs 5] [--layout v2|v1]
        [--other-wheels 0] [--cache-dir /tmp/cuship-bench-resolve]

The index is written directly (PEP 503 HTML, PEP 691 JSON and cuship manifests with arches for
every file): 250 versions x 10 local labels (cu126/cu128/cu129/cu130, torch 2.7-2.9, both C++
ABIs) x 4 CPython tags. Only the newest version's files are real wheels (nobody downloads the
others). `--layout v2` (the default) writes the project's own manifest,
`simple/bench-cuda/cuship.json`, names it in the JSON page (`"_cuship": {"manifest": ...}`) and
keeps `cuship-index.json` to a map of projects; `--layout v1` writes every record into
`cuship-index.json`, as sites did before. `--other-wheels N` adds N records of other projects
(100 a project; manifests only, no pages or files), the rest of a community index that a resolve
of bench-cuda should not have to read. cuship's server serves the site on loopback. Each run is a
fresh process, as a user types it:

* cuship: `python -m cuship resolve bench-cuda --index URL --json` (JSON page + manifest, judges
  all 10,000 files for an H100 with a CUDA 12.8 driver and torch 2.8, explains every rejection);
* pip: `python -m pip download --no-deps bench-cuda --index-url URL -d TMP` (JSON page, picks by
  tags and version, downloads the one wheel it picked).

Runs alternate between the two; medians and the ratio are printed, with the bytes each run
fetched (the sum of the server's 200 answers: pages, manifests, and pip's wheel).
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
import urllib.parse
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "src"))
from cuship.serve.site import IndexServer, RequestLog, serve  # noqa: E402

PROJECT = "bench-cuda"
PER_OTHER = 100  # records per filler project
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
    rows: list[dict[str, object]] = []
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
                        "url": _href(filename),
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


def _href(filename: object) -> str:
    return f"../../files/{str(filename).replace('+', '%2B')}"


def _pages(site: Path, rows: list[dict[str, object]], layout: str) -> None:
    folder = site / "simple" / PROJECT
    folder.mkdir(parents=True)
    links = "".join(
        f'<a href="{_href(r["filename"])}#sha256={r["sha256"]}" data-requires-python="&gt;=3.10">{r["filename"]}</a><br>\n'
        for r in rows
    )
    (folder / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
    files = [
        {
            "filename": r["filename"],
            "url": _href(r["filename"]),
            "hashes": {"sha256": r["sha256"]},
            "requires-python": ">=3.10",
            "yanked": False,
        }
        for r in rows
    ]
    versions = sorted({str(r["version"]) for r in rows})
    document: dict[str, object] = {
        "meta": {"api-version": "1.1"},
        "name": PROJECT,
        "versions": versions,
        "files": files,
    }
    if layout == "v2":
        document["_cuship"] = {"manifest": "cuship.json"}
    (folder / "index.json").write_text(json.dumps(document))
    (site / "simple" / "index.html").write_text(f'<a href="{PROJECT}/">{PROJECT}</a>\n')
    root = {"meta": {"api-version": "1.1"}, "projects": [{"name": PROJECT}]}
    (site / "simple" / "index.json").write_text(json.dumps(root))


def _others(count: int) -> dict[str, list[dict[str, object]]]:
    """Records of filler projects, PER_OTHER each, shaped like bench-cuda's."""
    projects: dict[str, list[dict[str, object]]] = {}
    for n in range(count):
        name = f"other-{n // PER_OTHER:04d}"
        filename = f"{name.replace('-', '_')}-1.{n % PER_OTHER}+cu128-cp312-cp312-linux_x86_64.whl"
        record: dict[str, object] = {
            "filename": filename,
            "version": f"1.{n % PER_OTHER}+cu128",
            "sha256": hashlib.sha256(filename.encode()).hexdigest(),
            "url": _href(filename),
            "describe": {"cuda": "12.8", "sass": ["80", "90a"], "ptx": ["90a"]},
        }
        projects.setdefault(name, []).append(record)
    return projects


def _manifests(site: Path, projects: dict[str, list[dict[str, object]]], layout: str) -> None:
    if layout == "v1":
        every = [r for records in projects.values() for r in records]
        (site / "cuship-index.json").write_text(
            json.dumps({"schema": "cuship-index/1", "wheels": every})
        )
        return
    listed = {}
    for name, records in projects.items():
        folder = site / "simple" / name
        folder.mkdir(parents=True, exist_ok=True)
        document = {"schema": "cuship-project/1", "project": name, "wheels": records}
        (folder / "cuship.json").write_text(json.dumps(document))
        listed[name] = {"manifest": f"simple/{name}/cuship.json", "labels": []}
    thin = {"schema": "cuship-index/2", "indexes": {"": "simple/"}, "projects": listed}
    (site / "cuship-index.json").write_text(json.dumps(thin))


def write_site(site: Path, count: int, *, layout: str = "v2", other_wheels: int = 0) -> int:
    """The index tree, written directly (no scanning); returns how many files bench-cuda has."""
    shutil.rmtree(site, ignore_errors=True)
    (site / "files").mkdir(parents=True)
    rows = _files(count, site)
    _pages(site, rows, layout)
    _manifests(site, {PROJECT: rows, **_others(other_wheels)}, layout)
    return len(rows)


def _answered_bytes(site: Path, log: tuple[RequestLog, ...]) -> int:
    """The bytes of the server's 200 answers in ``log`` (a negotiated page: the chosen one)."""
    total = 0
    for entry in log:
        if entry.status != 200:
            continue
        path = site / urllib.parse.unquote(urllib.parse.urlsplit(entry.path).path).lstrip("/")
        if path.is_dir():
            path /= "index.json" if "json" in (entry.content_type or "") else "index.html"
        total += path.stat().st_size
    return total


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "CUSHIP_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    env.update(ENV, PYTHONPATH=str(REPO / "src"))
    return env


def _timed(
    args: list[str], env: dict[str, str], server: IndexServer, site: Path
) -> tuple[float, str, int]:
    """Seconds, stdout and the bytes the server answered while ``args`` ran."""
    before = len(server.requests)
    start = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(
            f"{args[:5]} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    return took, done.stdout, _answered_bytes(site, server.requests[before:])


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--layout", choices=("v2", "v1"), default="v2")
    parser.add_argument("--other-wheels", type=int, default=0)
    parser.add_argument(
        "--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "cuship-bench-resolve"
    )
    return parser.parse_args()


def _size(count: float) -> str:
    return f"{count / (1 << 20):.2f} MiB" if count >= 1 << 20 else f"{count / 1024:.1f} KiB"


def main() -> None:
    args = _arguments()
    site = args.cache_dir / "site"
    count = write_site(site, args.files, layout=args.layout, other_wheels=args.other_wheels)
    env = _clean_env()
    times: dict[str, list[float]] = {"cuship resolve": [], "pip download": []}
    fetched: dict[str, list[int]] = {"cuship resolve": [], "pip download": []}
    chosen = picked = manifest = ""
    with serve(site) as server:
        index = f"{server.url}simple"
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
        for _ in range(args.runs):
            took, out, size = _timed(cuship_cmd, env, server, site)
            times["cuship resolve"].append(took)
            fetched["cuship resolve"].append(size)
            doc = json.loads(out)
            chosen, manifest = doc["chosen"]["filename"], doc["manifest"]
            with tempfile.TemporaryDirectory() as dest:
                pip_cmd = [sys.executable, "-m", "pip", "download", "--no-deps", PROJECT]
                took, _, size = _timed(
                    [*pip_cmd, "--index-url", index, "-d", dest], env, server, site
                )
                times["pip download"].append(took)
                fetched["pip download"].append(size)
                picked = next(Path(dest).iterdir()).name
    print(
        f"{count} files of {PROJECT!r} ({args.layout} layout, {args.other_wheels} other wheels "
        f"in the index), {args.runs} runs each, fingerprint {ENV}"
    )
    print(f"cuship chose {chosen} (manifest {manifest})")
    print(f"pip picked   {picked}  (tags and version only: no torch, CUDA or GPU check)")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(
            f"{name:16} median {medians[name]:.3f} s  (min {min(values):.3f}, max {max(values):.3f})"
            f"  fetched {_size(statistics.median(fetched[name]))} a run"
        )
    ratio = medians["cuship resolve"] / medians["pip download"]
    print(f"ratio cuship/pip: {ratio:.2f}x")


if __name__ == "__main__":
    main()
