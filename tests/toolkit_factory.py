"""Stand-ins for NVIDIA's toolkit wheels (the nvidia/cu13/ layout, every file the catalog says
a component provides) on a PEP 691 index in a directory, read through ``file://`` URLs."""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Mapping
from pathlib import Path

from packaging.version import Version

from cuship.toolkit import Catalog, ToolkitRelease

PLATFORM = "manylinux2014_x86_64.manylinux_2_17_x86_64"
EXECUTABLE = 0o100755 << 16
PLAIN = 0o100644 << 16


def _member(path: str, major: int) -> str:
    """The wheel member that provides prefix file ``path`` (``lib64/libcudart.so`` comes from
    ``lib/libcudart.so.13``: the installer adds the unversioned link)."""
    if path.startswith("lib64/"):
        path = "lib/" + path.removeprefix("lib64/")
        if path.endswith(".so"):
            path += f".{major}"
    return f"nvidia/cu{major}/{path}"


def make_toolkit_wheel(
    directory: Path,
    package: str,
    version: Version,
    provides: tuple[str, ...],
    *,
    major: int = 13,
    platform: str = PLATFORM,
    leave_out: tuple[str, ...] = (),
) -> Path:
    """A wheel of ``package==version`` holding stand-ins for ``provides`` (minus ``leave_out``),
    the Python scaffolding and metadata NVIDIA's wheels carry, and a dist-info."""
    dist = package.replace("-", "_")
    path = directory / f"{dist}-{version}-py3-none-{platform}.whl"
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("nvidia/__init__.py", "")
        archive.writestr(f"nvidia/cu{major}/.metadata/provenance.txt", "built by tests\n")
        for item in provides:
            if item in leave_out:
                continue
            info = zipfile.ZipInfo(_member(item, major))
            info.external_attr = EXECUTABLE if "/bin/" in f"/{item}" else PLAIN
            archive.writestr(info, f"{package} {version}: {item}\n")
        info_dir = f"{dist}-{version}.dist-info"
        archive.writestr(f"{info_dir}/METADATA", f"Name: {package}\nVersion: {version}\n")
        archive.writestr(f"{info_dir}/licenses/License.txt", "NVIDIA license\n")
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_index(
    root: Path,
    catalog: Catalog,
    release: ToolkitRelease,
    *,
    leave_out: Mapping[str, tuple[str, ...]] | None = None,
    extra: Mapping[str, tuple[str, ...]] | None = None,
    wrong_sha: tuple[str, ...] = (),
) -> str:
    """A PEP 691 index under ``root`` serving ``release``'s wheels (plus an aarch64 decoy and
    an older version of each), as a ``file://`` URL. ``wrong_sha``: packages whose listed
    sha256 does not match their file; ``extra``: more files a package's wheel holds."""
    files = root / "files"
    for component in catalog.components:
        version = release.wheels[component.package]
        wheels = [
            make_toolkit_wheel(
                files,
                component.package,
                version,
                (*component.provides, *(extra or {}).get(component.package, ())),
                leave_out=(leave_out or {}).get(component.package, ()),
            ),
            make_toolkit_wheel(
                files / "arm",
                component.package,
                version,
                component.provides,
                platform="manylinux2014_aarch64.manylinux_2_17_aarch64",
            ),
            make_toolkit_wheel(
                files / "old", component.package, Version("0.1"), component.provides
            ),
        ]
        entries = [
            {
                "filename": wheel.name,
                "url": f"../../{wheel.relative_to(root).as_posix()}",
                "hashes": {
                    "sha256": "0" * 64
                    if component.package in wrong_sha and wheel.parent == files
                    else sha256(wheel)
                },
            }
            for wheel in wheels
        ]
        page = root / "simple" / component.package
        page.mkdir(parents=True, exist_ok=True)
        document = {"meta": {"api-version": "1.1"}, "name": component.package, "files": entries}
        (page / "index.json").write_text(json.dumps(document))
    return (root / "simple").as_uri()
