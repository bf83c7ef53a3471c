"""Where an installed distribution came from, as its installer recorded it (PEP 610).

pip and uv write ``direct_url.json`` into the ``.dist-info`` of a distribution installed from a
URL, a VCS checkout or a local directory (editable or not), and no such file for one resolved
by name from an index (or a ``--find-links`` folder). :func:`install_source` reads it for
cuship itself (``cuship --version``, ``cuship ci init``'s pin) or any distribution;
:func:`parse_direct_url` is the pure part. :meth:`InstallSource.requirement` is the line that
installs the same distribution elsewhere, or None where no other machine could (a local path,
an editable checkout, a source tree on ``sys.path``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from cuship import _read
from cuship._record import frozen
from cuship.errors import InputError

__all__ = ["InstallSource", "Kind", "install_source", "parse_direct_url", "this_cuship"]

Kind = Literal["index", "vcs", "archive", "directory", "editable", "source"]

_MAX_DIRECT_URL = 64 * 1024  # PEP 610 documents are a few hundred bytes

_KIND_TEXT: Mapping[Kind, str] = {
    "index": "an index or a --find-links folder (no direct_url.json: resolved by name)",
    "vcs": "a VCS checkout (direct_url.json vcs_info)",
    "archive": "an archive URL (direct_url.json archive_info)",
    "directory": "a local directory (direct_url.json dir_info)",
    "editable": "an editable checkout (direct_url.json dir_info, editable)",
    "source": "a source tree on sys.path, not an installed distribution",
}


@frozen
class InstallSource:
    """One distribution's origin: the installer's record and where its package was imported."""

    distribution: str
    version: str
    kind: Kind
    url: str | None = None  # the VCS, archive or directory URL
    vcs: str | None = None  # "git", "hg", ...
    commit: str | None = None  # vcs_info.commit_id
    requested: str | None = None  # vcs_info.requested_revision
    location: str = ""  # the imported package's directory

    @property
    def local(self) -> bool:
        """Whether the URL names this machine's file system (``file:``)."""
        return self.url is not None and urlsplit(self.url).scheme == "file"

    def requirement(self, extras: str = "") -> str | None:
        """A requirement that installs this same distribution on another machine, or None.

        Index: ``name[extras]==version``; VCS: ``name[extras] @ vcs+URL@COMMIT``; an archive
        from a remote URL: ``name[extras] @ URL``. A local directory, an editable checkout, a
        source tree and a local archive give None: no other machine has that path.
        """
        name = f"{self.distribution}[{extras}]" if extras else self.distribution
        if self.kind == "index":
            return f"{name}=={self.version}"
        if self.kind == "vcs" and self.url and self.vcs and self.commit:
            return f"{name} @ {self.vcs}+{self.url}@{self.commit}"
        if self.kind == "archive" and self.url and not self.local:
            return f"{name} @ {self.url}"
        return None

    def whence(self) -> str:
        """Where from, in words: ``an index …``, ``a VCS checkout …: git+URL at COMMIT``."""
        head = _KIND_TEXT[self.kind]
        if self.kind == "vcs":
            asked = f", asked for {self.requested!r}" if self.requested else ""
            return f"{head}: {self.vcs}+{self.url} at {self.commit}{asked}"
        if self.kind in ("archive", "directory", "editable"):
            return f"{head}: {self.url}"
        if self.kind == "source":
            return f"{head}: {self.location}"
        return head


def _text(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    return value if isinstance(value, str) and value and "\n" not in value else None


def parse_direct_url(document: str | None, *, name: str, version: str) -> InstallSource:
    """The origin a ``direct_url.json`` text records (None: no such file, an index install).

    A document that is not PEP 610 (no ``url``, no known ``*_info``) is refused with
    ``ValueError``: guessing would pin the wrong thing."""
    base = {"distribution": name, "version": version}
    if document is None:
        return InstallSource(kind="index", **base)
    raw = _read.loads(document)
    url = _text(raw, "url") if isinstance(raw, dict) else None
    if url is None:
        raise ValueError("direct_url.json has no url string")
    vcs_info, dir_info = raw.get("vcs_info"), raw.get("dir_info")
    if isinstance(vcs_info, dict):
        return InstallSource(
            kind="vcs",
            url=url,
            vcs=_text(vcs_info, "vcs"),
            commit=_text(vcs_info, "commit_id"),
            requested=_text(vcs_info, "requested_revision"),
            **base,
        )
    if isinstance(dir_info, dict):
        editable = dir_info.get("editable") is True
        return InstallSource(kind="editable" if editable else "directory", url=url, **base)
    if isinstance(raw.get("archive_info"), dict):
        return InstallSource(kind="archive", url=url, **base)
    raise ValueError("direct_url.json has none of vcs_info, archive_info, dir_info")


def _file_path(url: str | None) -> str | None:
    if url is None or urlsplit(url).scheme != "file":
        return None
    return os.path.realpath(unquote(urlsplit(url).path))


def _is_under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _from_distribution(found: InstallSource, dist: metadata.Distribution, package: str) -> bool:
    """Whether ``package`` (the imported directory) is the one ``dist`` installed."""
    if found.kind == "editable":
        root = _file_path(found.url)
        return root is not None and _is_under(package, root)
    installed = os.path.realpath(str(dist.locate_file(Path(package).name)))
    return installed == package


def install_source(
    name: str, package_dir: str | os.PathLike[str], *, version: str = ""
) -> InstallSource:
    """Where the distribution ``name`` whose package was imported from ``package_dir`` came
    from. A package that is not the one the distribution installed (a source tree on
    ``PYTHONPATH`` in front of it), or no distribution at all, is ``source`` (``version``:
    the package's own)."""
    package = os.path.realpath(package_dir)
    source = InstallSource(distribution=name, version=version, kind="source", location=package)
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return source
    if _read.dist_text(dist, "INSTALLER") is None:  # an egg-info a build left in a source tree
        return source
    text = _read.dist_text(dist, "direct_url.json")
    named = _read.dist_field(dist, "Name") or name
    try:
        if text is not None and len(text) > _MAX_DIRECT_URL:
            raise ValueError(f"direct_url.json of {name} is over {_MAX_DIRECT_URL} characters")
        found = parse_direct_url(text, name=named, version=_read.dist_field(dist, "Version") or "")
    except ValueError as err:  # JsonRefused too: an InputError already
        raise InputError(
            str(err), hint=f"reinstall {name}: its installer's record is damaged"
        ) from err
    if not _from_distribution(found, dist, package):
        return source
    return dataclasses.replace(found, location=package)


def this_cuship() -> InstallSource:
    """Where the running cuship came from."""
    from cuship.version import PACKAGE, __version__

    return install_source("cuship", PACKAGE, version=__version__)
