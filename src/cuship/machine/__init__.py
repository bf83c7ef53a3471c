"""This machine's fingerprint: GPUs, driver, CUDA toolkit, torch, Python tags, glibc.

Never imports torch. GPUs come from, in order: the ``CUSHIP_GPUS`` override, NVML (nvidia-ml-py),
``nvidia-smi``, ``/proc/driver/nvidia``. Anything unreadable becomes a note, never a crash.

Overrides (for tests, dry runs and users who know better):
``CUSHIP_GPUS="H100:9.0:80GiB,A100"`` (name[:cc[:memory]]; ``none`` for no GPU),
``CUSHIP_CUDA_DRIVER_VERSION="570.124.06"``, ``CUSHIP_DRIVER_CUDA="12.8"``,
``CUSHIP_TORCH="2.8.0+cu128"`` (``none`` for no torch), ``CUSHIP_TORCH_CXX11ABI=0|1``,
``CUSHIP_TORCH_CUDA=13.0|none`` (the build of a torch whose version has no label),
``CUSHIP_CUDA_LIBS=12,13|libcudart.so.12|none`` (the NVIDIA libraries offered, see
:mod:`cuship.machine.libraries`), ``CUSHIP_NVCC=/path/to/nvcc`` (``none``: act as if no CUDA
toolkit were installed).

torch's build flavour (CPU, CUDA X.Y, ROCm, XPU) is read from its files: ``torch/version.py``
(``cuda = '13.0'`` or ``cuda: Optional[str] = None``), never from its version string alone
(PyPI's CUDA 13 build is ``2.13.0``, with no ``+cu130``) and never by importing it.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from cuship import _names, _read, settings
from cuship._read import shown
from cuship._record import frozen
from cuship.arch import is_cc
from cuship.errors import InputError, UsageError
from cuship.machine.libraries import CudaLibraries, cuda_libraries
from cuship.machine.loader import LoaderView, loader_view
from cuship.machine.probe import NvmlFailure, Probe, SystemProbe
from cuship.tools import find_tool

__all__ = [
    "CudaLibraries",
    "Fingerprint",
    "Gpu",
    "LoaderView",
    "Toolkit",
    "TorchInfo",
    "find_toolkit",
    "fingerprint",
    "parse_gpus_override",
    "torch_in",
]

_MEM = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[KMGT]i?B)?$", re.IGNORECASE)
_UNITS_MIB = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
_SMI_FIELDS = "index,name,compute_cap,memory.total,driver_version,uuid"
_CUDA_HEADER = re.compile(r"CUDA(?:\s+UMD)?\s+Version\s*:\s*(\d+\.\d+)")
_KERNEL_MODULE = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)")
_DRIVER = re.compile(r"^\d+\.\d+(?:\.\d+)?$")


@frozen
class Gpu:
    index: int
    name: str
    cc: str | None
    memory_mib: int | None = None
    uuid: str | None = None

    @property
    def memory_gib(self) -> float | None:
        return None if self.memory_mib is None else round(self.memory_mib / 1024, 1)


@frozen
class Toolkit:
    version: str | None
    nvcc: str | None
    cuda_home: str | None


@frozen
class TorchInfo:
    """The installed torch: version, the CUDA it was built for, C++ ABI, build flavour."""

    version: str
    cuda: str | None
    cxx11abi: bool | None
    location: str | None
    flavour: str | None = None  # "cpu", "cuda", "rocm", "xpu"; None: could not be read
    flavour_from: str | None = None  # where the flavour was read: "torch/version.py", ...


@frozen
class Fingerprint:
    gpus: tuple[Gpu, ...]
    gpu_source: str
    driver_version: str | None
    driver_cuda: str | None
    toolkit: Toolkit | None
    torch: TorchInfo | None
    python: str
    python_tag: str
    platform_tags: tuple[str, ...]
    tags: tuple[str, ...]
    glibc: str | None
    machine: str
    cpus: int
    memory_total_gib: float | None
    memory_available_gib: float | None
    notes: tuple[str, ...] = ()
    cuda_libs: CudaLibraries | None = None  # NVIDIA libraries offered; None: not looked for
    loader: LoaderView | None = None  # how this machine's ld.so finds libraries

    @property
    def compute_capabilities(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(g.cc for g in self.gpus if g.cc))

    def to_json(self) -> dict[str, Any]:
        doc = asdict(replace(self, loader=None))
        doc["loader"] = None if self.loader is None else self.loader.to_json()
        doc["compute_capabilities"] = list(self.compute_capabilities)
        doc["tags"] = list(self.tags[:12])
        doc["tag_count"] = len(self.tags)
        return doc


def _memory_mib(text: str, var: str) -> int:
    match = _MEM.match(text.strip())
    if match is None:
        raise UsageError(
            f"{var}: memory {text!r} is not a size", hint="write e.g. 80GiB or 40960MiB"
        )
    unit = (match["unit"] or "MiB")[0].lower()
    return int(float(match["n"]) * _UNITS_MIB[unit])


def parse_gpus_override(text: str, var: str = settings.GPUS) -> tuple[Gpu, ...]:
    """``"H100:9.0:80GiB,A100"`` → GPUs; a missing cc comes from the compatibility data."""
    if text.strip().lower() in ("", "none", "0"):
        return ()
    gpus = []
    for index, entry in enumerate(e.strip() for e in text.split(",")):
        name, _, rest = entry.partition(":")
        cc_text, _, mem_text = rest.partition(":")
        if not name:
            raise UsageError(
                f"{var}: entry {index} ({entry!r}) has no name", hint='e.g. "H100:9.0:80GiB"'
            )
        cc = cc_text or None
        if cc is not None and not is_cc(cc):
            raise UsageError(
                f"{var}: {entry!r} has compute capability {cc!r}", hint="write it as 9.0"
            )
        # the compatibility data (a few TOML files) only for what the entry does not say
        known = _known_gpu(name) if cc is None or not mem_text else None
        if cc is None:
            if known is None:
                raise UsageError(
                    f"{var}: unknown GPU {name!r} without a compute capability",
                    hint=f'give it: "{name}:8.6"',
                )
            cc = known[0]
        memory = _memory_mib(mem_text, var) if mem_text else (known[1] if known else None)
        gpus.append(Gpu(index=index, name=name, cc=cc, memory_mib=memory))
    return tuple(gpus)


def _known_gpu(name: str) -> tuple[str, int | None] | None:
    from cuship.compat import load

    model = load().find_gpu(name)
    if model is None:
        return None
    return model.cc, (model.memory_gib[0] * 1024 if model.memory_gib else None)


def _smi_gpus(output: str, notes: list[str]) -> tuple[tuple[Gpu, ...], str | None]:
    gpus, driver = [], None
    for line in output.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        ok = len(cells) == 6 and cells[0].isdigit() and is_cc(cells[2]) and cells[3].isdigit()
        if not ok or not _DRIVER.match(cells[4]):
            notes.append(f"nvidia-smi printed a line cuship cannot read: {line.strip()[:80]!r}")
            continue
        gpus.append(
            Gpu(
                index=int(cells[0]),
                name=cells[1],
                cc=cells[2],
                memory_mib=int(cells[3]),
                uuid=cells[5],
            )
        )
        driver = cells[4]
    return tuple(gpus), driver


def _procfs_gpus(probe: Probe) -> tuple[Gpu, ...]:
    gpus = []
    for index, bus in enumerate(probe.listdir("/proc/driver/nvidia/gpus")):
        info = probe.read(f"/proc/driver/nvidia/gpus/{bus}/information") or ""
        match = re.search(r"^Model:\s*(.+)$", info, re.MULTILINE)
        if match:
            name = match[1].strip()
            known = _known_gpu(name)
            gpus.append(Gpu(index=index, name=name, cc=known[0] if known else None))
    return tuple(gpus)


def _driver_from_files(probe: Probe) -> str | None:
    module = (probe.read("/sys/module/nvidia/version") or "").strip()
    if _DRIVER.match(module):
        return module
    match = _KERNEL_MODULE.search(probe.read("/proc/driver/nvidia/version") or "")
    return match[1] if match else None


def _gpus(
    env: Mapping[str, str], probe: Probe, notes: list[str]
) -> tuple[tuple[Gpu, ...], str, str | None, str | None]:
    """(gpus, source, driver version, CUDA the driver supports)."""
    if settings.GPUS in env:
        return parse_gpus_override(env[settings.GPUS]), "override", None, None
    answer = probe.nvml()
    if isinstance(answer, NvmlFailure):
        notes.append(f"nvml: {answer.message}; GPUs looked for with nvidia-smi and /proc instead")
    elif answer is not None:
        gpus = tuple(
            Gpu(index=g.index, name=g.name, cc=g.cc, memory_mib=g.memory_mib, uuid=g.uuid)
            for g in answer.gpus
        )
        return gpus, "nvml", answer.driver_version, answer.cuda_driver
    smi = probe.which("nvidia-smi", env.get("PATH"))
    if smi is not None:
        output = probe.run([smi, f"--query-gpu={_SMI_FIELDS}", "--format=csv,noheader,nounits"])
        if output is None:
            notes.append("nvidia-smi is installed but failed; is the driver loaded?")
        else:
            gpus, driver = _smi_gpus(output, notes)
            header = _CUDA_HEADER.search(probe.run([smi]) or "")
            if gpus:
                return gpus, "nvidia-smi", driver, header[1] if header else None
    gpus = _procfs_gpus(probe)
    return gpus, ("procfs" if gpus else "none"), None, None


def _cuda_home(nvcc: str, env: Mapping[str, str], probe: Probe) -> str | None:
    """The toolkit root: CUDA_HOME, else the nvcc's own root, else /usr/local/cuda (nvcc may be a
    wrapper script on PATH), whichever holds include/cuda_runtime.h."""
    candidates = [
        env.get("CUDA_HOME"),
        env.get("CUDA_PATH"),
        str(Path(nvcc).resolve().parent.parent),
    ]
    for home in (*candidates, "/usr/local/cuda"):
        if home and "cuda_runtime.h" in probe.listdir(f"{home}/include"):
            return home
    return None


def find_toolkit(environ: Mapping[str, str], probe: Probe | None = None) -> Toolkit | None:
    """The CUDA toolkit a build here would use (the tool finder's nvcc and its version)."""
    return _toolkit(environ, probe or SystemProbe())


def _toolkit(env: Mapping[str, str], probe: Probe) -> Toolkit | None:
    nvcc = find_tool("nvcc", env, which=probe.which).path
    if nvcc is None:
        return None
    home = _cuda_home(nvcc, env, probe)
    real = f"{home}/bin/nvcc" if home and probe.which("nvcc", f"{home}/bin") else nvcc
    match = re.search(r"release \d+\.\d+, V(\d+\.\d+\.\d+)", probe.run([real, "--version"]) or "")
    return Toolkit(version=match[1] if match else None, nvcc=real, cuda_home=home)


_TORCH_LABEL_CUDA = re.compile(r"cu(\d{2,3})")
_VERSION_FIELD = r"^{}\s*(?::[^=]+)?=\s*(?:'([^']*)'|(None))"


def _flavour_of_label(local: str) -> tuple[str | None, str | None]:
    """(flavour, CUDA) of a torch version's local label: ``cu130`` -> ("cuda", "13.0")."""
    match = _TORCH_LABEL_CUDA.fullmatch(local)
    if match:
        digits = match[1]
        return "cuda", f"{digits[:-1]}.{digits[-1]}"
    if local == "cpu" or local.startswith("cpu."):
        return "cpu", None
    if local.startswith("rocm"):
        return "rocm", None
    if local.startswith("xpu"):
        return "xpu", None
    return None, None


def _torch_override(override: str, env: Mapping[str, str], abi: bool | None) -> TorchInfo | None:
    if override.strip().lower() in ("", "none"):
        return None
    flavour, cuda = _flavour_of_label(override.partition("+")[2])
    source = settings.TORCH if flavour else None
    said = (env.get(settings.TORCH_CUDA) or "").strip()
    if said and flavour is None:
        if said.lower() in ("none", "cpu"):
            flavour, cuda = "cpu", None
        elif re.fullmatch(r"\d+\.\d+", said):
            flavour, cuda = "cuda", said
        else:
            raise UsageError(
                f"{settings.TORCH_CUDA}={said!r} is not a CUDA version",
                hint="write 13.0, or none for a CPU build",
            )
        source = settings.TORCH_CUDA
    return TorchInfo(
        version=override,
        cuda=cuda,
        cxx11abi=abi,
        location=None,
        flavour=flavour,
        flavour_from=source,
    )


def _version_field(text: str, name: str) -> tuple[bool, str | None]:
    """(whether ``version.py`` sets ``name``, its string value or None)."""
    match = re.search(_VERSION_FIELD.format(name), text, re.MULTILINE)
    if match is None:
        return False, None
    return True, match[1]


_CUDA_FIELD = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}(?:\.[0-9]{1,4})?")


