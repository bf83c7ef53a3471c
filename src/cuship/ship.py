"""``cuship ship``: plan → build what this host can → repair/label/verify → quick check → index.

Each stage's wall time is kept so a user (and the benchmark) sees where the minutes go.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import parse_wheel_filename
from packaging.version import Version

from cuship import _read
from cuship._fs import remove_file, write_json
from cuship.attest.keys import SigningKey
from cuship.builder import collapse
from cuship.builder.model import BuildPlan, Host
from cuship.builder.plan import plan_cpu, plan_job
from cuship.builder.record import read_record
from cuship.builder.run.batch import (
    Outcome,
    build_all,
    outcome_of,
    plan_shared,
    require_buildable,
)
from cuship.builder.run.execute import run_plan
from cuship.builder.toolkits import cuda_ways_out
from cuship.compat import load
from cuship.config import Config
from cuship.errors import CheckFailed, ToolMissing
from cuship.events import Emit, Event, discard
from cuship.index.simple import IndexSummary
from cuship.matrix import jobs_with_configs

if TYPE_CHECKING:
    from cuship.check.report.results import CheckReport

__all__ = ["InstallLines", "ShipReport", "matrix_pythons", "ship"]

PYPI = "https://pypi.org/simple"


@dataclass(frozen=True, slots=True, kw_only=True)
class InstallLines:
    """How one shipped project is installed from the index, with pip and with uv."""

    project: str
    version: str
    pip: str
    uv: str

    def to_json(self) -> dict[str, str]:
        return {"project": self.project, "version": self.version, "pip": self.pip, "uv": self.uv}


@dataclass(frozen=True, slots=True, kw_only=True)
class ShipReport:
    outcomes: tuple[Outcome, ...]
    index: IndexSummary | None
    site: Path
    stages: Mapping[str, float] = field(default_factory=dict)
    check: CheckReport | None = None
    cpu_only: bool = False
    torch_axis: tuple[str, ...] = ()  # what the torch ABI did to the matrix, and why
    variants: tuple[str, ...] = ()  # the variant wheels and plain fallbacks written

    @property
    def failed(self) -> bool:
        checked_bad = self.check is not None and self.check.verdict == "failed"
        return checked_bad or any(o.status == "failed" for o in self.outcomes)

    def install_line(self, project: str, url: str | None = None) -> str:
        """The pip command that installs what was shipped from the index.

        The site holds only the project's own wheels, so dependencies (numpy, torch, …) come from
        PyPI as an extra index. pip takes the highest version across both indexes, so a project
        name also taken on PyPI could win there; `cuship install` pins the exact file by hash.
        """
        where = url or (self.site / "simple").as_uri()
        return f"pip install {project} --index-url {where} --extra-index-url {PYPI}"

    def install_lines(self, url: str | None = None) -> tuple[InstallLines, ...]:
        """Per project built (a packages.yml builds several), the lines that install its wheel
        from this index: pinned to the newest version built here (pip takes the highest
        version across its indexes, so PyPI's newer sdist would win unpinned), ``--index-url``
        this index with PyPI extra for the dependencies; uv's ``--index`` puts this index
        ahead of PyPI."""
        where = url or (self.site / "simple").as_uri()
        newest: dict[str, Version] = {}
        for outcome in self.outcomes:
            if outcome.status != "built" or outcome.result is None:
                continue
            name, version, _, _ = parse_wheel_filename(outcome.result.wheel.name)
            public = Version(version.public)
            if name not in newest or public > newest[name]:
                newest[name] = public
        return tuple(
            InstallLines(
                project=name,
                version=str(version),
                pip=f'pip install "{name}=={version}" --index-url {where} --extra-index-url {PYPI}',
                uv=f'uv pip install "{name}=={version}" --index {where}',
            )
            for name, version in newest.items()
        )

    def torch_notes(self, url: str | None = None) -> tuple[str, ...]:
        """Per project whose wheels build against a CUDA torch and pin it (``+cu130torch2.13``:
        ``torch==2.13.*``), why the plain install line is not enough: pip meets that pin with a
        CPU torch too (``2.13.0+cpu``), which ``cuship resolve`` and ``doctor`` catch and pip
        cannot; and the two routes that install the right pair."""
        from cuship.judge.fixes import PYTORCH_INDEX

        where = url or (self.site / "simple").as_uri()
        notes: dict[str, str] = {}
        for outcome in self.outcomes:
            job = outcome.job
            if outcome.status != "built" or job is None or job.torch is None:
                continue
            if not (job.torch_variant or "").startswith("cu") or "torch" not in job.label:
                continue
            minor = f"{job.torch.major}.{job.torch.minor}"
            index = PYTORCH_INDEX.format(variant=job.torch_variant)
            notes.setdefault(
                job.project,
                f"{job.project}'s +{job.label} wheel requires torch=={minor}.*, which plain pip "
                f"also meets with a CPU torch ({minor}.0+cpu) and the import then fails: install "
                f'the torch it was built against first (pip install "torch=={minor}.*" '
                f"--index-url {index}), or let cuship pick the pair (cuship install "
                f"{job.project} --index {where}, or the variant line with uv)",
            )
        return tuple(notes.values())

    def to_json(self, project: str) -> dict[str, object]:
        """``cuship ship --json`` (``ship-json.schema.json``): every job (``wheel`` null when it
        built none), the quick check, the index, the stages' seconds, and, when something was
        indexed, the lines that install ``project`` from it."""
        indexed = self.index is not None
        return {
            "cpu_only": self.cpu_only,
            "jobs": [{"wheel": None, **o.to_json()} for o in self.outcomes],
            "check": None if self.check is None else self.check.to_json(),
            "index": self.index.to_json() if self.index else None,
            "stages": {k: round(v, 2) for k, v in self.stages.items()},
            "torch_axis": list(self.torch_axis),
            "install": self.install_line(project) if indexed else None,
            "installs": [i.to_json() for i in self.install_lines()] if indexed else [],
            "variants": list(self.variants),
            "install_variants": self.variants_line(project) if indexed else None,
        }

    def variants_line(self, project: str, url: str | None = None) -> str | None:
        """The uv command that installs the variant for the machine (PEP 825), when variants
        were written; pip and uv without the flag install the plain wheel."""
        if not self.variants:
            return None
        where = url or (self.site / "simple").as_uri()
        return (
            f"uv pip install --preview-features wheel-variants {project} --index-url {where} "
            f"--extra-index-url {PYPI}"
        )


def matrix_pythons(config: Config) -> set[str]:
    """The Python versions of the config's jobs: the interpreters a ship looks for."""
    record = read_record(config.root)
    return {job.python for _, job in jobs_with_configs(config, load(), torch_abi=record)}


class _Clock:
    def __init__(self) -> None:
        self.stages: dict[str, float] = {}

    def run(self, name: str, emit: Emit) -> _Stage:
        emit(Event(level="info", topic="ship", message=f"stage: {name}"))
        return _Stage(self, name)


class _Stage:
    def __init__(self, clock: _Clock, name: str) -> None:
        self.clock, self.name = clock, name

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.clock.stages[self.name] = time.perf_counter() - self.start


def ship(
    path: Path,
    out_dir: Path,
    *,
    config: Config,
    host: Host,
    environ: Mapping[str, str],
    quick_check: bool = True,
    sign_key: Path | None = None,
    parallel: int | None = None,
    rebuild: bool = False,
    emit: Emit = discard,
) -> ShipReport:
    """Run the whole pipeline for the project at ``path`` (its ``config`` as loaded); wheels and
    site go under ``out_dir``.

    Without nvcc, a project with ``[build] cpu_fallback`` gets its CPU-only wheel (said plainly);
    one without is refused with exit 3. With ``sign_key`` each wheel gets a signed build
    attestation (``WHEEL.intoto.jsonl``) before indexing, and the index links it. Up to
    ``parallel`` jobs build at once (None: ``[build] parallel``; see
    :func:`~cuship.builder.run.batch.build_all`); a job whose wheel an earlier run built from the
    same inputs is reused unless ``rebuild``.
    """
    key = _signing_key(sign_key)  # read before any build: a bad key costs seconds, not a build
    clock = _Clock()
    with clock.run("plan", emit):
        plans, workers, collapser = _plan(config, host, out_dir / "wheels", parallel, emit)
    cpu_only = _cpu_only(config, host, emit, all(p.job.cpu for p in plans))
    if not cpu_only:
        require_buildable(plans, repr(str(path)))
    with clock.run("build", emit):
        outcomes = build_all(
            plans,
            environ=environ,
            emit=emit,
            collapse=collapser,
            workers=workers,
            rebuild=rebuild,
        )
        if cpu_only:
            outcomes = (*outcomes, _cpu_outcome(config, host, out_dir, plans, environ, emit))
    check = None
    wheels = [o.result.wheel for o in outcomes if o.result is not None and o.status == "built"]
    if quick_check and config.check.modules:
        with clock.run("check", emit):
            check = _checked(path, config, wheels, out_dir, environ, emit)
    if key is not None and wheels:
        with clock.run("attest", emit):
            _attest(outcomes, plans, key, environ, emit)
    variants, summary = _publish(config, wheels, out_dir, clock, emit)
    return ShipReport(
        outcomes=outcomes,
        index=summary,
        site=out_dir / "site",
        stages=dict(clock.stages),
        check=check,
        cpu_only=cpu_only,
        torch_axis=collapse.axis_notes(config, load()),
        variants=tuple(path.name for path in variants),
    )


def _signing_key(path: Path | None) -> SigningKey | None:
    if path is None:
        return None
    from cuship.attest import load_signing_key

    return load_signing_key(path)


def _plan(
    config: Config, host: Host, wheels: Path, parallel: int | None, emit: Emit
) -> tuple[list[BuildPlan], int, collapse.Collapser]:
    """Every job of the matrix planned for this host, wheels under ``wheels``, up to
    ``parallel`` (None: ``[build] parallel``) built at once: the plans, how many workers build
    them, the torch axis."""
    at_once = config.build.parallel if parallel is None else parallel
    record, collapser = collapse.start(config, emit)
    pairs = jobs_with_configs(config, load(), torch_abi=record)

    def plan_all(host: Host) -> list[BuildPlan]:
        return [plan_job(job, cfg, host, mode="local", out_dir=wheels) for cfg, job in pairs]

    plans, workers = plan_shared(plan_all, host, at_once, collapser)
    return plans, workers, collapser


def _cpu_outcome(
    config: Config,
    host: Host,
    out_dir: Path,
    plans: Sequence[BuildPlan],
    environ: Mapping[str, str],
    emit: Emit,
) -> Outcome:
    """Build, label, verify (no device code) and smoke-import the CPU-only wheel: a plan run
    as every job's is, nominally of the CUDA of the matrix's first job."""
    import functools

    cuda = plans[0].job.cuda if plans else load().toolkits[-1].version
    plan = plan_cpu(config, host, out_dir=out_dir / "wheels", cuda=cuda)
    build = functools.partial(run_plan, plan, environ=environ, emit=emit)
    return outcome_of(plan.job.id, build, emit)


def _checked(
    path: Path,
    config: Config,
    wheels: Sequence[Path],
    out_dir: Path,
    environ: Mapping[str, str],
    emit: Emit,
) -> CheckReport:
    """The quick check, against the wheel built for this interpreter when there is one."""
    installable = _installable_here(wheels)
    name = config.project.name
    if installable is not None and name:
        return _check_installed(path, installable, name, out_dir, environ, emit)
    return _quick_check(path, environ, emit)


def _publish(
    config: Config, wheels: list[Path], out_dir: Path, clock: _Clock, emit: Emit
) -> tuple[tuple[Path, ...], IndexSummary | None]:
    """The variant wheels (when ``[variants]`` asks) and the index of every wheel, each a stage."""
    from cuship.index.describe import describe_wheel
    from cuship.index.simple import write

    variants: tuple[Path, ...] = ()
    if wheels and config.variants.enabled:
        from cuship.judge.variants import publish_configured

        with clock.run("variants", emit):
            variants = publish_configured(config.variants, wheels, out_dir / "wheels")
            wheels = [*wheels, *variants]
    if not wheels:
        return variants, None
    with clock.run("index", emit):
        return variants, write(wheels, out_dir / "site", describe=describe_wheel, emit=emit)


def _cpu_only(config: Config, host: Host, emit: Emit, no_cuda: bool = False) -> bool:
    """Whether this run takes the CPU-only path; exit 3 when there is no nvcc and no such path.
    With ``[build] toolkits = "fetch"`` the 13.x jobs bring their own nvcc from PyPI; ``no_cuda``
    (every job builds a package without device code) needs none."""
    if host.nvcc is not None or config.build.toolkits == "fetch" or no_cuda:
        return False
    if not config.build.cpu_fallback:
        raise ToolMissing(
            "no nvcc found: building CUDA wheels needs the CUDA toolkit",
            hint="install it and set CUDA_HOME (or put nvcc on PATH); "
            + cuda_ways_out()
            + "; if the project also builds without CUDA, [build] cpu_fallback = true builds "
            "its CPU-only wheel",
        )
    emit(
        Event(
            level="warning",
            topic="ship",
            message="no nvcc on this host: CPU-only path. One wheel without CUDA kernels (+cpu) is "
            "built; every CUDA job needs a runner with nvcc.",
        )
    )
    return True


def _attest(
    outcomes: Sequence[Outcome],
    plans: Sequence[BuildPlan],
    key: SigningKey,
    environ: Mapping[str, str],
    emit: Emit,
) -> None:
    """A signed SLSA build provenance beside each built wheel, naming its matrix entry."""
    import functools

    from cuship.attest.run import attest_files
    from cuship.machine import fingerprint

    machine = functools.cache(lambda: fingerprint(environ).to_json())  # once for all wheels
    jobs = {p.job.id: p.job.to_json() for p in plans}
    for outcome in outcomes:
        if outcome.result is None or outcome.status != "built":
            continue
        wheel = outcome.result.wheel
        entry = (
            outcome.job.to_json()
            if outcome.job is not None
            else jobs.get(outcome.job_id, {"id": outcome.job_id, "label": "cpu"})
        )
        results = wheel.parent / "logs" / f"{outcome.job_id}.job.json"
        write_json(results, {"jobs": [{**entry, "wheel": wheel.name}]}, indent=None)
        (written,) = attest_files(
            [wheel],
            key,
            results=[results],
            environ=environ,
            machine=machine,
        ).envelopes
        emit(Event(level="info", topic="ship", message=f"attested {wheel.name}: {written.name}"))


def _installable_here(wheels: Sequence[Path]) -> Path | None:
    """The first built wheel this interpreter can install (its tags), if any."""
    from packaging.utils import parse_wheel_filename

    from cuship.machine.interpreter import running

    here = set(running().tags)
    for wheel in wheels:
        if any(str(tag) in here for tag in parse_wheel_filename(wheel.name)[3]):
            return wheel
    return None


def _check_installed(
    path: Path, wheel: Path, name: str, out_dir: Path, environ: Mapping[str, str], emit: Emit
) -> CheckReport:
    """The quick check of what users install: ``wheel`` into a venv layered over this
    environment (gpu-run's install, no network), then ``cuship check --quick --device cpu
    --installed`` inside it, not stored."""
    import sys

    from cuship import process
    from cuship.check.report.results import CheckReport
    from cuship.gpurun.execute import install, probe
    from cuship.gpurun.plan import plan_install

    path, work = path.resolve(), (out_dir / "check").resolve()  # the stages run in the project
    base = probe(sys.executable, env=environ, cwd=path, venv=work / "venv")
    plan = plan_install(wheel, base, in_place=False, venv=work / "venv")
    installed = install(
        plan, wheel, name, env=environ, cwd=path, log=work / "install.log", emit=emit
    )
    if installed.exit_code:
        raise CheckFailed(
            f"the quick check could not install {wheel.name}: {installed.reason}",
            hint=f"see {installed.log}",
        )
    report_path = work / "check.json"
    remove_file(work, "check.json")
    argv = [plan.python, "-m", "cuship", "check", str(path), "--quick", "--device", "cpu"]
    argv += ["--installed", "--no-store", "--format", "json", "-o", str(report_path)]
    argv += ["--allow-missing-engines"]  # ship names them in its summary; it does not fail
    emit(Event(level="info", topic="ship", message=f"quick check of {wheel.name}, installed"))
    done = process.run(argv, env=environ, cwd=path)
    if not report_path.is_file():
        tail = done.tail(1) or "no output"
        raise CheckFailed(f"the quick check of {wheel.name} wrote no report: {tail}")
    report = CheckReport.from_json(_read.read_json(report_path, _read.RESULTS))
    _say_unavailable(report, emit)
    return report


def _say_unavailable(report: CheckReport, emit: Emit) -> None:
    for engine in report.unavailable:
        emit(
            Event(
                level="warning",
                topic="ship",
                message=f"quick check: engine {engine.engine} left out, {engine.error} "
                f"({engine.fix})",
            )
        )


def _quick_check(path: Path, environ: Mapping[str, str], emit: Emit) -> CheckReport:
    """``cuship check --quick --device cpu`` on the project's source tree (no wheel built here
    fits this interpreter), not stored (ship is not a check run).

    ``cuship[build]`` alone has no torch, triton or numba, and ship must not fail for an extra the
    user did not ask for: the check probes each engine once (the same probe as ``cuship check``),
    skips the groups of an engine that cannot import, and ship names each one with its fix.
    """
    from cuship.check.run.session import CheckRequest, run_check

    request = CheckRequest(
        path=path,
        target=str(path),
        device="cpu",
        quick=True,
        store=False,
        require_engines=False,  # ship names each left-out engine in its summary
    )
    report = run_check(request, environ=environ, emit=emit)
    _say_unavailable(report, emit)
    return report
