"""The judge against the truth of this machine: what `cuship doctor` says of installed CUDA
packages beside what loading them (and, where a probe is known, launching a kernel) shows.

Run: python benchmarks/judge_truth.py [--wheels DIR] [--packages torch,triton,...] -o OUT

- ``--packages``: distributions already installed in this interpreter's environment (default:
  every one doctor checks that has a known probe or a compiled extension: torch, triton,
  numba-cuda, cuda-bindings, cupy, ...).
- ``--wheels DIR``: each wheel there is installed with ``--no-deps`` into a venv of its own,
  layered over this interpreter's packages (``--system-site-packages``), and judged there.

For each package: doctor's verdict (``fits``: no problem; the problems and the checks that could
not run) and the truth, in a fresh interpreter of the same environment that imports torch first
(when it is installed): each of the package's own shared objects the judge judged is loaded
(an extension module imported, a library opened with ``ctypes.CDLL``), and the probe runs a
kernel where one is known (torch, triton, numba-cuda, cupy, torchvision, xformers,
bitsandbytes). ``agree``: doctor's ``fits`` equals "every judged object loads and the probe
passes". Nothing here is imported into this process: every load is a subprocess with a timeout.

Writes OUT/judge-truth.json and OUT/judge-truth.txt (a table); exit 0 whatever the verdicts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
TIMEOUT = 240

# A kernel launch per package: the code runs after `import torch` (when torch is installed).
PROBES: dict[str, str] = {
    "torch": "import torch; x = torch.ones(1 << 20, device='cuda'); "
    "assert float((x + x).sum()) == 2 * (1 << 20)",
    "triton": """
import torch, triton, triton.language as tl
@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(out + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)
x = torch.arange(1000, device='cuda', dtype=torch.float32); out = torch.empty_like(x)
add[(4,)](x, x, out, 1000, BLOCK=256)
assert torch.equal(out, 2 * x)
""",
    "numba-cuda": """
import numpy as np
from numba import cuda
@cuda.jit
def twice(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] *= 2
a = cuda.to_device(np.arange(1000, dtype=np.float32)); twice[4, 256](a)
assert (a.copy_to_host() == 2 * np.arange(1000, dtype=np.float32)).all()
""",
    "cupy": "import cupy; assert int(cupy.arange(1000).sum()) == 499500",
    "cupy-cuda12x": "import cupy; assert int(cupy.arange(1000).sum()) == 499500",
    "cupy-cuda13x": "import cupy; assert int(cupy.arange(1000).sum()) == 499500",
    "torchvision": """
import torch, torchvision
boxes = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60]], dtype=torch.float32,
                     device='cuda')
keep = torchvision.ops.nms(boxes, torch.tensor([0.9, 0.8, 0.7], device='cuda'), 0.5)
assert keep.tolist() == [0, 2]
""",
    "xformers": """
import torch, xformers.ops as xops
q = torch.randn(1, 128, 4, 64, device='cuda', dtype=torch.float16)
out = xops.memory_efficient_attention(q, q, q)
assert out.shape == q.shape
""",
    "bitsandbytes": """
import torch, bitsandbytes.functional as F
x = torch.randn(256, 256, device='cuda', dtype=torch.float16)
q, state = F.quantize_4bit(x)
y = F.dequantize_4bit(q, state)
assert (y - x).abs().mean().item() < 0.2
""",
}

# Each object is opened with dlopen (RTLD_NOW: every symbol bound at once), as the import of an
# extension module or torch.ops.load_library would, without running any module's init code.
_LOADER = r"""
import ctypes, json, runpy, sys
try:
    import torch  # extensions of torch load after it, as their packages do
except Exception:
    pass
site, objects, probe = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
out = {"objects": {}, "probe": None}
for path in objects:
    try:
        ctypes.CDLL(site + "/" + path, mode=ctypes.RTLD_GLOBAL)
        out["objects"][path] = "ok"
    except BaseException as err:
        out["objects"][path] = f"{type(err).__name__}: {err}"[:400]
if probe:
    try:
        runpy.run_path(probe, run_name="__main__")
        out["probe"] = "ok"
    except BaseException as err:
        out["probe"] = f"{type(err).__name__}: {err}"[:400]
