"""The prebuilt-or-build backend over file:// indexes: decisions, templates, config.

The hooks and their shared decision: test_backend_hooks.py.
"""

from __future__ import annotations

import hashlib
import platform
from collections.abc import Callable
from pathlib import Path

import pytest

from cuship.errors import CheckFailed, ConfigError, UsageError
from cuship.index import write
from cuship.judge.offer import Offer, TorchBuild
from cuship.resolve import Target
from cuship.resolve._template import format_url, template_values
from cuship.resolve.backend import Prebuilt, decide
from cuship.resolve.settings import PrebuiltConfig, read_config
from tests.wheel_factory import make_wheel

ENV = {"CUSHIP_GPUS": "none", "CUSHIP_TORCH": "none", "CUSHIP_NVCC": "none", "PATH": "/nonexistent"}


def _project(tmp_path: Path, prebuilt: str) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "tinyp"\nversion = "0.1.0"\n\n[tool.cuship.prebuilt]\n' + prebuilt
    )
    return project


def _site(tmp_path: Path) -> Path:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "tinyp", "0.1.0+cu128", modules={"tinyp": "VERSION = 'prebuilt'\n"})
    make_wheel(wheels, "tinyp", "0.2.0", modules={"tinyp": "VERSION = 'newer'\n"})
    site = tmp_path / "site"
    write([wheels], site)
    return site


@pytest.mark.parametrize(
    ("tamper", "refusal"),
    [
        (lambda data: data[:-1] + bytes([data[-1] ^ 1]), "sha256 mismatch"),  # same size
        (lambda data: data + b"tampered", r"sends more than the \d+ bytes the index declares"),
    ],
)
def test_a_tampered_index_is_refused(
    tmp_path: Path, tamper: Callable[[bytes], bytes], refusal: str
) -> None:
    site = _site(tmp_path)
    wheel = site / "files" / "tinyp-0.1.0+cu128-py3-none-any.whl"
    wheel.write_bytes(tamper(wheel.read_bytes()))
    project = _project(tmp_path, f'index = "{(site / "simple").as_uri()}"\n')
    hooks = Prebuilt(project=project, environ=ENV)
    meta = tmp_path / "meta"
    meta.mkdir()
    with pytest.raises(CheckFailed, match=refusal):
        hooks.prepare_metadata_for_build_wheel(str(meta))
    assert not list((meta / ".cuship-prebuilt").glob("*.whl"))


def test_decisions(tmp_path: Path) -> None:
    site = _site(tmp_path)
    config = PrebuiltConfig(name="tinyp", version="0.1.0", index=(site / "simple").as_uri())
    chosen = decide(config, ENV)
    assert chosen.candidate is not None
    assert chosen.candidate.filename == "tinyp-0.1.0+cu128-py3-none-any.whl"
    assert chosen.index == config.index
    # the machine, the competition (0.2.0 is not ==0.1.0), the wheel's CUDA and the notes
    assert chosen.why.startswith(f"fits this machine (Python {platform.python_version()}, ")
    assert "no GPU, no CUDA driver); best of 1 fitting, 1 rejected: CUDA 12.8; " in chosen.why
    assert "arches unknown" in chosen.why
    assert decide(config, {**ENV, "CUSHIP_FORCE_BUILD": "1"}).why == "CUSHIP_FORCE_BUILD=1"
    gone = decide(config, {**ENV, "CUSHIP_PREBUILT_INDEX": (tmp_path / "nope").as_uri()})
    assert gone.candidate is None and gone.why.startswith("no prebuilt wheel:")
    other = PrebuiltConfig(name="tinyp", version="0.3.0", index=config.index)
    missing = decide(other, ENV)
    assert missing.candidate is None and "no prebuilt wheel of tinyp==0.3.0 fits" in missing.why


