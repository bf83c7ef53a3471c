"""Assemble a CUDA toolkit from NVIDIA's wheels: look the pinned files up in the index, download
them (sha256 checked against the index), unpack them into a staging directory beside the
target, add the links, prove nvcc runs, and rename the result into place under a lock.

A complete toolkit already in the cache is reused without touching the network; ``offline``
never touches it. Two runs installing the same release wait for each other (a lock beside the
target) and the second one reuses what the first made.
"""

from __future__ import annotations

import re
import shutil
import threading
import time
import zipfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from packaging.version import Version

from cuship import _read, process, settings
from cuship._format import size_text
from cuship._fs import exchange, locked, recover, remove_tree, staging_dir, under
from cuship.errors import (
    CheckFailed,
    CushipError,
    InputError,
    TimedOut,
    ToolMissing,
    UsageError,
)
from cuship.events import Emit, Event, discard, progress
from cuship.toolkit.cache import Installed, WheelFile, read_installed, toolkit_prefix
from cuship.toolkit.catalog import Catalog, ToolkitRelease
from cuship.toolkit.layout import MANIFEST, Link, file_mode, layout_links, member_target, pick_file

__all__ = ["InstallResult", "Probe", "install", "nvcc_version"]

Probe = Callable[[Path], str | None]
"""Runs a toolkit's nvcc and returns the version it reports (None: it did not run)."""

_NETWORK_HINT = (
    f"check the network, or point {settings.TOOLKIT_INDEX} at a mirror of PyPI; toolkits "
    "already in the cache need no network (`cuship toolkit list`)"
)
_NVCC_VERSION = re.compile(r"\bV(\d+\.\d+\.\d+)")


def nvcc_version(nvcc: Path) -> str | None:
    """The version ``nvcc --version`` reports (``13.0.88``), or None when it does not run."""
    try:
        done = process.run([str(nvcc), "--version"], timeout=60)
    except (ToolMissing, TimedOut):
        return None
    found = _NVCC_VERSION.search(done.stdout)
    return found[1] if done.returncode == 0 and found else None


@dataclass(frozen=True, slots=True, kw_only=True)
class InstallResult:
    """The toolkit, whether it was already there, and what making it took."""

    installed: Installed
    reused: bool
    downloaded_bytes: int
    seconds: float

    def to_json(self) -> dict[str, object]:
        return {
            **self.installed.to_json(),
            "reused": self.reused,
            "downloaded_bytes": self.downloaded_bytes,
            "seconds": round(self.seconds, 3),
        }


def install(
    release: ToolkitRelease,
    *,
    catalog: Catalog,
    root: Path,
    index: str,
    machine: str,
    offline: bool = False,
    probe: Probe = nvcc_version,
    emit: Emit = discard,
) -> InstallResult:
    """The toolkit of ``release`` under ``root``: the cached one, else assembled from ``index``."""
    start = time.perf_counter()
    target = toolkit_prefix(root, release)
    found = read_installed(target, catalog.components)
    if found is None and offline:
        raise ToolMissing(
            f"CUDA {release.cuda} is not in the toolkit cache {str(root)!r} "
            "(offline: nothing is downloaded)",
            hint=f"`cuship toolkit install {release.cuda}` assembles it once (with network access); "
            "a cached toolkit directory copied there works too",
        )
    if found is not None:
        return InstallResult(
            installed=found, reused=True, downloaded_bytes=0, seconds=time.perf_counter() - start
        )
    with locked(target, emit):
        recover(target, emit)
        found = read_installed(target, catalog.components)  # another run may have made it
        if found is not None:
            return InstallResult(
                installed=found,
                reused=True,
                downloaded_bytes=0,
                seconds=time.perf_counter() - start,
            )
        made, size = _assemble(release, catalog, target, index, machine, probe, emit)
    seconds = time.perf_counter() - start
    message = f"assembled CUDA {release.cuda} (nvcc {made.nvcc_version}) at {str(target)!r}"
    emit(Event(level="info", topic="toolkit", message=f"{message} in {seconds:.1f} s"))
    return InstallResult(installed=made, reused=False, downloaded_bytes=size, seconds=seconds)


