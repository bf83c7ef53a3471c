"""The GPU architectures a job compiles are the config's: the step that puts cuship's nvcc in
front of the toolkit (see :mod:`cuship.builder.run.nvcc_shim`), the environment that points the
build at it, and what its log says was compiled.

TORCH_CUDA_ARCH_LIST and CMAKE_CUDA_ARCHITECTURES steer a build that asks torch or CMake for its
arch flags; a setup.py that appends its own ``-gencode`` flags (flash-attention, causal-conv1d,
mamba) is steered only by the nvcc it runs, found through ``CUDA_HOME``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cuship import _read
from cuship.builder.model import Step
from cuship.builder.run import nvcc_shim
from cuship.config import Config
from cuship.matrix import BuildJob

__all__ = [
    "NvccCalls",
    "arch_control",
    "describe",
    "log_path",
    "read_calls",
    "shim_env",
    "shim_step",
]

_LOG = "nvcc-calls.jsonl"
_MAX_LOG = 64 << 20  # a build of thousands of compiles writes a few MB


def _home(raw_dir: Path) -> Path:
    return raw_dir / "cuda-home"


def log_path(raw_dir: Path) -> Path:
    return raw_dir / _LOG


def shim_step(job: BuildJob, config: Config, cuda_home: str, raw_dir: Path, python: str) -> Step:
    """The step that makes the shadow toolkit whose nvcc compiles ``job``'s archs only."""
    mode = config.build.arch_flags
    flags = " ".join(job.arch.gencode)
    argv = (
        python,
        "-I",
        str(Path(nvcc_shim.__file__).resolve()),
        "make",
        "--cuda-home",
        cuda_home,
        "--into",
        str(_home(raw_dir)),
        "--mode",
        mode,
        "--log",
        str(log_path(raw_dir)),
        "--gencode",
        flags,
    )
    what = "replaces" if mode == "rewrite" else "refuses"
    return Step(
        name="arch-flags",
        description=f"a CUDA_HOME whose nvcc compiles {job.arch.torch} only ({what} other arch flags)",
        argv=argv,
    )


def shim_env(raw_dir: Path) -> dict[str, str]:
    """The variables that make a build find the shadow toolkit's nvcc: torch's cpp_extension
    (CUDA_HOME, PYTORCH_NVCC), CMake (CUDACXX) and setup.py scripts (CUDA_HOME, CUDA_PATH)."""
    home = str(_home(raw_dir))
    nvcc = str(_home(raw_dir) / "bin" / "nvcc")
    return {"CUDA_HOME": home, "CUDA_PATH": home, "CUDACXX": nvcc, "PYTORCH_NVCC": nvcc}


def arch_control(job: BuildJob, config: Config, shimmed: bool) -> str:
    """How ``job``'s arch list reaches the compiler, for ``--dry-run``."""
    script = config.script
    own = (
        f"{script.file} passes its own arch flags ({'; '.join(script.arch_flags)})"
        if script.arch_flags
        else f"{script.file or 'the build'} names no arch flags of its own"
    )
    listed = "TORCH_CUDA_ARCH_LIST, CMAKE_CUDA_ARCHITECTURES and CUDAARCHS"
    if not shimmed:
        if config.build.arch_flags == "project":
            return f"arch {job.arch.torch}: {listed} only ([build] arch_flags = 'project'); {own}"
        return f"arch {job.arch.torch}: {listed} only (the container's nvcc); {own}"
    how = {
        "rewrite": "replaces every device compile's arch flags with these",
        "stop": "fails any device compile whose arch flags differ",
    }[config.build.arch_flags]
    return f"arch {job.arch.torch}: {listed}, and cuship's nvcc {how}; {own}"


@dataclass(frozen=True, slots=True, kw_only=True)
class NvccCalls:
    """What the nvcc log says: device compiles, the archs the project asked for and the archs
    compiled, and how many compiles had their flags replaced."""

    calls: int
    device: int
    asked: tuple[str, ...]
    compiled: tuple[str, ...]
    rewritten: int

    def to_json(self) -> dict[str, object]:
        return {
            "calls": self.calls,
            "device_compiles": self.device,
            "asked": list(self.asked),
            "compiled": list(self.compiled),
            "rewritten": self.rewritten,
        }


def _order(targets: set[str]) -> tuple[str, ...]:
    def key(target: str) -> tuple[int, str]:
        digits = "".join(c for c in target if c.isdigit())
        return (int(digits) if digits else 0, target)

    return tuple(sorted(targets, key=key))


def read_calls(raw_dir: Path) -> NvccCalls | None:
    """The nvcc log of a build in ``raw_dir``; None when the build ran no shim."""
    path = log_path(raw_dir)
    try:
        text = _read.read_head(path, _read.LOG, _MAX_LOG).decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    records: list[Mapping[str, object]] = []
    for line in text.splitlines():
        try:
            record = _read.loads(line)
        except _read.JsonRefused:
            continue
        if isinstance(record, dict):
            records.append(record)
    device = [r for r in records if r.get("action") != "passthrough"]

    def union(field: str) -> set[str]:
        return {str(t) for r in device for t in r.get(field) or () if isinstance(t, str)}  # type: ignore[attr-defined]

    return NvccCalls(
        calls=len(records),
        device=len(device),
        asked=_order(union("asked")),
        compiled=_order(union("compiled")),
        rewritten=sum(1 for r in device if r.get("action") == "rewrote"),
    )


def describe(calls: NvccCalls) -> str:
    """One line for the build's log and events."""
    if calls.device == 0:
        return f"nvcc ran {calls.calls} time(s), no device compile"
    asked = ", ".join(calls.asked) or "no arch flags"
    done = ", ".join(calls.compiled)
    replaced = (
        f"; {calls.rewritten} had the project's own flags ({asked}) replaced"
        if calls.rewritten
        else ""
    )
    return f"{calls.device} device compile(s) for {done}{replaced}"
