"""Resolve against an index for a machine, and install exactly the chosen file, hash-pinned.

The chosen wheel is downloaded and verified by cuship first; the installer then gets it as a
direct reference with its hash in the URL fragment (``name @ file:///…whl#sha256=…``), which
pip and uv both check, while the wheel's dependencies resolve from the same index.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, NamedTuple

import packaging

from cuship import process, settings
from cuship._record import frozen
from cuship.errors import CannotStart, CheckFailed, NothingToDo, TimedOut, ToolMissing, UsageError
from cuship.events import Emit, Event, discard
from cuship.machine import fingerprint
from cuship.resolve.fetch import IndexPage, download, fetch_page
from cuship.resolve.http import DEFAULT_OPTIONS, FetchOptions
from cuship.resolve.select import Resolution, Target, parse_requirement, select, target_of
from cuship.tools import find_tool

__all__ = [
    "IndexResolution",
    "InstallPlan",
    "Installer",
    "download_dir",
    "install_command",
    "interpreter_target",
    "plan_install",
    "resolve_index",
    "run_install",
    "target_from_env",
]

Installer = Literal["pip", "uv"]

_PROBE = (
    "import json, platform; from packaging import tags; "
    "print(json.dumps([platform.python_version(), [str(t) for t in tags.sys_tags()]]))"
)
_PROBE_TIMEOUT = 60.0
_PROBE_HINT = "give --python a working Python interpreter (it must run `python -I -c ...` at once)"


def target_from_env(
    environ: Mapping[str, str], *, tags_from_env: bool = False, python: str | None = None
) -> Target:
    """This machine's target; ``tags_from_env`` takes Python tags from ``CUSHIP_TAGS``
    (comma-separated, best first) and the version from ``CUSHIP_PYTHON_VERSION``; ``python``
    (an interpreter path) takes both from that interpreter."""
    fp = fingerprint(environ)
    if python is not None:
        version, tags = interpreter_target(python, environ)
        return target_of(fp, tags=tags, python=version)
    if not tags_from_env:
        return target_of(fp)
    text = environ.get(settings.TAGS, "")
    tags = tuple(t.strip() for t in text.replace(" ", ",").split(",") if t.strip())
    if not tags:
        raise UsageError(
            "--tags-from-env needs CUSHIP_TAGS", hint="e.g. CUSHIP_TAGS=cp312-cp312-linux_x86_64"
        )
    return target_of(fp, tags=tags, python=environ.get(settings.PYTHON_VERSION))


def interpreter_target(python: str, environ: Mapping[str, str]) -> tuple[str, tuple[str, ...]]:
    """(version, tags best first) of another interpreter, asked with this one's packaging."""
    site = str(Path(next(iter(packaging.__path__))).parent)
    env = {**environ, "PYTHONPATH": site, "PYTHONNOUSERSITE": "1"}
    argv = [python, "-I", "-c", f"import sys; sys.path.insert(0, {site!r}); {_PROBE}"]
    try:
        done = process.run(argv, env=env, timeout=_PROBE_TIMEOUT)
    except TimedOut as err:
        raise UsageError(
            f"--python {python!r} did not report its tags within {err.timeout:g} s",
            hint=_PROBE_HINT,
        ) from err
    except CannotStart as err:
        raise UsageError(f"cannot run --python {python!r}: {err.reason}") from err
    if done.returncode != 0:
        raise UsageError(
            f"--python {python!r} failed to report its tags: {done.stderr.strip()[-300:]}"
        )
    try:
        version, tags = json.loads(done.stdout)
        return str(version), tuple(str(t) for t in tags)
    except (ValueError, TypeError) as err:  # not JSON, or not [version, [tags]]
        raise UsageError(
            f"--python {python!r} answered the tag probe with {done.stdout.strip()[-300:]!r}",
            hint=_PROBE_HINT,
        ) from err


class IndexResolution(NamedTuple):
    """The project page an index answered and the resolution of its files
    (``cuship resolve --json``)."""

    page: IndexPage
    resolution: Resolution

    def to_json(self) -> dict[str, object]:
        return {
            "index": self.page.url,
            "manifest": self.page.manifest,
            **self.resolution.to_json(),
        }


