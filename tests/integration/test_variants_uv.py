"""Wheel variants as users install them: the example wheel built by nvcc, as a CUDA 12.8 build
(its runtime relinked to libcudart.so.12) and a CUDA 13.0 build, with the variant twins, the
plain wheel and the null variant cuship writes, indexed by cuship and served on loopback.

On machines forced through the NVIDIA provider's variables, the real uv 0.13.8 (pinned in the
dev extra) with ``--preview-features wheel-variants`` installs the variant cuship's resolver
names for the same machine; uv without the flag and pip install the plain wheel; variantlib
0.2.2, the reference library, reads every variant wheel and writes the same variants as the
index's variants.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cuship.index import write
from cuship.index.describe import describe_wheel
from cuship.judge.variants import publish_variants
from cuship.serve.site import IndexServer, serve
from tests.integration.clirun import cuship
from tests.integration.cudawheel import relabel_for_cuda
from tests.integration.indexsite import clean_env
from tests.integration.venvs import make_venv

_CP = f"cp{sys.version_info.major}{sys.version_info.minor}"
PLAIN = f"cuvecops-0.1.0-{_CP}-{_CP}-linux_x86_64.whl"

# (driver CUDA, compute capability) -> the variant uv and cuship take ("" the plain wheel)
MACHINES = {
    ("13.0", "9.0"): "cu130",
    ("12.8", "9.0"): "cu128",
    ("13.0", "11.0"): "cu130",  # no SASS for 11.0: PTX compute_80 (110_virtual)
    ("12.8", "12.0"): "cu128",
    ("12.4", "8.6"): "cu128",
    ("13.0", "10.3"): "cu130",
}


@pytest.fixture(scope="module")
def wheels(example_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("variants") / "wheels"
    builds = [relabel_for_cuda(example_wheel, label, folder) for label in ("cu128", "cu130")]
    publish_variants(builds, folder, null=True)
    # cuvecops needs numpy>=1.26: the tests install with --no-deps
    return folder


@pytest.fixture(scope="module")
def site(wheels: Path) -> Path:
    write([wheels], wheels.parent / "site", describe=describe_wheel)
    return wheels.parent / "site"


def _installed(python: Path) -> str:
    """The variant label of the cuvecops installed for ``python`` ("" for the plain wheel)."""
    site = python.parents[1] / "lib"
    (info,) = site.glob("python3.*/site-packages/cuvecops-*.dist-info")
    variant = info / "variant.json"
    return next(iter(json.loads(variant.read_text())["variants"])) if variant.exists() else ""


def _uv(server: IndexServer, tmp: Path, *, cuda: str | None, cc: str | None, flag: bool) -> str:
    venv = tmp / "venv"
    env = clean_env(tmp)
    make_venv(venv, env=env)
    if cuda is not None:
        env["NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION"] = cuda
    if cc is not None:
        env["NV_VARIANT_PROVIDER_FORCE_SM_ARCH"] = cc
    args = ["uv", "pip", "install", "--no-config", "--refresh", "--no-deps"]
    args += ["--python", str(venv / "bin" / "python"), "--index-url", f"{server.url}simple"]
    if flag:
        args += ["--preview-features", "wheel-variants"]
    done = subprocess.run([*args, "cuvecops"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return _installed(venv / "bin" / "python")


def _resolve(server: IndexServer, tmp: Path, *, cuda: str, cc: str) -> dict[str, object]:
    env = clean_env(
        tmp,
        CUSHIP_GPUS=f"GPU:{cc}",
        CUSHIP_DRIVER_CUDA=cuda,
        CUSHIP_TORCH="none",
        CUSHIP_CUDA_LIBS="12,13",
    )
    done = cuship("resolve", "cuvecops", "--index", f"{server.url}simple", "--json", base=env)
    assert done.returncode in (0, 1), done.stderr
    return dict(json.loads(done.stdout))


@pytest.mark.parametrize(("cuda", "cc"), sorted(MACHINES))
def test_uv_with_variants_and_cuship_take_the_same_build(
    server: IndexServer, tmp_path: Path, cuda: str, cc: str
) -> None:
    label = MACHINES[(cuda, cc)]
    assert _uv(server, tmp_path / "uv", cuda=cuda, cc=cc, flag=True) == label
    doc = _resolve(server, tmp_path / "cuship", cuda=cuda, cc=cc)
    chosen = doc["chosen"]
    assert isinstance(chosen, dict)
    assert chosen["filename"] == f"cuvecops-0.1.0-{_CP}-{_CP}-linux_x86_64-{label}.whl"
    assert doc["uv_variants_choice"] == chosen["filename"]


def test_where_uv_takes_a_build_that_cannot_run_cuship_says_so(
    server: IndexServer, tmp_path: Path
) -> None:
    """A Tesla T4 (7.5) on a CUDA 13 driver: no build has code for it. uv takes the null
    variant (the same binaries), cuship takes nothing and says why."""
    assert _uv(server, tmp_path / "uv", cuda="13.0", cc="7.5", flag=True) == "null"
    doc = _resolve(server, tmp_path / "cuship", cuda="13.0", cc="7.5")
    assert doc["chosen"] is None
    assert doc["uv_variants_choice"] == f"cuvecops-0.1.0-{_CP}-{_CP}-linux_x86_64-null.whl"
    rejected = doc["rejected"]
    assert isinstance(rejected, list) and {r["rule"] for r in rejected} == {"gpu"}


def test_uv_without_the_flag_and_pip_install_the_plain_wheel(
    server: IndexServer, tmp_path: Path
) -> None:
    assert _uv(server, tmp_path / "uv", cuda="13.0", cc="9.0", flag=False) == ""
    venv = tmp_path / "pip"
    make_venv(venv, pip=True)
    env = clean_env(tmp_path)
    pip = [str(venv / "bin/python"), "-m", "pip", "install", "--no-deps"]
    done = subprocess.run(
        [*pip, "--index-url", f"{server.url}simple", "cuvecops"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _installed(venv / "bin/python") == ""
    assert PLAIN in done.stdout  # pip skipped the variant wheels and took the plain one


def test_variantlib_reads_every_variant_wheel_and_writes_the_same_variants(
    server: IndexServer, wheels: Path, tmp_path: Path
) -> None:
    variant_wheels = sorted(p for p in wheels.glob("*.whl") if p.name.count("-") == 5)
    assert len(variant_wheels) == 3  # cu128, cu130, null
    for wheel in variant_wheels:
        done = subprocess.run(
            ["variantlib", "analyze-wheel", "-i", str(wheel)], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert "is a Wheel Variant" in done.stdout + done.stderr
    folder = tmp_path / "variantlib"
    folder.mkdir()
    for wheel in variant_wheels:
        (folder / wheel.name).write_bytes(wheel.read_bytes())
    done = subprocess.run(
        ["variantlib", "generate-index-json", "-d", str(folder)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    theirs = json.loads((folder / "cuvecops-0.1.0-variants.json").read_text())
    site = wheels.parent / "site"
    ours = json.loads((site / "simple/cuvecops/cuvecops-0.1.0-variants.json").read_text())

    def normal(document: dict[str, object]) -> dict[str, object]:
        variants = document["variants"]
        assert isinstance(variants, dict)
        return {
            label: {ns: {f: sorted(v) for f, v in features.items()} for ns, features in e.items()}
            for label, e in variants.items()
        }

    assert normal(ours) == normal(theirs)
    assert ours["providers"] == theirs["providers"]
    assert ours["default-priorities"] == theirs["default-priorities"]


def test_torch_linked_variants_are_taken_from_their_torch_minors_sub_index(
    tmp_path: Path,
) -> None:
    """Builds for torch 2.12 and 2.13, each for CUDA 12.6 and 13.0: uv with the flag, pointed at
    the sub-index of the installed torch's minor, takes that torch's build for the driver."""
    from tests.elf_factory import cuda_elf
    from tests.wheel_factory import make_wheel

    tag = f"{_CP}-{_CP}-manylinux_2_17_x86_64"
    builds = []
    for torch in ("2.12", "2.13"):
        for cuda in ("126", "130"):
            so = cuda_elf(
                sass=["80", "90"],
                needed=(f"libcudart.so.{cuda[:2]}", "libc10.so", "libc10_cuda.so"),
                undefined=("_ZN3c106detail14torchCheckFailEPKcS2_jPKc",),
            )
            builds.append(
                make_wheel(
                    tmp_path / "builds",
                    "tvar",
                    f"1.0+cu{cuda}torch{torch}",
                    tag=tag,
                    files={"tvar/_C.abi3.so": so},
                    extra_metadata=f"Requires-Dist: torch=={torch}.*\n",
                )
            )
    publish_variants(builds, tmp_path / "wheels")
    site = tmp_path / "site"
    write([tmp_path / "wheels"], site, describe=describe_wheel)
    with serve(site, "127.0.0.1", 0) as server:
        for cuda, label in (("13.0", "cu130"), ("12.8", "cu126")):
            venv = tmp_path / f"venv-{cuda}"
            env = clean_env(tmp_path)
            make_venv(venv, env=env)
            env |= {
                "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": cuda,
                "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "9.0",
            }
            done = subprocess.run(
                [
                    "uv",
                    "pip",
                    "install",
                    "--no-config",
                    "--no-deps",
                    "--python",
                    str(venv / "bin/python"),
                    "--preview-features",
                    "wheel-variants",
                    "--index-url",
                    f"{server.url}torch2.13/simple",
                    "tvar",
                ],
                env=env,
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, done.stderr
            (info,) = venv.glob("lib/python3.*/site-packages/tvar-*.dist-info")
            assert next(iter(json.loads((info / "variant.json").read_text())["variants"])) == label
            assert "torch==2.13.*" in (info / "METADATA").read_text()
