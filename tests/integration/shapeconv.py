"""The shapeconv fixture's sdist as its maintainer would ship it with cuship (shared by its tests
and benchmarks/bench_real_extension.py)."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

from tests.integration.indexsite import REPO

FIXTURE = REPO / "tests" / "fixtures" / "shapeconv"


def make_sdist(work: Path, index: str, into: Path) -> Path:
    """``into/shapeconv-0.3.1.tar.gz``: setup.py untouched, the pyproject's backend
    cuship.backend in front of setuptools, prebuilt wheels from ``index``; ``work`` holds the tree."""
    tree = work / "shapeconv-0.3.1"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(FIXTURE, tree, ignore=shutil.ignore_patterns("dist", "build", "*.egg-info"))
    (tree / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["cuship"]\nbuild-backend = "cuship.backend"\n\n'
        f'[tool.cuship.prebuilt]\nindex = "{index}"\nbackend = "setuptools.build_meta"\n'
        'build-requires = ["setuptools>=68", "torch"]\n'
    )
    (tree / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: shapeconv\nVersion: 0.3.1\n")
    into.mkdir(parents=True, exist_ok=True)
    sdist = into / "shapeconv-0.3.1.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        archive.add(tree, arcname=tree.name)
    return sdist
