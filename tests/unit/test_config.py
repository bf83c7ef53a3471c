from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuship.compat import load
from cuship.config import json_schema, load_config, package_configs, packages_json_schema
from cuship.errors import ConfigError
from cuship.matrix import expand_all


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_example_config_loads_with_pyproject_defaults(example_dir: Path) -> None:
    config = load_config(example_dir)
    assert config.project.name == "cuvecops"
    assert config.project.version == "0.1.0"
    assert config.matrix.cuda == ("12.8.1", "12.9.1", "13.0.2")
    assert config.matrix.torch == ()  # a plain CUDA extension: it builds against no torch
    assert config.matrix.arch == ("8.0+PTX;9.0;10.0;12.0+PTX",)
    assert config.build.cache == "sccache"


def test_tool_cuship_table_in_pyproject(tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        '[project]\nname = "demo"\nversion = "1.2"\n[tool.cuship.matrix]\npython = "3.12"\ncuda = ["12.8"]\n',
    )
    config = load_config(tmp_path)
    assert config.project.name == "demo"
    assert config.matrix.python == ("3.12",)  # a scalar where a list is expected
    assert config.source.name == "pyproject.toml"


def test_unknown_key_names_file_key_and_suggests(tmp_path: Path) -> None:
    path = write(tmp_path / "cuship.toml", '[matrix]\ncudaa = ["12.8"]\n')
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value)
    assert "matrix.cudaa" in str(err.value)
    assert "did you mean 'cuda'" in str(err.value)
    assert err.value.exit_code == 2


