"""cuship's configuration: ``cuship.toml``, ``[tool.cuship]`` in pyproject.toml, or ``config/packages.yml``.

Loaded once into frozen dataclasses. Unknown keys, wrong types and impossible values raise
:class:`~cuship.errors.ConfigError` naming the file, the key path and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from cuship import _read
from cuship import schema as typed
from cuship.config import files, values
from cuship.config.ci import CiSection
from cuship.config.packages import PackageSpec, load_packages, packages_schema
from cuship.config.script import BuildScript, read_build_script
from cuship.config.sections import (
    BenchCaseSection,
    BenchSection,
    BuildSection,
    CheckModeSection,
    CheckOpSection,
    CheckSection,
    Config,
    LabelSection,
    MatrixRule,
    MatrixSection,
    ProjectSection,
    VariantsSection,
    _ConfigFile,
)
from cuship.config.sources import Sdist, read_pkg_info
from cuship.errors import ConfigError

__all__ = [
    "BenchCaseSection",
    "BenchSection",
    "BuildSection",
    "CheckModeSection",
    "CheckOpSection",
    "CheckSection",
    "CiSection",
    "Config",
    "LabelSection",
    "MatrixRule",
    "MatrixSection",
    "PackageSpec",
    "ProjectSection",
    "Sdist",
    "VariantsSection",
    "has_config",
    "json_schema",
    "load_config",
    "package_configs",
    "packages_json_schema",
]


def package_configs(config: Config) -> tuple[Config, ...]:
    """One config per (package, version) of a packages.yml, each building ``name==version`` from
    its sdist with that entry's build_args, extra_deps, env, matrix keys and test_import;
    ``(config,)`` otherwise."""
    if not config.packages:
        return (config,)
    return tuple(
        _package_config(config, spec, version)
        for spec in config.packages
        for version in spec.versions
    )


def _package_config(config: Config, spec: PackageSpec, version: str) -> Config:
    import shlex

    args = tuple(shlex.split(spec.build_args))
    build = replace(
        config.build,
        extra_deps=spec.extra_deps or config.build.extra_deps,
        build_args=tuple(a for a in args if a != "--no-build-isolation"),
        isolation="--no-build-isolation" not in args and config.build.isolation,
        test_import=spec.test_import,
        env={**config.build.env, **spec.env},
    )
    project = replace(config.project, name=spec.name, version=version, requires_python=None)
    given = spec.matrix.given()
    requirement = f"{spec.name}=={version}"
    sdist = config.sdists.get(requirement)
    found = config.found
    if sdist is not None:
        build, said = _from_sdist(config, spec, sdist, given, build)
        found += said
    matrix = replace(config.matrix, **given)
    return replace(
        config,
        project=project,
        build=build,
        matrix=matrix,
        requirement=requirement,
        sdist=sdist,
        script=sdist.script if sdist is not None else config.script,
        build_requires=sdist.requires if sdist is not None else config.build_requires,
        found=found,
    )


def _from_sdist(
    config: Config, spec: PackageSpec, sdist: Sdist, given: dict[str, Any], build: BuildSection
) -> tuple[BuildSection, tuple[str, ...]]:
    """What reading an entry's sdist decides where its entry and the file say nothing: whether
    it has device code (``given``, updated), and for a torch extension the torch it builds
    against, installed in its own venv without build isolation. (its build section, notes)"""
    said: list[str] = []
    keys = config.matrix_keys
    if "device_code" not in given and "device_code" not in keys:
        given["device_code"] = sdist.device.found
        jobs = "one +cpu job per Python" if not sdist.device.found else "CUDA jobs"
        said.append(f"{sdist.requirement}: {sdist.device.describe()}, read from its sdist: {jobs}")
    if not sdist.torch_extension:
        return build, tuple(said)
    torch = given.get("torch") or config.matrix.torch
    if "torch" not in given and "torch" not in keys and config.torch_default:
        torch = given["torch"] = (config.torch_default,)
    if torch and not spec.extra_deps and not config.build.extra_deps and not spec.build_args:
        build = replace(build, extra_deps=("torch",), isolation=False)
        said.append(
            f"{sdist.requirement}: a torch extension ({sdist.script.file or 'pyproject.toml'} "
            f"builds against torch): built against torch {', '.join(torch) or '(none given)'} "
            "installed in its own venv, without build isolation ([build] extra_deps and "
            "build_args in its entry say otherwise)"
        )
    return build, tuple(said)


def packages_json_schema() -> dict[str, Any]:
    """The JSON Schema of config/packages.yml (``cuship config --schema packages``)."""
    return packages_schema(typed.schema(MatrixSection))


def json_schema() -> dict[str, Any]:
    """The JSON Schema of cuship.toml, for editors (``cuship config --schema``)."""
    doc = typed.schema(_ConfigFile)
    doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    doc["$id"] = "https://cuship.dev/schema/cuship.schema.json"
    doc["title"] = "cuship.toml"
    return doc


def _project_defaults(
    project: ProjectSection, pyproject: Mapping[str, Any], source: Path
) -> ProjectSection:
    table = files.table(pyproject, "project", source)
    dynamic = files.strings(table.get("dynamic", []), source, "project.dynamic")
    version = (
        None
        if "version" in dynamic
        else files.pyproject_value(table, "version", source, values.version)
    )
    return replace(
        project,
        name=project.name or files.pyproject_value(table, "name", source, values.project_name),
        version=project.version or version,
        requires_python=project.requires_python
        or files.pyproject_value(table, "requires-python", source, values.specifier),
    )


def _build_requires(pyproject: Mapping[str, Any], source: Path) -> tuple[str, ...]:
    system = files.table(pyproject, "build-system", source)
    return files.strings(system.get("requires", []), source, "build-system.requires")


def _backend(pyproject: Mapping[str, Any], source: Path) -> tuple[str | None, str | None]:
    """(the build backend, the fixed build directory it is given, if any): whether a build
    writes into the source tree depends on both."""
    backend = files.table(pyproject, "build-system", source).get("build-backend")
    if backend is not None and not isinstance(backend, str):
        raise ConfigError(
            str(source),
            "build-system.build-backend",
            f"expected a string, got {_read.shown(backend)}",
            hint='name one backend module, e.g. "setuptools.build_meta"',
        )
    skbuild = files.table(files.table(pyproject, "tool", source), "tool.scikit-build", source)
    build_dir = skbuild.get("build-dir")
    return (
        backend if isinstance(backend, str) else None,
        build_dir if isinstance(build_dir, str) else None,
    )


def _tool_cuship(document: Mapping[str, Any], source: Path) -> Mapping[str, Any]:
    return files.table(files.table(document, "tool", source), "tool.cuship", source)


def _find(path: Path) -> tuple[Path | None, Path | None]:
    """(toml config, packages.yml) for a file or directory argument."""
    if path.is_file():
        if path.suffix in (".yml", ".yaml"):
            return None, path
        return path, None
    if not path.is_dir():
        raise ConfigError(
            str(path), None, "no such file or directory", hint="pass a project directory"
        )
    toml = path / "cuship.toml"
    if not toml.is_file():
        pyproject = path / "pyproject.toml"
        has_table = pyproject.is_file() and "cuship" in files.table(
            files.read_toml(pyproject), "tool", pyproject
        )
        toml = pyproject if has_table else None  # type: ignore[assignment]
    packages = path / "config" / "packages.yml"
    return toml, packages if packages.is_file() else None


def _canonical(name: str | None) -> str | None:
    """A PKG-INFO name as a job names it (``causal_conv1d`` → ``causal-conv1d``), if valid."""
    from packaging.utils import InvalidName, canonicalize_name

    try:
        return canonicalize_name(name, validate=True) if name else None
    except InvalidName:
        return None


def has_config(path: str | Path) -> bool:
    """Whether ``path`` (a directory or a file) holds a cuship configuration (valid or not)."""
    path = Path(path)
    if path.is_file():
        return True
    if not path.is_dir():
        return False
    toml, packages = _find(path)
    return toml is not None or packages is not None


def _raw(
    toml_path: Path | None, packages_path: Path | None
) -> tuple[Mapping[str, Any], tuple[PackageSpec, ...]]:
    """The configuration as read (a cuship.toml, pyproject's ``[tool.cuship]``, or the matrix
    of a packages.yml, given in one place only) and a packages.yml's packages."""
    raw: Mapping[str, Any] = {}
    if toml_path is not None:
        document = files.read_toml(toml_path)
        raw = _tool_cuship(document, toml_path) if toml_path.name == "pyproject.toml" else document
    packages_matrix, packages = load_packages(packages_path) if packages_path else ({}, ())
    if packages_matrix:
        if toml_path is not None:
            raise ConfigError(
                str(packages_path),
                "matrix",
                f"the matrix is also read from {toml_path.name}",
                hint="give the matrix in one place: the packages.yml's or [matrix]",
            )
        raw = {"matrix": packages_matrix}
    return raw, packages


