"""Issue 43, class 6: what cuship accepted and must refuse, each an exit code and one line: a
variant label ``null``, a variant made from a variant, a label its variant.json contradicts, a
prebuilt wheel of another project, a --base-url a file name cannot follow, extra_deps that are
pip options or paths, nvcc options whose values looked like arch flags, arch flags in an options
file, and a report that wrote beside a store it only reads."""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from cuship.builder.run.nvcc_shim import expand_options_files, plan_call
from cuship.cli import main
from cuship.config import load_config
from cuship.errors import ConfigError, InputError
from cuship.resolve.provenance import Handover, add_to_wheel
from cuship.store import Store
from tests.elf_factory import cuda_elf
from tests.hostile_wheels import foreign_dist_info
from tests.wheel_factory import make_wheel

TAG = "cp311-cp311-linux_x86_64"
GENCODE = ["-gencode", "arch=compute_80,code=sm_80"]


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _so() -> bytes:
    return cuda_elf(sass=["90"], needed=("libcudart.so.13",))


def variant_wheel(
    root: Path,
    label: str,
    features: Mapping[str, Sequence[str]],
    *,
    named: str = "cu130",
    extra: Mapping[str, bytes] | None = None,
) -> Path:
    """A wheel named as variant ``named`` whose variant.json describes ``label`` with
    ``features`` (``extra``: more members, a second variant.json)."""
    document = {"variants": {label: {"nvidia": dict(features)}}}
    files = {
        "pkg/_C.abi3.so": _so(),
        "pkg-1.0.dist-info/variant.json": json.dumps(document).encode(),
    }
    files.update(extra or {})
    built = make_wheel(root / "build", "pkg", "1.0", tag=TAG, files=files)
    target = root / f"pkg-1.0-{TAG}-{named}.whl"
    with zipfile.ZipFile(built) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            new.writestr(info, old.read(info))
    return target


def test_variant_label_null_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = make_wheel(tmp_path, "pkg", "1.0+cu130", tag=TAG, files={"pkg/_C.abi3.so": _so()})
    out = str(tmp_path / "o")
    code, said = _cli(["variant", str(wheel), "-o", out, "--label", "null"], capsys)
    assert code == 2
    assert "'null' is the null variant's label (PEP 825), not one for a variant with" in said
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())
    assert main(["variant", str(wheel), "-o", out, "--null"]) == 0  # the null variant itself


def test_a_variant_is_not_made_from_a_variant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = json.dumps({"variants": {"cu130": {"nvidia": {"sm_arch": ["90_real"]}}}})
    files = {"pkg/_C.abi3.so": _so(), "pkg-1.0+cu130.dist-info/variant.json": document.encode()}
    renamed = make_wheel(tmp_path, "pkg", "1.0+cu130", tag=TAG, files=files)  # no label in its name
    code, said = _cli(["variant", str(renamed), "-o", str(tmp_path / "o")], capsys)
    assert code == 2 and "is a variant wheel already (its name or its variant.json says so)" in said


def test_a_wheel_with_two_variant_json_fails_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    second = {"other-1.0.dist-info/variant.json": b'{"variants": {"cu129": {}}}'}
    wheel = variant_wheel(tmp_path, "cu130", {"sm_arch": ["90_real"]}, extra=second)
    code, said = _cli(["verify", str(wheel)], capsys)
    assert (
        code == 2
        and "holds 2 variant.json files" in said
        and "a variant made from a variant" in said
    )


def test_a_label_its_variant_json_contradicts_fails_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = variant_wheel(tmp_path, "cu129", {"sm_arch": ["90_real"]}, named="cu130")
    code, said = _cli(["verify", str(wheel)], capsys)
    assert code == 2
    assert "is named as variant 'cu130', its variant.json describes 'cu129'" in said
    plain = make_wheel(tmp_path / "p", "pkg", "1.0", tag=TAG, files={"pkg/_C.abi3.so": _so()})
    named = plain.with_name(f"pkg-1.0-{TAG}-cu130.whl")
    plain.rename(named)
    code, said = _cli(["verify", str(named)], capsys)
    assert code == 2 and "is named as variant 'cu130' but holds no variant.json" in said


