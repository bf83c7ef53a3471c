"""Compatibility knowledge as data: CUDA toolkits, torch releases and GPU models.

The facts live in ``cuship/data/{cuda,torch,gpus}.toml``, one row per toolkit, release or GPU,
each citing its source. This module loads them into frozen dataclasses, checks them, and answers
the questions the rest of cuship asks (which toolkit is ``cu128``, can CUDA 13 build for sm_70,
which driver runs which toolkit, what compute capability is an "NVIDIA H100 80GB HBM3").
"""

from __future__ import annotations

import bisect
import difflib
import functools
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from packaging.version import InvalidVersion, Version

from cuship._record import frozen
from cuship.compat.checks import check_gpus, check_ptx, check_toolkits, check_torch
from cuship.compat.files import CudaFile, GpusFile, PtxFile, TorchFile, read
from cuship.compat.models import CudaToolkit, GpuModel, PtxIsa, TorchRelease, format_driver
from cuship.compat.peaks import GpuPeak, check_peaks
from cuship.errors import UsageError

__all__ = [
    "DATA_DIR",
    "SECTIONS",
    "Compat",
    "CudaToolkit",
    "GpuModel",
    "GpuPeak",
    "PtxIsa",
    "Section",
    "TorchRelease",
    "format_driver",
    "load",
]

DATA_DIR = Path(__file__).parent.parent / "data"

Section = Literal["cuda", "torch", "gpus"]
SECTIONS: tuple[Section, ...] = ("cuda", "torch", "gpus")

_CU_LABEL = re.compile(r"^cu(\d{2,3})$")
_VENDOR_WORDS = frozenset({"nvidia", "geforce", "tesla"})


def _name_tokens(name: str) -> tuple[str, ...]:
    words = re.split(r"[^0-9a-z]+", name.lower())
    return tuple(w for w in words if w and w not in _VENDOR_WORDS)


def gpu_key(name: str) -> str:
    """The normalised form names are compared in: vendor words, case and spacing removed."""
    return "".join(_name_tokens(name))


def _nearest(known: Sequence[Version], wanted: Version) -> list[Version]:
    """The known versions just below and just above ``wanted``."""
    index = bisect.bisect_left(known, wanted)
    return [known[i] for i in (index - 1, index) if 0 <= i < len(known)]


def _parse_spec(spec: str, what: str) -> Version:
    text = spec.strip().lower()
    label = _CU_LABEL.match(text)
    if label:  # cu128 → 12.8, cu130 → 13.0; cu12 / cu13 (a major alone, as flash-attn labels) → 12
        digits = label.group(1)
        text = digits if len(digits) == 2 else f"{digits[:-1]}.{digits[-1]}"
    try:
        return Version(text)
    except InvalidVersion as err:
        raise UsageError(
            f"{spec!r} is not a {what} version",
            hint="write it like 12.8.1, 12.8 or cu128" if what == "CUDA" else "write it like 2.8",
        ) from err


def _minor_of(version: Version) -> Version:
    return Version(f"{version.major}.{version.minor}")