def _from_pyproject(
    project: ProjectSection, pyproject_path: Path
) -> tuple[ProjectSection, tuple[str, ...], tuple[str | None, str | None]]:
    """What the project's pyproject.toml adds, when there is one: ``[project]``'s name and
    version where the config gives none, the build requirements, the build backend and its
    build directory."""
    if not pyproject_path.is_file():
        return project, (), (None, None)
    pyproject = files.read_toml(pyproject_path)
    return (
        _project_defaults(project, pyproject, pyproject_path),
        _build_requires(pyproject, pyproject_path),
        _backend(pyproject, pyproject_path),
    )


def load_config(path: str | Path = ".") -> Config:
    """Load the configuration of the project at ``path`` (a directory or a config file)."""
    path = Path(path)
    toml_path, packages_path = _find(path)
    if toml_path is None and packages_path is None:
        raise ConfigError(
            str(path),
            None,
            "no cuship.toml, [tool.cuship] in pyproject.toml, or config/packages.yml found",
            hint="create a cuship.toml with a [matrix] table (see docs/configuration.md)",
        )
    root = (toml_path or packages_path or path).parent
    if packages_path is not None and toml_path is None:
        root = packages_path.parent.parent if packages_path.parent.name == "config" else root
    raw, packages = _raw(toml_path, packages_path)
    file = typed.load(_ConfigFile, raw, source=str(toml_path or packages_path or path))
    project, build_requires, backend = _from_pyproject(file.project, root / "pyproject.toml")
    script = read_build_script(root) if packages_path is None or toml_path else BuildScript()
    released = read_pkg_info(root) if packages_path is None else (None, None)
    project = replace(
        project,
        name=project.name or _canonical(released[0]) or script.name,
        version=project.version or released[1] or (script.version if script.name else None),
    )
    return Config(
        source=toml_path or packages_path or path,
        root=root.resolve(),
        project=project,
        matrix=file.matrix,
        label=file.label,
        build=file.build,
        packages=packages,
        build_requires=build_requires,
        build_backend=backend[0],
        build_dir=backend[1],
        check=file.check,
        ci=file.ci,
        bench=file.bench,
        variants=file.variants,
        script=script,
        matrix_keys=frozenset(raw.get("matrix", {}))
        if isinstance(raw.get("matrix"), Mapping)
        else frozenset(),
    )