def _assemble(
    release: ToolkitRelease,
    catalog: Catalog,
    target: Path,
    index: str,
    machine: str,
    probe: Probe,
    emit: Emit,
) -> tuple[Installed, int]:
    staging = staging_dir(target)
    try:
        fetched = _fetch_all(release, staging, index, machine, emit)
        wheels = [record for record, _ in fetched]
        files = _no_overlap([written for _, written in fetched], release)
        _link(staging, layout_links(files, machine))
        remove_tree(staging, ".downloads")
        _require(staging, catalog, release)
        reported = probe(staging / "bin" / "nvcc")
        if reported != str(release.nvcc):
            raise CheckFailed(
                f"the assembled nvcc of CUDA {release.cuda} reports {reported!r}, "
                f"expected {str(release.nvcc)!r}",
                hint="a wheel's layout changed or nvcc cannot run on this machine; "
                f"run {str(staging / 'bin' / 'nvcc')!r} --version",
            )
        made = Installed(
            prefix=target,
            cuda=str(release.cuda),
            nvcc_version=reported,
            index=index,
            wheels=tuple(wheels),
            assembled=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        (staging / MANIFEST).write_bytes(made.record())
        staging.chmod(0o755)  # mkdtemp made it private; a toolkit is for everyone here
        exchange(staging, target)
    except BaseException:
        remove_tree(staging.parent, staging.name)
        raise
    return made, sum(record.size for record in wheels)


def _fetch_all(
    release: ToolkitRelease, prefix: Path, index: str, machine: str, emit: Emit
) -> list[tuple[WheelFile, list[str]]]:
    """Every pinned wheel downloaded (sha256 checked) into ``prefix/.downloads`` and unpacked
    into ``prefix``, all at once: each wheel's download overlaps the others' unpacking (zlib
    and file writes release the GIL). The first failure is raised once all have stopped."""
    message = f"fetching CUDA {release.cuda} from {index}: {', '.join(release.pins())}"
    emit(Event(level="info", topic="toolkit", message=message))
    count = _Count(len(release.wheels), emit)

    def one(package: str, version: Version) -> tuple[WheelFile, list[str]]:
        start = time.perf_counter()
        path, record = _fetch_one(package, version, prefix / ".downloads", index, machine, emit)
        written = _unpack(path, prefix, release.cuda.major)
        count.done(record, len(written), time.perf_counter() - start)
        return record, written

    with ThreadPoolExecutor(max_workers=len(release.wheels)) as pool:
        futures = [pool.submit(one, package, v) for package, v in release.wheels.items()]
        wait(futures)
    return [future.result() for future in futures]


class _Count:
    """Counts the toolkit's wheels as they are fetched and unpacked, one progress event each."""

    def __init__(self, total: int, emit: Emit) -> None:
        self.total, self.emit, self.finished = total, emit, 0
        self._lock = threading.Lock()

    def done(self, wheel: WheelFile, files: int, seconds: float) -> None:
        status = f"{size_text(wheel.size)}, sha256 verified, {files} files unpacked"
        with self._lock:
            self.finished += 1
            self.emit(
                progress("toolkit", self.finished, self.total, wheel.filename, status, seconds)
            )


def _no_overlap(groups: Sequence[Sequence[str]], release: ToolkitRelease) -> list[str]:
    """The files of all wheels; two wheels writing the same file is a layout cuship does not know."""
    seen: set[str] = set()
    for group in groups:
        twice = seen.intersection(group)
        if twice:
            raise CheckFailed(
                f"two wheels of CUDA {release.cuda} both hold {sorted(twice)[0]!r}",
                hint="NVIDIA changed the wheels' layout; update cuship (data/toolkits.toml)",
            )
        seen.update(group)
    return sorted(seen)


def _fetch_one(
    package: str, version: Version, into: Path, index: str, machine: str, emit: Emit
) -> tuple[Path, WheelFile]:
    """One pinned wheel; a failure keeps its exit code and names the toolkit's wheel."""
    from cuship.resolve.fetch import download, fetch_page  # the network stack: only to download

    try:
        page = fetch_page(index, package, manifest=False, emit=emit)
    except CushipError as err:
        raise _fetch_failed(err, f"{package}=={version}", index) from err
    chosen = pick_file(page.candidates, package, version, machine)
    try:
        path = download(chosen, into, emit=emit, quiet=True)
    except CushipError as err:
        raise _fetch_failed(err, f"{package}=={version}", index) from err
    record = WheelFile(
        filename=chosen.filename,
        url=chosen.url,
        sha256=chosen.sha256 or "",
        size=path.stat().st_size,
    )
    return path, record


def _fetch_failed(err: CushipError, what: str, index: str) -> CushipError:
    """``err`` said about a toolkit wheel: same exit code; a checksum keeps its own hint."""
    message = f"cannot fetch {what} from {index}: {err.message}"
    if isinstance(err, CheckFailed):
        return CheckFailed(message, hint=err.hint)
    if isinstance(err, UsageError):
        return InputError(message, hint=_NETWORK_HINT)
    return type(err)(message, hint=_NETWORK_HINT) if isinstance(err, ToolMissing) else err


def _unpack(wheel: Path, prefix: Path, major: int) -> list[str]:
    """Extract the toolkit part of ``wheel`` into ``prefix``; the prefix-relative paths written."""
    written = []
    try:
        with _read.archive(wheel) as archive:
            for info in archive.infolist():
                relative = member_target(info.filename, major)
                if relative is None:
                    continue
                out = under(prefix, relative)
                out.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as source, out.open("wb") as sink:
                    shutil.copyfileobj(source, sink, 1 << 20)
                out.chmod(file_mode(info.external_attr))
                written.append(relative)
    except (zipfile.BadZipFile, EOFError) as err:
        raise InputError(
            f"{wheel.name!r} is not a readable wheel: {err}",
            hint="its sha256 matched the index, so the index lists a broken file",
        ) from err
    return written


def _link(prefix: Path, links: Sequence[Link]) -> None:
    for link in links:
        path = prefix / link.path
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() and not path.is_symlink():
            path.symlink_to(link.to)


def _require(prefix: Path, catalog: Catalog, release: ToolkitRelease) -> None:
    missing = [
        f"{path} ({c.package})"
        for c in catalog.components
        for path in c.provides
        if not (prefix / path).exists()
    ]
    if missing:
        raise CheckFailed(
            f"the wheels of CUDA {release.cuda} did not provide {', '.join(missing)}",
            hint="NVIDIA changed a wheel's layout; update cuship (data/toolkits.toml)",
        )
