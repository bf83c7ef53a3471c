"""Issue 43, classes 3 to 5: hostile files behind the paths cuship reads are refused by kind and
size (a FIFO is never waited on, /dev/zero never read to the end), and bad input is an exit 2
naming it, never an exit 70. Each case asserts the exit code and the one line that says why."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from cuship import _read, settings
from cuship.check.report.baseline import load as load_baseline
from cuship.cli import main
from cuship.errors import CushipError, InputError
from cuship.machine import fingerprint
from cuship.machine.libraries import _conf_dirs, cuda_libraries
from cuship.machine.probe import SystemProbe
from cuship.resolve import target as target_module
from cuship.resolve.http import _length
from tests.site_factory import install

FIFO = "is a FIFO (named pipe), not a regular file; refused"
DEVICE = "is a character device, not a regular file; refused"


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


def _zero(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/zero")
    return path


MAKERS: dict[str, tuple[Callable[[Path], Path], str]] = {
    "fifo": (_fifo, FIFO),
    "dev-zero": (_zero, DEVICE),
}


def _torch_site(root: Path, *, version: str = "2.13.0", version_py: str = "cuda = None\n") -> Path:
    site = root / "site"
    files = {"torch/version.py": version_py.encode(), "torch/lib/libc10.so": b"__cxx11"}
    install(site, "torch", version, files=files)
    return site


def _machine(monkeypatch: pytest.MonkeyPatch, site: Path) -> None:
    """This process as a machine with no GPU and no nvcc, its torch the one in ``site``."""
    for name, value in ((settings.GPUS, "none"), (settings.NVCC, "none"), ("PATH", "/none")):
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(site))


def _answer(**changed: object) -> str:
    """The interpreter probe's answer, with some fields changed."""
    doc = {"executable": "p", "version": [3, 11, 7], "python": "3.11.7", "implementation": "x"}
    return json.dumps({**doc, "tags": ["py3-none-any"], **changed})


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


# --- class 3 and 4: a FIFO (hangs) or /dev/zero (memory) behind the paths read -------------


@pytest.mark.parametrize("kind", list(MAKERS))
@pytest.mark.parametrize("member", ["torch/version.py", "torch/lib/libc10.so"])
def test_torchs_files_are_refused_by_kind_in_env(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    member: str,
) -> None:
    make, said = MAKERS[kind]
    site = _torch_site(tmp_path)
    make(site / member)
    _machine(monkeypatch, site)
    code, out = _cli(["env"], capsys)
    assert code == 0
    (line,) = [line for line in out.splitlines() if "not read:" in line]
    assert str(site / member) in line and said in line


@pytest.mark.parametrize("kind", list(MAKERS))
def test_torchs_version_file_is_refused_by_kind_in_doctor(tmp_path: Path, kind: str) -> None:
    make, said = MAKERS[kind]
    site = _torch_site(tmp_path)
    make(site / "torch/version.py")
    found = fingerprint({settings.GPUS: "none", settings.NVCC: "none"}, site_dirs=[str(site)])
    assert found.torch is not None and found.torch.flavour is None  # unread, never guessed
    assert any(said in note for note in found.notes)


@pytest.mark.parametrize("kind", list(MAKERS))
def test_an_ld_so_conf_include_is_refused_by_kind(tmp_path: Path, kind: str) -> None:
    make, said = MAKERS[kind]
    conf = tmp_path / "ld.so.conf"
    conf.write_text(f"include {tmp_path}/ld.so.conf.d/*.conf\n/opt/cuda/lib64\n")
    make(tmp_path / "ld.so.conf.d" / "evil.conf")
    (tmp_path / "ld.so.conf.d" / "good.conf").write_text("/opt/good/lib\n")
    probe = SystemProbe()
    assert _conf_dirs(probe, str(conf), [64]) == ["/opt/good/lib", "/opt/cuda/lib64"]
    (line,) = probe.refused
    assert line.startswith("not read: the system file") and said in line


@pytest.mark.parametrize("kind", list(MAKERS))
@pytest.mark.parametrize("which", ["key", "envelope"])
def test_verify_attestation_refuses_a_key_or_envelope_by_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, which: str
) -> None:
    make, said = MAKERS[kind]
    assert main(["keygen", "-o", str(tmp_path / "k")]) == 0
    envelope = tmp_path / "x.intoto.jsonl"
    envelope.write_text("{}\n")
    key = tmp_path / "k.pub"
    make(key if which == "key" else envelope)
    capsys.readouterr()
    code, out = _cli(["verify-attestation", str(envelope), "--key", str(key)], capsys)
    assert code == 2
    what = "the public key" if which == "key" else "the attestation"
    assert f"{what} '{key if which == 'key' else envelope}' {said}" in out


