"""cuship's parsers of untrusted input as fuzz targets (issue 43), for the short runs of
``tests/unit/test_fuzz_parsers.py`` and the long ones of ``benchmarks/fuzz_parsers.py``.

The contract each holds, on any input: it returns a value or raises a
:class:`~cuship.errors.CushipError` whose exit code is 2; never another exception (a bug,
exit 70) and never a hang (:func:`holds` stops any call past :data:`GUARD_S` seconds and says
so). Inputs come from Hypothesis strategies that mix the documents' real shapes (keys a reader
looks for, values of every JSON type, numbers out of range, lone surrogates, deep nesting) with
plain bytes, so the parsers' deep paths are reached as well as their first checks.
"""

from __future__ import annotations

import contextlib
import json
import signal
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from cuship.errors import CushipError

GUARD_S = 5.0  # seconds one call may take before it counts as a hang


class Hang(Exception):
    """A call ran past :data:`GUARD_S`."""


class Broken(Exception):
    """A parser broke its contract: ``kind`` is how (an exception other than a CushipError of
    exit 2, or a hang), ``detail`` the exception's type and message."""

    def __init__(self, target: str, kind: str, detail: str) -> None:
        super().__init__(f"{target}: {kind}: {detail}")
        self.target, self.kind, self.detail = target, kind, detail


@contextmanager
def _guard(seconds: float) -> Iterator[None]:
    def stop(signum: int, frame: object) -> None:
        raise Hang(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def holds(name: str, parse: Callable[[Any], object], data: Any) -> None:
    """Run ``parse(data)`` under the guard; :class:`Broken` when the contract is broken."""
    try:
        with _guard(GUARD_S):
            parse(data)
    except Hang as err:
        raise Broken(name, "hang", str(err)) from err
    except CushipError as err:
        if err.exit_code != 2:
            raise Broken(name, f"exit {err.exit_code}", err.message[:200]) from err
    except RecursionError as err:
        raise Broken(name, "exit 70", "RecursionError") from err
    except Exception as err:
        raise Broken(name, "exit 70", f"{type(err).__name__}: {str(err)[:200]}") from err


# --- strategies ----------------------------------------------------------------------------

_NUMBERS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1, 2**63, 10**400, 1e308]),
)
_TEXT = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["²", "١٢", "\ud800", "13.0", "12.8.1", "90_real", "x" * 300, "", "null",
                     "cu130", "../..", "a\nb", "-e.", "passed", "inf", "nan", "torch"]),
)  # fmt: skip
_SCALARS = st.one_of(st.none(), st.booleans(), _NUMBERS, _TEXT)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(_TEXT, inner, max_size=5)),
    max_leaves=25,
)


def _keyed(keys: list[str], values: st.SearchStrategy[Any] = JSON_VALUES) -> st.SearchStrategy[Any]:
    """Objects whose keys are mostly the ones a reader looks for."""
    return st.dictionaries(st.one_of(st.sampled_from(keys), _TEXT), values, max_size=len(keys) + 2)


def _deep(depth: int) -> bytes:
    return b'{"a": ' + b"[" * depth + b"]" * depth + b"}"


