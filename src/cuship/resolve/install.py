"""Resolve against an index for a machine, and install exactly the chosen file, hash-pinned.

The chosen wheel is downloaded and verified by cuship first; the installer then gets it as a
direct reference with its hash in the URL fragment (``name @ file:///…whl#sha256=…``), which
pip and uv both check, while the wheel's dependencies resolve from the same index (and any
extra index given: an index cuship writes holds only the project's own wheels).

A wheel variant (PEP 825: ``pkg-1.0-cp311-cp311-linux_x86_64-cu130.whl``) is no wheel name to
pip, nor to uv without ``--preview-features wheel-variants``. uv gets the variant file with that
feature when its NVIDIA provider takes the variant on the machine the judge chose for (the null
variant always; the others checked against that machine, which uv is told through its
provider's ``NV_VARIANT_PROVIDER_FORCE_*`` variables unless they are set). Otherwise the
installer gets the same bytes under the name of the plain wheel the variant stands for (its
label dropped), kept apart from the index's own plain wheel, which is another build.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import packaging

from cuship import process, settings
from cuship._record import frozen
from cuship.errors import (
    CannotStart,
    CheckFailed,
    NothingToDo,
    TimedOut,
    ToolMissing,
    UsageError,
)
from cuship.events import Emit, Event, discard
from cuship.machine import fingerprint
from cuship.machine.interpreter import NoAnswer, probe
from cuship.resolve.fetch import IndexPage, download, fetch_page
from cuship.resolve.http import DEFAULT_OPTIONS, FetchOptions
from cuship.resolve.select import Resolution, Target, parse_requirement, select, target_of
from cuship.resolve.variants import UvMachine, fits
from cuship.tools import find_tool
from cuship.wheel.variant import NULL, split_variant

__all__ = [
    "AS_PLAIN",
    "FORCE_CUDA",
    "FORCE_SM",
    "PREVIEW",
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

PREVIEW = ("--preview-features", "wheel-variants")
"""What uv needs to take a variant file (uv 0.13.8)."""
FORCE_CUDA = "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION"
FORCE_SM = "NV_VARIANT_PROVIDER_FORCE_SM_ARCH"
AS_PLAIN = "as-plain"
"""Under the download directory: variant files under their plain wheel names, by label."""

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
    """(version, tags best first) of another interpreter, asked with the one interpreter probe
    (:func:`cuship.machine.interpreter.probe`), lent this one's packaging."""
    site = str(Path(next(iter(packaging.__path__))).parent)
    try:
        found = probe(python, environ, timeout=_PROBE_TIMEOUT, lend=site)
    except TimedOut as err:
        raise UsageError(
            f"--python {python!r} did not report its tags within {err.timeout:g} s",
            hint=_PROBE_HINT,
        ) from err
    except CannotStart as err:
        raise UsageError(f"cannot run --python {python!r}: {err.reason}") from err
    except NoAnswer as err:
        done = err.result
        if done is not None and done.returncode != 0 and not done.cut:
            raise UsageError(
                f"--python {python!r} failed to report its tags: {done.stderr.strip()[-300:]}"
            ) from None
        printed = "" if done is None else done.stdout.strip()[-300:]
        raise UsageError(
            f"--python {python!r} answered the tag probe with {printed!r}", hint=_PROBE_HINT
        ) from err
    if not found.tags:
        raise UsageError(
            f"--python {python!r} failed to report its tags: it cannot import packaging",
            hint=_PROBE_HINT,
        )
    return found.python, found.tags


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
    """What ``cuship install`` will do: download ``url`` to ``wheel``, give the installer
    ``installs`` (``wheel``, or a variant's bytes under its plain wheel name: ``how`` says
    which), then run ``command`` with ``env`` added where the environment does not set it
    (unless ``dry_run``: then it only says so)."""

    resolution: Resolution
    url: str
    sha256: str
    wheel: Path
    command: tuple[str, ...]
    dry_run: bool = False
    installs: Path | None = None  # None: ``wheel`` itself
    variant: str | None = None
    how: str = "the chosen wheel"
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def given(self) -> Path:
        """The file the installer is given."""
        return self.installs or self.wheel

    def to_json(self) -> dict[str, object]:
        return {
            "resolution": self.resolution.to_json(),
            "url": self.url,
            "sha256": self.sha256,
            "wheel": str(self.wheel),
            "installs": str(self.given),
            "variant": self.variant,
            "how": self.how,
            "command": list(self.command),
            "env": dict(self.env),
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
    extra_indexes: Sequence[str] = (),
    preview: bool = False,
) -> tuple[str, ...]:
    """The installer's command line for exactly ``wheel`` (hash-pinned), deps from ``index``
    and ``extra_indexes``; ``preview``: uv's wheel-variants feature (a variant file)."""
    req = parse_requirement(requirement)
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    pinned = f"{req.name}{extras} @ {wheel.absolute().as_uri()}#sha256={sha256}"
    where = ["--index-url", index]
    for extra in extra_indexes:
        where += ["--extra-index-url", extra]
    if installer == "uv":
        flags = PREVIEW if preview else ()
        return ("uv", "pip", "install", *flags, "--python", python, *where, pinned)
    return (python, "-m", "pip", "install", *where, pinned)


