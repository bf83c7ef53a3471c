"""What a rebuild of a job reuses from the job's earlier build, each reuse held to a key.

A rebuild that must run (a source changed, ``--rebuild``) gets its compiles from sccache, and
with ``[build] incremental`` (the default) two more things, kept under the output directory:

- **The CMake build directory** of a scikit-build-core project built without isolation,
  ``build/<job>``, given to the backend as its ``build-dir``: a rebuild runs no compiler checks
  (CMake's cache holds them) and ninja compiles only what changed since. Its key: cuship's
  version, the job, every command step's argv and environment (the interpreter, the toolkit,
  the arch flags, the compiler launcher, the project's own switches; not the parallelism), the
  CUDA version and the Python, the torch built against, the compilers (nvcc, ``CC``/``cc``,
  ``CXX``/``c++``), cmake and ninja as found (resolved path, size, mtime), the versions of the
  build's packages (scikit-build-core, cmake, ninja and the other build requirements), and the
  bytes of the project's build files (the cuship config, ``pyproject.toml``,
  ``CMakeLists.txt``). The key is written into the directory (``cuship-key.json``) only after a
  build succeeds; a build finding another key, or none, empties the directory first, and the
  job log says which parts changed. A source file is not in the key: CMake and ninja see what
  changed, as in any incremental build.
- **The repair of an unchanged raw wheel**, the job's last, ``repairs/<job>`` (see
  :func:`cuship.wheel.write.repair.repair`).

Not kept: anything of a build with isolation (pip's environment is new each time, so CMake's
cache would name tools that are gone), of a packages.yml sdist (unpacked anew; such a job is
not rebuilt at all while its inputs are unchanged, see :mod:`~cuship.builder.uptodate`), or of
a project that fixes its own ``build-dir``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from cuship._fs import file_identity, sha256_file, write_json
from cuship.builder.model import BuildDir, BuildPlan, Step, requirement_name
from cuship.builder.uptodate import digest, steps_document
from cuship.config import Config
from cuship.tools import find_tool
from cuship.version import __version__

__all__ = [
    "BUILD_DIRS",
    "KEY_FILE",
    "REPAIRS",
    "changed",
    "key_parts",
    "open_build_dir",
    "plan_build_dir",
    "reusable",
    "seal",
    "steps_digest",
    "with_build_dir",
]

BUILD_DIRS = "build"
"""Under the output directory: one CMake build directory per job."""
REPAIRS = "repairs"
"""Under the output directory: each job's last repaired wheel, under the key of its repair."""
KEY_FILE = "cuship-key.json"
"""In a build directory: the key of the build that last succeeded there."""

_BACKEND = "scikit_build_core.build"
# the compilers and build tools CMake finds: (the environment variable that names one, its name)
_TOOLS = (("CC", "cc"), ("CXX", "c++"), (None, "cmake"), (None, "ninja"))
_PACKAGES = ("scikit-build-core", "cmake", "ninja")
_KEY_LIMIT = 64 * 1024


def reusable(config: Config) -> bool:
    """Whether a job of ``config`` keeps its CMake build directory between builds."""
    build = config.build
    return (
        build.incremental
        and not build.isolation
        and config.requirement is None
        and config.build_backend == _BACKEND
        and config.build_dir is None
        and not any("build-dir" in arg for arg in build.build_args)
    )


def plan_build_dir(
    job_id: str,
    config: Config,
    out_dir: Path,
    *,
    toolkit: str,
    nvcc: str | None,
    sites: tuple[str, ...],
) -> BuildDir | None:
    """The build directory a job of ``config`` keeps under ``out_dir``; None when it keeps
    none (see :func:`reusable`). Pure."""
    if not reusable(config):
        return None
    source = config.source_dir
    files = (config.source, source / "pyproject.toml", source / "CMakeLists.txt")
    return BuildDir(
        path=out_dir / BUILD_DIRS / job_id,
        toolkit=toolkit,
        tools=(nvcc,) if nvcc else (),
        files=tuple(dict.fromkeys(files)),
        sites=sites,
        packages=tuple(
            dict.fromkeys((*_PACKAGES, *(requirement_name(r) for r in config.build_requires)))
        ),
    )


def with_build_dir(step: Step, path: Path) -> Step:
    """The ``pip wheel`` step with ``path`` as scikit-build-core's ``build-dir`` (before the
    project's path, pip's last argument)."""
    setting = f"--config-settings=build-dir={path}"
    return dataclasses.replace(step, argv=(*step.argv[:-1], setting, step.argv[-1]))


