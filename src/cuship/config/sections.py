"""The sections of cuship's configuration as frozen dataclasses: each field with its type, its
default, its check and its documentation (the reference page and the JSON Schema are rendered
from them); :class:`Config`, the whole of one project's configuration as
:func:`cuship.config.load_config` returns it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from cuship._record import frozen
from cuship.config import values
from cuship.config.ci import CiSection
from cuship.config.packages import PackageSpec
from cuship.config.script import BuildScript
from cuship.config.sources import Sdist
from cuship.config.values import between
from cuship.schema import field_doc

__all__ = [
    "BenchCaseSection",
    "BenchSection",
    "BuildSection",
    "CheckModeSection",
    "CheckOpSection",
    "CheckSection",
    "Config",
    "LabelSection",
    "MatrixRule",
    "MatrixSection",
    "ProjectSection",
    "VariantsSection",
]


@frozen
class ProjectSection:
    """The package being built; defaults come from pyproject.toml's [project]."""

    name: str | None = field_doc("Distribution name.", default=None)
    version: str | None = field_doc("Version (no local label).", default=None)
    source: str = field_doc("Source directory, relative to the config file.", default=".")
    requires_python: str | None = field_doc(
        "Python versions the package supports.", default=None, validate=values.specifier
    )


@frozen
class MatrixRule:
    """One include/exclude rule; a key left out matches everything. Versions match by prefix
    (``cuda = "13"`` matches 13.0.2) or shell-style patterns (``torch = "2.*"``)."""

    python: str | None = None
    cuda: str | None = None
    torch: str | None = None
    arch: str | None = None
    cxx11abi: bool | None = None
    platform: str | None = None


@frozen
class MatrixSection:
    """The build matrix: every combination of these, pruned by compatibility data."""

    python: tuple[str, ...] = field_doc(
        "CPython versions; default: those the matrix's torch releases support (no torch: the "
        "newest torch release's), within requires-python.",
        default=(),
        validate=values.python_version,
        not_empty_when_given=True,
        schema={"minItems": 1},
    )
    cuda: tuple[str, ...] = field_doc(
        "CUDA toolkits ('12.8.1', or '12.8' for the newest 12.8.x); default: what this host "
        "builds (its nvcc's CUDA; with no nvcc and [build] toolkits = 'fetch', the newest from "
        "PyPI; else the newest known), said by the plan.",
        default=(),
        validate=values.version,
        not_empty_when_given=True,
        schema={"minItems": 1},
    )
    torch: tuple[str, ...] = field_doc(
        "torch minor versions to build against ('2.8'); empty when the package needs no torch.",
        default=(),
        validate=values.version,
    )
    arch: tuple[str, ...] = field_doc(
        "Architecture lists, one wheel per list: '8.0;9.0;10.0;12.0+PTX'.",
        default=("8.0;9.0;10.0;12.0+PTX",),
        validate=values.arch_list,
        not_empty_when_given=True,
        strings=True,
        schema={"minItems": 1},
    )
    cxx11abi: tuple[bool, ...] = field_doc(
        "C++ ABIs to build when torch offers both (torch < 2.7).", default=()
    )
    platform: tuple[str, ...] = field_doc("Wheel platforms.", default=("linux_x86_64",))
    torch_cuda: Literal["major", "exact"] = field_doc(
        "'major': torch must publish a build for the job's CUDA major (what flash-attn does); "
        "'exact': for its exact major.minor.",
        default="major",
    )
    include: tuple[MatrixRule, ...] = field_doc("Extra combinations.", default=())
    exclude: tuple[MatrixRule, ...] = field_doc("Combinations to drop.", default=())
    device_code: bool = field_doc(
        "false: the package compiles no CUDA device code (a plain C, C++ or Cython extension): "
        "one wheel per Python (and torch) labelled +cpu, verified to hold none and built "
        "without nvcc; the cuda and arch axes do not apply.",
        default=True,
    )
    torch_axis: Literal["auto", "always"] = field_doc(
        "'auto': once a wheel shows it links no torch or only torch's stable ABI, build one "
        "wheel per combination without torch (labels lose torch and the C++ ABI); "
        "'always': one wheel per torch version, whatever the wheel links.",
        default="auto",
    )


