"""Which cuship the generated CI installs, and why: :func:`pin_cuship` (pure).

The CI a maintainer generates should run the cuship that maintainer ran. In order:
``ci init --cuship`` (one requirement per option), ``[ci] cuship``, else the cuship that writes the
files, read from its PEP 610 record (:mod:`cuship.provenance.direct_url`): from an index,
``cuship[all]==X.Y.Z``; from a VCS, ``cuship[all] @ git+URL@COMMIT``; from a remote archive, that
URL. A local directory, an editable checkout or a source tree gives no line a runner could
install: :func:`pin_cuship` refuses, naming the option and the key that fix it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cuship.errors import UsageError
from cuship.provenance.direct_url import InstallSource

__all__ = ["CushipPin", "pin_cuship"]

# cuship[...] @ git+https://github.com/OWNER/REPO(.git)@COMMIT: a commit of a GitHub repository,
# whose root holds cuship's composite action (action.yml).
_GITHUB_COMMIT = re.compile(
    r"^cuship(\[[^\]]*\])? @ git\+https://github\.com/"
    r"(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(\.git)?@(?P<commit>[0-9a-f]{40})$"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CushipPin:
    """The requirements CI installs cuship with, the reason, and cuship's action if known."""

    requirements: tuple[str, ...]
    why: str
    action: str | None = None  # OWNER/REPO@COMMIT of cuship's action.yml, same commit

    @property
    def text(self) -> str:
        """The requirements one per line (the CI variable's value)."""
        return "\n".join(self.requirements)


def _action(requirements: Sequence[str]) -> str | None:
    """cuship's action at the same commit, when the one requirement is a GitHub commit."""
    if len(requirements) != 1:
        return None
    found = _GITHUB_COMMIT.match(requirements[0])
    return f"{found['repo']}@{found['commit']}" if found else None


def pin_cuship(
    option: Sequence[str], configured: Sequence[str], source: InstallSource
) -> CushipPin:
    """The pin: ``option`` (``ci init --cuship``), else ``configured`` (``[ci] cuship``), else
    the cuship ``source`` describes; UsageError (exit 2) when that cannot be installed elsewhere."""
    if option:
        reqs = tuple(option)
        return CushipPin(requirements=reqs, why="named by `ci init --cuship`", action=_action(reqs))
    if configured:
        reqs = tuple(configured)
        return CushipPin(requirements=reqs, why="[ci] cuship in the config", action=_action(reqs))
    requirement = source.requirement("all")
    if requirement is None:
        raise UsageError(
            f"this cuship ({source.version}) comes from {source.whence()}: a CI runner cannot "
            "install it from there, so generated CI has no cuship to pin",
            hint="name the cuship CI installs: `cuship ci init --cuship 'cuship[all]==X.Y.Z'` "
            "(or a `cuship[all] @ git+https://…@COMMIT` URL), or [ci] cuship in the config",
        )
    where = "a VCS commit" if source.kind == "vcs" else f"{source.whence().split(' (')[0]}"
    note = " (a file: URL: only a runner that has that path can install it)" if source.local else ""
    return CushipPin(
        requirements=(requirement,),
        why=f"the cuship that wrote this file ({source.version}, installed from {where}){note}",
        action=_action((requirement,)),
    )
