"""Real CUDA artefacts for the wheel tests: a .so built by nvcc and a standard wheel around it."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import re
import subprocess
import zipfile
from pathlib import Path

NVCC = Path("/usr/local/cuda/bin/nvcc")
_LISTED = re.compile(r"^(ELF|PTX) file\s+\d+: .*\.sm_(\w+)\.(cubin|ptx)$", re.MULTILINE)


def cuobjdump() -> Path:
    """The cuobjdump that the triton wheel bundles."""
    spec = importlib.util.find_spec("triton")
    assert spec is not None and spec.submodule_search_locations
    tool = Path(next(iter(spec.submodule_search_locations))) / "backends/nvidia/bin/cuobjdump"
    assert tool.is_file(), f"triton does not bundle cuobjdump at {tool}"
    return tool


def cuobjdump_arches(so: Path) -> tuple[set[str], set[str]]:
    """SASS and PTX arches as cuobjdump lists them."""
    done = subprocess.run(
        [str(cuobjdump()), "--list-elf", "--list-ptx", str(so)],
        capture_output=True,
        text=True,
        check=True,
    )
    found = _LISTED.findall(done.stdout)
    return {sm for kind, sm, _ in found if kind == "ELF"}, {
        sm for kind, sm, _ in found if kind == "PTX"
    }


KERNEL = """
__global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" int launch_axpy(float a, const float* x, float* y, int n) {
    axpy<<<(n + 255) / 256, 256>>>(a, x, y, n);
    return 0;
}
"""
# SASS for 8.0, 9.0a and 10.0, PTX only for 12.0: "8.0;9.0a;10.0;compute_120".
GENCODE = (
    "arch=compute_80,code=sm_80",
    "arch=compute_90a,code=sm_90a",
    "arch=compute_100,code=sm_100",
    "arch=compute_120,code=compute_120",
)


def build_so(
    workdir: Path,
    name: str = "libaxpy.so",
    gencode: tuple[str, ...] = GENCODE,
    flags: tuple[str, ...] = (),
) -> Path:
    """Compile the kernel into a shared object linked against the shared CUDA runtime."""
    source = workdir / "axpy.cu"
    source.write_text(KERNEL)
    out = workdir / name
    codes = [arg for code in gencode for arg in ("-gencode", code)]
    subprocess.run(
        [
            str(NVCC),
            "-shared",
            "-Xcompiler",
            "-fPIC",
            "--cudart",
            "shared",
            *codes,
            *flags,
            "-o",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    return out


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(
    out_dir: Path,
    so: Path,
    *,
    name: str = "cudaxpy",
    version: str = "0.1.0",
    tag: str = "cp311-cp311-linux_x86_64",
    extra: dict[str, bytes] | None = None,
) -> Path:
    """A standard wheel (METADATA, WHEEL, correct RECORD) shipping ``so`` inside the package."""
    dist_info = f"{name}-{version}.dist-info"
    files: dict[str, bytes] = {
        f"{name}/__init__.py": b"import ctypes, pathlib\n"
        b"lib = ctypes.CDLL(str(pathlib.Path(__file__).with_name('_axpy.so')))\n",
        f"{name}/_axpy.so": so.read_bytes(),
        **(extra or {}),
        f"{dist_info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nA CUDA axpy.\n"
        ).encode(),
        f"{dist_info}/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: cuship-tests\nRoot-Is-Purelib: false\nTag: {tag}\n"
        ).encode(),
    }
    record = "".join(f"{path},{_hash(data)},{len(data)}\n" for path, data in files.items())
    files[f"{dist_info}/RECORD"] = (record + f"{dist_info}/RECORD,,\n").encode()
    wheel = out_dir / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = 0o755 << 16 if path.endswith(".so") else 0o644 << 16
            archive.writestr(info, data, zipfile.ZIP_DEFLATED)
    return wheel


def relabel_for_cuda(wheel: Path, label: str, out_dir: Path) -> Path:
    """A copy of ``wheel`` labelled ``label`` whose shared objects need the CUDA runtime the
    label names: ``cu128`` relinks ``libcudart.so.13`` to ``libcudart.so.12`` (patchelf), so a
    wheel built here with CUDA 13 stands for one built with CUDA 12, as the judge reads the
    CUDA a wheel needs from its objects, not from its label."""
    from cuship.wheel.write.retag import record_hash, retag

    major = re.fullmatch(r"cu(\d+?)\d", label)
    assert major is not None, label
    scratch = out_dir / f".relink-{label}"
    scratch.mkdir(parents=True, exist_ok=True)
    relinked = scratch / wheel.name
    with (
        zipfile.ZipFile(wheel) as source,
        zipfile.ZipFile(relinked, "w", zipfile.ZIP_DEFLATED) as out,
    ):
        members = {info.filename: source.read(info) for info in source.infolist()}
        for name, data in list(members.items()):
            if name.endswith(".so") and b"libcudart.so." in data:
                members[name] = _replace_needed(data, f"libcudart.so.{major[1]}")
        record = next(n for n in members if n.endswith(".dist-info/RECORD"))
        lines = []
        for line in members[record].decode().splitlines():
            path = line.split(",", 1)[0]
            if path in members and path != record:
                data = members[path]
                line = f"{path},{record_hash(data)},{len(data)}"
            lines.append(line)
        members[record] = ("\n".join(lines) + "\n").encode()
        for name, data in members.items():
            out.writestr(name, data)
    try:
        return retag(relinked, local=label, out_dir=out_dir)
    finally:
        relinked.unlink(missing_ok=True)
        scratch.rmdir()


def _replace_needed(data: bytes, runtime: str) -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        so = Path(scratch) / "x.so"
        so.write_bytes(data)
        needed = re.findall(rb"libcudart\.so\.\d+", data)
        for old in sorted(set(needed)):
            subprocess.run(
                ["patchelf", "--replace-needed", old.decode(), runtime, str(so)], check=True
            )
        return so.read_bytes()