print("JUDGE-TRUTH " + json.dumps(out))
"""


def _run(argv: list[str], env: dict[str, str], timeout: float = TIMEOUT) -> tuple[int, str, str]:
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, env=env, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s"
    except OSError as err:
        return 127, "", str(err)
    return done.returncode, done.stdout, done.stderr


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def doctor(python: str, name: str) -> dict[str, Any]:
    """doctor's report of ``name`` in ``python``'s environment."""
    code, out, err = _run([python, "-m", "cuship", "doctor", name, "--json"], _env())
    try:
        doc = json.loads(out)
    except ValueError:
        return {"error": f"doctor exited {code}: {err.strip()[-600:]}"}
    package = doc["packages"][0] if doc.get("packages") else None
    if package is None:
        return {"error": f"doctor checked nothing: {json.dumps(doc)[:300]}"}
    return {
        "machine": doc["machine"],
        "fits": not package["problems"],
        "problems": [f"[{p['area']}] {p['message']}" for p in package["problems"]],
        "unchecked": package.get("unchecked", []),
        "notes": package["notes"],
        "location": package["location"],
        "judged": [
            c for c in package.get("checks", []) if c["status"] in ("fail", "partial", "unchecked")
        ],
        "objects": package["objects"],
    }


def _judged_objects(python: str, name: str) -> list[str]:
    """The package's own objects the judge judged (the CUDA alternative that loads here)."""
    code = (
        "import json, sys; from cuship.doctor import scan, machine_of; "
        "from cuship.doctor.judge import needs_of; from cuship.judge import judge, offer_of; "
        "from cuship.judge.checks import alternatives; from cuship.judge.state import Judging, Context; "
        "from cuship.compat import load; from cuship.machine import fingerprint; "
        "p = scan([sys.argv[1]]).packages[0]; needs = needs_of(p); "
        "j = Judging(needs=needs, offer=offer_of(fingerprint(toolkit=False)), compat=load(), context=Context()); "
        "alternatives(j); print(json.dumps([o.path for o in j.own if o.matters]))"
    )
    _, out, _ = _run([python, "-c", code, name], _env())
    try:
        return list(json.loads(out.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return []


def truth(python: str, name: str, site: str, probes: Path | None) -> dict[str, Any]:
    """Load the judged objects and (``probes``: where to write it) run the probe in a fresh
    interpreter."""
    objects = _judged_objects(python, name)
    probe = ""
    if probes is not None and name.lower() in PROBES:
        probes.mkdir(parents=True, exist_ok=True)
        probe = str(probes / f"probe_{name.lower().replace('-', '_')}.py")
        Path(probe).write_text(PROBES[name.lower()])
    start = time.perf_counter()
    rc, out, err = _run([python, "-c", _LOADER, site, json.dumps(objects), probe], dict(os.environ))
    line = next((x for x in out.splitlines() if x.startswith("JUDGE-TRUTH ")), None)
    if line is None:
        return {"error": f"the loader exited {rc}: {err.strip()[-600:]}", "runs": False}
    doc = json.loads(line.removeprefix("JUDGE-TRUTH "))
    failed = {path: why for path, why in doc["objects"].items() if why != "ok"}
    runs = not failed and doc["probe"] in (None, "ok")
    return {
        "runs": runs,
        "objects": len(doc["objects"]),
        "failed": failed,
        "probe": doc["probe"],
        "seconds": round(time.perf_counter() - start, 2),
    }


def venv_for(wheel: Path, root: Path) -> tuple[str, str] | str:
    """(python, site dir) of a fresh venv over this interpreter's packages with ``wheel``."""
    target = root / wheel.name.removesuffix(".whl")
    rc, _, err = _run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(target)], dict(os.environ)
    )
    if rc != 0:
        return f"venv failed: {err[-300:]}"
    python = str(target / "bin" / "python")
    # The venv sees this interpreter's packages wherever they are (a user site too, which
    # --system-site-packages leaves out).
    _, out, _ = _run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        dict(os.environ),
    )
    parent = [
        p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()
    ]
    (Path(out.strip()) / "_judge_truth_parent.pth").write_text("\n".join(parent) + "\n")
    pip = [
        python,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-index",
        "--ignore-installed",
        "-q",
        str(wheel),
    ]
    rc, _, err = _run(pip, dict(os.environ))
    if rc != 0:
        return f"pip install failed: {err[-300:]}"
    rc, out, _ = _run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        dict(os.environ),
    )
    return python, out.strip()