@frozen
class Compat:
    """All compatibility knowledge, with the questions cuship asks of it."""

    toolkits: tuple[CudaToolkit, ...]
    torch: tuple[TorchRelease, ...]
    gpus: tuple[GpuModel, ...]
    peaks: tuple[GpuPeak, ...] = ()
    ptx: tuple[PtxIsa, ...] = ()
    torch_checked: str = ""  # the day torch.toml was last held to an index (YYYY-MM-DD)

    def to_json(self, sections: Iterable[Section] = SECTIONS) -> dict[str, list[dict[str, object]]]:
        """``cuship compat --json``: the rows of each of ``sections``, each with its source."""
        rows: dict[Section, Sequence[CudaToolkit | TorchRelease | GpuModel]] = {
            "cuda": self.toolkits,
            "torch": self.torch,
            "gpus": self.gpus,
        }
        wanted = set(sections)
        return {name: [row.to_json() for row in rows[name]] for name in SECTIONS if name in wanted}

    def peak(self, name: str) -> GpuPeak | None:
        """The datasheet peaks of the variant NVML calls ``name`` (exact name, normalised), or
        None: a model name alone (``"H100"``) does not say which variant's peaks apply."""
        wanted = gpu_key(name)
        return next((p for p in self.peaks if wanted in map(gpu_key, p.names)), None)

    def cuda(self, spec: str) -> CudaToolkit:
        """The toolkit for ``spec``.

        ``"12.8.1"`` matches exactly; ``"12.8"`` and ``"cu128"`` give the newest 12.8.x; ``"12"``
        the newest 12.x. Unknown → :class:`UsageError` naming the nearest known versions.
        """
        wanted = _parse_spec(spec, "CUDA")
        width = len(wanted.release)
        matches = [t for t in self.toolkits if t.version.release[:width] == wanted.release]
        if width >= 3:
            matches = [t for t in matches if t.version == wanted]
        if matches:
            return matches[-1]
        minors = sorted({_minor_of(t.version) for t in self.toolkits})
        near = [str(v) for v in _nearest(minors, _minor_of(wanted) if width > 1 else wanted)]
        same_minor = [
            str(t.version) for t in self.toolkits if t.major_minor == str(_minor_of(wanted))
        ]
        raise UsageError(
            f"unknown CUDA version {spec!r}",
            hint=f"known near it: {', '.join(same_minor or near)}; "
            "`cuship compat --cuda` lists all",
        )

    def torch_release(self, spec: str) -> TorchRelease:
        """The torch release for ``"2.8"``, ``"2.8.0"`` or ``"2.8.0+cu128"``.

        A patch newer than the newest one known, or a ``+cuXYZ`` label that release was not
        built for, is a :class:`UsageError` too.
        """
        wanted = _parse_spec(spec, "torch")
        minor = _minor_of(wanted)
        found = [r for r in self.torch if r.version == minor]
        if not found:
            near = _nearest([r.version for r in self.torch], minor)
            raise UsageError(
                f"unknown torch version {spec!r}",
                hint=f"known near it: {', '.join(str(v) for v in near)}; "
                "`cuship compat --torch` lists all",
            )
        release = found[0]
        _check_patch_and_label(release, wanted, spec)
        return release

    def find_gpu(self, name: str) -> GpuModel | None:
        """The GPU model ``name`` refers to, or None.

        Matching ignores case, punctuation and the words NVIDIA/GeForce/Tesla. An exact name or
        alias wins; otherwise the longest model name or alias that the reported name starts with,
        word for word (``"NVIDIA A100-SXM4-80GB"`` → A100, while ``"RTX A1000"`` matches nothing).
        """
        tokens = _name_tokens(name)
        prefixes = {"".join(tokens[:k]): k for k in range(1, len(tokens) + 1)}
        best: tuple[int, GpuModel] | None = None
        for gpu in self.gpus:
            for label in (gpu.name, *gpu.aliases):
                key = gpu_key(label)
                if key in prefixes and (best is None or len(key) > best[0]):
                    best = (len(key), gpu)
        return best[1] if best else None

    def gpu(self, name: str) -> GpuModel:
        """Like :meth:`find_gpu`; an unknown name is a :class:`UsageError` listing close names."""
        found = self.find_gpu(name)
        if found is not None:
            return found
        labels = {gpu_key(label): label for g in self.gpus for label in (g.name, *g.aliases)}
        close = difflib.get_close_matches(gpu_key(name), list(labels), n=4, cutoff=0.5)
        hint = f"close names: {', '.join(labels[c] for c in close)}" if close else None
        raise UsageError(
            f"unknown GPU {name!r}",
            hint=(hint + "; " if hint else "") + "`cuship compat --gpus` lists the known models",
        )

    def max_cuda_for_driver(self, driver: str | Version) -> Version | None:
        """The newest toolkit version whose own driver minimum ``driver`` meets (None if none)."""
        have = _driver(driver)
        fitting = [t.version for t in self.toolkits if t.min_driver_linux <= have]
        return fitting[-1] if fitting else None

    def driver_supports(
        self, driver: str | Version, cuda: str, *, minor_compat: bool = True
    ) -> bool:
        """True if a Linux driver can run code built with toolkit ``cuda``.

        With ``minor_compat`` (the default) this is NVIDIA's minor-version compatibility: any
        driver at or above the major's family minimum (``525.60.13`` for 12.x, ``580`` for 13.x)
        runs applications from every toolkit of that major. That is the promise PyTorch's and
        uv's wheel selection rely on, and what holds for wheels carrying SASS for the GPU.
        It does not cover JIT-compiling PTX from a newer toolkit or the newest APIs, which need
        the toolkit's own driver: pass ``minor_compat=False`` to require ``min_driver_linux``.
        """
        have = _driver(driver)
        toolkit = self.cuda(cuda)
        if toolkit.min_driver_linux <= have:
            return True
        return minor_compat and toolkit.family_min_driver_linux <= have

    def cuda_of_isa(self, isa: str) -> Version | None:
        """The first CUDA release that writes and loads PTX ISA ``isa`` (``"8.5"`` -> 12.5);
        None for a version the data does not know."""
        try:
            wanted = Version(isa)
        except InvalidVersion:
            return None
        return next((row.cuda for row in self.ptx if row.version == wanted), None)

    def isa_limit(self, cuda: str | Version) -> Version | None:
        """The newest PTX ISA a driver running CUDA ``cuda`` JIT-compiles (12.2 -> 8.2); None
        when the data knows no ISA that old."""
        have = _minor_of(cuda if isinstance(cuda, Version) else Version(cuda))
        known = [row.version for row in self.ptx if row.cuda <= have]
        return known[-1] if known else None