@frozen
class LabelSection:
    """The local version label each wheel carries, e.g. ``+cu128torch2.8``."""

    template: str | None = field_doc(
        "Fields: {cuda} {cuda_mm} {cuda_short} {cuda_major} {torch} {torch_short} {abi}, as "
        "plain {name} (no conversion, format spec, index or attribute). "
        "Default: cu{cuda_short}, then torch{torch} with torch, then cxx11abi{abi} when the "
        "matrix varies the ABI.",
        default=None,
        validate=values.label_template,
    )


@frozen
class VariantsSection:
    """Wheel variants (PEP 825): beside each labelled wheel its variant twin, whose NVIDIA
    properties are read from its binaries, and one plain wheel per Python tag for pip and for
    uv without ``--preview-features wheel-variants``."""

    enabled: bool = field_doc("Write the variant wheels and the plain fallback.", default=False)
    label: str = field_doc(
        "The variant label of each build, from the fields of [label] template: lower-case "
        "[0-9a-z_.], at most 16 characters.",
        default="cu{cuda_short}",
        validate=values.label_template,
    )
    plain: str | None = field_doc(
        "The local label of the build also published as the plain wheel; default: the build "
        "of the oldest CUDA (the one the most drivers run).",
        default=None,
    )
    null: bool = field_doc(
        "Also publish the null variant (the plain build, no property): what uv with variants "
        "takes when no GPU build fits.",
        default=False,
    )
    upper_bound: bool = field_doc(
        "Give each variant cuda_version_upper_bound (the next CUDA major, exclusive).",
        default=False,
    )