def test_a_prebuilt_wheel_of_another_project_is_refused(tmp_path: Path) -> None:
    wheel = foreign_dist_info(tmp_path, "pkg", "other")
    handover = Handover(name="pkg", version="1.0", kind="prebuilt", why="test")
    with pytest.raises(InputError) as caught:
        add_to_wheel(wheel, handover, out_dir=tmp_path / "out")
    assert caught.value.exit_code == 2
    assert "is not a wheel of 'pkg': its .dist-info names the project 'other'" in str(caught.value)
    renamed = make_wheel(tmp_path / "r", "other", "1.0", filename="pkg-1.0-py3-none-any.whl")
    with pytest.raises(InputError, match=r"its \.dist-info names the project 'other'"):
        add_to_wheel(renamed, handover, out_dir=tmp_path / "out")
    assert not list((tmp_path / "out").glob("*.whl"))


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("https://host/x?token=1", "has a query or a fragment"),
        ("https://host/x#frag", "has a query or a fragment"),
        ("https://host/x\nmore", "holds a character a URL may not"),
        ('https://host/x"onload="', "holds a character a URL may not"),
        ("https://user:pw@host/x", "holds credentials"),
        ("file:///etc", "is not an http(s) URL"),
    ],
)
def test_a_base_url_a_file_name_cannot_follow_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str, said: str
) -> None:
    make_wheel(tmp_path / "w", "pkg", "1.0")
    args = ["index", str(tmp_path / "w"), "-o", str(tmp_path / "s"), "--base-url", url]
    code, out = _cli(args, capsys)
    assert code == 2 and said in out
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    ("dep", "said"),
    [
        ("--index-url=https://evil.test/simple", "is a pip option, not a requirement"),
        ("-e.", "is a pip option, not a requirement"),
        ("  -r requirements.txt", "is a pip option, not a requirement"),
        ("./vendored/pkg", "is not a PEP 508 requirement"),
        ("/abs/pkg.whl", "is not a PEP 508 requirement"),
        ("pkg @ file:///home/me/pkg", "only https:// URLs"),
    ],
)
@pytest.mark.parametrize("where", ["cuship.toml", "packages.yml"])
def test_extra_deps_that_are_pip_options_or_paths_are_refused(
    tmp_path: Path, dep: str, said: str, where: str
) -> None:
    if where == "cuship.toml":
        text = (
            f'[project]\nname = "pkg"\nversion = "1.0"\n[build]\nextra_deps = [{json.dumps(dep)}]\n'
        )
        (tmp_path / "cuship.toml").write_text(text)
        path = tmp_path
    else:
        (tmp_path / "config").mkdir()
        text = f"packages:\n  pkg:\n    versions: ['1.0']\n    extra_deps: [{json.dumps(dep)}]\n"
        (tmp_path / "config" / "packages.yml").write_text(text)
        path = tmp_path / "config" / "packages.yml"
    with pytest.raises(ConfigError) as caught:
        _load(path)
    assert (
        caught.value.exit_code == 2
        and "extra_deps" in str(caught.value)
        and said in str(caught.value)
    )


def _load(path: Path) -> object:
    if path.name == "packages.yml":
        from cuship.config.packages import load_packages

        return load_packages(path)
    return load_config(path)


def test_requirements_still_pass_as_extra_deps(tmp_path: Path) -> None:
    deps = ["torch==2.13.0", "numpy>=1.26; python_version >= '3.10'", "pkg @ https://h/p.tar.gz"]
    text = f'[project]\nname = "pkg"\nversion = "1.0"\n[build]\nextra_deps = {json.dumps(deps)}\n'
    (tmp_path / "cuship.toml").write_text(text)
    assert load_config(tmp_path).build.extra_deps == tuple(deps)


@pytest.mark.parametrize(
    "argv",
    [
        ["-c", "x.cu", "-Xptxas", "-arch=sm_90", "-O2"],
        ["-c", "x.cu", "-Xcompiler", "-arch=x86", "-O2"],
        ["-c", "x.cu", "-D", "-arch=sm_90", "-O2"],
        ["-c", "x.cu", "--ptxas-options", "-arch=sm_90", "-O2"],
    ],
)
def test_an_options_value_is_never_taken_for_an_arch_flag(argv: list[str]) -> None:
    new, record = plan_call(argv, GENCODE, "rewrite")
    assert new == [*GENCODE, *argv]  # nothing dropped: -O2 stays where the value kept it
    assert record["action"] == "added" and record["asked"] == []


def test_arch_flags_in_an_options_file_are_seen(tmp_path: Path) -> None:
    options = tmp_path / "opts"
    options.write_text('-gencode arch=compute_90,code=sm_90 -O2 -DNAME="a b"\n')
    argv = ["-c", "x.cu", "--options-file", str(options)]
    from cuship.builder.run.nvcc_shim import _read_options_file

    expanded = expand_options_files(argv, _read_options_file)
    assert expanded == ["-c", "x.cu", "-gencode", "arch=compute_90,code=sm_90", "-O2", "-DNAME=a b"]
    new, record = plan_call(expanded, GENCODE, "stop")
    assert new is None and record["action"] == "refused"  # arch_flags = "stop" holds
    new, record = plan_call(expanded, GENCODE, "rewrite")
    assert new == [*GENCODE, "-c", "x.cu", "-O2", "-DNAME=a b"]
    assert expand_options_files(["-optf=a,b"], lambda f: f"-D{f}") == ["-Da", "-Db"]


def test_an_options_file_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    from cuship.builder.run.nvcc_shim import _read_options_file

    os.mkfifo(tmp_path / "opts")
    with pytest.raises(ValueError, match="is not a regular file"):
        expand_options_files(["--options-file", str(tmp_path / "opts")], _read_options_file)


def test_report_writes_nothing_beside_a_store_it_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "store.sqlite"
    with Store.open(path):
        pass
    before = sorted(p.name for p in tmp_path.iterdir())
    assert before == ["store.sqlite"]
    code, _ = _cli(["report", "--store", str(path)], capsys)
    assert code in (0, 4)  # an empty store reports nothing, and says so
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    os.mkfifo(tmp_path / "fifo.sqlite")
    code, said = _cli(["report", "--store", str(tmp_path / "fifo.sqlite")], capsys)
    assert code == 2 and "is a FIFO (named pipe), not a regular file" in said
