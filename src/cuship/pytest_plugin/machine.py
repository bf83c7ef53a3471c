"""The GPUs a test process can use, and whether a :class:`GpuRequirement` is met by them.

:class:`GpuMachine` is the part of :func:`cuship.machine.fingerprint` the pytest plugin needs,
narrowed to the GPUs ``CUDA_VISIBLE_DEVICES`` leaves visible. It round-trips through JSON so an
xdist controller can hand it (and each worker's share of the GPUs) to its workers.

Memory is compared by card class: a known card reporting within 10% of a size it is sold in
counts as that size (an H100 80GB reports 79.6 GiB and satisfies ``memory="80GiB"``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from cuship import settings
from cuship.arch import cc_tuple
from cuship.machine import Fingerprint, Gpu
from cuship.pytest_plugin.markers import GpuRequirement, article, describe, format_gib

if TYPE_CHECKING:
    from cuship.compat import GpuModel

__all__ = ["GpuMachine", "card_memory_mib", "unmet", "worker_share"]

FindModel = Callable[[str], "GpuModel | None"]
_SOURCES = {
    "override": settings.GPUS,
    "nvml": "NVML",
    "nvidia-smi": "nvidia-smi",
    "procfs": "/proc/driver/nvidia",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuMachine:
    """GPUs visible to tests, with the driver, toolkit and torch facts the header shows.

    ``devices`` holds, for each GPU, the ``CUDA_VISIBLE_DEVICES`` entry that selects it (the
    user's own entry when they set the variable, else the UUID when known, else the index);
    ``None`` when the GPUs cannot be addressed one by one (MIG), which turns slicing off.
    """

    gpus: tuple[Gpu, ...]
    devices: tuple[str, ...] | None
    source: str
    driver_version: str | None = None
    driver_cuda: str | None = None
    toolkit: str | None = None
    torch: str | None = None
    visible_env: str | None = None
    hidden: int = 0  # GPUs of the machine that CUDA_VISIBLE_DEVICES left out

    @classmethod
    def from_fingerprint(cls, fp: Fingerprint, environ: Mapping[str, str]) -> GpuMachine:
        """The GPUs of ``fp`` that ``CUDA_VISIBLE_DEVICES`` in ``environ`` leaves visible."""
        gpus: tuple[Gpu, ...] = fp.gpus
        devices: tuple[str, ...] | None = _default_devices(fp.gpus)
        visible = environ.get("CUDA_VISIBLE_DEVICES")
        if visible is not None:
            gpus, devices = _visible(fp.gpus, visible)
        return cls(
            gpus=gpus,
            devices=devices,
            source=fp.gpu_source,
            driver_version=fp.driver_version,
            driver_cuda=fp.driver_cuda,
            toolkit=fp.toolkit.version if fp.toolkit else None,
            torch=fp.torch.version if fp.torch else None,
            visible_env=visible,
            hidden=len(fp.gpus) - len(gpus),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "gpus": [
                {"index": g.index, "name": g.name, "cc": g.cc, "memory_mib": g.memory_mib}
                | ({"uuid": g.uuid} if g.uuid else {})
                for g in self.gpus
            ],
            "devices": None if self.devices is None else list(self.devices),
            "source": self.source,
            "driver_version": self.driver_version,
            "driver_cuda": self.driver_cuda,
            "toolkit": self.toolkit,
            "torch": self.torch,
            "visible_env": self.visible_env,
            "hidden": self.hidden,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> GpuMachine:
        devices = doc.get("devices")
        return cls(
            gpus=tuple(Gpu(**g) for g in doc["gpus"]),
            devices=None if devices is None else tuple(devices),
            source=doc["source"],
            driver_version=doc.get("driver_version"),
            driver_cuda=doc.get("driver_cuda"),
            toolkit=doc.get("toolkit"),
            torch=doc.get("torch"),
            visible_env=doc.get("visible_env"),
            hidden=int(doc.get("hidden", 0)),
        )

    def share(self, worker: int, workers: int) -> GpuMachine:
        """Worker ``worker`` of ``workers``' share (see :func:`worker_share`)."""
        if self.devices is None or not self.gpus:
            return self
        picked = worker_share(len(self.gpus), worker, workers)
        devices = tuple(self.devices[i] for i in picked)
        return GpuMachine(
            gpus=tuple(self.gpus[i] for i in picked),
            devices=devices,
            source=self.source,
            driver_version=self.driver_version,
            driver_cuda=self.driver_cuda,
            toolkit=self.toolkit,
            torch=self.torch,
            visible_env=",".join(devices),
        )

    def absence(self) -> str:
        """Why no GPU is visible, for messages."""
        if self.visible_env is not None and (
            self.hidden or self.source not in ("none", "override")
        ):
            # a faked GPU has no UUID: an xdist share of a real one (GPU-...) hides it
            faked = ", those CUSHIP_GPUS fakes" if self.source == "override" else ""
            return f"CUDA_VISIBLE_DEVICES={self.visible_env!r} hides them{faked}"
        if self.source == "override":
            return "CUSHIP_GPUS says none"
        return "NVML, nvidia-smi and /proc/driver/nvidia report none"

    def driver_text(self) -> str:
        if self.driver_cuda is not None:
            driver = f" (driver {self.driver_version})" if self.driver_version else ""
            return f"CUDA {self.driver_cuda}{driver}"
        if self.source == "override":
            return "no driver CUDA version (set CUSHIP_DRIVER_CUDA with CUSHIP_GPUS)"
        if self.driver_version is not None:
            return f"driver {self.driver_version} of unknown CUDA version"
        return "no NVIDIA driver"

    def summary(self) -> str:
        """One line: GPUs, driver, toolkit, torch."""
        if self.gpus:
            cards = ", ".join(_card(g) for g in self.gpus)
            plural = "" if len(self.gpus) == 1 else "s"
            gpus = (
                f"{len(self.gpus)} GPU{plural} ({_SOURCES.get(self.source, self.source)}): {cards}"
            )
        else:
            gpus = f"no GPU ({self.absence()})"
        driver = "driver: none"
        if self.driver_version or self.driver_cuda:
            driver = f"driver {self.driver_version or '?'} (CUDA {self.driver_cuda or '?'})"
        toolkit = f"nvcc {self.toolkit}" if self.toolkit else "nvcc: none"
        return f"{gpus}; {driver}; {toolkit}; torch {self.torch or 'none'}"


def _card(gpu: Gpu) -> str:
    facts = [f"cc {gpu.cc}" if gpu.cc else "cc ?"]
    if gpu.memory_mib is not None:
        facts.append(format_gib(gpu.memory_mib))
    return f"{gpu.name} [{', '.join(facts)}]"


def _default_devices(gpus: Sequence[Gpu]) -> tuple[str, ...]:
    # UUIDs select the same card whatever order CUDA enumerates in (NVML lists by PCI bus).
    if gpus and all(g.uuid for g in gpus):
        return tuple(str(g.uuid) for g in gpus)
    return tuple(str(g.index) for g in gpus)


def _visible(gpus: Sequence[Gpu], value: str) -> tuple[tuple[Gpu, ...], tuple[str, ...] | None]:
    """Apply ``CUDA_VISIBLE_DEVICES``: CUDA stops at the first entry it cannot resolve."""
    chosen: list[Gpu] = []
    tokens: list[str] = []
    for token in (t.strip() for t in value.split(",")):
        if token.startswith("MIG-"):
            return tuple(gpus), None
        gpu = _resolve(token, gpus)
        if gpu is None or gpu in chosen:
            break
        chosen.append(gpu)
        tokens.append(token)
    return tuple(chosen), tuple(tokens)


def _resolve(token: str, gpus: Sequence[Gpu]) -> Gpu | None:
    if token.isdigit():
        return next((g for g in gpus if g.index == int(token)), None)
    if token.startswith("GPU-"):
        return next((g for g in gpus if g.uuid and g.uuid.startswith(token)), None)
    return None


def worker_share(count: int, worker: int, workers: int) -> tuple[int, ...]:
    """Positions of the GPUs worker ``worker`` (0-based) of ``workers`` gets out of ``count``.

    At least as many GPUs as workers: contiguous slices that never overlap, the first
    ``count % workers`` workers taking one extra (4 GPUs, 3 workers: 0-1, 2, 3). More workers
    than GPUs: one GPU each, round-robin, so GPUs are shared (2 GPUs, 3 workers: 0, 1, 0).
    """
    if count <= 0 or workers <= 0:
        return ()
    if workers >= count:
        return (worker % count,)
    base, extra = divmod(count, workers)
    start = worker * base + min(worker, extra)
    return tuple(range(start, start + base + (1 if worker < extra else 0)))


def card_memory_mib(gpu: Gpu, find_model: FindModel) -> float | None:
    """The card's memory for comparisons: its sold size when the report is within 10% of one."""
    reported = gpu.memory_mib
    if reported is None:
        return None
    model = find_model(gpu.name)
    if model is None or not model.memory_gib:
        return float(reported)
    nominal = min((n * 1024 for n in model.memory_gib), key=lambda n: abs(n - reported))
    close = abs(nominal - reported) <= 0.1 * nominal
    return float(nominal) if close else float(reported)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Check:
    phrase: str
    ok: Callable[[Gpu], bool]
    show: Callable[[Gpu], str] | None


def _show_cc(gpu: Gpu) -> str:
    return gpu.cc or "unknown"


def _checks(req: GpuRequirement, find_model: FindModel) -> list[_Check]:
    checks = []
    if req.names:
        names = req.names

        def is_model(g: Gpu) -> bool:
            model = find_model(g.name)
            return model is not None and model.name in names

        cards = " or ".join(names)
        phrase = f"{article(cards)} {cards}" if req.count == 1 else f"model {cards}"
        checks.append(_Check(phrase=phrase, ok=is_model, show=None))
    if req.min_cc is not None:
        low = cc_tuple(req.min_cc)
        checks.append(
            _Check(
                phrase=f"compute capability ≥ {req.min_cc}",
                ok=lambda g: g.cc is not None and cc_tuple(g.cc) >= low,
                show=_show_cc,
            )
        )
    if req.cc:
        wanted = {cc_tuple(c) for c in req.cc}
        checks.append(
            _Check(
                phrase=f"compute capability {' or '.join(req.cc)}",
                ok=lambda g: g.cc is not None and cc_tuple(g.cc) in wanted,
                show=_show_cc,
            )
        )
    if req.memory_mib is not None:
        checks.append(_memory_check(req.memory_mib, find_model))
    return checks


def _memory_check(need: int, find_model: FindModel) -> _Check:
    def ok(g: Gpu) -> bool:
        have = card_memory_mib(g, find_model)
        return have is not None and have >= need

    def show(g: Gpu) -> str:
        have = card_memory_mib(g, find_model)
        return "unknown memory" if have is None else format_gib(have)

    return _Check(phrase=f"≥ {format_gib(need)} memory", ok=ok, show=show)


def _show(gpu: Gpu, checks: Sequence[_Check]) -> str:
    parts = [c.show(gpu) for c in checks if c.show is not None]
    return f"{' / '.join(parts)} ({gpu.name})" if parts else gpu.name


def _cuda_ok(spec: SpecifierSet, driver_cuda: str | None) -> bool:
    if driver_cuda is None:
        return False
    try:
        return spec.contains(Version(driver_cuda), prereleases=True)
    except InvalidVersion:
        return False


def unmet(req: GpuRequirement, machine: GpuMachine, find_model: FindModel) -> str | None:
    """Why ``machine`` cannot run a test that asks for ``req`` (``None``: it can).

    The reason says what was asked and what was found:
    ``needs compute capability ≥ 9.0; found 8.6 (NVIDIA A10)``.
    """
    if not machine.gpus:
        return f"needs {describe(req)}; found no GPU ({machine.absence()})"
    checks = _checks(req, find_model)
    fitting = sum(1 for g in machine.gpus if all(c.ok(g) for c in checks))
    if fitting < req.count:
        listing = ", ".join(_show(g, checks) for g in machine.gpus)
        phrases = " and ".join(c.phrase for c in checks)
        if req.count == 1:
            return f"needs {phrases}; found {listing}"
        what = f"{req.count} GPUs" + (f" with {phrases}" if checks else "")
        have = f"{fitting} such" if checks else str(len(machine.gpus))
        return f"needs {what}; found {have}: {listing}"
    if req.cuda is not None and not _cuda_ok(req.cuda, machine.driver_cuda):
        return f"needs a driver supporting CUDA {req.cuda}; found {machine.driver_text()}"
    return None