def steps_digest(steps: Sequence[Step]) -> str:
    """The digest of the command steps' names, argv and environment, parallelism left out."""
    return digest(steps_document([step for step in steps if step.argv]))


def _search_path(step: Step, environ: Mapping[str, str]) -> str:
    """Where the step's build finds its tools: the interpreter's own bin directory, then
    cuship's, then PATH (as the step runs, see :mod:`cuship.builder.run.commands`)."""
    first = [str(Path(step.argv[0]).parent)] if Path(step.argv[0]).is_absolute() else []
    bins = dict.fromkeys([*first, str(Path(sys.executable).parent)])
    return os.pathsep.join([*bins, step.env.get("PATH", environ.get("PATH", ""))])


def _tools(step: Step, environ: Mapping[str, str], known: Iterable[str]) -> list[str]:
    """``name=identity`` of nvcc (``known``) and of the compilers and tools the step finds."""
    env = {**environ, **step.env}
    path = _search_path(step, environ)
    found = []
    for var, name in _TOOLS:
        named = (env.get(var) or "").split() if var else []
        exe = named[0] if named else name
        where = exe if Path(exe).is_absolute() else find_tool(exe, {**env, "PATH": path}).path
        found.append(f"{name}={file_identity(where)}")
    return [*(f"nvcc={file_identity(t)}" for t in known), *found]


def _dists(sites: Iterable[str], names: Iterable[str]) -> list[str]:
    """The ``*.dist-info`` names (name and version) of ``names`` installed in ``sites``."""
    wanted = {n.replace("-", "_").lower() for n in names}
    found = []
    for site in sites:
        try:
            entries = sorted(p.name for p in Path(site).iterdir())
        except OSError:
            continue
        found += [
            f"{site}/{e}"
            for e in entries
            if e.endswith(".dist-info") and e.split("-")[0].lower() in wanted
        ]
    return found


def _files(paths: Iterable[Path]) -> list[str]:
    out = []
    for path in paths:
        try:
            out.append(f"{path} {sha256_file(path)}")
        except OSError:
            out.append(f"{path} missing")
    return out


def key_parts(plan: BuildPlan, environ: Mapping[str, str]) -> dict[str, str]:
    """The key of ``plan``'s build directory, part by part (each part a short string or a
    digest, so that the log can name what changed). Reads the tools' and files' metadata."""
    build_dir = plan.build_dir
    assert build_dir is not None
    commands = [s for s in plan.steps if s.argv]
    wheel = next((s for s in commands if s.name == "build-wheel"), commands[-1])
    sites = build_dir.sites or tuple(p for p in sys.path if p.endswith("-packages"))
    return {
        "cuship": __version__,
        "job": digest(plan.job.to_json()),
        "steps": steps_digest(commands),
        "toolkit": build_dir.toolkit,
        "torch": plan.torch or "",
        "compilers": digest(_tools(wheel, environ, build_dir.tools)),
        "packages": digest(_dists(sites, build_dir.packages)),
        "files": digest(_files(build_dir.files)),
    }


def changed(before: Mapping[str, str] | None, now: Mapping[str, str]) -> tuple[str, ...]:
    """The parts of a key that differ (every part of ``now`` when there was none before)."""
    if before is None:
        return tuple(now)
    return tuple(k for k in dict.fromkeys([*before, *now]) if before.get(k) != now.get(k))


def _read_key(path: Path) -> dict[str, str] | None:
    try:
        if path.stat().st_size > _KEY_LIMIT:
            return None
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not all(isinstance(v, str) for v in doc.values()):
        return None
    return {str(k): v for k, v in doc.items()}


def open_build_dir(path: Path, parts: Mapping[str, str]) -> tuple[bool, str]:
    """Make ``path`` ready for a build keyed ``parts``: kept when the last build that
    succeeded there had that key, emptied otherwise. Its key is removed until :func:`seal`
    (a build that fails leaves none: the next one starts clean). Whether it was kept, and the
    sentence for the log."""
    before = _read_key(path / KEY_FILE)
    differ = changed(before, parts)
    if not differ:
        (path / KEY_FILE).unlink()
        return True, f"build dir {path}: reused (the same key as its last build: configure kept)"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    if before is None:
        return False, f"build dir {path}: new (no earlier build with a key)"
    return False, f"build dir {path}: emptied, the key changed ({', '.join(differ)})"


def seal(path: Path, parts: Mapping[str, str]) -> None:
    """Record that a build keyed ``parts`` succeeded in ``path``."""
    write_json(path / KEY_FILE, dict(parts))