def test_attest_refuses_dev_zero_as_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.wheel_factory import make_wheel

    wheel = make_wheel(tmp_path, "pkg", "1.0")
    key = _zero(tmp_path / "key")
    code, out = _cli(["attest", str(wheel), "--key", str(key), "-o", str(tmp_path / "o")], capsys)
    assert code == 2 and f"the private key '{key}' {DEVICE}" in out


@pytest.mark.parametrize("kind", list(MAKERS))
def test_a_baseline_is_refused_by_kind(tmp_path: Path, kind: str) -> None:
    make, said = MAKERS[kind]
    path = make(tmp_path / "baseline.json")
    with pytest.raises(InputError) as caught:
        load_baseline(path)
    assert caught.value.exit_code == 2 and said in caught.value.message


def test_a_100_mb_baseline_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    with path.open("wb") as sparse:
        sparse.truncate(100_000_000)
    with pytest.raises(InputError) as caught:
        load_baseline(path)
    assert caught.value.exit_code == 2
    assert "is larger than 32 MiB (95.4 MiB), the most cuship reads of it" in caught.value.message


# --- class 5: bad input is an exit 2 naming it, never exit 70 -----------------------------


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (
            b'{"format": 1, "entries": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            "nested too deeply",
        ),
        (b'{"format": 1, "seed": 1e400, "entries": {}}', "holds the number '1e400', out of range"),
        (b'{"format": 1, "seed": NaN, "entries": {}}', "holds NaN, which is not a JSON number"),
        (b'{"format": 1, "seed": ' + b"9" * 5000 + b', "entries": {}}', "integer of 5,000 digits"),
        (b'{"format": 1, "device": "caf\xe9", "entries": {}}', "not UTF-8"),
        (b'{"format": 1, "entries": {"k": {"status": 5}}}', "at entries.k.status: 5 is not one"),
        (b'{"format": 1, "seed": -1, "entries": {}}', "at seed: -1 is less than 0"),
        (b'{"format": 1, "entries": {"k": {"status": "passed", "cases": true}}}', "cases"),
    ],
)
def test_a_hostile_baseline_is_exit_2_naming_it(tmp_path: Path, data: bytes, said: str) -> None:
    path = tmp_path / "baseline.json"
    path.write_bytes(data)
    with pytest.raises(InputError) as caught:
        load_baseline(path)
    assert caught.value.exit_code == 2
    assert str(path) in caught.value.message and said in caught.value.message


def test_a_baseline_cuship_wrote_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    entries = {"op/native/float32": {"status": "failed", "max_abs": "inf", "max_rel": None}}
    path.write_text(json.dumps({"format": 1, "kind": "cuship-check-baseline", "seed": 3,
                                "quick": True, "created": 1.5, "entries": entries}))  # fmt: skip
    loaded = load_baseline(path)
    assert loaded.entries["op/native/float32"].max_abs == float("inf") and loaded.seed == 3


@pytest.mark.parametrize("cuda", ["²", "banana", "13.0 ", "1" * 30])
def test_a_torch_cuda_that_is_no_version_is_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cuda: str
) -> None:
    site = _torch_site(tmp_path, version_py=f"cuda = {cuda!r}\nhip = None\n")
    _machine(monkeypatch, site)
    code, out = _cli(["env"], capsys)
    assert code == 2
    assert f"version.py sets cuda = {cuda!r}, which is not a CUDA version" in out.replace("\n", "")


@pytest.mark.parametrize("version", ["banana", "²", "1..2"])
def test_a_torch_version_that_is_no_version_is_exit_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    version: str,
) -> None:
    site = _torch_site(tmp_path, version=version)
    _machine(monkeypatch, site)
    code, out = _cli(["env"], capsys)
    assert code == 2 and "torch's version" in out and "is not a PEP 440 version" in out


@pytest.mark.parametrize("said", ["²", "-1", "1e9", " 12 ", "0x10", "١٢", "9" * 40, ""])
def test_a_content_length_that_is_no_number_is_no_length(said: str) -> None:
    assert _length(said) == (12 if said == " 12 " else None)
    assert _length("1048576") == 1 << 20