def flavour_of_files(text: str, source: str = "torch/version.py") -> tuple[str | None, str | None]:
    """(flavour, CUDA) from ``torch/version.py``: a CUDA build sets ``cuda = '13.0'``, a ROCm
    build ``hip``, an XPU build ``xpu``; a CPU build sets each to None. A ``cuda`` that is no
    CUDA version (``'²'``, ``'banana'``) is an :class:`InputError` naming ``source``."""
    fields = {name: _version_field(text, name) for name in ("cuda", "hip", "xpu")}
    cuda = fields["cuda"][1]
    if cuda and not _CUDA_FIELD.fullmatch(cuda):
        raise InputError(
            f"{source} sets cuda = {shown(cuda)}, which is not a CUDA version",
            hint="reinstall torch: its version.py is damaged",
        )
    for name, flavour in (("cuda", "cuda"), ("hip", "rocm"), ("xpu", "xpu")):
        if fields[name][1]:
            return flavour, cuda if name == "cuda" else None
    if fields["cuda"][0] and fields["hip"][0]:
        return "cpu", None
    return None, None


def _torch(
    env: Mapping[str, str], probe: Probe, site_dirs: Sequence[str] | None = None
) -> TorchInfo | None:
    override = env.get(settings.TORCH)
    abi_override = env.get(settings.TORCH_CXX11ABI)
    abi = None if abi_override is None else abi_override.strip().lower() in ("1", "true", "yes")
    if override is not None:
        return _torch_override(override, env, abi)
    from importlib import metadata

    found = (
        metadata.distributions(name="torch")
        if site_dirs is None
        else metadata.distributions(name="torch", path=list(site_dirs))
    )
    dist = next(iter(found), None)
    if dist is None:
        return None
    root = str(dist.locate_file("torch"))
    version = _dist_version(dist, root)
    text = probe.read(f"{root}/version.py") or ""
    flavour, cuda = flavour_of_files(text, f"{root}/version.py")
    if abi is None:
        lib = probe.read_bytes(f"{root}/lib/libc10.so")
        abi = None if lib is None else b"__cxx11" in lib
    return TorchInfo(
        version=version,
        cuda=cuda,
        cxx11abi=abi,
        location=root,
        flavour=flavour,
        flavour_from="torch/version.py" if flavour else None,
    )


