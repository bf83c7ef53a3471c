"""A community index as its maintainer runs it: a packages.yml shipped, shipped again with
nothing changed, then with one version added; published files never change their bytes, and
the printed install lines install the package with pip and with uv."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cuship.machine import fingerprint
from tests.integration import clirun
from tests.integration.plainc import offline_from, plain_c_sdists
from tests.integration.venvs import make_venv
from tests.jsondocs import SHIP, schema_errors

PYPI = "https://pypi.org/simple"


def _write_packages(root: Path, versions: list[str]) -> None:
    python = ".".join(fingerprint(toolkit=False).python.split(".")[:2])
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "packages.yml").write_text(
        f'matrix:\n  python: ["{python}"]\n'
        "packages:\n"
        "  cplain:\n"
        f"    versions: {json.dumps(versions)}\n"
        '    build_args: "--no-build-isolation"\n'
        "    test_import: cplain\n"
        "    description: a plain C extension\n"
        "    matrix: {device_code: false}\n",
        encoding="utf-8",
    )


def _ship(root: Path, dist: Path) -> dict[str, object]:
    done = clirun.cuship(
        "ship",
        root,
        "-o",
        root / "out",
        "--no-check",
        "--json",
        env=offline_from(dist),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shipped: dict[str, object] = json.loads(done.stdout)
    assert schema_errors(SHIP, shipped) == []
    return shipped


def _published(root: Path) -> dict[str, str]:
    files = root / "out" / "site" / "files"
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files.glob("*.whl")}


def _jobs(shipped: dict[str, object]) -> dict[str, str]:
    jobs = shipped["jobs"]
    assert isinstance(jobs, list)
    return {job["job"]: job["detail"] for job in jobs}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Three ships of one packages.yml: 1.0; again unchanged; with 1.1 added."""
    root = tmp_path_factory.mktemp("community")
    dist = plain_c_sdists(root / "sdists", "1.0", "1.1")
    _write_packages(root, ["1.0"])
    first = _ship(root, dist)
    before = _published(root)
    again = _ship(root, dist)
    unchanged = _published(root)
    _write_packages(root, ["1.0", "1.1"])
    added = _ship(root, dist)
    return {
        "root": root,
        "first": first,
        "again": again,
        "added": added,
        "before": before,
        "unchanged": unchanged,
        "after": _published(root),
    }


def test_a_rerun_builds_nothing_and_a_new_version_builds_only_its_jobs(
    index: dict[str, object],
) -> None:
    python = "cp" + "".join(fingerprint(toolkit=False).python.split(".")[:2])
    first = _jobs(index["first"])  # type: ignore[arg-type]
    assert list(first) == [f"cplain-1.0-{python}-cpu"]
    assert "up to date" not in first[f"cplain-1.0-{python}-cpu"]
    again = _jobs(index["again"])  # type: ignore[arg-type]
    assert "up to date" in again[f"cplain-1.0-{python}-cpu"], again
    added = _jobs(index["added"])  # type: ignore[arg-type]
    assert "up to date" in added[f"cplain-1.0-{python}-cpu"]
    assert "up to date" not in added[f"cplain-1.1-{python}-cpu"]


def test_no_published_file_ever_changes_its_bytes(index: dict[str, object]) -> None:
    before, unchanged, after = index["before"], index["unchanged"], index["after"]
    assert isinstance(before, dict) and isinstance(after, dict)
    assert before and unchanged == before
    assert {name: after[name] for name in before} == before
    assert len(after) == 2 and all("+cpu-" in name for name in after)


def test_a_rebuild_that_differs_from_the_published_wheel_is_refused(
    index: dict[str, object], tmp_path: Path
) -> None:
    """The index side of the rule: a file of a published name with other bytes."""
    root = index["root"]
    assert isinstance(root, Path)
    site = tmp_path / "site"
    shutil.copytree(root / "out" / "site", site)
    published = next((site / "files").glob("cplain-1.0*.whl"))
    other = tmp_path / "other" / published.name
    other.parent.mkdir()
    other.write_bytes(published.read_bytes())
    with zipfile.ZipFile(other, "a") as archive:  # a comment: the same wheel, other bytes
        archive.comment = b"another build"
    done = clirun.cuship("index", other, "-o", site, "--keep-existing")
    assert done.returncode == 2, done.stderr
    assert "would change the bytes of the published file" in done.stderr
    assert "--replace-published" in done.stderr
    assert published.read_bytes() != other.read_bytes(), "the published file is as it was"


def _venv(where: Path) -> Path:
    return make_venv(where)


@pytest.mark.parametrize("tool", ["pip", "uv"])
def test_the_printed_install_lines_install_the_newest_version(
    index: dict[str, object], tool: str, tmp_path: Path
) -> None:
    """The line ship prints, run as printed (the PyPI extra index swapped for the site itself,
    which keeps the test off the network: cplain needs nothing from PyPI)."""
    added = index["added"]
    assert isinstance(added, dict)
    (lines,) = added["installs"]
    assert lines["project"] == "cplain" and lines["version"] == "1.1"
    words = shlex.split(lines[tool].replace(PYPI, lines["pip"].split("--index-url ")[1].split()[0]))
    python = _venv(tmp_path / "venv")
    if tool == "pip":
        argv = [sys.executable, "-m", "pip", "--python", str(python), *words[1:]]
    else:
        argv = [sys.executable, "-m", "uv", *words[1:3], "--python", str(python), *words[3:]]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    shown = subprocess.run(
        [str(python), "-c", "import cplain; print(cplain.__version__, cplain.add(2, 3))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert shown.stdout.split() == ["1.1", "5"]