@pytest.mark.parametrize(
    ("stdout", "said"),
    [
        ("[1,2,3,4]", "its answer: expected object, got [1, 2, 3, 4]"),
        (_answer(executable=1), "at executable: expected string, got 1"),
        (_answer(paths="x"), "at paths: expected array, got 'x'"),
        (_answer(version=[3, 11]), "at version: a list of 2 items, fewer than 3"),
        (_answer(tags=["t" * 5000]), "at tags: "),
        (_answer() + " trailing", "is not JSON"),
        ("", "is not JSON"),
        ('{"executable": "p"}', "no 'version'"),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_a_target_that_answers_garbage_is_said_not_a_crash(
    monkeypatch: pytest.MonkeyPatch, stdout: str, said: str
) -> None:
    from cuship.process import Result

    def run(argv: list[str], **kwargs: object) -> Result:
        return Result(argv=tuple(argv), returncode=0, stdout=stdout)

    monkeypatch.setattr("cuship.process.run", run)
    target_module._probe.cache_clear()
    answer = target_module._probe("/fake/python", "CUSHIP_TARGET_PYTHON", "/nowhere")
    assert isinstance(answer, str)
    assert (
        answer.startswith("CUSHIP_TARGET_PYTHON (/fake/python) did not answer:") and said in answer
    )


def test_a_target_that_prints_past_the_bound_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    from cuship.process import Result

    def run(argv: list[str], **kwargs: object) -> Result:
        assert kwargs["keep"] == 1 << 20 and kwargs["stop_past_keep"]  # kept to 1 MiB, then ended
        return Result(argv=tuple(argv), returncode=0, stdout="x" * 10, cut=True)

    monkeypatch.setattr("cuship.process.run", run)
    target_module._probe.cache_clear()
    answer = target_module._probe("/fake/python", "uv's --python", "/nowhere")
    assert answer == "uv's --python (/fake/python) did not answer: it printed more than 1 MiB"


def test_a_wheel_with_a_bound_that_is_no_version_is_exit_2_in_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.unit.test_hostile_refusals import variant_wheel

    wheel = variant_wheel(tmp_path, "cu130", {"cuda_version_lower_bound": ["abc"]})
    code, out = _cli(["verify", str(wheel)], capsys)
    assert code == 2
    assert "at variants.cu130.nvidia.cuda_version_lower_bound[0]: 'abc' is not of the form" in out


def test_ten_thousand_library_path_entries_are_all_searched(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "libcudart.so.13").write_bytes(b"")
    dirs = [str(tmp_path / f"none{i}") for i in range(10_000)] + [str(lib)]
    found = cuda_libraries({"LD_LIBRARY_PATH": os.pathsep.join(dirs)}, SystemProbe(), [])
    assert found.where("libcudart.so.13") == f"system ({lib})"  # the 10,001st: found


def test_the_reader_refuses_what_is_not_a_regular_file_without_opening_it_blocking(
    tmp_path: Path,
) -> None:
    fifo = _fifo(tmp_path / "f")
    for read in (
        lambda: _read.read_bytes(fifo, _read.CONFIG),
        lambda: _read.read_text(fifo, _read.CONFIG),
        lambda: _read.read_json(fifo, _read.CACHE),
        lambda: _read.read_head(fifo, _read.SOURCE),
        lambda: _read.stated(fifo, _read.STORE),
    ):
        with pytest.raises(_read.NotRegular, match="FIFO"):
            read()
    assert _read.read_tail(fifo) == ""  # a log that cannot be read quotes nothing
    with pytest.raises(_read.NotRegular, match="a directory"):
        _read.read_bytes(tmp_path, _read.CONFIG)
    with pytest.raises(FileNotFoundError):
        _read.read_bytes(tmp_path / "absent", _read.CONFIG)


@pytest.mark.parametrize(
    ("text", "value"),
    [("0", 0), ("12", 12), ("²", None), ("+1", None), (" 1", None), ("1_0", None), ("١", None)],
)
def test_whole_numbers_are_ascii_digits_only(text: str, value: int | None) -> None:
    if value is None:
        with pytest.raises(_read.Refused, match="is not a whole number"):
            _read.integer(text, "a count")
    else:
        assert _read.integer(text, "a count") == value
    with pytest.raises(_read.Refused, match="out of range"):
        _read.integer("99", "a count", high=10)


def test_every_kind_has_a_cap_and_a_hint() -> None:
    assert len({kind.what for kind in _read.KINDS}) == len(_read.KINDS)
    for kind in _read.KINDS:
        assert kind.hint and kind.limit >= 0
    assert all(isinstance(err, CushipError) for err in (_read.Refused("x"), _read.NotRegular("x")))