_VERSION_HEADER = re.compile(r"^Version:[ \t]*(\S*)[ \t]*\r?$", re.MULTILINE)


def _dist_version(dist: Any, root: str) -> str:
    """torch's version from its METADATA (read by :mod:`cuship._read`), checked: PEP 440, or
    an InputError naming the torch (``banana`` would fail every comparison later)."""
    text = _read.dist_text(dist, "METADATA", _read.METADATA) or ""
    match = _VERSION_HEADER.search(text.split("\n\n", 1)[0])
    try:
        return _names.version(match[1] if match else "", "torch's version")
    except UsageError as err:
        raise InputError(f"{err.message} (the torch in {root})", hint="reinstall torch") from None


def torch_in(site_dirs: Sequence[str], probe: Probe | None = None) -> TorchInfo | None:
    """The torch installed in ``site_dirs`` (version, flavour and CUDA read from its files, never
    imported); None when there is none."""
    return _torch({}, probe or SystemProbe(), site_dirs)


def _meminfo(probe: Probe) -> tuple[float | None, float | None]:
    text = probe.read("/proc/meminfo") or ""
    found = {
        m[1]: int(m[2]) / (1024 * 1024) for m in re.finditer(r"^(\w+):\s+(\d+) kB", text, re.M)
    }
    total, avail = found.get("MemTotal"), found.get("MemAvailable")
    return (None if total is None else round(total, 1)), (
        None if avail is None else round(avail, 1)
    )