def row(name: str, python: str, site: str, source: str, probes: Path | None) -> dict[str, Any]:
    judged = doctor(python, name)
    seen = truth(python, name, site, probes) if "error" not in judged else {"runs": None}
    # An object doctor named as not loading (a partial fit) is expected to fail; the package
    # runs when everything else loads and the probe passes.
    named = " ".join(c["message"] for c in judged.get("judged", []) if c["status"] == "partial")
    failed = seen.get("failed", {})
    expected = {path for path in failed if path in named}
    if seen.get("runs") is False and failed and set(failed) == expected:
        seen["runs"] = seen.get("probe") in (None, "ok")
        seen["expected_failures"] = sorted(expected)
    agree = (
        None
        if judged.get("fits") is None or seen.get("runs") is None
        else judged["fits"] == seen["runs"]
    )
    return {"package": name, "source": source, "doctor": judged, "truth": seen, "agree": agree}


def _site_of_dist(python: str, name: str) -> str:
    code = "import sys; from importlib import metadata; print(metadata.distribution(sys.argv[1]).locate_file(''))"
    _, out, _ = _run([python, "-c", code, name], dict(os.environ))
    return out.strip()


def render(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'package':<16} {'from':<14} {'doctor':<8} {'truth':<8} agree  why"]
    for r in rows:
        d, t = r["doctor"], r["truth"]
        verdict = "error" if "error" in d else ("fits" if d["fits"] else "fails")
        real = "?" if t.get("runs") is None else ("runs" if t["runs"] else "fails")
        why = "; ".join(d.get("problems", [])[:1] or list(t.get("failed", {}).values())[:1])
        if t.get("probe") not in (None, "ok"):
            why += f" | probe: {t['probe']}"
        if "error" in d:
            why = d["error"]
        lines.append(
            f"{r['package']:<16} {r['source']:<14} {verdict:<8} {real:<8} {r['agree']!s:<6} {why[:160]}"
        )
    agreed = sum(1 for r in rows if r["agree"])
    decided = sum(1 for r in rows if r["agree"] is not None)
    lines.append(f"agreement: {agreed} of {decided} decided ({len(rows)} packages)")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--wheels", type=Path)
    parser.add_argument("--packages", default="torch,triton,numba-cuda,cuda-bindings,cupy")
    parser.add_argument("-o", "--out", type=Path, required=True)
    parser.add_argument(
        "--probe",
        choices=("auto", "always", "never"),
        default="auto",
        help="launch a kernel per package (auto: when nvidia-smi lists a GPU)",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    gpu = _run(["nvidia-smi", "-L"], dict(os.environ))[0] == 0 if args.probe == "auto" else True
    probes = (
        args.out / "probes" if args.probe == "always" or (args.probe == "auto" and gpu) else None
    )
    rows = []
    for name in [p for p in args.packages.split(",") if p]:
        site = _site_of_dist(sys.executable, name)
        if not site:
            continue
        rows.append(row(name, sys.executable, site, "env", probes))
    if args.wheels:
        venvs = args.out / "venvs"
        for wheel in sorted(args.wheels.glob("*.whl")):
            made = venv_for(wheel, venvs)
            name = wheel.name.split("-", 1)[0].replace("_", "-")
            source = "wheel " + wheel.name.split("-")[1]
            if isinstance(made, str):
                rows.append(
                    {
                        "package": name,
                        "source": source,
                        "doctor": {"error": made},
                        "truth": {},
                        "agree": None,
                    }
                )
                continue
            site = _site_of_dist(made[0], name) or made[1]
            rows.append(row(name, made[0], site, source, probes))
    (args.out / "judge-truth.json").write_text(json.dumps(rows, indent=1))
    table = render(rows)
    (args.out / "judge-truth.txt").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
