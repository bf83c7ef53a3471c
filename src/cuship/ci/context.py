"""What every CI generator needs to know, decided once from the config: :class:`CiContext`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from cuship import settings
from cuship.ci.pin import CushipPin
from cuship.compat import Compat
from cuship.config import Config
from cuship.config.ci import CiSection
from cuship.errors import ConfigError, NothingToDo
from cuship.matrix import AbiRecord, BuildJob, expand_all, unknown_job

__all__ = ["BUILT_WHEELS", "CiContext", "context_for"]

BUILT_WHEELS = "wheelhouse/*+*.whl"
"""The wheels a build job made, among those it uploads: each carries its job's local label
(``+cu130``; a label is never empty), while the variant twin, the plain wheel and the null
variant written beside it (``[variants]``) carry none. The check and GPU jobs install these
only: an installer given the whole folder refuses it (two wheels of one project; a variant file
is no wheel name to pip, nor to uv without its preview feature), as gitlab-ci-local's run of the
example's pipeline showed."""

# Fields of [build] image that a CI matrix entry carries, as GitHub expressions / GitLab variables.
_IMAGE_FIELDS_GITHUB = {"cuda": "${{ matrix.cuda }}", "python": "${{ matrix.python }}"}
_IMAGE_FIELDS_GITLAB = {"cuda": "${CUDA}", "python": "${PYTHON}"}


@dataclass(frozen=True, slots=True, kw_only=True)
class CiContext:
    """The config plus the facts the generators derive from it."""

    config: Config
    project: str  # the project directory relative to the repository root, POSIX ("." at the root)
    name: str  # distribution name
    jobs: tuple[BuildJob, ...]
    gpu_job: BuildJob | None  # the build whose wheel GPU runs (and the check jobs) test
    source: str  # the config file, relative to the repository root
    pin: CushipPin  # the cuship the jobs install, and why
    found_cuda: tuple[str, ...] = ()  # the CUDA axis ci init found here for a config naming none

    @property
    def ci(self) -> CiSection:
        return self.config.ci

    @property
    def has_checks(self) -> bool:
        """Whether the project declares kernel checks ([check] modules): check jobs only then,
        since ``cuship check`` of a project without any exits 4 by design."""
        return bool(self.config.check.modules)

    @property
    def builds(self) -> bool:
        """Whether there is a package to build: a packages.yml, a named project, or a
        pyproject.toml or setup.py. A check-only folder of kernels (modules checked on the
        Triton interpreter, no package) gets no build jobs, which would fail by design."""
        root = self.config.root
        own = (root / "pyproject.toml").is_file() or (root / "setup.py").is_file()
        return bool(self.config.packages or self.config.project.name) or own

    @property
    def projects(self) -> tuple[str, ...]:
        """Every distribution the matrix builds (a packages.yml lists several), in order."""
        return tuple(dict.fromkeys(job.project for job in self.jobs))

    @property
    def sccache(self) -> bool:
        return self.config.build.cache == "sccache"

    @property
    def hosted(self) -> bool:
        """Whether CPU jobs run on GitHub-hosted runners (disk clean-up makes sense there)."""
        return "self-hosted" not in self.ci.runs_on

    @property
    def check_python(self) -> str:
        """Python of the check jobs: that of the build whose wheel they install, if any."""
        return self.gpu_job.python if self.builds and self.gpu_job else self.ci.python

    def variables(self) -> dict[str, str]:
        """Every config value a job script reads, by variable name. Scripts read them from the
        environment (GitHub ``env:``, GitLab ``variables:``, SkyPilot ``envs:``), quoted: a
        value is never pasted into a script's text, so no name or path can run as code."""
        values = {"PROJECT": self.project, "PINNED_CUSHIP": self.pin.text}
        if self.found_cuda:  # every runner plans the CUDA ci init planned, whatever its nvcc
            values[settings.MATRIX_CUDA] = ",".join(self.found_cuda)
        if self.has_checks:
            values["TORCH_INDEX"] = self.ci.torch_index
            values["CHECK_REQUIREMENTS"] = "\n".join(self.ci.check_install)
        return values

    def check_installs(self, python: str | None = None) -> list[str]:
        """Shell lines installing what the check engines need on top of cuship: torch's CPU
        build from ``$TORCH_INDEX`` (the Triton interpreter; triton and numba come with
        cuship[check]), the project's own dependencies (its pyproject.toml) and
        ``$CHECK_REQUIREMENTS`` ([ci] check_install). ``python``: uv's ``--python`` (default:
        the active virtual environment). Constant text: the values are variables."""
        target = f' --python "{python}"' if python else ""
        lines = []
        if self.ci.torch_index:
            lines.append(f'uv pip install{target} --index-url "$TORCH_INDEX" torch')
        if (self.config.root / "pyproject.toml").is_file():
            lines.append(f'uv pip install{target} -r "$PROJECT/pyproject.toml"')
        if self.ci.check_install:
            lines.append("printf '%s\\n' \"$CHECK_REQUIREMENTS\" > check-requirements.txt")
            lines.append(f"uv pip install{target} -r check-requirements.txt")
        return lines

    def image(self, fields: dict[str, str]) -> str:
        """[build] image with its fields spelled as CI expressions; only {cuda} and {python}."""
        try:
            return self.config.build.image.format(**fields)
        except (KeyError, IndexError, ValueError) as err:
            raise ConfigError(
                str(self.config.source),
                "build.image",
                f"{self.config.build.image!r} uses a field a CI matrix entry does not carry ({err})",
                hint="generated CI fills only {cuda} and {python}, e.g. "
                "'nvidia/cuda:{cuda}-devel-ubuntu22.04'; or set [ci] container = false",
            ) from err

    def github_image(self) -> str:
        return self.image(_IMAGE_FIELDS_GITHUB)

    def gitlab_image(self) -> str:
        return self.image(_IMAGE_FIELDS_GITLAB)

    def gpu_wheel_artifact(self) -> str:
        if self.gpu_job is None:  # pragma: no cover - callers check gpu_runners first
            raise NothingToDo("no build job for the GPU runs")
        return f"wheel-{self.gpu_job.id}"


