"""The prebuilt-or-build PEP 517 backend: take a verified prebuilt wheel, else build from source.

A project names it in its pyproject.toml::

    [build-system]
    requires = ["cuship"]
    build-backend = "cuship.backend"

    [tool.cuship.prebuilt]
    index = "https://example.org/simple"        # a simple index (cuship index writes one), or
    # url = "https://github.com/o/r/releases/download/v{version}/{dist}-{version}+cu{cuda_major}torch{torch}cxx11abi{cxx11abi}-{python_tag}-{python_tag}-{platform}.whl"
    backend = "scikit_build_core.build"         # the real backend (module or module:object)
    build-requires = ["scikit-build-core>=0.10"] # installed only when building from source

With ``url`` the placeholders are {name} {dist} {version} {cuda} {cuda_major} {cuda_short}
{torch} {cxx11abi} (TRUE/FALSE) {python_tag} {platform}; CUDA is torch's when torch is
installed with CUDA (as flash-attn does), else what the driver supports. The sha256 comes from
``<url>.sha256`` (the first word of that file): no hash, no prebuilt wheel.

``build_wheel`` resolves the wheel for this machine, downloads it and checks its sha256; a
mismatch is refused (never installed, never silently replaced by a source build). No match or
no network: the real backend builds from source, and stderr says why. Environment:
``CUSHIP_FORCE_BUILD=1`` always builds, ``CUSHIP_NO_BUILD=1`` fails instead of compiling,
``CUSHIP_PREBUILT_INDEX`` replaces the index.
"""

from __future__ import annotations

import importlib
import json
import shutil
import sysconfig
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from packaging.utils import parse_wheel_filename

from cuship import settings
from cuship.errors import CheckFailed, CushipError
from cuship.events import Emit, Event, discard
from cuship.resolve._http import DEFAULT_OPTIONS, FetchOptions, get
from cuship.resolve._template import format_url, template_values
from cuship.resolve.fetch import download
from cuship.resolve.install import resolve_index, target_from_env
from cuship.resolve.select import Candidate, Resolution, select
from cuship.resolve.settings import PrebuiltConfig, read_config
from cuship.wheel.retag import strip_label

__all__ = ["Decision", "Prebuilt", "decide", "prebuilt_candidate"]

STASH = ".cuship-prebuilt"
_ON = ("1", "true", "yes", "on")


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """Use ``candidate`` (a verified download later), or build from source because of ``why``."""

    candidate: Candidate | None
    why: str
    resolution: Resolution | None = None


def _flag(environ: Mapping[str, str], name: str) -> bool:
    return environ.get(name, "").strip().lower() in _ON


def prebuilt_candidate(
    config: PrebuiltConfig, environ: Mapping[str, str], *, options: FetchOptions, emit: Emit
) -> Candidate | str:
    """The candidate a ``url`` template names for this machine, or why there is none."""
    assert config.url is not None
    target = target_from_env(environ)
    values = template_values(
        name=config.name,
        version=config.version,
        target=target,
        machine_platform=sysconfig.get_platform(),
    )
    url = format_url(config.url, values)
    if url is None:
        return f"the url template needs values this machine lacks ({sorted(values)} known)"
    answer = get(url + ".sha256", options=options, emit=emit)
    sha = answer.body.decode("utf-8", "replace").split()
    if not sha or len(sha[0]) != 64:
        return f"{url + '.sha256'!r} holds no sha256"
    filename = url.rsplit("/", 1)[-1]
    return Candidate(filename=unquote(filename), url=url, sha256=sha[0].lower())


def decide(
    config: PrebuiltConfig,
    environ: Mapping[str, str],
    *,
    options: FetchOptions = DEFAULT_OPTIONS,
    emit: Emit = discard,
) -> Decision:
    """Prebuilt or source? Network and index trouble mean source (said in ``why``)."""
    if _flag(environ, settings.FORCE_BUILD):
        return Decision(candidate=None, why="CUSHIP_FORCE_BUILD=1")
    requirement = config.requirement
    index = environ.get(settings.PREBUILT_INDEX) or config.index
    try:
        if index:
            _, resolution = resolve_index(
                requirement, index, target_from_env(environ), options=options, emit=emit
            )
        elif config.url:
            found = prebuilt_candidate(config, environ, options=options, emit=emit)
            if isinstance(found, str):
                return Decision(candidate=None, why=found)
            resolution = select(requirement, [found], target_from_env(environ))
        else:
            return Decision(candidate=None, why="[tool.cuship.prebuilt] names no index or url")
    except CushipError as err:
        return Decision(candidate=None, why=f"no prebuilt wheel: {err.message}")
    if resolution.chosen is None:
        reasons = "; ".join(f"{v.candidate.filename}: {v.reason}" for v in resolution.rejected)
        why = f"no prebuilt wheel of {requirement} fits ({reasons or 'none listed'})"
        return Decision(candidate=None, why=why, resolution=resolution)
    chosen = resolution.chosen.candidate
    return Decision(candidate=chosen, why=f"prebuilt {chosen.filename}", resolution=resolution)


def load_backend(spec: str) -> Any:
    """The real backend object: ``module`` or ``module:attribute``."""
    module_name, _, attribute = spec.partition(":")
    module: Any = importlib.import_module(module_name)
    for part in attribute.split(".") if attribute else ():
        module = getattr(module, part)
    return module