def test_float_python_version_is_refused_with_quote_hint(tmp_path: Path) -> None:
    path = write(tmp_path / "cuship.toml", "[matrix]\npython = [3.10]\n")
    with pytest.raises(ConfigError, match=r"matrix\.python\[0\].*number 3\.1") as err:
        load_config(path)
    assert 'quote it: "3.1"' in str(err.value)


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ('[build]\ncache = "ccache"\n', "build.cache", "not one of"),
        ("[build]\nnvcc_threads = 0\n", "build.nvcc_threads", "must be between 1 and 64"),
        ('[build]\nisolation = "yes"\n', "build.isolation", "true or false"),
        ('[matrix]\narch = "8.0;nine"\n', "matrix.arch[0]", "not a GPU architecture"),
        ('[matrix]\ncuda = ["twelve"]\n', "matrix.cuda[0]", "not a version"),
        (
            '[project]\nrequires_python = "3.10"\n',
            "project.requires_python",
            "not a version specifier",
        ),
        ("matrix = 3\n", "matrix", "expected a table"),
        (
            '[matrix]\nexclude = [{cuda = "13", gpu = "x"}]\n',
            "matrix.exclude[0].gpu",
            "unknown key",
        ),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, text: str, key: str, problem: str) -> None:
    path = write(tmp_path / "cuship.toml", text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert f": {key}: " in str(err.value)
    assert problem in str(err.value)


def test_malformed_toml(tmp_path: Path) -> None:
    path = write(tmp_path / "cuship.toml", "[matrix\ncuda = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path)


def test_no_config_at_all(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no cuship\.toml"):
        load_config(tmp_path)


PACKAGES = """\
packages:
  flash-attn:
    versions:
      - "2.5.0"
      - "2.5.6"
    build_args: "--no-build-isolation"
    extra_deps:
      - "packaging"
      - "ninja"
      - "torch"
    test_import: "flash_attn"
    description: "Fast and memory-efficient exact attention"
"""


def test_community_packages_yml_is_accepted_as_is(tmp_path: Path) -> None:
    write(tmp_path / "config" / "packages.yml", PACKAGES)
    config = load_config(tmp_path)
    (spec,) = config.packages
    assert spec.name == "flash-attn"
    assert spec.versions == ("2.5.0", "2.5.6")
    assert spec.extra_deps == ("packaging", "ninja", "torch")
    assert spec.test_import == "flash_attn"
    assert config.root == tmp_path.resolve()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("packages:\n  x:\n    versions: [1.0\n", "not valid YAML"),
        (
            "packages:\n  x:\n    versions: ['1.0']\n    colour: red\n",
            r"packages\.x\.colour: unknown key",
        ),
        ("packages:\n  '-bad-':\n    versions: ['1.0']\n", "not a valid package name"),
        ("packages:\n  x:\n    build_args: ''\n", "missing required key"),
        (
            "packages:\n  x:\n    versions: ['1.0']\n    matrix: {python: ['three']}\n",
            r"packages\.x\.matrix\.python",
        ),
        (
            "packages:\n  x:\n    versions: ['1.0']\n    matrix: {colour: red}\n",
            r"packages\.x\.matrix\.colour: unknown key",
        ),
        ("matrix: {cuda: ['x.y']}\npackages:\n  x:\n    versions: ['1.0']\n", r"matrix\.cuda"),
        (
            "packages:\n  x:\n    versions: ['1.0']\n    env: {A: [1]}\n",
            r"packages\.x\.env",
        ),
    ],
)
def test_bad_packages_yml(tmp_path: Path, text: str, match: str) -> None:
    write(tmp_path / "config" / "packages.yml", text)
    with pytest.raises(ConfigError, match=match):
        load_config(tmp_path)


PER_PACKAGE = """\
matrix:
  python: ["3.11", "3.12"]
  cuda: ["13.0"]
packages:
  torchsort:
    versions: ["0.1.9", "0.1.10"]
    extra_deps: ["torch==2.13.0"]
    env: {TORCHSORT_FAST: "1"}
    matrix: {python: ["3.12"], torch: ["2.13"]}
  bottleneck:
    versions: ["1.5.0"]
    matrix: {device_code: false}
"""


def test_each_package_of_a_packages_yml_gets_its_own_matrix_keys_and_env(tmp_path: Path) -> None:
    write(tmp_path / "config" / "packages.yml", PER_PACKAGE)
    config = load_config(tmp_path)
    assert config.matrix.python == ("3.11", "3.12"), "the file's matrix is every package's"
    built = {c.requirement: c for c in package_configs(config)}
    assert list(built) == ["torchsort==0.1.9", "torchsort==0.1.10", "bottleneck==1.5.0"]
    sort = built["torchsort==0.1.10"]
    assert sort.matrix.python == ("3.12",) and sort.matrix.torch == ("2.13",)
    assert sort.matrix.cuda == ("13.0",), "keys a package does not name stay the file's"
    assert sort.build.env == {"TORCHSORT_FAST": "1"}
    plain = built["bottleneck==1.5.0"]
    assert plain.matrix.device_code is False and plain.matrix.python == ("3.11", "3.12")
    assert plain.build.env == {}
    jobs = [j.id for j in expand_all(config, load()).jobs]
    assert jobs == [
        "torchsort-0.1.9-cp312-cu130-torch2.13",
        "torchsort-0.1.10-cp312-cu130-torch2.13",
        "bottleneck-1.5.0-cp311-cpu",
        "bottleneck-1.5.0-cp312-cpu",
    ]


def test_a_matrix_in_both_cuship_toml_and_packages_yml_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "config" / "packages.yml", PER_PACKAGE)
    write(tmp_path / "cuship.toml", '[matrix]\npython = ["3.12"]\n')
    with pytest.raises(ConfigError, match="give the matrix in one place"):
        load_config(tmp_path)


def test_the_packages_yml_schema_describes_each_package_and_its_matrix() -> None:
    doc = packages_json_schema()
    assert set(doc["properties"]) == {"matrix", "packages"}
    entry = doc["properties"]["packages"]["additionalProperties"]
    assert {"versions", "build_args", "extra_deps", "test_import", "description", "env"} <= set(
        entry["properties"]
    )
    assert "device_code" in entry["properties"]["matrix"]["properties"]
    assert "name" not in entry["properties"] and entry["required"] == ["versions"]
    assert "device_code" in doc["properties"]["matrix"]["properties"]


def test_schema_describes_every_section() -> None:
    schema = json_schema()
    assert set(schema["properties"]) == {
        "project",
        "matrix",
        "label",
        "variants",
        "build",
        "check",
        "bench",
        "ci",
    }
    matrix = schema["properties"]["matrix"]
    assert matrix["additionalProperties"] is False
    assert matrix["properties"]["torch_cuda"]["enum"] == ["major", "exact"]
    json.dumps(schema)


def test_published_schema_file_is_current(repo_root: Path) -> None:
    published = json.loads((repo_root / "src/cuship/schema/cuship.schema.json").read_text())
    assert published == json_schema(), (
        "run: python -m cuship config --schema > src/cuship/schema/cuship.schema.json"
    )