def resolve_index(
    requirement: str,
    index: str,
    target: Target,
    *,
    options: FetchOptions = DEFAULT_OPTIONS,
    emit: Emit = discard,
) -> IndexResolution:
    """Fetch the project page of ``requirement`` from ``index`` and judge its files."""
    req = parse_requirement(requirement)
    page = fetch_page(index, req.name, options=options, emit=emit)
    return IndexResolution(page, select(req, page.candidates, target, variants=page.variants))


def download_dir(environ: Mapping[str, str]) -> Path:
    """Where verified downloads are kept: ``$XDG_CACHE_HOME/cuship/wheels`` (or ~/.cache)."""
    cache = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME", "~")) / ".cache")
    return Path(cache).expanduser() / "cuship" / "wheels"


@frozen
class InstallPlan:
    """What ``cuship install`` will do: download ``url`` to ``wheel``, then run ``command``
    (unless ``dry_run``: then it only says so)."""

    resolution: Resolution
    url: str
    sha256: str
    wheel: Path
    command: tuple[str, ...]
    dry_run: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "resolution": self.resolution.to_json(),
            "url": self.url,
            "sha256": self.sha256,
            "wheel": str(self.wheel),
            "command": list(self.command),
            "dry_run": self.dry_run,
        }


def install_command(
    installer: Installer,
    *,
    python: str,
    requirement: str,
    wheel: Path,
    sha256: str,
    index: str,
) -> tuple[str, ...]:
    """The installer's command line for exactly ``wheel`` (hash-pinned), deps from ``index``."""
    req = parse_requirement(requirement)
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    pinned = f"{req.name}{extras} @ {wheel.absolute().as_uri()}#sha256={sha256}"
    if installer == "uv":
        return ("uv", "pip", "install", "--python", python, "--index-url", index, pinned)
    return (python, "-m", "pip", "install", "--index-url", index, pinned)


def plan_install(
    resolution: Resolution,
    *,
    installer: Installer,
    python: str,
    index: str,
    dest: Path,
    dry_run: bool = False,
) -> InstallPlan:
    """The plan for the chosen file; nothing chosen is :class:`CheckFailed`."""
    chosen = resolution.chosen
    if chosen is None:
        raise CheckFailed(
            f"no file fits {resolution.requirement!r} on this machine "
            f"({len(resolution.rejected)} rejected, see the reasons)",
            hint="`cuship resolve` shows why each file was rejected",
        )
    sha = chosen.candidate.sha256 or ""
    wheel = dest / chosen.candidate.filename
    command = install_command(
        installer,
        python=python,
        requirement=resolution.requirement,
        wheel=wheel,
        sha256=sha,
        index=index,
    )
    return InstallPlan(
        resolution=resolution,
        url=chosen.candidate.url,
        sha256=sha,
        wheel=wheel,
        command=command,
        dry_run=dry_run,
    )


def run_install(
    plan: InstallPlan,
    environ: Mapping[str, str],
    *,
    options: FetchOptions = DEFAULT_OPTIONS,
    emit: Emit = discard,
) -> str:
    """Download and verify the chosen wheel, run the installer; its output is returned."""
    chosen = plan.resolution.chosen
    if chosen is None:
        raise NothingToDo("nothing chosen to install")
    download(chosen.candidate, plan.wheel.parent, options=options, emit=emit)
    tool = plan.command[0]
    if find_tool(tool, environ).path is None and not Path(tool).is_file():
        raise ToolMissing(f"installer {tool!r} not found", hint="install it or pick --installer")
    emit(Event(level="info", topic="install", message="running " + " ".join(plan.command)))
    hint = "install it or pick --installer"
    done = process.run(plan.command, env=environ, hint=hint)
    output = done.output
    if done.returncode != 0:
        raise CheckFailed(
            f"{tool} failed (exit {done.returncode}) installing {chosen.candidate.filename!r}:\n"
            + process.tail(output, 25),
            hint="run the command printed by --dry-run to see the whole log",
        )
    return output
