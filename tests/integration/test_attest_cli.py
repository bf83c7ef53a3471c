"""keygen → attest a real CUDA wheel → verify-attestation; each tampering fails with its reason;
the index links the attestation, `cuship serve` serves it, pip and uv still install through it;
--keep-existing keeps an earlier release that pip can still download from its own URL."""

from __future__ import annotations

import base64
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import pytest

from cuship.docs.documents import schema_file
from cuship.index import site_records, write
from cuship.serve.site import serve
from tests import wheel_factory
from tests.integration import cudawheel
from tests.integration.clirun import cuship
from tests.integration.venvs import make_venv
from tests.jsondocs import schema_errors

SRC = Path(__file__).resolve().parents[2] / "src"


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env.update(
        PYTHONPATH=str(SRC),
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_CACHE_DIR="1",
        UV_NO_CONFIG="1",
        UV_CACHE_DIR=str(tmp / "uv-cache"),
        UV_PYTHON_DOWNLOADS="never",
    )
    return env


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("attest")


@pytest.fixture(scope="module")
def wheel(work: Path) -> Path:
    """A real wheel around an nvcc-built .so (SASS 80, 90a, 100; PTX 120)."""
    so = cudawheel.build_so(work)
    wheels = work / "wheels"
    wheels.mkdir()
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return cudawheel.make_wheel(wheels, so, version="0.1.0+cu130", tag=f"{tag}-{tag}-linux_x86_64")


@pytest.fixture(scope="module")
def attested(work: Path, wheel: Path) -> Path:
    key = work / "keys" / "release"
    _ok(cuship("keygen", "-o", str(key), base=_env(work)))
    out = _ok(cuship("attest", str(wheel), "--key", str(key), "--json", base=_env(work)))
    assert schema_errors(schema_file("attest"), json.loads(out)) == []
    (envelope,) = json.loads(out)["envelopes"]
    return Path(envelope)


def _payload(envelope: Path) -> dict[str, Any]:
    document = json.loads(envelope.read_text())
    payload = json.loads(base64.b64decode(document["payload"]))
    assert isinstance(payload, dict)
    return payload


def test_build_attestation_carries_the_arches_inspect_finds_and_verifies(
    work: Path, wheel: Path, attested: Path
) -> None:
    assert attested == wheel.with_name(wheel.name + ".intoto.jsonl")
    inspected = json.loads(_ok(cuship("inspect", str(wheel), "--json", base=_env(work))))
    payload = _payload(attested)
    assert payload["predicateType"] == "https://slsa.dev/provenance/v1"
    (arches,) = payload["predicate"]["runDetails"]["byproducts"]
    assert arches["annotations"]["sass"] == inspected["sass"] == ["80", "90a", "100"]
    assert arches["annotations"]["ptx"] == inspected["ptx"] == ["120"]
    (entry,) = payload["predicate"]["buildDefinition"]["externalParameters"]["jobs"]
    assert (entry["cuda"], entry["python"]) == (
        "13.0",
        f"{sys.version_info[0]}.{sys.version_info[1]}",
    )
    key = work / "keys" / "release.pub"
    done = cuship(
        "verify-attestation", str(attested), str(wheel), "--key", str(key), base=_env(work)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"ok: {attested}: signed by key id ")


def _tampered(work: Path, attested: Path, wheel: Path, name: str) -> tuple[Path, Path]:
    folder = work / name
    folder.mkdir()
    return (
        Path(shutil.copy(attested, folder / attested.name)),
        Path(shutil.copy(wheel, folder / wheel.name)),
    )