def _encoded(documents: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    """Documents as JSON bytes (NaN and Infinity written as Python writes them), cut short,
    spliced with junk, or plain bytes."""

    def dump(document: Any) -> bytes:
        return json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogatepass")

    raw = documents.map(dump)
    return st.one_of(
        raw,
        st.tuples(raw, st.integers(0, 200)).map(lambda p: p[0][: p[1]]),
        st.tuples(raw, st.binary(max_size=20), st.integers(0, 200)).map(
            lambda p: p[0][: p[2]] + p[1] + p[0][p[2] :]
        ),
        st.binary(max_size=200),
        st.sampled_from([_deep(100_000), _deep(65), b"1e400", b"[" + b"9" * 5000 + b"]"]),
    )


_FEATURE = st.one_of(st.lists(_TEXT, max_size=4), JSON_VALUES)
_NVIDIA = _keyed(["cuda_version_lower_bound", "cuda_version_upper_bound", "sm_arch"], _FEATURE)
_VARIANT = st.one_of(_keyed(["nvidia", "x"], st.one_of(_NVIDIA, JSON_VALUES)), JSON_VALUES)
VARIANTS = st.one_of(
    st.fixed_dictionaries({"variants": st.dictionaries(_TEXT, _VARIANT, max_size=4)}),
    JSON_VALUES,
)
_FILE = _keyed(["filename", "url", "hashes", "size", "yanked", "requires-python"])
PAGES = st.one_of(
    st.fixed_dictionaries({"files": st.lists(st.one_of(_FILE, JSON_VALUES), max_size=4)}),
    _keyed(["files", "name", "_cuship", "meta"]),
)
_OBJECT = _keyed(["path", "sass", "ptx", "needed", "torch_abi", "role", "cuda"])
_RECORD = st.one_of(
    _keyed(["filename", "objects", "bundled", "requires", "unread"]),
    st.fixed_dictionaries(
        {"filename": _TEXT, "objects": st.lists(st.one_of(_OBJECT, JSON_VALUES), max_size=3)}
    ),
)
MANIFESTS = st.one_of(
    st.fixed_dictionaries({"wheels": st.lists(st.one_of(_RECORD, JSON_VALUES), max_size=3)}),
    _keyed(["schema", "project", "wheels", "projects"]),
)
_ENTRY = _keyed(["status", "max_abs", "max_rel", "cases"])
BASELINES = st.one_of(
    st.fixed_dictionaries(
        {"format": st.sampled_from([1, 1.0, "1", True]), "entries": st.dictionaries(_TEXT, _ENTRY)},
        optional={
            "seed": JSON_VALUES,
            "created": JSON_VALUES,
            "quick": JSON_VALUES,
            "device": JSON_VALUES,
            "kind": JSON_VALUES,
        },
    ),
    JSON_VALUES,
)
_PAYLOAD = _keyed(["samples", "unit", "throttled"])
BENCH_BASELINES = st.fixed_dictionaries(
    {
        "format": st.sampled_from([1, 2, 3, "x"]),
        "run": st.one_of(
            st.fixed_dictionaries({"fingerprint": _keyed(["machine_id"])}), JSON_VALUES
        ),
        "results": st.lists(
            st.one_of(_keyed(["key", "payload"], _PAYLOAD), JSON_VALUES), max_size=3
        ),
    }
)

_LINES = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "Name: pkg",
                "Version: 1.0",
                "Requires-Dist: torch==2.13.*",
                "Requires-Dist: torch (>=2.0); extra == 'x'",
                "Requires-Dist: nvidia-cudnn-cu12",
                "Requires-Dist: torch @ file:///x",
                "Requires-Dist: ",
                "  continued",
                "Requires-Dist: torch>=²",
                "",
                "Requires-Dist: torch;;",
            ]
        ),
        st.text(max_size=60),
    ),
    max_size=12,
)
METADATA_TEXT = _LINES.map("\n".join)
RECORD_BYTES = st.one_of(
    st.lists(
        st.one_of(
            st.tuples(_TEXT, _TEXT, _TEXT).map(lambda r: ",".join(r)),
            st.sampled_from(['"a,b', "x.so,sha256=abc,10", "a,,", ",,,,,", '"', "x" * 1000]),
        ),
        max_size=8,
    ).map(lambda rows: "\n".join(rows).encode("utf-8", "surrogatepass")),
    st.binary(max_size=200),
)
VERSION_PY = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "cuda = '13.0'",
                "cuda = None",
                "hip = None",
                "xpu = '1'",
                "cuda: Optional[str] = '12.8'",
                "cuda = '²'",
                "cuda = ''",
                "hip = '6.2'",
                "cuda = '13.0'  # c",
                'cuda = "13.0"',
            ]
        ),
        st.text(max_size=40),
    ),
    max_size=6,
).map("\n".join)
_NVCC_WORDS = st.sampled_from(
    ["-gencode", "arch=compute_90,code=sm_90", "-arch=sm_80", "-arch", "sm_90", "-code",
     "--gpu-architecture=compute_90", "-Xptxas", "-O2", "-c", "x.cu", "-o", "x.o",
     "--options-file", "-optf", "-D", "-rdc=true", "-dc", "--generate-code=arch=compute_80",
     "-code=[sm_90,compute_90]", "=", "", "-I", "native", "all"]
)  # fmt: skip
NVCC_ARGV = st.tuples(
    st.lists(st.one_of(_NVCC_WORDS, st.text(max_size=20)), max_size=12),
    st.sampled_from(["rewrite", "stop"]),
)
TOML_TEXT = st.one_of(
    st.lists(
        st.sampled_from(
            [
                "[project]",
                'name = "pkg"',
                'version = "1.0"',
                "[matrix]",
                'python = ["3.12"]',
                'cuda = ["13.0"]',
                'arch = ["9.0"]',
                "[build]",
                'extra_deps = ["-e."]',
                "nvcc_threads = 1e400",
                'python = "3.99"',
                "[label]",
                'template = "{cuda_short!r:>999}"',
                "x = [[[[[[[[[1]]]]]]]]]",
                'name = "../evil"',
                "[check]",
                "timeout = -1",
            ]
        ),
        max_size=10,
    ).map("\n".join),
    st.text(max_size=200),
)
YAML_TEXT = st.one_of(
    st.lists(
        st.sampled_from(
            [
                "packages:",
                "  pkg:",
                "    versions: ['1.0']",
                "    name: ../../x",
                "    extra_deps: ['--index-url=x']",
                "    build_args: '\"'",
                "    matrix: {cuda: ['99.9']}",
                "matrix:",
                "  python: ['3.12']",
                "  torchsort:",
                "    versions: [1.0]",
                "    env: {PATH: x}",
                "&a [*a]",
                "!!python/object:os.system",
                "- " * 50,
            ]
        ),
        max_size=10,
    ).map("\n".join),
    st.text(max_size=200),
)


# --- targets -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    name: str
    inputs: st.SearchStrategy[Any]
    parse: Callable[[Any], object]