def _driver(driver: str | Version) -> Version:
    if isinstance(driver, Version):
        return driver
    try:
        return Version(driver.strip())
    except InvalidVersion as err:
        raise UsageError(
            f"{driver!r} is not a driver version", hint="write it like 570.124.06"
        ) from err


def _check_patch_and_label(release: TorchRelease, wanted: Version, spec: str) -> None:
    if len(wanted.release) >= 3 and Version(wanted.public) > release.latest:
        raise UsageError(
            f"torch {spec!r} is newer than the newest {release.minor} patch known "
            f"({release.latest})",
            hint="update cuship, or name an existing patch release",
        )
    local = wanted.local or ""
    if local.startswith("cu") and not release.has_cuda(local):
        raise UsageError(
            f"torch {release.minor} has no {local} build ({spec!r})",
            hint=f"torch {release.minor} was published for {', '.join(release.variants)}",
        )


# --- loading ---------------------------------------------------------------------------------


def load(data_dir: Path | None = None) -> Compat:
    """Load and check the data files in ``data_dir`` (default: the ones shipped with cuship).

    The shipped files are parsed once per process. A malformed file raises
    :class:`~cuship.errors.ConfigError` naming the file and the key.
    """
    if data_dir is None:
        return _load_default()
    return _load(data_dir)


@functools.cache
def _load_default() -> Compat:
    return _load(DATA_DIR)


def _load(data_dir: Path) -> Compat:
    cuda_file, cuda = read(data_dir / "cuda.toml", CudaFile)
    torch_file, torch = read(data_dir / "torch.toml", TorchFile)
    gpus_file, gpus = read(data_dir / "gpus.toml", GpusFile)
    check_toolkits(cuda_file.at("toolkit").each(cuda.toolkit))
    check_torch(torch_file.at("release").each(torch.release), {t.major_minor for t in cuda.toolkit})
    known_sms = {sm for t in cuda.toolkit for sm in t.sms}
    check_gpus(gpus_file.at("gpu").each(gpus.gpu), known_sms, gpu_key)
    names_of = {g.name: {gpu_key(n) for n in (g.name, *g.aliases)} for g in gpus.gpu}
    check_peaks(gpus_file.at("peak").each(gpus.peak), names_of, gpu_key)
    ptx_file, ptx = read(data_dir / "ptx.toml", PtxFile)
    check_ptx(ptx_file.at("isa").each(ptx.isa))
    return Compat(
        toolkits=cuda.toolkit,
        torch=torch.release,
        gpus=gpus.gpu,
        peaks=gpus.peak,
        ptx=ptx.isa,
        torch_checked=torch.checked,
    )
