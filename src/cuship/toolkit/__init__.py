"""CUDA toolkits on demand: a toolkit prefix (``bin/nvcc``, ``nvvm/``, ``include/``, ``lib64/``)
assembled from NVIDIA's PyPI wheels into a cache, so a build can use a CUDA 13.x minor this
machine has no installer for.

``catalog`` says which wheel versions make which CUDA release (``data/toolkits.toml``) and
which majors PyPI cannot supply; ``layout`` maps wheel files onto the prefix (pure); ``cache``
finds assembled toolkits; ``assemble`` downloads, checks and assembles one (imported on first
use of ``install``, ``ensure`` and the like: a command that only plans never loads it).
"""

from __future__ import annotations

import importlib
import platform
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cuship.events import Emit, discard
from cuship.toolkit.cache import (
    Installed,
    Listed,
    Listing,
    WheelFile,
    cached,
    index_url,
    listing,
    read_installed,
    toolkit_prefix,
    toolkits_root,
)
from cuship.toolkit.catalog import (
    Catalog,
    ToolkitRelease,
    Unavailable,
    WheelComponent,
    catalog,
    runner_hint,
)

if TYPE_CHECKING:
    from cuship.toolkit.assemble import InstallResult, install, nvcc_version

_ASSEMBLE = ("InstallResult", "install", "nvcc_version")

__all__ = [
    "Catalog",
    "InstallResult",
    "Installed",
    "Listed",
    "Listing",
    "ToolkitRelease",
    "Unavailable",
    "WheelComponent",
    "WheelFile",
    "cached",
    "catalog",
    "ensure",
    "index_url",
    "install",
    "list_toolkits",
    "nvcc_version",
    "read_installed",
    "runner_hint",
    "toolkit_prefix",
    "toolkits_root",
]


def list_toolkits(environ: Mapping[str, str]) -> Listing:
    """The releases cuship can assemble and the toolkits in the cache of ``environ``
    (:func:`toolkits_root`)."""
    return listing(catalog(), toolkits_root(environ))


def ensure(
    spec: str, environ: Mapping[str, str], *, offline: bool = False, emit: Emit = discard
) -> InstallResult:
    """The toolkit ``spec`` names (``"13.1"``, ``"13.0.2"``), from the cache or assembled now;
    cache and index from ``environ`` (:func:`toolkits_root`, :func:`index_url`)."""
    from cuship.toolkit.assemble import install

    rows = catalog()
    return install(
        rows.find(spec),
        catalog=rows,
        root=toolkits_root(environ),
        index=index_url(environ),
        machine=platform.machine(),
        offline=offline,
        emit=emit,
    )


def __getattr__(name: str) -> Any:
    if name not in _ASSEMBLE:
        raise AttributeError(f"module 'cuship.toolkit' has no attribute {name!r}")
    value = getattr(importlib.import_module("cuship.toolkit.assemble"), name)
    globals()[name] = value
    return value