@frozen
class BuildSection:
    """How wheels are built."""

    cache: Literal["none", "sccache"] = field_doc("Compiler cache.", default="none")
    memory_per_job_gib: float = field_doc(
        "Memory one nvcc thread may take; MAX_JOBS = min(cores, free / (this x nvcc_threads)).",
        default=5.0,
        validate=values.memory_gib,
    )
    nvcc_threads: int = field_doc("nvcc --threads (1 to 64).", default=2, validate=between(1, 64))
    max_jobs: int | None = field_doc(
        "Fix MAX_JOBS per job instead of deriving it (1 to 1024; not divided by parallel).",
        default=None,
        validate=between(1, 1024),
    )
    parallel: int = field_doc(
        "Jobs built at once when --parallel is not given (1 to 256); each gets its share "
        "of the derived MAX_JOBS (cores and memory divided by the jobs built at once).",
        default=1,
        validate=between(1, 256),
    )
    isolation: bool = field_doc("Build in an isolated environment.", default=True)
    incremental: bool = field_doc(
        "A rebuild of a job reuses its earlier build's CMake build directory (scikit-build-core "
        "without isolation: no configure, only changed sources compile) and the repair of an "
        "unchanged raw wheel, each keyed on what decides it; false: every build starts clean.",
        default=True,
    )
    extra_deps: tuple[str, ...] = field_doc(
        "Installed before building (PEP 508 requirements; no pip option, no path).",
        default=(),
        validate=values.requirement,
    )
    build_args: tuple[str, ...] = field_doc("Extra arguments for the build frontend.", default=())
    test_import: str | None = field_doc("Module imported by the smoke test.", default=None)
    image: str = field_doc(
        "Container image template; fields {cuda} {cuda_mm} {cuda_major} {python} {python_tag}.",
        default="nvidia/cuda:{cuda}-devel-ubuntu22.04",
        validate=values.image_template,
    )
    engine: Literal["docker", "podman"] | None = field_doc("Container engine.", default=None)
    container_memory: str = field_doc("Container memory limit.", default="6g")
    torch_index: str = field_doc(
        "Where torch for a job comes from; field {variant} (cu128).",
        default="https://download.pytorch.org/whl/{variant}",
        validate=values.torch_index_template,
    )
    cpu_fallback: bool = field_doc(
        "The project also builds without CUDA (with CUSHIP_CPU_ONLY=1 and cpu_env set): "
        "without nvcc, `cuship ship` builds that one CPU-only wheel, labelled +cpu.",
        default=False,
    )
    cpu_env: Mapping[str, str] = field_doc(
        "Extra environment for the CPU-only build, for projects with their own switch "
        "(e.g. FLASH_ATTENTION_SKIP_CUDA_BUILD = 'TRUE').",
        default_factory=dict,
    )
    toolkits: Literal["host", "fetch"] = field_doc(
        "Where a job's CUDA toolkit comes from. 'host': this machine's nvcc; a job of another "
        "CUDA minor needs another runner. 'fetch': a 13.x job whose minor differs from the "
        "host's nvcc (or every 13.x job on a host without one) builds with that toolkit "
        "assembled from NVIDIA's PyPI wheels (`cuship toolkit install`, cached).",
        default="host",
    )
    manylinux: str | None = field_doc(
        "The glibc floor, as '2_28' (manylinux_2_28): a repaired wheel whose platform tag needs "
        "a newer glibc fails verification, naming the symbols that raise it. Unset: the floor "
        "of the job's torch release (torch.toml), else 2_28, and a wheel above it is a warning.",
        default=None,
        validate=values.glibc_floor,
        schema={"pattern": r"^[0-9]+_[0-9]+$"},
    )
    pythons: tuple[str, ...] = field_doc(
        "Interpreters to build with, by path ('~/.pyenv/versions/3.12.1/bin/python3.12'; "
        "relative to the config file): each serves the jobs of its Python version, before "
        "the running one, python3.X on PATH, pyenv and uv-managed Pythons.",
        default=(),
        validate=values.interpreter_path,
    )
    env: Mapping[str, str] = field_doc(
        "Environment every build job sees, e.g. CAUSAL_CONV1D_FORCE_BUILD = 'TRUE'. Values may "
        "name the job's {python}, {cuda}, {cuda_major}, {torch}, {arch} and {label}. The "
        "*_FORCE_BUILD switches setup.py names are set to TRUE without it.",
        default_factory=dict,
        validate=values.build_env,
    )
    arch_flags: Literal["rewrite", "stop", "project"] = field_doc(
        "GPU arch flags the project passes nvcc itself (setup.py's own -gencode). 'rewrite': "
        "every device compile gets [matrix] arch instead, through a shadow CUDA_HOME whose nvcc "
        "replaces them; 'stop': a compile whose flags differ fails, naming them; 'project': "
        "leave them (verify still checks the wheel).",
        default="rewrite",
    )
    smoke: Literal["auto", "isolated", "system-site"] = field_doc(
        "The import smoke test's venv. 'isolated': a fresh venv, dependencies from the index; "
        "'system-site': a venv over the builder's site-packages, the wheel installed with "
        "--no-deps --no-index (no network); 'auto': isolated, falling back to system-site "
        "when the isolated install fails (an offline host).",
        default="auto",
    )


_MAX_CASES = 100_000  # random-shape cases per op and dtype
_MAX_SAMPLES = 10_000_000  # benchmark samples, seeds, repeats


@frozen
class CheckOpSection:
    """Per-op additions and overrides: ``[check.ops.<name>]``."""

    rtol: float | None = field_doc(
        "Relative tolerance for every dtype of this op.", default=None, validate=values.non_negative
    )
    atol: float | None = field_doc(
        "Absolute tolerance for every dtype of this op.", default=None, validate=values.non_negative
    )
    shapes: tuple[Mapping[str, int], ...] = field_doc(
        "Extra shapes, as dimension sizes: [{rows = 3, cols = 5}].",
        default=(),
        validate=values.shape,
    )
    dtypes: tuple[str, ...] = field_doc(
        "Only these dtypes for this op.", default=(), validate=values.check_dtype
    )


@frozen
class CheckModeSection:
    """What ``--quick`` runs: ``[check.quick]``."""

    dtypes: tuple[str, ...] = field_doc(
        "dtypes checked in quick mode.", default=("float32",), validate=values.check_dtype
    )
    fuzz: int = field_doc(
        "Random-shape cases per op and dtype.", default=2, validate=between(0, _MAX_CASES)
    )


