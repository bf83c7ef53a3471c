"""The README's main job: `cuship ship examples/cuvecops`, then the install line it prints."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path

from cuship.index import site_records, write
from tests.integration.clirun import cuship
from tests.integration.indexsite import clean_env
from tests.integration.venvs import make_venv
from tests.jsondocs import SHIP, schema_errors
from tests.sitecheck import publish_problems
from tests.wheel_factory import make_wheel

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"


def test_ship_builds_indexes_and_the_install_line_works(tmp_path: Path) -> None:
    out = tmp_path / "shipped"
    done = cuship("ship", str(EXAMPLE), "-o", str(out), "--json", timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert schema_errors(SHIP, report) == []
    built = [j for j in report["jobs"] if j["status"] == "built"]
    # one wheel per Python of the matrix this machine has (3.10-3.13: the running one and
    # pyenv's) x its nvcc's CUDA, labelled by CUDA alone (no torch axis), each smoke-tested by
    # its own interpreter
    assert len(built) == 4, [(j["job"], j["detail"]) for j in report["jobs"]]
    for job in built:
        assert re.fullmatch(r"cuvecops-0\.1\.0-cp3\d+-cu1\d\d", job["job"]), job["job"]
        name = Path(job["wheel"]).name
        assert re.fullmatch(r"cuvecops-0\.1\.0\+cu1\d\d-cp3\d+-.*\.whl", name)
        tag = job["job"].split("-")[2]
        assert f"-{tag}-{tag}-" in name
        assert job["python"]["version"].startswith(f"3.{tag[3:]}.")
        assert job["smoke"].startswith("cuvecops 0.1.0 "), job["smoke"]
    assert {j["python"]["source"] for j in built} >= {"running"}
    assert all(j["status"] in ("built", "needs-runner") for j in report["jobs"])
    # [variants] enabled in the example: per build its variant twin, and per Python the plain
    # wheel and the null variant
    assert len(report["variants"]) == 3 * len(built)
    assert report["index"]["wheels"] == len(built) + len(report["variants"])
    assert report["install_variants"].startswith(
        "uv pip install --preview-features wheel-variants cuvecops --index-url "
    )
    variants = json.loads((out / "site/simple/cuvecops/cuvecops-0.1.0-variants.json").read_text())
    assert set(variants["variants"]) == {"null", *(j["job"].rsplit("-", 1)[1] for j in built)}
    assert set(report["stages"]) == {"plan", "build", "check", "variants", "index"}
    _uv_takes_the_variant(out / "site", tmp_path)
    _cuship_install_takes_the_judges_choice(out / "site", tmp_path)
    assert report["check"]["verdict"] == "passed"
    assert report["cpu_only"] is False
    described = [w["describe"] for w in site_records(out / "site")]
    assert all(
        d["sass"] == ["80", "90", "100", "120"] and d["ptx"] == ["80", "120"] for d in described
    )

    _install_and_run(report["install"], tmp_path)


def _uv_takes_the_variant(site: Path, tmp_path: Path) -> None:
    """uv 0.13.8 with wheel variants, on a forced H100 with a CUDA 13.0 driver, installs the
    cu130 variant of the shipped index (the plain wheel is what pip gets, below)."""
    venv = tmp_path / "uv-venv"
    make_venv(venv)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))}
    env |= {
        "UV_NO_CONFIG": "1",
        "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "13.0",
        "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "9.0",
    }
    args = ["uv", "pip", "install", "--no-deps", "--python", str(venv / "bin/python")]
    args += ["--preview-features", "wheel-variants", "--index-url", (site / "simple").as_uri()]
    done = subprocess.run([*args, "cuvecops"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (info,) = venv.glob("lib/python3.*/site-packages/cuvecops-*.dist-info")
    assert json.loads((info / "variant.json").read_text())["variants"].keys() == {"cu130"}


# The machines `cuship install` judges for: no GPU (the null variant fits), and an H100 with a
# CUDA 13.0 driver and both CUDA runtimes (the cu130 variant)
_MACHINES = {
    "null": {"CUSHIP_GPUS": "none"},
    "cu130": {"CUSHIP_GPUS": "H100", "CUSHIP_DRIVER_CUDA": "13.0", "CUSHIP_CUDA_LIBS": "12,13"},
}


def _cuship_install_takes_the_judges_choice(site: Path, tmp_path: Path) -> None:
    """`cuship install` from the shipped index, with pip and with uv, installs the variant
    file the judge chose (pip: its bytes under the plain wheel name; uv: the file, with its
    preview feature), numpy from a second index (a stand-in: deps come from --extra-index-url)."""
    deps = tmp_path / "deps"
    stand_in = make_wheel(
        tmp_path / "dep-wheels", "numpy", "2.3.0", modules={"_numpy_stand_in": ""}
    )
    write([stand_in], deps)
    for installer in ("pip", "uv"):
        for label, machine in _MACHINES.items():
            root = tmp_path / f"{installer}-{label}"
            env = clean_env(root, **machine)
            python = make_venv(root / "venv", pip=installer == "pip", env=env)
            args = ["--index", (site / "simple").as_uri(), "--installer", installer]
            args += ["--extra-index-url", (deps / "simple").as_uri(), "--python", str(python)]
            done = cuship("install", "cuvecops", *args, "--json", base=env)
            assert done.returncode == 0, f"{installer} on {label}: {done.stderr[-3000:]}"
            plan = json.loads(done.stdout)
            assert plan["variant"] == label and plan["resolution"]["chosen"]["filename"].endswith(
                f"-{label}.whl"
            )
            assert ("--preview-features" in plan["command"]) is (installer == "uv"), plan["how"]
            (info,) = python.parent.parent.glob("lib/python3.*/site-packages/cuvecops-*.dist-info")
            assert json.loads((info / "variant.json").read_text())["variants"].keys() == {label}


def _install_and_run(install: str, tmp_path: Path) -> None:
    assert install.startswith("pip install cuvecops --index-url ")
    venv = tmp_path / "venv"
    make_venv(venv, pip=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    argv = [*pip, *install.split()[1:]]  # the line exactly as printed
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    installed = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    check = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import cuvecops, numpy; print(cuvecops.saxpy(2.0, numpy.ones(3), numpy.ones(3)))",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    assert "3." in check.stdout


def test_ship_with_nothing_buildable_exits_4(tmp_path: Path) -> None:
    (tmp_path / "cuship.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\n[matrix]\npython = ["3.13"]\ncuda = ["12.8"]\n'
    )
    done = cuship("ship", str(tmp_path), "-o", str(tmp_path / "out"))
    assert done.returncode == 4
    assert "CUDA 12.8" in done.stderr  # the reason is the toolkit: it has a Python 3.13 (pyenv)


def test_ship_without_nvcc_takes_the_cpu_only_path_and_says_so(tmp_path: Path) -> None:
    """Also signs: --sign attests the wheel, the index links it, and verification passes.

    Under a umask of 077 the site is still readable by anyone (Pages deploys refuse it
    otherwise) and holds no cache."""
    out = tmp_path / "shipped"
    key = tmp_path / "key.pem"
    assert cuship("keygen", "-o", str(key)).returncode == 0
    done = cuship(
        "ship",
        str(EXAMPLE),
        "-o",
        str(out),
        "--json",
        "--sign",
        str(key),
        env={"CUSHIP_NVCC": "none"},
        timeout=600,
        umask=0o077,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "no nvcc on this host: CPU-only path" in done.stderr
    assert publish_problems(out / "site") == []
    report = json.loads(done.stdout)
    assert schema_errors(SHIP, report) == []
    assert report["cpu_only"] is True
    built = [j for j in report["jobs"] if j["status"] == "built"]
    assert [Path(j["wheel"]).name for j in built] == ["cuvecops-0.1.0+cpu-py3-none-any.whl"]
    needs = [j for j in report["jobs"] if j["status"] == "needs-runner"]
    assert needs and all("needs nvcc" in j["detail"] or "Python" in j["detail"] for j in needs)
    (record,) = site_records(out / "site")
    assert record["describe"]["sass"] == [] and record["describe"]["ptx"] == []
    assert report["check"]["verdict"] == "passed"
    assert record["attestation"] is not None
    wheel = Path(built[0]["wheel"])
    assert stat.S_IMODE(wheel.stat().st_mode) == 0o644
    verified = cuship(
        "verify-attestation", f"{wheel}.intoto.jsonl", str(wheel), "--key", f"{key}.pub"
    )
    assert verified.returncode == 0, verified.stderr
    _install_and_run(report["install"], tmp_path)


def test_ship_without_nvcc_and_without_cpu_fallback_exits_3(tmp_path: Path) -> None:
    (tmp_path / "cuship.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\n[matrix]\npython = ["3.11"]\ncuda = ["13.0"]\n'
    )
    done = cuship("ship", str(tmp_path), "-o", str(tmp_path / "out"), env={"CUSHIP_NVCC": "none"})
    assert done.returncode == 3, done.stderr
    assert "no nvcc found" in done.stderr and "cpu_fallback = true" in done.stderr


def test_ship_with_an_unreadable_key_exits_2_before_building(tmp_path: Path) -> None:
    bad = tmp_path / "key.pem"
    bad.write_text("not a key")
    done = cuship("ship", str(EXAMPLE), "-o", str(tmp_path / "out"), "--sign", str(bad))
    assert done.returncode == 2, done.stderr
    assert "key.pem" in done.stderr
    assert not (tmp_path / "out" / "wheels").exists()
