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

Wheel hooks: the first hook a frontend calls (``get_requires_for_build_wheel`` under build
isolation) decides, and for a prebuilt wheel downloads it, checks its sha256 (a mismatch is
refused: never installed, never silently replaced by a source build), and returns no build
requirements. The other hooks of the same frontend run reuse that decision and that wheel (see
:mod:`cuship.resolve.stash`). The wheel handed over carries the sdist's version and a
``cuship.json`` saying which file it was (see :mod:`cuship.resolve.provenance`). No match or no
network: the real backend builds from source with ``build-requires``, and stderr says why.

Sdist and editable hooks are always the real backend's: ``get_requires_for_build_sdist`` and
``get_requires_for_build_editable`` return ``build-requires`` (plus the real backend's own
answer when it is importable), so the frontend installs the real backend before calling it.

Environment: ``CUSHIP_FORCE_BUILD=1`` always builds, ``CUSHIP_NO_BUILD=1`` fails instead of
compiling, ``CUSHIP_PREBUILT_INDEX`` replaces the index.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import parse_wheel_filename

from cuship import _read, settings
from cuship._fs import remove_tree, sha256_file, under
from cuship._record import frozen
from cuship.errors import CheckFailed, InputError, ToolMissing, UsageError
from cuship.events import Emit, Event, Level, discard
from cuship.resolve.decide import (
    Decision,
    build_torch_problem,
    decide,
    flag,
    prebuilt_candidate,
    target_torch,
)
from cuship.resolve.fetch import download
from cuship.resolve.http import DEFAULT_OPTIONS, FetchOptions
from cuship.resolve.provenance import FILENAME, Handover, add_to_wheel
from cuship.resolve.settings import PrebuiltConfig, read_config
from cuship.resolve.stash import STASH, Choice, Stash, stash_for
from cuship.version import __version__
from cuship.wheel.read.members import check_members, member_limits, read_member
from cuship.wheel.write.retag import strip_label

__all__ = ["STASH", "Decision", "Prebuilt", "decide", "load_backend", "prebuilt_candidate"]

Kind = Literal["sdist", "wheel", "editable"]


def load_backend(spec: str) -> Any:
    """The real backend object: ``module`` or ``module:attribute``."""
    module_name, _, attribute = spec.partition(":")
    module: Any = importlib.import_module(module_name)
    for part in attribute.split(".") if attribute else ():
        module = getattr(module, part)
    return module


def unmet(requirements: Iterable[str]) -> list[str]:
    """The requirements (PEP 508) that this interpreter's installed distributions do not meet."""
    missing = []
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue  # the real backend's own business: it will say so itself
        if req.marker is not None and not req.marker.evaluate():
            continue
        version = _read.installed_version(req.name)
        if version is None:
            missing.append(text)
            continue
        if not req.specifier.contains(version, prereleases=True):
            missing.append(text)
    return missing


