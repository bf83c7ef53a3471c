"""The torch ABI read from synthetic shared objects, and what inspect and verify make of it."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest

from cuship.cli import main
from cuship.errors import InputError, UsageError
from cuship.judge.verify import verify
from cuship.wheel.audit import ObjectReport, WheelReport, inspect_path
from cuship.wheel.read.elf import quick_facts
from cuship.wheel.torchabi import classify, strictest, torch_pin, torch_requirements
from tests.elf_factory import make_elf
from tests.wheel_factory import make_wheel

# What a libtorch C++ extension imports (names taken from the example's _C.so) ...
CXX = (
    "_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    "_ZNK2at10TensorBase14const_data_ptrEv",
    "_ZTVN3c105ErrorE",
    "_ZN5torch7Library4_defEON3c1014FunctionSchemaEPNS_14CppFunctionE",
)
# ... and a stable-ABI one (the example's _C.abi3.so), besides libc, libstdc++ and libcudart.
SHIM = ("aoti_torch_get_dim", "aoti_torch_library_def", "torch_call_dispatcher")
OTHER = ("cudaGetLastError", "_ZNSt7__cxx1119basic_ostringstreamIcSt11char_traitsIcESaIcEEC1Ev")
TORCH_LIBS = ("libc10.so", "libtorch_cpu.so")


@pytest.mark.parametrize(
    ("needed", "undefined", "abi"),
    [
        (TORCH_LIBS, (*OTHER, *SHIM, CXX[1]), "exact"),
        ((), (CXX[2],), "exact"),  # even without DT_NEEDED (loaded by torch first)
        (TORCH_LIBS, (*OTHER, *SHIM), "stable"),
        (TORCH_LIBS, OTHER, "stable"),  # links torch, imports nothing from it
        (("libcudart.so.13",), OTHER, "none"),
        (("libtorchaudio.so",), ("_ZN3foo2atEv", "_ZN4c10x3barEv", "torchvision_nms"), "none"),
    ],
    ids=["cxx", "cxx-no-needed", "shim", "needed-only", "cuda-only", "lookalikes"],
)
def test_classify(needed: tuple[str, ...], undefined: tuple[str, ...], abi: str) -> None:
    assert classify(needed, undefined).abi == abi


@pytest.mark.parametrize("symbol", CXX)
def test_every_torch_namespace_form_is_exact(symbol: str) -> None:
    facts = classify((), (symbol,))
    assert (facts.abi, facts.cxx_symbols, facts.example) == ("exact", 1, symbol)


def test_reasons_name_the_evidence() -> None:
    exact = classify(TORCH_LIBS, (*CXX, *SHIM))
    assert exact.reason == f"imports 4 c10/at/torch C++ symbols (e.g. {CXX[2]})"
    stable = classify(TORCH_LIBS, SHIM)
    assert (
        stable.reason == "imports only torch's stable C shim: 3 symbols (e.g. aoti_torch_get_dim)"
    )
    linked = classify(TORCH_LIBS, OTHER)
    assert linked.reason == "needs libc10.so, libtorch_cpu.so but imports none of their symbols"
    assert classify((), OTHER).to_json()["reason"] == (
        "needs no torch library and imports no torch symbol"
    )


def test_strictest() -> None:
    assert strictest(["none", "exact", "stable"]) == "exact"
    assert strictest(["none", "stable"]) == "stable"
    assert strictest([]) == "none"


@pytest.mark.parametrize(("bits", "endian"), [(64, "<"), (64, ">"), (32, "<"), (32, ">")])
def test_elf_reader_lists_only_undefined_symbols(bits: int, endian: str) -> None:
    data = make_elf(
        needed=TORCH_LIBS,
        undefined=(*SHIM, CXX[0]),
        defined=("PyInit__C",),
        bits=bits,
        endian=endian,
    )
    facts = quick_facts(data, source="x.so")
    assert facts.undefined == (*SHIM, CXX[0])
    assert facts.needed == TORCH_LIBS


def test_symbol_table_past_the_end_is_input_error() -> None:
    data = bytearray(make_elf(undefined=SHIM))
    (shoff,) = struct.unpack_from("<Q", data, 40)  # e_shoff of an ELF64 header
    struct.pack_into("<Q", data, shoff + 2 * 64 + 32, 24 * 50_000)  # .dynsym's sh_size
    with pytest.raises(
        InputError, match=r"'cut\.so': section '\.dynsym' at offset .* past the end"
    ):
        quick_facts(data, source="cut.so")


def test_not_an_elf_file_is_input_error() -> None:
    with pytest.raises(InputError, match=r"'x\.so' is not a readable ELF file") as caught:
        quick_facts(b"\x7fELF\x02\x01" + b"\0" * 10, source="x.so")
    assert caught.value.hint is not None and "again" in caught.value.hint


METADATA = """Metadata-Version: 2.4
Name: ext
Version: 1.0
Requires-Dist: numpy>=1.26
Requires-Dist: torch==2.13.*
Requires-Dist: torch-testing-helpers; extra == "test"
Requires-Dist: torch>=2.0; extra == "test"
"""


def test_torch_requirements_skip_extras_and_other_projects() -> None:
    assert torch_requirements(METADATA, source="m") == ("torch==2.13.*",)
    assert torch_requirements("Name: x\n", source="m") == ()


def test_invalid_requirement_is_input_error() -> None:
    with pytest.raises(InputError, match=r"'w\.whl:METADATA': Requires-Dist 'torch ==<2' is not"):
        torch_requirements("Requires-Dist: torch ==<2\n", source="w.whl:METADATA")


@pytest.mark.parametrize(
    ("requirements", "exact", "minimum"),
    [
        (("torch==2.13.*",), "2.13", "2.13"),
        (("torch==2.13.1",), "2.13", "2.13"),
        (("torch~=2.13.0",), "2.13", "2.13"),
        (("torch>=2.13,<2.14",), "2.13", "2.13"),
        (("torch>=2.13",), None, "2.13"),
        (("torch~=2.13",), None, "2.13"),
        (("torch>=2.12,<2.14",), None, "2.12"),
        (("torch",), None, None),
    ],
)
def test_torch_pin(requirements: tuple[str, ...], exact: str | None, minimum: str | None) -> None:
    pin = torch_pin(requirements)
    assert pin is not None and (pin.exact, pin.minimum) == (exact, minimum)
    assert torch_pin(()) is None


def torch_wheel(
    tmp_path: Path,
    *,
    undefined: tuple[str, ...],
    requires: str = "",
    version: str = "1.0",
    needed: tuple[str, ...] = TORCH_LIBS,
) -> Path:
    so = make_elf(needed=needed, undefined=undefined)
    extra = "".join(f"Requires-Dist: {r}\n" for r in requires.split(",") if r)
    return make_wheel(
        tmp_path,
        "ext",
        version,
        tag="cp311-cp311-linux_x86_64",
        extra_metadata=extra,
        files={"ext/_C.cpython-311-x86_64-linux-gnu.so": so, "ext/_util.abi3.so": make_elf()},
    )


def test_inspect_reports_per_object_and_the_strictest_per_wheel(tmp_path: Path) -> None:
    report = inspect_path(torch_wheel(tmp_path, undefined=CXX, requires="torch==2.13.*"))
    assert isinstance(report, WheelReport)
    abis = {x.path: x.torch_abi for x in report.extensions}
    assert abis == {"ext/_C.cpython-311-x86_64-linux-gnu.so": "exact", "ext/_util.abi3.so": "none"}
    assert (report.torch_abi, report.torch_built, report.torch_label) == ("exact", "2.13", None)
    doc = report.to_json()
    assert doc["torch_abi"] == "exact" and doc["torch_built"] == "2.13"
    assert doc["torch_requirement"] == {
        "requirement": "torch==2.13.*",
        "exact": "2.13",
        "minimum": "2.13",
    }
    assert doc["extensions"][0]["torch"]["cxx_symbols"] == len(CXX)


def test_the_label_names_the_torch_a_wheel_was_built_against(tmp_path: Path) -> None:
    wheel = torch_wheel(
        tmp_path, undefined=CXX, requires="torch==2.13.*", version="1.0+cu130torch2.11"
    )
    report = inspect_path(wheel)
    assert isinstance(report, WheelReport)
    assert (report.torch_label, report.torch_built) == ("2.11", "2.11")


def test_a_bare_shared_object(tmp_path: Path) -> None:
    so = tmp_path / "_C.so"
    so.write_bytes(make_elf(needed=TORCH_LIBS, undefined=SHIM))
    report = inspect_path(so)
    assert isinstance(report, ObjectReport) and report.torch_abi == "stable"


@pytest.mark.parametrize(
    ("undefined", "requires", "version", "problem"),
    [
        (CXX, "", "1.0", "exact torch ABI .* but no torch requirement"),
        (CXX, "torch>=2.13", "1.0", r"but Requires-Dist: torch>=2.13: .*torch==X\.Y\.\*"),
        (
            CXX,
            "torch==2.13.*",
            "1.0+cu130torch2.12",
            r"built against torch 2\.12 .*torch==2\.12\.\*",
        ),
        (SHIM, "", "1.0", r"stable torch ABI .* no torch requirement.*torch>=X\.Y"),
    ],
    ids=["exact-unpinned", "exact-minimum-only", "exact-wrong-pin", "stable-unrequired"],
)
def test_verify_problems(
    tmp_path: Path, undefined: tuple[str, ...], requires: str, version: str, problem: str
) -> None:
    report = inspect_path(
        torch_wheel(tmp_path, undefined=undefined, requires=requires, version=version)
    )
    result = verify(report)
    assert not result.ok
    assert len(result.problems) == 1
    assert re.search(problem, result.problems[0]), result.problems[0]


@pytest.mark.parametrize(
    ("undefined", "requires", "note"),
    [
        (CXX, "torch==2.13.*", None),
        (SHIM, "torch>=2.13", None),
        (OTHER, "", None),
        (SHIM, "torch==2.13.*", "torch>=2.13 would let it install next to newer torch"),
        (OTHER, "torch>=2.0", "though no shared object imports anything from torch"),
    ],
    ids=["exact-pinned", "stable-minimum", "none", "stable-pinned", "none-with-torch"],
)
def test_verify_passes(
    tmp_path: Path, undefined: tuple[str, ...], requires: str, note: str | None
) -> None:
    needed = TORCH_LIBS if undefined != OTHER else ("libcudart.so.13",)
    report = inspect_path(
        torch_wheel(tmp_path, undefined=undefined, requires=requires, needed=needed)
    )
    result = verify(report, torch="2.13")
    assert result.ok, result.problems
    abi = report.torch_abi if isinstance(report, WheelReport) else "none"
    torch_checks = [c for c in result.checks if c.startswith("torch requirement")]
    assert torch_checks == ([] if abi == "none" else [f"torch requirement for torch ABI {abi!r}"])
    if note is None:
        assert result.notes == ()
    else:
        assert len(result.notes) == 1 and note in result.notes[0]


def test_verify_torch_option_overrides_nothing_but_states_the_build(tmp_path: Path) -> None:
    report = inspect_path(torch_wheel(tmp_path, undefined=CXX, requires="torch==2.13.*"))
    assert verify(report, torch="2.13.0").ok
    wrong = verify(report, torch="2.12")
    assert wrong.problems and "built against torch 2.12" in wrong.problems[0]
    with pytest.raises(UsageError, match="'two' is not a version"):
        verify(report, torch="two")


def test_cli_inspect_and_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unpinned = torch_wheel(tmp_path / "a", undefined=CXX)
    assert main(["inspect", str(unpinned), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["torch_abi"] == "exact" and doc["torch_requirement"] is None
    assert main(["inspect", str(unpinned)]) == 0
    text = capsys.readouterr().out
    assert "torch ABI exact   no torch requirement; built against: unknown" in text
    assert "ext/_C.cpython-311-x86_64-linux-gnu.so: torch ABI exact: imports 4 c10/at/torch" in text
    assert main(["verify", str(unpinned)]) == 1
    err = capsys.readouterr().err
    assert "exact torch ABI" in err and "Requires-Dist: torch==X.Y.*" in err
    pinned = torch_wheel(tmp_path / "b", undefined=OTHER, requires="torch>=2.0", needed=())
    assert main(["verify", str(pinned), "--torch", "2.13"]) == 0
    out = capsys.readouterr().out
    assert "note: " in out and "ok: " in out
    assert main(["verify", str(pinned), "--torch", "x.y"]) == 2
    assert "'x.y' is not a version" in capsys.readouterr().err


def test_requires_dist_is_read_from_the_headers_only_continuations_included() -> None:
    metadata = (
        "Metadata-Version: 2.1\nName: x\nRequires-Dist: torch>=2.12\n"
        '  ; python_version >= "3.10"\nrequires-dist: numpy\nSummary: s\n\n'
        "Requires-Dist: torch==1.0  (in the description: not a header)\n"
    )
    assert torch_requirements(metadata, source="m") == ('torch>=2.12; python_version >= "3.10"',)