def _cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _driver_cuda(driver: str | None, notes: list[str]) -> str | None:
    if driver is None:
        return None
    from cuship.compat import load

    newest = load().max_cuda_for_driver(driver)
    if newest is None:
        notes.append(f"driver {driver} is older than every CUDA toolkit cuship knows")
        return None
    return f"{newest.major}.{newest.minor}"


def fingerprint(
    environ: Mapping[str, str] | None = None,
    probe: Probe | None = None,
    *,
    toolkit: bool = True,
    site_dirs: Sequence[str] | None = None,
) -> Fingerprint:
    """Describe this machine. ``environ`` defaults to ``os.environ``; ``probe`` to the real system.

    ``toolkit=False`` leaves the CUDA toolkit out (``None``): what installed packages need does
    not depend on it, and ``nvcc --version`` is the slowest probe. ``site_dirs``: where NVIDIA's
    wheels and torch are looked for (default: ``sys.path``).
    """
    from cuship.machine.interpreter import running

    env = os.environ if environ is None else environ
    probe = probe or SystemProbe()
    notes: list[str] = []
    gpus, source, driver, driver_cuda = _gpus(env, probe, notes)
    # With CUSHIP_GPUS the machine is entirely the fake one: the driver and its CUDA come only
    # from their variables, never from this machine's driver files.
    real_driver = source != "override" and (bool(gpus) or source == "none")
    driver = (
        env.get(settings.CUDA_DRIVER_VERSION)
        or driver
        or (_driver_from_files(probe) if real_driver else None)
    )
    if driver is not None and not _DRIVER.match(driver):
        raise UsageError(
            f"CUSHIP_CUDA_DRIVER_VERSION={driver!r} is not a driver version", hint="e.g. 570.124.06"
        )
    driver_cuda = env.get(settings.DRIVER_CUDA) or driver_cuda or _driver_cuda(driver, notes)
    python = running()
    sites = tuple(sys.path if site_dirs is None else site_dirs)
    total, available = _meminfo(probe)
    glibc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
    torch = _torch(env, probe, site_dirs)
    libs = cuda_libraries(env, probe, sites)
    loader = _loader(env, probe, sites, libs)
    notes += getattr(probe, "refused", ())
    return Fingerprint(
        gpus=gpus,
        gpu_source=source,
        driver_version=driver,
        driver_cuda=driver_cuda,
        toolkit=_toolkit(env, probe) if toolkit else None,
        torch=torch,
        python=python.python,
        python_tag=python.tag,
        platform_tags=tuple(dict.fromkeys(t.rsplit("-", 1)[1] for t in python.tags)),
        tags=python.tags,
        glibc=glibc.split()[-1] if glibc else None,
        machine=platform.machine(),
        cpus=_cpus(),
        memory_total_gib=total,
        memory_available_gib=available,
        notes=tuple(notes),
        cuda_libs=libs,
        loader=loader,
    )


def _loader(
    env: Mapping[str, str], probe: Probe, sites: tuple[str, ...], libraries: CudaLibraries
) -> LoaderView:
    """The machine's loader; NVIDIA libraries named by CUSHIP_CUDA_LIBS are its only ones."""
    described = libraries.source == settings.CUDA_LIBS
    virtual = dict(libraries.found) if described else None
    return loader_view(env, probe, sites, machine=platform.machine(), virtual=virtual)