def _pick_gpu_job(config: Config, jobs: tuple[BuildJob, ...]) -> BuildJob | None:
    wanted = config.ci.gpu_job
    if wanted is not None:
        for job in jobs:
            if job.id == wanted:
                return job
        raise unknown_job(wanted, [j.id for j in jobs])
    same_python = [j for j in jobs if j.python == config.ci.python] or list(jobs)
    if not same_python:
        return None
    newest = max(j.cuda for j in same_python)
    return [j for j in same_python if j.cuda == newest][-1]


def context_for(
    config: Config,
    compat: Compat,
    *,
    pin: CushipPin,
    project: str = ".",
    torch_abi: AbiRecord | None = None,
    found_cuda: tuple[str, ...] = (),
) -> CiContext:
    """Expand the matrix (it must not be empty) and fix the names the generators share.

    ``project`` is the project directory relative to where the CI files go (the repository root);
    ``pin`` the cuship the jobs install; ``config`` and ``torch_abi`` as ``cuship matrix`` has
    them (the host's CUDA default and the sdists read, the torch axis collapsed by the record),
    so the jobs are the ones the generated prepare job and ``cuship build --job`` plan;
    ``found_cuda`` the CUDA axis found on this host for a config that names none, which the jobs
    get as ``CUSHIP_MATRIX_CUDA`` (a runner's own nvcc, or none, would plan another).
    """
    matrix = expand_all(config, compat, torch_abi=torch_abi)
    if not matrix.jobs:
        raise NothingToDo(
            f"the matrix of {str(config.source)!r} is empty: generated CI would build nothing",
            hint="run `cuship matrix --explain` and widen [matrix]",
        )
    project_path = PurePosixPath(project)
    try:
        source = str(project_path / config.source.resolve().relative_to(config.root))
    except ValueError:
        source = str(project_path / config.source.name)
    return CiContext(
        config=config,
        project=str(project_path),
        name=config.project.name or matrix.jobs[0].project,
        jobs=matrix.jobs,
        gpu_job=_pick_gpu_job(config, matrix.jobs),
        source=source,
        pin=pin,
        found_cuda=found_cuda,
    )
