"""Config values that mean nothing are refused with the key and the valid range (issue 34, item
9): a Python or glibc that does not exist, integers where arch lists are text, a build backend
that is a list, an empty list that would quietly mean the default."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuship.config import load_config
from cuship.errors import ConfigError

_PROJECT = '[project]\nname = "x"\nversion = "1"\n'


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('[matrix]\npython = ["3.99"]', "matrix.python[0]: '3.99' is no CPython release; write one from 3.6 to 3.19"),
        ('[matrix]\npython = ["3.5"]', "matrix.python[0]: '3.5' is no CPython release"),
        ('[build]\nmanylinux = "9_99"', "build.manylinux: '9_99' is no glibc release; write one from 2_5 to 2_60"),
        ('[build]\nmanylinux = "2_999"', "build.manylinux: '2_999' is no glibc release"),
        ("[matrix]\narch = [80, 90]", "matrix.arch[0]: expected a string, got 80"),
        ("[matrix]\ncuda = []", "matrix.cuda: is an empty list"),
        ("[matrix]\npython = []", "matrix.python: is an empty list"),
        ("[matrix]\narch = []", "matrix.arch: is an empty list"),
    ],
    ids=["py3.99", "py3.5", "glibc9_99", "glibc2_999", "arch-ints", "cuda-empty", "py-empty", "arch-empty"],
)  # fmt: skip
def test_nonsense_is_refused_with_the_key(tmp_path: Path, body: str, said: str) -> None:
    (tmp_path / "cuship.toml").write_text(_PROJECT + body + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert said in caught.value.message


def test_a_build_backend_that_is_a_list_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["x"]\nbuild-backend = ["a"]\n' + _PROJECT + "[tool.cuship]\n"
    )
    with pytest.raises(ConfigError, match=r"build-system.build-backend: expected a string"):
        load_config(tmp_path)


def test_sensible_values_still_load(tmp_path: Path) -> None:
    (tmp_path / "cuship.toml").write_text(
        _PROJECT + '[matrix]\npython = ["3.12"]\narch = ["80;90"]\n[build]\nmanylinux = "2_28"\n'
    )
    config = load_config(tmp_path)
    assert config.matrix.python == ("3.12",) and config.build.manylinux == "2_28"