def _uv_forces(
    label: str, variants: Mapping[str, Mapping[str, Any]], target: Target
) -> dict[str, str] | None:
    """The provider variables under which uv takes the variant ``label`` on ``target`` (none
    for the null variant); None when its NVIDIA provider would refuse it there."""
    if label == NULL:
        return {}
    machine = UvMachine.of(target.offer.driver_cuda, target.offer.gpus)
    entry = variants.get(label)
    if entry is None or machine.cuda is None or machine.cc is None or not fits(entry, machine):
        return None
    return {FORCE_CUDA: "{}.{}".format(*machine.cuda), FORCE_SM: "{}.{}".format(*machine.cc)}


def _variant_table(resolution: Resolution, variants: Mapping[str, Any]) -> dict[str, Any]:
    """The chosen version's variants (label -> properties): the index's variants.json, and the
    manifest's record of the chosen file."""
    chosen = resolution.chosen
    assert chosen is not None
    table = dict(variants.get(chosen.version or "", {}))
    facts = chosen.candidate.facts
    if facts is not None and facts.variant:
        table.update(facts.variant)
    return table


def plan_install(
    resolution: Resolution,
    *,
    installer: Installer,
    python: str,
    index: str,
    dest: Path,
    dry_run: bool = False,
    extra_indexes: Sequence[str] = (),
    variants: Mapping[str, Mapping[str, Any]] | None = None,
) -> InstallPlan:
    """The plan for the chosen file (a variant as the module says; ``variants``: the index's
    variants.json tables by version); nothing chosen is :class:`CheckFailed`."""
    chosen = resolution.chosen
    if chosen is None:
        raise CheckFailed(
            f"no file fits {resolution.requirement!r} on this machine "
            f"({len(resolution.rejected)} rejected, see the reasons)",
            hint="`cuship resolve` shows why each file was rejected",
        )
    sha = chosen.candidate.sha256 or ""
    wheel = dest / chosen.candidate.filename
    plain, label = split_variant(chosen.candidate.filename)
    installs, how, env, preview = None, "the chosen wheel", {}, False
    if label is not None:
        table = _variant_table(resolution, variants or {})
        forces = _uv_forces(label, table, resolution.target) if installer == "uv" else None
        if forces is not None:
            env, preview = forces, True
            how = f"the variant file ({label}), by uv {' '.join(PREVIEW)}"
        else:
            installs = dest / AS_PLAIN / label / plain
            how = (
                f"the variant's bytes under the plain wheel name {plain!r} ({installer} "
                + ("takes no variant file" if installer == "pip" else "would refuse the variant")
                + ")"
            )
    command = install_command(
        installer,
        python=python,
        requirement=resolution.requirement,
        wheel=installs or wheel,
        sha256=sha,
        index=index,
        extra_indexes=extra_indexes,
        preview=preview,
    )
    return InstallPlan(
        resolution=resolution,
        url=chosen.candidate.url,
        sha256=sha,
        wheel=wheel,
        command=command,
        dry_run=dry_run,
        installs=installs,
        variant=label,
        how=how,
        env=env,
    )


def _place(wheel: Path, installs: Path) -> None:
    """``wheel``'s bytes at ``installs`` (a hard link, else a copy), replacing what was there."""
    import shutil
    import tempfile

    from cuship import _fs

    installs.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=installs.parent, prefix=f".{installs.name}."))
    try:
        try:
            os.link(wheel, staging / installs.name)
        except OSError:
            shutil.copyfile(wheel, staging / installs.name)
        _fs.move(staging / installs.name, installs.parent, installs.name)
    finally:
        _fs.remove_tree(installs.parent, staging.name)


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
    if plan.installs is not None:
        _place(plan.wheel, plan.installs)
    tool = plan.command[0]
    if find_tool(tool, environ).path is None and not Path(tool).is_file():
        raise ToolMissing(f"installer {tool!r} not found", hint="install it or pick --installer")
    emit(Event(level="info", topic="install", message=f"installing {plan.how}"))
    emit(Event(level="info", topic="install", message="running " + " ".join(plan.command)))
    hint = "install it or pick --installer"
    done = process.run(plan.command, env={**plan.env, **environ}, hint=hint)
    output = done.output
    if done.returncode != 0:
        raise CheckFailed(
            f"{tool} failed (exit {done.returncode}) installing {chosen.candidate.filename!r}:\n"
            + process.tail(output, 25),
            hint="run the command printed by --dry-run to see the whole log",
        )
    return output