def test_deciding_never_runs_nvcc(tmp_path: Path) -> None:
    """A prebuilt wheel is chosen without the toolkit (unit tests fail on any process)."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "nvcc").write_text("#!/bin/sh\nexit 1\n")
    (tools / "nvcc").chmod(0o755)
    env = {k: v for k, v in ENV.items() if k != "CUSHIP_NVCC"} | {"PATH": str(tools)}
    site = _site(tmp_path)
    config = PrebuiltConfig(name="tinyp", version="0.1.0", index=(site / "simple").as_uri())
    assert decide(config, env).candidate is not None


def test_a_dynamic_version_comes_from_the_sdist(tmp_path: Path) -> None:
    site = _site(tmp_path)
    project = _project(tmp_path, f'index = "{(site / "simple").as_uri()}"\n')
    text = (
        (project / "pyproject.toml")
        .read_text()
        .replace('version = "0.1.0"', 'dynamic = ["version"]')
    )
    (project / "pyproject.toml").write_text(text)
    tree = read_config(project / "pyproject.toml")  # a source tree: the version is unknown yet
    assert tree.version is None
    assert decide(tree, ENV).why.startswith("the version is dynamic and no PKG-INFO states it")
    (project / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: tinyp\nVersion: 0.1.0\n")
    sdist = read_config(project / "pyproject.toml")
    assert sdist.version == "0.1.0"
    chosen = decide(sdist, ENV).candidate
    assert chosen is not None and chosen.filename == "tinyp-0.1.0+cu128-py3-none-any.whl"


def test_no_build_refuses_to_compile(tmp_path: Path) -> None:
    project = _project(tmp_path, f'index = "{(tmp_path / "nope").as_uri()}"\n')
    hooks = Prebuilt(project=project, environ={**ENV, "CUSHIP_NO_BUILD": "1"})
    with pytest.raises(CheckFailed, match="CUSHIP_NO_BUILD=1 and no prebuilt wheel"):
        hooks.get_requires_for_build_wheel()


def test_url_template_with_a_sha256_file(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "rel", "tinyp", "0.1.0+cu12", tag="py3-none-any")
    (tmp_path / "rel" / (wheel.name + ".sha256")).write_text(
        hashlib.sha256(wheel.read_bytes()).hexdigest() + "  " + wheel.name + "\n"
    )
    template = (tmp_path / "rel").as_uri() + "/{dist}-{version}+cu{cuda_major}-py3-none-any.whl"
    project = _project(tmp_path, f'url = "{template}"\n')
    env = {**ENV, "CUSHIP_GPUS": "H100", "CUSHIP_DRIVER_CUDA": "12.8"}
    out = tmp_path / "out"
    out.mkdir()
    assert Prebuilt(project=project, environ=env).build_wheel(str(out)) == (
        "tinyp-0.1.0-py3-none-any.whl"
    )
    without_cuda = decide(read_config(project / "pyproject.toml"), ENV)
    assert without_cuda.candidate is None and "lacks" in without_cuda.why


def test_template_values_and_formatting() -> None:
    target = Target(
        tags=("cp311-cp311-linux_x86_64",),
        python="3.11.7",
        offer=Offer(driver_cuda="13.0", torch=TorchBuild(version="2.8.0+cu128", cxx11abi=True)),
    )
    values = template_values(
        name="Flash-Attn", version="2.8.3", target=target, machine_platform="linux-x86_64"
    )
    assert values == {
        "name": "Flash-Attn",
        "dist": "flash_attn",
        "version": "2.8.3",
        "platform": "linux_x86_64",
        "python_tag": "cp311",
        "cuda": "12.8",  # torch's CUDA, not the driver's
        "cuda_major": "12",
        "cuda_short": "128",
        "torch": "2.8",
        "cxx11abi": "TRUE",
    }
    template = "https://h/v{version}/{dist}-{version}+cu{cuda_major}torch{torch}cxx11abi{cxx11abi}-{python_tag}-{python_tag}-{platform}.whl"
    assert format_url(template, values) == (
        "https://h/v2.8.3/flash_attn-2.8.3+cu12torch2.8cxx11abiTRUE-cp311-cp311-linux_x86_64.whl"
    )
    assert format_url("{torch}", {}) is None
    with pytest.raises(UsageError, match=r"unknown placeholder \{gpu\}"):
        format_url("x-{gpu}", values)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[project]\nversion = "1"\n', "project.name: missing"),
        ('[project]\nname = "a"\n[tool.cuship.prebuilt]\nindx = "x"\n', "indx: unknown key"),
        ('[project]\nname = "a"\n[tool.cuship.prebuilt]\nindex = 3\n', "must be a string"),
        ("[project\n", "not valid TOML"),
        (
            '[project]\nname = "a"\n[tool.cuship.prebuilt]\nbuild-requires = ["sk build>="]\n',
            "'sk build>=' is not a requirement",
        ),
        (
            '[project]\nname = "a"\n[tool.cuship.prebuilt]\nbuild-requires = "skbuild"\n',
            "must be a list of strings, got 'skbuild'",
        ),
        (
            '[project]\nname = "a"\n[tool.cuship.prebuilt]\nbackend = "scikit-build-core"\n',
            "'scikit-build-core' is not a module or module:object",
        ),
    ],
)
def test_bad_config_names_the_key(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=problem):
        read_config(path)
