"""Every ``CUSHIP_*`` environment variable: its name, who sets it, what it means and its default.

Code reads or sets a variable through the constants below, never a literal spelling;
:func:`render_markdown` writes the table the docs site shows (reference/environment.md).
"""

from __future__ import annotations

from typing import Literal

from cuship._record import frozen

__all__ = ["SETTINGS", "Setting", "render_markdown"]


@frozen
class Setting:
    """One environment variable. ``by``: ``user`` (cuship reads it) or ``cuship`` (cuship sets it
    for the project's build or tests to read)."""

    name: str
    by: Literal["user", "cuship"]
    meaning: str
    default: str = "unset"


_TABLE: list[Setting] = []


def _setting(name: str, by: Literal["user", "cuship"], meaning: str, default: str = "unset") -> str:
    _TABLE.append(Setting(name=name, by=by, meaning=meaning, default=default))
    return name


# -- this machine, as cuship sees it (tests, dry runs, users who know better) ----------------------
GPUS = _setting(
    "CUSHIP_GPUS",
    "user",
    'The GPUs here instead of NVML/nvidia-smi/procfs: `"H100:9.0:80GiB,A100"`, `none` for no GPU.',
    "probed",
)
CUDA_DRIVER_VERSION = _setting(
    "CUSHIP_CUDA_DRIVER_VERSION", "user", "The NVIDIA driver version (`570.124.06`).", "probed"
)
DRIVER_CUDA = _setting(
    "CUSHIP_DRIVER_CUDA",
    "user",
    "The newest CUDA the driver runs (`12.8`).",
    "from the driver version",
)
TORCH = _setting(
    "CUSHIP_TORCH",
    "user",
    "The installed torch (`2.8.0+cu128`, `none`); read from its files, never imported.",
    "probed",
)
TORCH_CXX11ABI = _setting(
    "CUSHIP_TORCH_CXX11ABI", "user", "Whether that torch uses the C++11 ABI (`1`/`0`).", "probed"
)
TORCH_CUDA = _setting(
    "CUSHIP_TORCH_CUDA",
    "user",
    "The CUDA that torch was built for (`13.0`; `none`: a CPU build), where `CUSHIP_TORCH` has no "
    "`+cu130`/`+cpu` label (PyPI's CUDA builds carry none).",
    "torch/version.py",
)
MATRIX_CUDA = _setting(
    "CUSHIP_MATRIX_CUDA",
    "user",
    "The CUDA axis (`13.0`, or `12.8,13.0`) of a config whose `[matrix] cuda` names none, in "
    "place of this host's: generated CI sets it to what `cuship ci init` planned, so that every "
    "runner (with its own nvcc, or none) plans the same jobs.",
    "this host's nvcc",
)
CUDA_LIBS = _setting(
    "CUSHIP_CUDA_LIBS",
    "user",
    "The NVIDIA libraries this machine offers, instead of searching NVIDIA's wheels, torch/lib and "
    "the library path: CUDA majors (`12,13`), SONAMEs (`libcudart.so.12`), `none`.",
    "searched",
)
LD_CACHE = _setting(
    "CUSHIP_LD_CACHE",
    "user",
    "The loader cache the judged machine's ld.so reads instead of `/etc/ld.so.cache`: a path, or "
    "`none` (as `ld.so --inhibit-cache` runs: only LD_LIBRARY_PATH, RPATH/RUNPATH and the "
    "default directories are searched).",
    "/etc/ld.so.cache",
)
NVCC = _setting(
    "CUSHIP_NVCC",
    "user",
    "The nvcc to use (`none`: act as if there were none).",
    "CUDA_HOME/bin, CUDA_PATH/bin, PATH, /usr/local/cuda/bin",
)
COMPUTE_SANITIZER = _setting(
    "CUSHIP_COMPUTE_SANITIZER",
    "user",
    "`check --sanitize`: the compute-sanitizer to run (`none`: act as if there were none).",
    "CUDA_HOME/bin, CUDA_PATH/bin, PATH, /usr/local/cuda/bin",
)
TAGS = _setting(
    "CUSHIP_TAGS",
    "user",
    "`resolve --tags-from-env`: the Python tags to judge wheels for, best first "
    "(`cp312-cp312-linux_x86_64`).",
)
PYTHON_VERSION = _setting(
    "CUSHIP_PYTHON_VERSION",
    "user",
    "`resolve --tags-from-env`: the Python version those tags belong to (`3.12`).",
)
# -- results, gating ---------------------------------------------------------------------------
STORE = _setting(
    "CUSHIP_STORE",
    "user",
    "The results store (SQLite) of check, bench, report, dashboard.",
    "`[check]`/`[bench] store`",
)
REQUIRE_GPU = _setting(
    "CUSHIP_REQUIRE_GPU",
    "user",
    "pytest plugin: as `--require-gpu` (`1`): a skipped or unselected gpu test fails the run.",
    "off",
)
# -- the prebuilt-or-build backend -------------------------------------------------------------
FORCE_BUILD = _setting(
    "CUSHIP_FORCE_BUILD", "user", "`cuship.backend`: always build from source (`1`).", "off"
)
NO_BUILD = _setting(
    "CUSHIP_NO_BUILD",
    "user",
    "`cuship.backend`: fail instead of compiling when no prebuilt wheel fits (`1`).",
    "off",
)
TARGET_PYTHON = _setting(
    "CUSHIP_TARGET_PYTHON",
    "user",
    "`cuship.backend`: the interpreter of the environment the frontend installs into (found "
    "by itself under pip, and under uv from uv's process; this one names it).",
    "found",
)
PREBUILT_INDEX = _setting(
    "CUSHIP_PREBUILT_INDEX",
    "user",
    "`cuship.backend`: the index to take prebuilt wheels from.",
    "`[tool.cuship.prebuilt] index`",
)
# -- CUDA toolkits from PyPI (`cuship toolkit`, `[build] toolkits = "fetch"`) -------------------
TOOLKITS = _setting(
    "CUSHIP_TOOLKITS",
    "user",
    "The directory CUDA toolkits assembled from NVIDIA's PyPI wheels are kept in, one per CUDA "
    "release (`13.0.2/`).",
    "`$XDG_CACHE_HOME/cuship/toolkits` (`~/.cache`)",
)
TOOLKIT_INDEX = _setting(
    "CUSHIP_TOOLKIT_INDEX",
    "user",
    "The PEP 691 simple index the toolkit wheels come from (a mirror of PyPI).",
    "`https://pypi.org/simple`",
)
# -- reading untrusted input (wheels, downloads) ------------------------------------------------
WHEEL_MEMBER_LIMIT = _setting(
    "CUSHIP_WHEEL_MEMBER_LIMIT",
    "user",
    "The most bytes one wheel member may inflate to; a larger one (or one that inflates over "
    "200 times its compressed size) is refused before a byte is inflated.",
    "4294967296 (4 GiB)",
)
FETCH_TIMEOUT = _setting(
    "CUSHIP_FETCH_TIMEOUT",
    "user",
    "Seconds one network read may wait (`--timeout` where a command has it; the backend).",
    "15",
)
FETCH_DEADLINE = _setting(
    "CUSHIP_FETCH_DEADLINE",
    "user",
    "Seconds one download or page may take in all, however the server drips its bytes.",
    "4 × the read timeout per try",
)
MAX_DOWNLOAD = _setting(
    "CUSHIP_MAX_DOWNLOAD",
    "user",
    "The most bytes a wheel download may have when the index declares no size.",
    "17179869184 (16 GiB)",
)
# -- CI ----------------------------------------------------------------------------------------
SIGNING_KEY = _setting(
    "CUSHIP_SIGNING_KEY",
    "user",
    "Generated GitHub workflow: the ed25519 key (a secret) that signs build attestations.",
)
PROGRESS_INTERVAL = _setting(
    "CUSHIP_PROGRESS_INTERVAL",
    "user",
    "Off a terminal (CI logs, pipes): the fewest seconds between two progress lines of one "
    "topic; its first and last item and any item that went wrong are always shown. `0` shows "
    "every item.",
    "5",
)
# -- set by cuship for the project it builds or tests --------------------------------------------
CUDA_ARCHS = _setting(
    "CUSHIP_CUDA_ARCHS",
    "cuship",
    "The job's arch list in CMake spelling (`80-real;90-real;90-virtual`); also `CUDAARCHS`, "
    "`TORCH_CUDA_ARCH_LIST`.",
)
LOCAL_VERSION = _setting(
    "CUSHIP_LOCAL_VERSION", "cuship", "The job's local version label (`cu130`)."
)
CPU_ONLY = _setting(
    "CUSHIP_CPU_ONLY",
    "cuship",
    "`1` for the CPU-only build (`[build] cpu_fallback`): build without CUDA.",
)

CHECK_CHOICES: tuple[str, ...] = (GPUS, CUDA_DRIVER_VERSION, DRIVER_CUDA, COMPUTE_SANITIZER)
"""The variables that change what a ``cuship check`` runs (its device, PTX gate, sanitizer): a
reproduce line carries each one the run had."""

SETTINGS: tuple[Setting, ...] = tuple(_TABLE)
"""Every variable, in the order above."""


def render_markdown() -> str:
    """The docs site's table of environment variables (``cuship.docs.env``)."""
    rows = ["| variable | set by | meaning | default |", "|---|---|---|---|"]
    for item in SETTINGS:
        rows.append(f"| `{item.name}` | {item.by} | {item.meaning} | {item.default} |")
    return "\n".join(rows) + "\n"
