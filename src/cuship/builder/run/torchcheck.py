"""``python -m cuship.builder.run.torchcheck SITE VERSION VARIANT``: the build step that holds a job's
build venv to the torch build the job is for, before anything compiles.

torch's version and build (``cu130``, ``cpu``) are read from its files in ``SITE`` (see
:func:`cuship.machine.torch_in`), never by importing it. Exit 0 when they are the job's, else 1
with one line that says what was wanted and what was found (the line the job's failure shows).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from cuship.machine import TorchInfo, torch_in

__all__ = ["problem"]


def _variant(torch: TorchInfo) -> str | None:
    if torch.flavour == "cuda" and torch.cuda:
        return "cu" + torch.cuda.replace(".", "")
    return torch.flavour


def problem(torch: TorchInfo | None, version: str, variant: str) -> str | None:
    """Why ``torch`` (what the build venv holds) is not torch ``version`` built for ``variant``."""
    wanted = f"torch {version} ({variant})"
    if torch is None:
        return f"the job needs {wanted}; its build environment has no torch"
    found = _variant(torch)
    public = torch.version.split("+", 1)[0]
    if public == version and found == variant:
        return None
    build = found or "a build whose flavour torch/version.py does not say"
    return (
        f"the job needs {wanted}; its build environment has torch {torch.version} ({build}), "
        "read from torch/version.py: pip took another build (a local wheel folder or index "
        "ahead of the one that has the job's); fix the index order or [build] torch_index"
    )


def main(argv: Sequence[str]) -> int:
    site, version, variant = argv
    said = problem(torch_in([site]), version, variant)
    if said is not None:
        sys.stderr.write(f"error: {said}\n")
        return 1
    sys.stdout.write(f"torch {version} ({variant}) in {site}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