@frozen
class Prebuilt:
    """The hook implementations, bound to a project directory, the environment and an emitter.

    ``frontend`` names the process that calls the hooks (see :func:`_stash.frontend_key`):
    hooks with the same ``frontend`` share one decision. None: every hook decides anew.
    """

    project: Path
    environ: Mapping[str, str]
    emit: Emit = discard
    options: FetchOptions = DEFAULT_OPTIONS
    frontend: str | None = None

    def config(self) -> PrebuiltConfig:
        return read_config(self.project / "pyproject.toml")

    def _say(self, message: str, level: Level = "info") -> None:
        self.emit(Event(level=level, topic="backend", message=message))

    # --- the real backend -------------------------------------------------------------------

    def _refuse_build(self, config: PrebuiltConfig, why: str) -> None:
        if flag(self.environ, settings.NO_BUILD):
            raise CheckFailed(
                f"CUSHIP_NO_BUILD=1 and {why}; refusing to build {config.name} from source",
                hint="unset CUSHIP_NO_BUILD to compile, or publish a wheel for this machine",
            )

    def _build_env(self, config: PrebuiltConfig) -> None:
        """Set ``build-env`` (and the ``*_FORCE_BUILD`` switches setup.py names) for the real
        backend, which runs in this process."""
        for name, value in config.build_env:
            if os.environ.get(name) != value:
                os.environ[name] = value
                self._say(f"building with {name}={value}")

    def _real_requires(self, config: PrebuiltConfig, kind: Kind, settings: Any) -> list[str]:
        """``build-requires``, and what the real backend asks for when it is importable; a
        wheel's torch requirement becomes the target's torch (see :meth:`_user_torch`)."""
        self._build_env(config)
        needs = list(config.build_requires)
        try:
            real = load_backend(config.backend)
        except ImportError:
            real = None  # the frontend installs build-requires first; its extra needs come later
        hook = getattr(real, f"get_requires_for_build_{kind}", None)
        needs += [str(r) for r in hook(settings)] if hook else []
        return self._user_torch(needs) if kind == "wheel" else needs

    def _user_torch(self, needs: list[str]) -> list[str]:
        """``needs`` with torch pinned to the version installed where the wheel goes: an
        isolated build environment then compiles against the user's torch, not whatever the
        index offers (an extension built against another minor does not load)."""
        if not any(_requirement_name(n) == "torch" for n in needs):
            return needs
        installed = target_torch(self.environ)
        if installed is None:
            return needs
        public = installed.split("+")[0]
        self._say(f"building against the torch installed where it goes: torch=={public}")
        return [n for n in needs if _requirement_name(n) != "torch"] + [f"torch=={public}"]

    def _check_build_torch(self, config: PrebuiltConfig, why: str) -> None:
        """Stop a source build whose build environment holds another torch than the target."""
        mismatch = build_torch_problem(self.environ)
        if mismatch is not None:
            raise CheckFailed(
                f"not building {config.name} from source ({why}): {mismatch}",
                hint="build without isolation (pip install --no-build-isolation, uv pip install "
                "--no-build-isolation-package NAME, or uv's match-runtime build dependency on "
                f"torch), or set {settings.TARGET_PYTHON} to the interpreter installed into",
            )

    def real_backend(self, config: PrebuiltConfig, kind: Kind, settings: Any) -> Any:
        """The real backend, imported; warns about what it needs that is not installed."""
        if kind != "sdist":
            self._build_env(config)
        try:
            real = load_backend(config.backend)
        except ImportError as err:
            raise ToolMissing(
                f"the real backend {config.backend!r} cannot be imported: {err}",
                hint=f"install {list(config.build_requires)} into the build environment "
                "(frontends do when they call get_requires_* with build isolation on)",
            ) from err
        hook = getattr(real, f"get_requires_for_build_{kind}", None)
        missing = unmet(str(r) for r in hook(settings)) if hook else []
        if missing:
            self._say(
                f"{config.backend} also asks for {missing}, which are not installed; if the "
                "build fails, add them to [tool.cuship.prebuilt] build-requires",
                "warning",
            )
        return real

    # --- sdist and editable: always the real backend ----------------------------------------

    def get_requires_for_build_sdist(self, config_settings: Any = None) -> list[str]:
        config = self.config()
        needs = self._real_requires(config, "sdist", config_settings)
        self._say(f"the sdist is made by {config.backend} (needs {needs})", "debug")
        return needs

    def build_sdist(self, sdist_directory: str, config_settings: Any = None) -> str:
        config = self.config()
        real = self.real_backend(config, "sdist", config_settings)
        return str(real.build_sdist(sdist_directory, config_settings))

    def get_requires_for_build_editable(self, config_settings: Any = None) -> list[str]:
        config = self.config()
        why = "an editable install is built from its source tree"
        self._refuse_build(config, why)
        self._say(f"building {config.name} from source with {config.backend}: {why}")
        return self._real_requires(config, "editable", config_settings)

    def prepare_metadata_for_build_editable(
        self, metadata_directory: str, config_settings: Any = None
    ) -> str:
        real = self.real_backend(self.config(), "editable", config_settings)
        hook = getattr(real, "prepare_metadata_for_build_editable", None)
        if hook is not None:
            return str(hook(metadata_directory, config_settings))
        target = Path(metadata_directory)  # PEP 660's fallback, done here: build, then extract
        scratch = target / STASH
        scratch.mkdir(parents=True, exist_ok=True)
        try:
            name = self.build_editable(str(scratch), config_settings)
            return _extract_dist_info(scratch / name, target)
        finally:
            remove_tree(target, STASH)

    def build_editable(
        self,
        wheel_directory: str,
        config_settings: Any = None,
        metadata_directory: str | None = None,
    ) -> str:
        config = self.config()
        hook = getattr(
            self.real_backend(config, "editable", config_settings), "build_editable", None
        )
        if hook is None:
            raise UsageError(
                f"{config.backend!r} cannot make editable installs (it has no build_editable hook)",
                hint="install without -e, or use a backend with PEP 660 support",
            )
        return str(hook(wheel_directory, config_settings, metadata_directory))

    # --- wheels: one decision per frontend run ----------------------------------------------

    def _finish(self, config: PrebuiltConfig, decision: Decision, into: Path, path: Path) -> Choice:
        """Hand on the chosen wheel, downloaded and verified to ``path``, with the sdist's
        version and cuship.json."""
        candidate = decision.candidate
        assert candidate is not None
        label = parse_wheel_filename(path.name)[1].local
        self._say(
            f"using prebuilt {candidate.filename} (sha256 verified) from {candidate.url}: "
            f"{decision.why}"
        )
        if label:
            path = strip_label(path, out_dir=into / "public")
        provenance = Handover(
            name=config.name,
            version=str(parse_wheel_filename(path.name)[1]),
            kind="prebuilt",
            why=decision.why,
            filename=candidate.filename,
            sha256=candidate.sha256,
            url=candidate.url,
            index=decision.index,
            label=label,
            cuship=__version__,
        )
        final = add_to_wheel(path, provenance, out_dir=into)
        remove_tree(into, "download")
        remove_tree(into, "public")
        self._say(f"handing over {final.name} (its provenance in .dist-info/{FILENAME})")
        return Choice(provenance=provenance, wheel=final.name, wheel_sha256=sha256_file(final))

    def _source_choice(self, config: PrebuiltConfig, decision: Decision) -> Choice:
        why = decision.why
        self._refuse_build(config, why)
        self._check_build_torch(config, why)
        self._say(f"building {config.name} from source with {config.backend}: {why}", "warning")
        provenance = Handover(
            name=config.name,
            version=config.version or "",
            kind="source",
            why=why,
            index=decision.index,
            backend=config.backend,
            cuship=__version__,
        )
        return Choice(provenance=provenance)

    def _choice(self, stash: Stash) -> Choice:
        """This frontend run's decision: an earlier hook's, else made (and saved) now."""
        saved = stash.load()
        if saved is not None:
            self._say(f"reusing this run's decision ({saved.provenance.kind})", "debug")
            return saved
        config = self.config()
        decision = decide(config, self.environ, options=self.options, emit=self.emit)
        if decision.candidate is None:
            choice = self._source_choice(config, decision)
        else:
            choice = self._prebuilt_or_source(config, decision, stash)
        stash.save(choice)
        return choice

    def _prebuilt_or_source(
        self, config: PrebuiltConfig, decision: Decision, stash: Stash
    ) -> Choice:
        """The chosen wheel, finished; a download that fails (no answer, a timeout, a server
        that drips past the deadline) means a source build, as when the index cannot be read.
        A wheel that arrives and is not the one listed (sha256, size) stays refused."""
        candidate = decision.candidate
        assert candidate is not None
        into = stash.dir
        try:
            path = download(candidate, into / "download", options=self.options, emit=self.emit)
        except CheckFailed:
            raise
        except InputError as err:
            why = f"the prebuilt {candidate.filename} could not be fetched: {err.message}"
            return self._source_choice(config, replace(decision, candidate=None, why=why))
        return self._finish(config, decision, into, path)

    def _ready(self, stash: Stash, choice: Choice) -> Path | None:
        """The finished wheel in the stash, checked against the hash recorded when it was made."""
        if choice.wheel is None:
            return None
        wheel = stash.dir / choice.wheel
        if sha256_file(wheel) != choice.wheel_sha256:
            raise CheckFailed(
                f"{str(wheel)!r} changed after cuship.backend verified it; refusing it",
                hint="something else writes into the build directory; rerun the install",
            )
        return wheel

    def get_requires_for_build_wheel(self, config_settings: Any = None) -> list[str]:
        with stash_for(self.project, self.frontend, None) as stash:
            choice = self._choice(stash)
        if choice.provenance.kind == "prebuilt":
            self._say("no build requirements: nothing is compiled", "debug")
            return []
        return self._real_requires(self.config(), "wheel", config_settings)

    def prepare_metadata_for_build_wheel(
        self, metadata_directory: str, config_settings: Any = None
    ) -> str:
        target = Path(metadata_directory)
        with stash_for(self.project, self.frontend, target / STASH) as stash:
            choice = self._choice(stash)
            ready = self._ready(stash, choice)
            if ready is not None:
                return _extract_dist_info(ready, target)
            config = self.config()
            self._check_build_torch(config, choice.provenance.why)
            real = self.real_backend(config, "wheel", config_settings)
            hook = getattr(real, "prepare_metadata_for_build_wheel", None)
            if hook is not None:
                name = str(hook(metadata_directory, config_settings))
                _write_provenance(target / name, choice.provenance)
                return name
            built = self._build(real, stash, choice, config_settings)  # no metadata hook
            return _extract_dist_info(built, target)

    def _build(self, real: Any, stash: Stash, choice: Choice, settings: Any) -> Path:
        """The real backend's wheel, with cuship.json, in the stash (saved for build_wheel)."""
        out = stash.dir / "built"
        out.mkdir(parents=True, exist_ok=True)
        name = str(real.build_wheel(str(out), settings))
        provenance = replace(choice.provenance, version=str(parse_wheel_filename(name)[1]))
        final = add_to_wheel(out / name, provenance, out_dir=stash.dir)
        remove_tree(stash.dir, "built")
        stash.save(replace(choice, wheel=final.name, wheel_sha256=sha256_file(final)))
        return final

    def build_wheel(
        self,
        wheel_directory: str,
        config_settings: Any = None,
        metadata_directory: str | None = None,
    ) -> str:
        out = Path(wheel_directory)
        with stash_for(self.project, self.frontend, out / STASH) as stash:
            choice = self._choice(stash)
            ready = self._ready(stash, choice)
            if ready is None:
                config = self.config()
                self._check_build_torch(config, choice.provenance.why)
                real = self.real_backend(config, "wheel", config_settings)
                name = str(real.build_wheel(wheel_directory, config_settings, metadata_directory))
                version = str(parse_wheel_filename(name)[1])
                add_to_wheel(out / name, replace(choice.provenance, version=version), out_dir=out)
            else:
                shutil.copyfile(ready, out / ready.name)
                name = ready.name
            stash.clear()
        return name


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\s=<>!~;\[@(]", requirement.strip(), maxsplit=1)[0].lower()


def _write_provenance(dist_info: Path, provenance: Handover) -> None:
    """cuship.json in a prepared .dist-info, as the wheel built later will carry it."""
    version = dist_info.name.removesuffix(".dist-info").rsplit("-", 1)[-1]
    (dist_info / FILENAME).write_bytes(replace(provenance, version=version).to_bytes())


def _extract_dist_info(wheel: Path, into: Path) -> str:
    with _read.archive(wheel) as archive:
        infos = archive.infolist()
        tops = {i.filename.split("/", 1)[0] for i in infos}
        roots = {top for top in tops if top.endswith(".dist-info")}
        if len(roots) != 1:
            raise InputError(f"{wheel.name!r} holds {len(roots)} .dist-info directories, not 1")
        root = roots.pop()
        limits = member_limits()
        check_members(infos, wheel.name, limits)
        for info in infos:
            if info.filename.startswith(root + "/") and not info.is_dir():
                dest = under(into, info.filename)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(read_member(archive, info, wheel.name, limits))
    return root