@frozen
class CheckSection:
    """Kernel checks (``cuship check``); the thorough mode's counts live here."""

    modules: tuple[str, ...] = field_doc(
        "Check modules: paths ('checks/ops.py') or dotted names, relative to the project.",
        default=(),
    )
    pythonpath: tuple[str, ...] = field_doc(
        "Directories, relative to the project, added to sys.path AFTER site-packages when "
        "importing check modules: they serve only modules not importable otherwise, so an "
        "installed build of the project (with its compiled extension) wins over its source tree.",
        default=(".", "src"),
    )
    packages: tuple[str, ...] = field_doc(
        "Top-level packages whose origin each run records (file imported, installed wheel or "
        "source tree, compiled extensions that load); default: [project] name as a module name.",
        default=(),
    )
    fuzz: int = field_doc(
        "Random-shape cases per op and dtype (thorough mode).",
        default=8,
        validate=between(0, _MAX_CASES),
    )
    timeout: float = field_doc(
        "Seconds one case may run before it counts as hung.",
        default=300.0,
        validate=values.positive,
    )
    seed: int = field_doc(
        "Seed when --seed is not given (0 or more).", default=0, validate=between(0, 2**64 - 1)
    )
    parallel: int = field_doc(
        "Worker processes when --parallel is not given (0: as many as the run's work pays "
        "for, up to one per core; at most 1024).",
        default=0,
        validate=between(0, 1024),
    )
    store: str = field_doc(
        "Results history (SQLite), relative to the project; CUSHIP_STORE overrides.",
        default=".cuship/results.db",
    )
    regression_threshold: float = field_doc(
        "A group regresses when its max abs error exceeds the baseline's by this fraction.",
        default=0.1,
        validate=values.non_negative,
    )
    rel_regression_factor: float = field_doc(
        "A group regresses when its max rel error exceeds the baseline's times this factor "
        "(at least 1; relative error swings more than absolute error near zero).",
        default=2.0,
        validate=between(1.0, 1e12),
    )
    quick: CheckModeSection = field_doc("Quick mode.", default_factory=CheckModeSection)
    ops: Mapping[str, CheckOpSection] = field_doc(
        "Per-op overrides, by op name.", default_factory=dict
    )


@frozen
class BenchCaseSection:
    """Per-case overrides: ``[bench.cases.<case name or key>]``."""

    threshold: float | None = field_doc(
        "Effect size for this case's verdicts (0.05 = 5 %).", default=None, validate=values.positive
    )
    floors: Mapping[str, str] = field_doc(
        "Throughput floors for this case, by GPU model or 'CPU'.",
        default_factory=dict,
        validate=values.floors,
    )