def _file(data: str | bytes, name: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="cuship-fuzz-"))
    path = folder / name
    path.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return path


def _clean(path: Path) -> None:
    import shutil

    shutil.rmtree(path.parent, ignore_errors=True)


def _packages_yml(text: str) -> object:
    from cuship.config.packages import load_packages

    path = _file(text, "packages.yml")
    try:
        return load_packages(path)
    finally:
        _clean(path)


def _cuship_toml(text: str) -> object:
    from cuship.config import load_config

    path = _file(text, "cuship.toml")
    try:
        return load_config(path.parent)
    finally:
        _clean(path)


def _metadata(text: str) -> object:
    from cuship.wheel.cudalibs import nvidia_requirements
    from cuship.wheel.read.headers import header_fields
    from cuship.wheel.torchabi import torch_requirements

    requires = [v for f, v in header_fields(text) if f == "requires-dist"]
    return torch_requirements(text, source="METADATA"), nvidia_requirements(requires)


def _record(data: bytes) -> object:
    from cuship.wheel.record import check_listing, parse_record

    rows = parse_record(data, "pkg-1.0-py3-none-any.whl", "pkg-1.0.dist-info/RECORD")
    check_listing(rows, [("x.so", 10)], "pkg-1.0-py3-none-any.whl", "pkg-1.0.dist-info/RECORD")
    return rows


def _variants(data: bytes) -> object:
    from cuship import _read
    from cuship.resolve.variants import UvMachine, uv_label
    from cuship.schema.inputs import check_input
    from cuship.wheel.variant import read_document

    document = _read.loads(data)
    check_input(document, "variants", "variants.json")
    machine = UvMachine.of("13.0", [("H100", "9.0")])
    label = uv_label(document["variants"], machine)
    with contextlib.suppress(CushipError):
        read_document(data, "variant.json")  # the one-variant file of a wheel, same bytes
    return label


def _manifest(data: bytes) -> object:
    from cuship import _read
    from cuship.judge.needs import WheelNeeds
    from cuship.judge.record import read_needs
    from cuship.resolve._manifest import _project_records
    from cuship.schema.inputs import check_input

    document = _read.loads(data)
    check_input(document, "manifest", "the manifest")
    try:
        records = _project_records(document, "pkg")
    except ValueError as err:  # the manifest reader's own refusal: ignored with a warning
        return str(err)
    base = WheelNeeds(name="pkg", version="1.0")
    return [read_needs(record, base) for record in records.values()]


def _pep691(data: bytes) -> object:
    from cuship.resolve.fetch import parse_json

    return parse_json(data, "https://index.test/simple/pkg/")


def _baseline(data: bytes) -> object:
    from cuship.check.report.baseline import load

    path = _file(data, "baseline.json")
    try:
        return load(path)
    finally:
        _clean(path)


def _bench_baseline(data: bytes) -> object:
    from cuship.bench.gate import _from_file

    path = _file(data, "baseline.json")
    try:
        return _from_file(path)
    finally:
        _clean(path)


def _version_py(text: str) -> object:
    from cuship.machine import flavour_of_files

    return flavour_of_files(text)


_ANSWER_KEYS = ["executable", "version", "python", "implementation", "paths", "site", "tags"]
INTERPRETER_ANSWERS = st.one_of(
    st.fixed_dictionaries(
        {"executable": _TEXT, "version": st.lists(st.integers(-1, 10**6), max_size=4)},
        optional={k: JSON_VALUES for k in _ANSWER_KEYS[2:]},
    ),
    _keyed(_ANSWER_KEYS),
)


def _interpreter(data: bytes) -> object:
    from cuship.machine.interpreter import parse

    return parse(data.decode("utf-8", "replace"))  # process output: text, bad bytes replaced


def _nvcc(case: tuple[list[str], str]) -> object:
    from cuship.builder.run.nvcc_shim import expand_options_files, plan_call

    argv, mode = case
    expanded = expand_options_files(argv, lambda file: "-gencode arch=compute_90,code=sm_90")
    return plan_call(expanded, ["-gencode", "arch=compute_80,code=sm_80"], mode)


TARGETS: tuple[Target, ...] = (
    Target("packages.yml", YAML_TEXT, _packages_yml),
    Target("cuship.toml", TOML_TEXT, _cuship_toml),
    Target("METADATA", METADATA_TEXT, _metadata),
    Target("RECORD", RECORD_BYTES, _record),
    Target("variants.json", _encoded(VARIANTS), _variants),
    Target("manifest", _encoded(MANIFESTS), _manifest),
    Target("PEP 691 page", _encoded(PAGES), _pep691),
    Target("check baseline", _encoded(BASELINES), _baseline),
    Target("bench baseline", _encoded(BENCH_BASELINES), _bench_baseline),
    Target("torch version.py", VERSION_PY, _version_py),
    Target("nvcc argv", NVCC_ARGV, _nvcc),
    Target("interpreter answer", _encoded(INTERPRETER_ANSWERS), _interpreter),
)