@dataclass(frozen=True, slots=True, kw_only=True)
class Prebuilt:
    """The hook implementations, bound to a project directory, the environment and an emitter."""

    project: Path
    environ: Mapping[str, str]
    emit: Emit = discard
    options: FetchOptions = DEFAULT_OPTIONS

    def config(self) -> PrebuiltConfig:
        return read_config(self.project / "pyproject.toml")

    def _say(self, message: str, level: str = "warning") -> None:
        self.emit(Event(level=level, topic="backend", message=message))  # type: ignore[arg-type]

    def _source(self, config: PrebuiltConfig, decision: Decision) -> Any:
        """The real backend, after saying why it builds (or refusing under CUSHIP_NO_BUILD)."""
        if _flag(self.environ, settings.NO_BUILD):
            raise CheckFailed(
                f"CUSHIP_NO_BUILD=1 and {decision.why}; refusing to build {config.name} "
                "from source",
                hint="unset CUSHIP_NO_BUILD to compile, or publish a wheel for this machine",
            )
        self._say(f"building {config.name} from source with {config.backend}: {decision.why}")
        return config.backend

    def get_requires_for_build_wheel(self, config_settings: Any = None) -> list[str]:
        config = self.config()
        decision = decide(config, self.environ, options=self.options, emit=self.emit)
        if decision.candidate is not None:
            self._say(f"will use {decision.why}; no build requirements", "info")
            return []
        self._source(config, decision)
        needs = list(config.build_requires)
        try:
            real = load_backend(config.backend)
        except ImportError:
            return needs  # installed with build-requires; its own extra needs are unknown yet
        hook = getattr(real, "get_requires_for_build_wheel", None)
        return needs + (list(hook(config_settings)) if hook else [])

    def _fetch(self, candidate: Candidate, config: PrebuiltConfig, into: Path) -> Path:
        """Download and verify; the wheel handed on carries the sdist's version (no label)."""
        path = download(candidate, into, options=self.options, emit=self.emit)
        self._say(f"using prebuilt {candidate.filename} (sha256 verified)", "info")
        final = path
        if config.version is not None and parse_wheel_filename(path.name)[1].local:
            final = strip_label(path, out_dir=into / "public")
            self._say(f"installed as {final.name}, the version the sdist promises", "info")
        record = {"filename": candidate.filename, "sha256": candidate.sha256, "final": final.name}
        (into / "choice.json").write_text(json.dumps(record))
        return final

    def prepare_metadata_for_build_wheel(
        self, metadata_directory: str, config_settings: Any = None
    ) -> str:
        config = self.config()
        decision = decide(config, self.environ, options=self.options, emit=self.emit)
        target = Path(metadata_directory)
        if decision.candidate is not None:
            wheel = self._fetch(decision.candidate, config, target / STASH)
            return _extract_dist_info(wheel, target)
        real = load_backend(self._source(config, decision))
        hook = getattr(real, "prepare_metadata_for_build_wheel", None)
        if hook is not None:
            return str(hook(metadata_directory, config_settings))
        built = target / ".cuship-built"
        built.mkdir(exist_ok=True)
        name = real.build_wheel(str(built), config_settings)
        return _extract_dist_info(built / name, target)

    def build_wheel(
        self,
        wheel_directory: str,
        config_settings: Any = None,
        metadata_directory: str | None = None,
    ) -> str:
        out = Path(wheel_directory)
        if metadata_directory is not None:
            # PEP 517 passes the .dist-info directory prepare_metadata made: the stash is beside it
            ready = _ready_wheel(Path(metadata_directory).parent)
            if ready is not None:
                shutil.copyfile(ready, out / ready.name)
                return ready.name
        config = self.config()
        decision = decide(config, self.environ, options=self.options, emit=self.emit)
        if decision.candidate is not None:
            wheel = self._fetch(decision.candidate, config, out / STASH)
            shutil.copyfile(wheel, out / wheel.name)
            shutil.rmtree(out / STASH, ignore_errors=True)
            return wheel.name
        real = load_backend(self._source(config, decision))
        return str(real.build_wheel(wheel_directory, config_settings, metadata_directory))


def _ready_wheel(metadata_directory: Path) -> Path | None:
    """The wheel prepare_metadata fetched (re-verified) or built, if it did."""
    choice = metadata_directory / STASH / "choice.json"
    if choice.is_file():
        record = json.loads(choice.read_text())
        candidate = Candidate(
            filename=record["filename"],
            url=(metadata_directory / STASH / record["filename"]).as_uri(),
            sha256=record["sha256"],
        )
        download(candidate, metadata_directory / STASH)  # the local copy, hash checked again
        final = str(record["final"])
        stash = metadata_directory / STASH
        return stash / final if final == candidate.filename else stash / "public" / final
    built = sorted((metadata_directory / ".cuship-built").glob("*.whl"))
    return built[0] if built else None


def _extract_dist_info(wheel: Path, into: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        roots = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")}
        if len(roots) != 1:
            raise CheckFailed(f"{wheel.name!r} holds {len(roots)} .dist-info directories, not 1")
        root = roots.pop()
        for name in names:
            if name.startswith(root + "/") and not name.endswith("/"):
                dest = into / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(archive.read(name))
    return root
