"""The released sdists a packages.yml builds, fetched and read before anything is planned.

Each ``name==version`` is looked for where pip would look (its find-links folders and pages,
then its indexes: from the environment, pip's configuration and the entry's ``build_args``),
downloaded once with its sha256 checked into the sdist cache (``$XDG_CACHE_HOME/cuship/sdists``,
one folder per sha256), unpacked there (bounded; no member outside its folder) and read, never
run (:mod:`cuship.config.sources`): whether it holds device code, what its setup.py steers.
pip then builds that very file.
"""

from __future__ import annotations

import dataclasses
import functools
import shlex
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from packaging.utils import InvalidSdistFilename, canonicalize_name, parse_sdist_filename
from packaging.version import Version

from cuship import _read
from cuship._fs import move, remove_tree, sha256_file, under
from cuship.config import Config, PackageSpec, Sdist
from cuship.config.sources import read_sdist
from cuship.errors import InputError
from cuship.events import Emit, Event, discard

__all__ = [
    "PipSources",
    "fetch_sdists",
    "parse_pip_config",
    "pip_sources",
    "sdist_cache",
    "unpack",
]

PYPI = "https://pypi.org/simple"
_MAX_MEMBERS = 100_000
_MAX_BYTES = 2 << 30  # unpacked; the largest CUDA sdists (flash-attn with CUTLASS) are ~100 MB
_SCOPES = (":env:", "site", "user", "global")  # pip's precedence, first wins


@dataclass(frozen=True, slots=True, kw_only=True)
class PipSources:
    """Where pip looks for a distribution: find-links (folders or pages), then indexes."""

    find_links: tuple[str, ...] = ()
    indexes: tuple[str, ...] = (PYPI,)