def test_each_tampering_exits_1_with_its_reason(work: Path, wheel: Path, attested: Path) -> None:
    key = str(work / "keys" / "release.pub")
    envelope, copy = _tampered(work, attested, wheel, "flipped")
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0xFF
    copy.write_bytes(bytes(data))
    done = cuship("verify-attestation", str(envelope), str(copy), "--key", key, base=_env(work))
    assert done.returncode == 1
    assert f"sha256 of {str(copy)!r} is " in done.stderr and "the statement says" in done.stderr

    envelope, copy = _tampered(work, attested, wheel, "payload")
    document = json.loads(envelope.read_text())
    text = base64.b64decode(document["payload"]).replace(b'"13.0"', b'"12.8"')
    document["payload"] = base64.b64encode(text).decode()
    envelope.write_text(json.dumps(document))
    done = cuship("verify-attestation", str(envelope), str(copy), "--key", key, base=_env(work))
    assert (done.returncode, "signature invalid" in done.stderr) == (1, True), done.stderr

    _ok(cuship("keygen", "-o", str(work / "keys" / "other"), base=_env(work)))
    done = cuship(
        "verify-attestation", str(attested), "--key", f"{work}/keys/other.pub", base=_env(work)
    )
    assert (done.returncode, "signed by key id" in done.stderr) == (1, True), done.stderr

    envelope, copy = _tampered(work, attested, wheel, "truncated")
    envelope.write_bytes(envelope.read_bytes()[:200])
    done = cuship("verify-attestation", str(envelope), "--key", key, base=_env(work))
    assert (done.returncode, "cut short" in done.stderr) == (1, True), done.stderr

    done = cuship(
        "verify-attestation", str(attested), "--key", f"{work}/keys/none.pub", base=_env(work)
    )
    assert (done.returncode, "cannot read the public key" in done.stderr) == (2, True)


def test_index_links_the_attestation_and_pip_and_uv_install_through_the_page(
    work: Path, wheel: Path, attested: Path
) -> None:
    site = work / "site"
    _ok(cuship("index", str(wheel.parent), "-o", str(site), base=_env(work)))
    with serve(site) as server:
        page = urllib.request.urlopen(f"{server.url}simple/cudaxpy/", timeout=10).read()
        assert b">attestation</a>" in page
        (record,) = site_records(site)  # URLs relative to simple/PROJECT/cuship.json
        url = urljoin(f"{server.url}simple/cudaxpy/cuship.json", record["attestation"]["url"])
        served = urllib.request.urlopen(url, timeout=10).read()
        assert served == attested.read_bytes()
        env = _env(work)
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(work / "dl")]
        done = subprocess.run(
            [*pip, "--index-url", f"{server.url}simple", "cudaxpy==0.1.0+cu130"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert (work / "dl" / wheel.name).read_bytes() == wheel.read_bytes()
        venv = work / "uv-venv"
        make_venv(venv, env=env)
        uv = ["uv", "pip", "install", "--python", str(venv / "bin" / "python")]
        done = subprocess.run(
            [*uv, "--index-url", f"{server.url}simple", "cudaxpy==0.1.0+cu130"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        del format, args


@pytest.fixture
def assets(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A plain static server standing in for release assets (not a package index)."""
    root = tmp_path / "assets"
    root.mkdir()
    handler = partial(_QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    finally:
        httpd.shutdown()
        httpd.server_close()


def _release(tmp: Path, assets: tuple[str, Path], tag: str, version: str, keep: bool) -> None:
    url, root = assets
    built = wheel_factory.make_wheel(tmp / tag, "relpkg", version, modules={"relpkg": "X = 1\n"})
    site = tmp / "site"
    write([built], site, base_url=f"{url}/{tag}", keep_existing=keep)
    (root / tag).mkdir()
    shutil.copy(built, root / tag / built.name)  # the release job uploads wheel + metadata
    shutil.copy(site / "files" / f"{built.name}.metadata", root / tag)


def test_keep_existing_release_2_keeps_release_1_and_pip_gets_both(
    tmp_path: Path, assets: tuple[str, Path]
) -> None:
    _release(tmp_path, assets, "v1", "1.0", keep=False)
    _release(tmp_path, assets, "v2", "2.0", keep=True)
    urls = sorted(w["url"] for w in site_records(tmp_path / "site"))
    assert urls == [
        f"{assets[0]}/v1/relpkg-1.0-py3-none-any.whl",
        f"{assets[0]}/v2/relpkg-2.0-py3-none-any.whl",
    ]
    env = _env(tmp_path)
    with serve(tmp_path / "site") as server:
        for version in ("1.0", "2.0"):
            pip = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(tmp_path / "dl")]
            done = subprocess.run(
                [*pip, "--index-url", f"{server.url}simple", f"relpkg=={version}"],
                capture_output=True,
                text=True,
                env=env,
                check=False,
                timeout=300,
            )
            assert done.returncode == 0, done.stdout + done.stderr
            assert (tmp_path / "dl" / f"relpkg-{version}-py3-none-any.whl").is_file()
