"""One job as the runner takes it, passed whole from the commands to the finished wheel and its
smoke test: :class:`JobWork`, made from a :class:`~cuship.builder.model.BuildPlan` by
:func:`~cuship.builder.run.execute.run_plan` (every job, the CPU-only one too)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cuship.builder.glibc import GlibcFloor
from cuship.builder.host.interpreters import Interpreter
from cuship.builder.model import Step

__all__ = ["JobSmoke", "JobWork", "SmokeMode"]

SmokeMode = Literal["auto", "isolated", "system-site"]


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSmoke:
    """How a job's smoke test runs: with which interpreter (None: the running one), in which
    venv (``[build] smoke``), seeing which builder site-packages when it falls back."""

    python: Interpreter | None = None
    mode: SmokeMode = "auto"
    site_dirs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class JobWork:
    """One job as :func:`~cuship.builder.run.execute.build_job` runs it: its command steps
    (each in a fresh ``raw_dir``, ``log`` written anew, and given the time of each finishing
    step), where its wheel lands (``out_dir``), and what the wheel is held to.

    ``arches``: the arch spec the wheel must cover; empty for a CPU-only wheel, which must then
    hold no device code at all. ``torch``: the torch it was built against; a wheel that links
    torch gets the pin its torch ABI needs (``torch==X.Y.*`` exact, ``torch>=X.Y`` stable), and
    is smoke-tested over that torch. ``floor``: the glibc floor it is verified against when
    enforced, else warned against. ``immutable``: a wheel of the same name already in
    ``out_dir`` must not change its bytes (a released sdist's wheel, which may be published):
    a build that differs is refused and kept apart, the earlier wheel stays. ``repairs``: where
    repairs are kept to be reused for the same raw wheel (see
    :func:`~cuship.wheel.write.repair.repair`). ``build_dir``: the CMake build directory the
    steps use and how to read its key (before the steps, to open it; after them, to seal it: a
    build venv's packages are installed by the steps), kept for a rebuild when the key holds
    (see :mod:`cuship.builder.reuse`). ``gate``: the CUDA-gate switches the build set, named
    when a CUDA job's build compiled no device code (stopped then, before repair).
    """

    job_id: str
    steps: Sequence[Step]
    raw_dir: Path
    out_dir: Path
    log: Path
    label: str
    arches: str
    test_import: str | None = None
    torch: str | None = None
    floor: GlibcFloor | None = None
    smoke: JobSmoke = dataclasses.field(default_factory=JobSmoke)
    immutable: bool = False
    build_dir: tuple[Path, Callable[[], Mapping[str, str]]] | None = None
    repairs: Path | None = None
    gate: tuple[str, ...] = ()