def sdist_cache(environ: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/cuship/sdists`` (``~/.cache`` by default)."""
    cache = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME", "~")) / ".cache")
    return Path(cache).expanduser() / "cuship" / "sdists"


def parse_pip_config(text: str) -> dict[str, str]:
    """``pip config list``'s lines (``global.find-links='/opt/wheels'``) as one value per key,
    the environment over site over user over global, as pip reads them."""
    found: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        head, eq, value = line.partition("=")
        scope, dot, key = head.rpartition(".")
        if not eq or not dot:
            continue
        found.setdefault(key.strip(), {})[scope.strip()] = value.strip().strip("'\"")
    return {
        key: next((by[s] for s in _SCOPES if s in by), next(iter(by.values())))
        for key, by in found.items()
    }


def _options(args: Sequence[str]) -> dict[str, list[str]]:
    """The index options among pip arguments (``-f DIR``, ``--index-url=URL``, ``--no-index``)."""
    names = {"-f": "find-links", "--find-links": "find-links", "-i": "index-url"}
    names |= {"--index-url": "index-url", "--extra-index-url": "extra-index-url"}
    out: dict[str, list[str]] = {}
    words = list(args)
    for i, word in enumerate(words):
        flag, eq, inline = word.partition("=")
        if word == "--no-index":
            out["no-index"] = ["1"]
        elif flag in names:
            value = inline if eq else (words[i + 1] if i + 1 < len(words) else "")
            out.setdefault(names[flag], []).append(value)
    return out


def pip_sources(config: Mapping[str, str], build_args: Sequence[str] = ()) -> PipSources:
    """Where pip looks, from its configuration (:func:`parse_pip_config`) and ``build_args``."""
    given = _options(build_args)
    links = [*config.get("find-links", "").split(), *given.get("find-links", [])]
    if config.get("no-index", "").lower() in ("1", "true", "yes", "on") or "no-index" in given:
        return PipSources(find_links=tuple(links), indexes=())
    main = (given.get("index-url") or [config.get("index-url") or PYPI])[-1]
    extra = [*config.get("extra-index-url", "").split(), *given.get("extra-index-url", [])]
    return PipSources(find_links=tuple(links), indexes=tuple(dict.fromkeys([main, *extra])))


def _is_sdist(filename: str, name: str, version: str) -> bool:
    try:
        found, at = parse_sdist_filename(filename)
    except InvalidSdistFilename:
        return False
    return found == canonicalize_name(name) and at == Version(version)


def _local_folder(link: str) -> Path | None:
    parts = urlsplit(link)
    if parts.scheme not in ("", "file"):
        return None
    folder = Path(unquote(parts.path) if parts.scheme else link).expanduser()
    return folder if folder.is_dir() else None


Found = tuple[str, str, Callable[[Path], Path]]
"""(where the sdist was found, its sha256, a function that puts it into a folder: its path)."""


def _in_folder(folder: Path, name: str, version: str) -> Found | None:
    for path in sorted(folder.iterdir()):
        if path.is_file() and _is_sdist(path.name, name, version):
            copy = functools.partial(_copy, path)
            return str(path), sha256_file(path), copy
    return None


def _copy(path: Path, into: Path) -> Path:
    return Path(shutil.copy2(path, into / path.name))


def _in_index(index: str, name: str, version: str, emit: Emit) -> Found | None:
    from cuship.resolve.fetch import download, fetch_page
    from cuship.resolve.http import Missing

    try:
        page = fetch_page(index, name, manifest=False, emit=emit)
    except Missing:
        return None
    for candidate in page.candidates:
        if _is_sdist(candidate.filename, name, version) and candidate.yanked is None:
            fetch = functools.partial(download, candidate, emit=emit)
            return candidate.url, candidate.sha256 or "", fetch
    return None


def _find(requirement: str, sources: PipSources, emit: Emit) -> Found:
    name, _, version = requirement.partition("==")
    for link in sources.find_links:
        folder = _local_folder(link)
        found = _in_folder(folder, name, version) if folder is not None else None
        if found is not None:
            return found
    for index in sources.indexes:
        found = _in_index(index, name, version, emit)
        if found is not None:
            return found
    where = [*sources.find_links, *sources.indexes] or [
        "nowhere (pip has --no-index and no find-links)"
    ]
    raise InputError(
        f"no sdist of {requirement!r} in {', '.join(where)}",
        hint="check the package's name and version in packages.yml (PyPI lists its files at "
        f"https://pypi.org/project/{name}/{version}/#files), or pip's index settings",
    )


def _members_ok(names: Iterable[str], sizes: Iterable[int], archive: Path) -> None:
    listed = list(names)
    if len(listed) > _MAX_MEMBERS or sum(sizes) > _MAX_BYTES:
        raise InputError(
            f"{archive.name!r} holds {len(listed)} members or more than 2 GiB unpacked; "
            "refusing it as an sdist",
            hint="check the file the index serves",
        )


def unpack(archive: Path, into: Path) -> Path:
    """Unpack the sdist ``archive`` into ``into`` (made here): its top directory. Members that
    would leave ``into`` (absolute paths, ``..``, links out) are refused."""
    into.mkdir(parents=True)
    if archive.name.endswith(".zip"):
        with _read.archive(archive, _read.SDIST) as zipped:
            infos = zipped.infolist()
            _members_ok([i.filename for i in infos], [i.file_size for i in infos], archive)
            for info in infos:
                if info.filename.startswith("/") or ".." in Path(info.filename).parts:
                    raise InputError(f"{archive.name!r}: member {info.filename!r} leaves it")
            zipped.extractall(into)
    else:
        with _read.reader(archive, _read.SDIST) as stream, tarfile.open(fileobj=stream) as tarred:
            members = tarred.getmembers()
            _members_ok([m.name for m in members], [m.size for m in members], archive)
            tarred.extractall(into, filter="data")
    tops = [p for p in into.iterdir() if p.is_dir()]
    return tops[0] if len(tops) == 1 else into


def _fetch_one(requirement: str, sources: PipSources, cache: Path, emit: Emit) -> Sdist:
    where, digest, put = _find(requirement, sources, emit)
    home = cache / digest[:16] if digest else None
    if home is None or not (home / ".unpacked").is_file():
        home = _fill(cache, put, digest)
    root = under(home, _read.read_text(home / ".unpacked", _read.CACHE).strip())
    archive = next(p for p in home.iterdir() if p.is_file() and not p.name.startswith("."))
    digest = digest or sha256_file(archive)
    emit(Event(level="info", topic="plan", message=f"sdist {requirement}: {where}"))
    return read_sdist(requirement, archive, root, digest)


def _fill(cache: Path, put: Callable[[Path], Path], digest: str) -> Path:
    """Fetch, check and unpack an sdist into its cache folder (renamed into place whole)."""
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=_made(cache)) as tmp:
        archive = put(Path(tmp))
        got = sha256_file(archive)
        if digest and got != digest:
            raise InputError(f"{archive.name!r}: sha256 {got} is not the index's {digest}")
        home = cache / got[:16]
        if (home / ".unpacked").is_file():
            return home
        staged = Path(tmp) / "staged"
        root = unpack(archive, staged / "src")
        move(archive, staged, archive.name)
        (staged / ".unpacked").write_text(str(root.relative_to(staged)), encoding="utf-8")
        remove_tree(cache, home.name)
        move(staged, cache, home.name)
    return home


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _entries(packages: Sequence[PackageSpec]) -> list[tuple[str, tuple[str, ...]]]:
    return [
        (f"{spec.name}=={version}", tuple(shlex.split(spec.build_args)))
        for spec in packages
        for version in spec.versions
    ]


def fetch_sdists(
    config: Config,
    pip_config: Mapping[str, str],
    *,
    cache: Path,
    emit: Emit = discard,
) -> Config:
    """``config`` with the sdist of each packages.yml entry fetched, unpacked and read
    (``config.sdists``); unchanged for a project built from its source tree."""
    if not config.packages:
        return config
    sdists = {
        requirement: _fetch_one(requirement, pip_sources(pip_config, args), cache, emit)
        for requirement, args in _entries(config.packages)
    }
    return dataclasses.replace(config, sdists=sdists)
