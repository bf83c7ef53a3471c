"""Hostile config files (issue 16): undecodable, nested thousands deep, NaN and infinity, absurd
ranges and list sizes, templates that run code-like format strings. Each is exit 2 naming the
file and the key, from `load_config` and from `cuship config` alike — never a traceback."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from packaging.version import Version

from cuship.config import load_config
from cuship.errors import ConfigError, UsageError
from cuship.resolve._template import format_url
from cuship.resolve.settings import read_config
from cuship.wheel.names import Variant, format_label

DEEP = "[" * 3000 + "]" * 3000


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _refused(path: Path, capsys: pytest.CaptureFixture[str], *said: str, cli: bool = True) -> str:
    """load_config and (with ``cli``) `cuship config` refuse ``path`` with exit 2, saying ``said``."""
    from cuship.cli import main

    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert caught.value.exit_code == 2
    assert str(path) in message
    for words in said:
        assert words in message
    assert len(message) < 1000
    if not cli:  # a slow parse: the library call is the row; other rows cover the CLI's exit
        return message
    code = main(["config", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err and str(path) in err.replace("\n", "")
    return message


# -- the file itself -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["cuship.toml", "pyproject.toml", "config/packages.yml"],
    ids=["toml", "pyproject", "yml"],
)
def test_a_file_that_is_not_utf8_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    body = b"[tool.cuship]\n# caf\xe9 in latin-1\n" if name == "pyproject.toml" else b"# \xff\xfe\n"
    path = _write(tmp_path / name, body)
    message = _refused(
        path, capsys, "not UTF-8 text", "line 2" if name == "pyproject.toml" else "0xff"
    )
    assert "save the file as UTF-8" in message


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("cuship.toml", f"x = {DEEP}\n"),
        ("cuship.toml", f"[matrix]\npython = {DEEP}\n"),
        ("cuship.toml", "x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n"),
        ("config/packages.yml", f"packages: {DEEP}\n"),
    ],
    ids=["toml-array", "toml-known-key", "toml-inline-tables", "yml"],
)
def test_3000_deep_nesting_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str
) -> None:
    cli = not name.endswith(".yml")  # PyYAML takes a second to reach the limit
    _refused(_write(tmp_path / name, text), capsys, "nested too deeply", cli=cli)


def test_a_file_far_too_large_is_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cuship.toml"
    with path.open("wb") as sparse:
        sparse.truncate(2 << 30)  # a hole: nothing is written
    started = time.monotonic()
    _refused(path, capsys, "larger than 4 MiB")
    assert time.monotonic() - started < 5


# -- values ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        (
            "[build]\nmemory_per_job_gib = nan\n",
            "build.memory_per_job_gib",
            "finite number, got nan",
        ),
        (
            "[build]\nmemory_per_job_gib = inf\n",
            "build.memory_per_job_gib",
            "finite number, got inf",
        ),
        ("[build]\nmemory_per_job_gib = -inf\n", "build.memory_per_job_gib", "finite number"),
        ("[build]\nmemory_per_job_gib = 1e300\n", "build.memory_per_job_gib", "at most 1024 GiB"),
        ("[check]\ntimeout = inf\n", "check.timeout", "finite number, got inf"),
        ("[bench]\nnoise = nan\n", "bench.noise", "finite number, got nan"),
        ("[check.ops.add]\nrtol = nan\n", "check.ops.add.rtol", "finite number"),
        ('[bench.floors]\nH100 = "inf GB/s"\n', "bench.floors", "is not a floor"),
        ('[bench.floors]\nH100 = "nan GB/s"\n', "bench.floors", "is not a floor"),
        ("[build]\nnvcc_threads = 65\n", "build.nvcc_threads", "between 1 and 64, got 65"),
        (
            "[build]\nnvcc_threads = 9223372036854775807\n",
            "build.nvcc_threads",
            "between 1 and 64",
        ),
        ("[build]\nmax_jobs = 1000000000\n", "build.max_jobs", "between 1 and 1,024"),
        ("[check]\nfuzz = 1000000000000\n", "check.fuzz", "between 0 and 100,000"),
        ("[check]\nparallel = 100000\n", "check.parallel", "between 0 and 1,024"),
        ("[check]\nseed = -1\n", "check.seed", "between 0 and"),
        ("[check.quick]\nfuzz = -3\n", "check.quick.fuzz", "between 0 and 100,000"),
        (
            "[check.ops.add]\nshapes = [{rows = -1}]\n",
            "check.ops.add.shapes[0]",
            "0 to 2,147,483,647",
        ),
        ("[bench]\nmax_samples = 100000000000\n", "bench.max_samples", "between 1 and 10,000,000"),
        ("[ci]\nmax_parallel = 100000\n", "ci.max_parallel", "between 1 and 256"),
        ('[ci]\npython = "3.19999"\n', "ci.python", "not a Python version"),
    ],
)
def test_absurd_values_are_refused_naming_the_key(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    key: str,
    problem: str,
) -> None:
    _refused(_write(tmp_path / "cuship.toml", text), capsys, f": {key}", problem)


def test_20000_python_versions_are_refused_before_any_job_is_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    versions = ", ".join(f'"3.{i}"' for i in range(20_000))
    path = _write(tmp_path / "cuship.toml", f"[matrix]\npython = [{versions}]\n")
    _refused(path, capsys, ": matrix.python", "holds 20,000 entries; at most 1,000")


@pytest.mark.parametrize("version", ["3.19999", "4.0", "3.012", "3", "3.12.1", "３.12"])
def test_python_versions_look_like_3_n(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str
) -> None:
    path = _write(tmp_path / "cuship.toml", f'[matrix]\npython = ["3.12", "{version}"]\n')
    _refused(path, capsys, ": matrix.python[1]", "not a Python version", 'e.g. "3.12"')


def test_a_table_past_1000_entries_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ops = "\n".join(f"[check.ops.op{i}]\nrtol = 0.1" for i in range(1001))
    path = _write(tmp_path / "cuship.toml", ops)
    _refused(path, capsys, ": check.ops", "holds 1,001 entries; at most 1,000")


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ("project = 3\n", "project", "expected a table, got 3"),
        ("[project]\nname = 5\n", "project.name", "expected a string, got 5"),
        ('[project]\nname = "x"\ndynamic = 5\n', "project.dynamic", "a list of strings"),
        ('[project]\nversion = "one"\n', "project.version", "'one' is not a version"),
        ("[project]\nrequires-python = 5\n", "project.requires-python", "a string, got 5"),
        (
            '[project]\nrequires-python = ">=3.10 junk"\n',
            "project.requires-python",
            "not a version specifier",
        ),
        ("build-system = 3\n", "build-system", "expected a table"),
        ('[build-system]\nrequires = "abc"\n', "build-system.requires", "a list of strings"),
    ],
)
def test_the_pyproject_beside_the_config_is_untrusted_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, key: str, problem: str
) -> None:
    _write(tmp_path / "pyproject.toml", text)
    config = _write(tmp_path / "cuship.toml", '[matrix]\npython = ["3.12"]\n')
    from cuship.cli import main

    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert f"pyproject.toml: {key}: " in str(caught.value) and problem in str(caught.value)
    assert main(["config", str(tmp_path)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_a_tool_that_is_not_a_table_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _refused(_write(tmp_path / "pyproject.toml", "tool = 3\n"), capsys, ": tool: expected a table")


def test_packages_yml_build_args_must_be_shell_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = 'packages:\n  foo:\n    versions: ["1.0"]\n    build_args: \'"unclosed\'\n'
    path = _write(tmp_path / "config" / "packages.yml", text)
    _refused(path, capsys, ": packages.foo.build_args", "not shell words")


# -- templates -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{cuda_short!r:>99999999}", "has a conversion (!r)"),
        ("{cuda_short:>99999999}", "has a format spec"),
        ("{torch[999]}", "indexes or reads an attribute"),
        ("{cuda_short.__class__}", "indexes or reads an attribute"),
        ("cu{}", "is positional"),
        ("cu{0}", "is positional"),
        ("cu{cuda_short", "is not a template"),
        ("cu}", "is not a template"),
        ("cu{gpu}", "unknown placeholder {gpu}"),
        ("cu{cuda_short}+x", "not valid local version labels"),
        ("x" * 5000, "at most 200"),
    ],
)
def test_label_templates_hold_only_documented_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], template: str, problem: str
) -> None:
    path = _write(tmp_path / "cuship.toml", f"[label]\ntemplate = '{template}'\n")
    started = time.monotonic()
    message = _refused(path, capsys, ": label.template", problem)
    assert time.monotonic() - started < 5
    if "field" in problem or "placeholder" in problem or "has a" in problem:
        assert "{cuda_short}" in message  # the known fields are listed


def test_format_label_refuses_a_hostile_template_itself() -> None:
    variant = Variant(cuda=Version("12.8"), torch=Version("2.8"))
    for template in ("{cuda_short!r:>99999999}", "{torch[999]}", "{cuda_short.__class__}"):
        with pytest.raises(UsageError, match="label template") as caught:
            format_label(variant, template)
        assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[build]\nimage = 'nvidia/cuda:{cuda!r:>99999999}'\n", "build.image"),
        ("[build]\nimage = 'nvidia/cuda:{cuda.__class__}'\n", "build.image"),
        ("[build]\nimage = 'nvidia/cuda:{gpu}'\n", "build.image"),
        ("[build]\ntorch_index = 'https://x/{variant[0]}'\n", "build.torch_index"),
        ("[build]\ntorch_index = 'https://x/{variant:>999999}'\n", "build.torch_index"),
    ],
)
def test_image_and_torch_index_templates_are_checked_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, key: str
) -> None:
    _refused(_write(tmp_path / "cuship.toml", text), capsys, f": {key}", "known fields")


def test_the_prebuilt_url_template_is_plain_fields_only() -> None:
    values = {"version": "1.0", "cuda_short": "128"}
    assert format_url("https://x/{version}/cu{cuda_short}.whl", values) == "https://x/1.0/cu128.whl"
    for template in ("https://x/{version!r:>99999999}", "https://x/{version.__class__}"):
        with pytest.raises(UsageError, match="url template"):
            format_url(template, values)


def test_the_prebuilt_pyproject_that_is_not_utf8_or_too_deep_is_a_config_error(
    tmp_path: Path,
) -> None:
    latin = _write(tmp_path / "a" / "pyproject.toml", b'[project]\nname = "caf\xe9"\n')
    with pytest.raises(ConfigError, match="not UTF-8") as caught:
        read_config(latin)
    assert str(latin) in str(caught.value) and caught.value.exit_code == 2
    deep = _write(tmp_path / "b" / "pyproject.toml", f"[project]\nname = {DEEP}\n")
    with pytest.raises(ConfigError, match="nested too deeply"):
        read_config(deep)


def test_an_ordinary_config_still_loads(tmp_path: Path) -> None:
    text = (
        '[matrix]\npython = ["3.10", "3.14"]\ncuda = ["12.8"]\n'
        "[label]\ntemplate = 'cu{cuda_short}torch{torch}'\n"
        "[build]\nnvcc_threads = 64\nmemory_per_job_gib = 2.5\n"
        "image = 'nvidia/cuda:{cuda}-devel-ubuntu22.04'\n"
    )
    config = load_config(_write(tmp_path / "cuship.toml", text))
    assert config.matrix.python == ("3.10", "3.14")
    assert (config.build.nvcc_threads, config.build.memory_per_job_gib) == (64, 2.5)
    assert config.label.template == "cu{cuda_short}torch{torch}"


@pytest.mark.parametrize("name", ["../../../../../victim", "foo", "x$(touch PWNED)"])
def test_packages_yml_entry_cannot_rename_its_package(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """An entry's own `name:` would replace the validated key and reach paths (a build wrote and
    later deleted outside dist/ with ``../../../../../victim``): refused, whatever it says."""
    text = f'packages:\n  foo:\n    name: "{name}"\n    versions: ["1.0"]\n'
    path = _write(tmp_path / "config" / "packages.yml", text)
    _refused(path, capsys, ": packages.foo.name", "a package's name is its key")