@frozen
class BenchSection:
    """Benchmarks (``cuship bench``): where cases live, the stopping rule, gates and floors."""

    modules: tuple[str, ...] = field_doc(
        "Benchmark modules: paths ('benchmarks/bench_ops.py') or dotted names.", default=()
    )
    pythonpath: tuple[str, ...] = field_doc(
        "Directories, relative to the project, added to sys.path AFTER site-packages when "
        "importing benchmark modules: an installed build of the project wins over its source tree.",
        default=(".", "src"),
    )
    packages: tuple[str, ...] = field_doc(
        "Top-level packages whose origin each run records; default: [project] name as a "
        "module name.",
        default=(),
    )
    noise: float = field_doc(
        "Stop sampling when the relative noise of the median falls under this (0.005 = 0.5 %).",
        default=0.005,
        validate=values.positive,
    )
    min_samples: int = field_doc(
        "Samples taken before stopping.", default=10, validate=between(1, _MAX_SAMPLES)
    )
    max_samples: int = field_doc(
        "Samples after which sampling stops.", default=10000, validate=between(1, _MAX_SAMPLES)
    )
    min_time: float = field_doc(
        "Seconds sampled before stopping.", default=0.5, validate=values.positive
    )
    timeout: float = field_doc(
        "Seconds after which one case stops sampling.", default=15.0, validate=values.positive
    )
    sample_time: float = field_doc(
        "Wall timer: calls are batched so that one sample lasts at least this many seconds.",
        default=0.001,
        validate=values.positive,
    )
    seeds: int | None = field_doc(
        "Fixed protocol: this many input seeds (with repeats); default: adaptive stopping.",
        default=None,
        validate=between(1, _MAX_SAMPLES),
    )
    repeats: int | None = field_doc(
        "Fixed protocol: samples per seed.", default=None, validate=between(1, _MAX_SAMPLES)
    )
    threshold: float = field_doc(
        "Effect size below which a change is SAME (0.05 = 5 %).",
        default=0.05,
        validate=values.positive,
    )
    drop_throttled: bool = field_doc(
        "Leave samples taken under 0.9 × the max SM clock out of the statistics (default: every "
        "sample counts, and the throttled share is reported).",
        default=False,
    )
    floors: Mapping[str, str] = field_doc(
        "Throughput floors by GPU model (matched like `cuship compat`) or 'CPU': "
        '"5000 ops/s", "900 GB/s", "1.5 TFLOP/s".',
        default_factory=dict,
        validate=values.floors,
    )
    cases: Mapping[str, BenchCaseSection] = field_doc(
        "Per-case overrides, by case name or key.", default_factory=dict
    )
    burn_in_tolerance: float = field_doc(
        "Burn-in: MiB a memory series may grow over the run before a trend fails it.",
        default=1.0,
        validate=values.positive,
    )
    store: str = field_doc(
        "Results history (SQLite), relative to the project; CUSHIP_STORE overrides.",
        default=".cuship/results.db",
    )


@frozen
class _ConfigFile:
    """cuship.toml (or [tool.cuship] in pyproject.toml)."""

    project: ProjectSection = field_doc("The package.", default_factory=ProjectSection)
    matrix: MatrixSection = field_doc("The build matrix.", default_factory=MatrixSection)
    label: LabelSection = field_doc("Local version labels.", default_factory=LabelSection)
    variants: VariantsSection = field_doc(
        "Wheel variants (PEP 825) beside the labelled wheels.", default_factory=VariantsSection
    )
    build: BuildSection = field_doc("Building.", default_factory=BuildSection)
    check: CheckSection = field_doc("Kernel checks.", default_factory=CheckSection)
    ci: CiSection = field_doc("Generated CI (cuship ci init).", default_factory=CiSection)
    bench: BenchSection = field_doc("Benchmarks.", default_factory=BenchSection)


@frozen
class Config:
    """Everything cuship read from a project's configuration."""

    source: Path
    root: Path
    project: ProjectSection
    matrix: MatrixSection
    label: LabelSection
    build: BuildSection
    packages: tuple[PackageSpec, ...] = ()
    build_requires: tuple[str, ...] = ()
    build_backend: str | None = None  # pyproject's build-system.build-backend
    build_dir: str | None = None  # a fixed build directory ([tool.scikit-build] build-dir)
    requirement: str | None = None
    check: CheckSection = dataclasses.field(default_factory=CheckSection)
    ci: CiSection = dataclasses.field(default_factory=CiSection)
    bench: BenchSection = dataclasses.field(default_factory=BenchSection)
    variants: VariantsSection = dataclasses.field(default_factory=VariantsSection)
    script: BuildScript = dataclasses.field(default_factory=BuildScript)  # setup.py, read
    matrix_keys: frozenset[str] = frozenset()  # the [matrix] keys the file gives
    found: tuple[str, ...] = ()  # what cuship found out rather than was told (said by the plan)
    sdists: Mapping[str, Sdist] = dataclasses.field(default_factory=dict)  # by requirement
    sdist: Sdist | None = None  # a packages.yml entry's: the released sdist it builds
    torch_default: str | None = None  # the torch a torch extension's sdist builds against

    @property
    def source_dir(self) -> Path:
        return (self.root / self.project.source).resolve()
