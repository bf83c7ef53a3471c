"""The one interpreter probe: its script, its reader, and how each caller words a probe that
did not answer (the builder's candidates, the resolver's target and --python, gpu-run). The
interpreter's process is faked (unit tests run nothing); tests/integration runs real ones."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from packaging import tags

from cuship import process
from cuship.errors import CannotStart, InputError, TimedOut, ToolMissing, UsageError
from cuship.machine import sites
from cuship.machine.interpreter import KEEP, NoAnswer, parse, probe, read, running, script

ANSWER: dict[str, Any] = {
    "executable": "/v/bin/python",
    "version": [3, 13, 0],
    "python": "3.13.0rc1",
    "implementation": "cpython",
    "free_threaded": False,
    "in_venv": True,
    "paths": ["/usr/lib/python3.13", "/v/lib/python3.13/site-packages"],
    "site": ["/v/lib/python3.13/site-packages"],
    "modules": ["pip", "venv", "ensurepip"],
    "tags": ["cp313-cp313-manylinux_2_28_x86_64", "py3-none-any"],
}


class _Run:
    """A fake :func:`cuship.process.run`: records the call, answers or raises as told."""

    def __init__(self, stdout: str = "", *, code: int = 0, stderr: str = "", cut: bool = False):
        self.stdout, self.code, self.stderr, self.cut = stdout, code, stderr, cut
        self.calls: list[tuple[list[str], Mapping[str, Any]]] = []
        self.raises: Exception | None = None

    def __call__(self, argv: list[str], **kwargs: Any) -> process.Result:
        self.calls.append((argv, kwargs))
        if self.raises is not None:
            raise self.raises
        return process.Result(
            argv=tuple(argv),
            returncode=self.code,
            stdout=self.stdout,
            stderr=self.stderr,
            cut=self.cut,
        )


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> _Run:
    run = _Run(json.dumps(ANSWER))
    monkeypatch.setattr("cuship.process.run", run)
    return run


def test_the_running_interpreter_answers_in_process_what_the_script_prints() -> None:
    here = running()
    info = sys.version_info
    assert (here.version, here.full) == (f"{info.major}.{info.minor}", ".".join(map(str, info[:3])))
    assert here.executable == sys.executable and here.source == "running" and here.running
    assert here.tags == tuple(str(t) for t in tags.sys_tags())
    assert here.paths == tuple(p for p in sys.path if p)
    assert here.site == sites.site_dirs()
    assert here.has("pytest") and here.tag == f"cp{info.major}{info.minor}"
    compile(script(), "<probe>", "exec")  # the text `python -I -c` runs is this module's


def test_a_good_answer_is_read_after_what_a_sitecustomize_printed() -> None:
    found = parse("sitecustomize says hello\n" + json.dumps(ANSWER) + "\n", source="PATH")
    assert (found.version, found.full, found.python) == ("3.13", "3.13.0", "3.13.0rc1")
    assert found.executable == "/v/bin/python" and found.source == "PATH"
    assert found.in_venv and found.tags == tuple(ANSWER["tags"])
    assert found.has("venv") and not found.has("pytest")
    assert found.describe() == "3.13.0 (PATH: /v/bin/python)"
    assert found.to_json() == {"version": "3.13.0", "executable": "/v/bin/python", "source": "PATH"}
    # an interpreter without packaging names no tags; the optional fields default
    least = {k: ANSWER[k] for k in ("executable", "version", "python", "implementation")}
    bare = read({**least, "tags": None})
    assert bare.tags == () and bare.modules == () and not bare.free_threaded


@pytest.mark.parametrize(
    ("stdout", "said"),
    [
        ("Python 3.12.1", "its answer is not JSON"),
        ("", "its answer is not JSON"),
        ("[" * 100_000, "nested too deeply"),
        ('"3.12"', "its answer: expected object, got '3.12'"),
        (json.dumps({**ANSWER, "version": "3.12"}), "at version: expected array, got '3.12'"),
        (json.dumps({**ANSWER, "version": [3, "12", 0]}), "at version[1]: expected integer"),
        (json.dumps({**ANSWER, "free_threaded": 1}), "at free_threaded: expected boolean, got 1"),
        (json.dumps({**ANSWER, "paths": ["x" * 5000]}), "at paths[0]: a string of 5,000"),
        (json.dumps({**ANSWER, "tags": ["t"] * 10_001}), "at tags: "),
        (json.dumps({"executable": "/p"}), "its answer: no 'version'"),
    ],
)
def test_a_hostile_answer_is_an_input_error_saying_what_is_wrong(stdout: str, said: str) -> None:
    with pytest.raises(InputError) as caught:
        parse(stdout)
    assert said in caught.value.message


def test_the_probe_runs_the_script_isolated_bounded_and_without_python_variables(
    fake: _Run,
) -> None:
    environ = {"PATH": "/bin", "PYTHONPATH": "/evil", "PYTHONHOME": "/x", "HOME": "/h"}
    found = probe("/v/bin/python", environ, timeout=7.0, source="PATH", lend="/lend")
    assert found.executable == "/v/bin/python" and found.source == "PATH"
    ((argv, kwargs),) = fake.calls
    assert argv == ["/v/bin/python", "-I", "-c", script(), "/lend"]
    assert kwargs["env"] == {"PATH": "/bin", "HOME": "/h"}
    assert (kwargs["timeout"], kwargs["keep"], kwargs["stop_past_keep"]) == (7.0, KEEP, True)


def test_a_probe_that_does_not_answer_says_how(fake: _Run) -> None:
    fake.cut = True
    with pytest.raises(NoAnswer) as cut:
        probe("/p", {}, timeout=1.0)
    assert cut.value.problem == "it printed more than 1 MiB" and cut.value.exit_code == 2
    fake.cut, fake.code, fake.stderr = False, 127, "pyenv: python3.12: command not found\nmore"
    with pytest.raises(NoAnswer) as failed:
        probe("/p", {}, timeout=1.0)
    assert failed.value.problem == "exit 127: pyenv: python3.12: command not found"
    assert failed.value.result is not None and failed.value.result.returncode == 127
    fake.code, fake.stdout = 0, "[1, 2]"
    with pytest.raises(NoAnswer, match="did not answer what Python it is: its answer: expected"):
        probe("/p", {}, timeout=1.0)


def test_the_builder_words_each_failure_as_before(fake: _Run) -> None:
    from cuship.builder.host import interpreters

    fake.stdout = "Python 3.12.0\n"
    said = interpreters.probe_interpreter("/p", {})
    assert said == "not a Python interpreter (it printed 'Python 3.12.0')"
    fake.stdout = ""
    assert interpreters.probe_interpreter("/p", {}) == (
        "not a Python interpreter (it printed 'nothing')"
    )
    fake.code, fake.stderr = 127, "pyenv: python3.12: command not found"
    assert interpreters.probe_interpreter("/p", {}) == (
        "exit 127: pyenv: python3.12: command not found"
    )
    fake.raises = TimedOut(["/p"], interpreters.PROBE_TIMEOUT)
    assert interpreters.probe_interpreter("/p", {}) == "did not answer within 15 s"
    fake.raises = CannotStart(["/p"], "No such file or directory")
    assert interpreters.probe_interpreter("/p", {}) == "cannot run: No such file or directory"
    fake.raises, fake.code, fake.stdout = None, 0, json.dumps(ANSWER)
    found = interpreters.probe_interpreter("/p", {})
    assert not isinstance(found, str) and interpreters.unusable(found) is None


def test_the_resolver_words_a_target_without_tags_and_install_a_python_that_fails(
    fake: _Run,
) -> None:
    from cuship.resolve import install
    from cuship.resolve import target as target_module

    fake.stdout = json.dumps({**ANSWER, "tags": None})
    target_module._probe.cache_clear()
    assert target_module._probe("/p", "uv's --python", "/lend") == (
        "uv's --python (/p) did not answer: it cannot import packaging for its tags"
    )
    with pytest.raises(UsageError, match="failed to report its tags: it cannot import packaging"):
        install.interpreter_target("/p", {})
    fake.stdout = json.dumps(ANSWER)
    assert install.interpreter_target("/p", {}) == ("3.13.0rc1", tuple(ANSWER["tags"]))
    assert fake.calls[-1][0][-1] == str(Path(tags.__file__).parents[1])  # packaging lent
    fake.code, fake.stderr = 1, "Traceback ...\nSyntaxError: invalid syntax"
    with pytest.raises(UsageError, match="failed to report its tags: Traceback"):
        install.interpreter_target("/p", {})
    fake.code, fake.stdout = 0, "not json"
    with pytest.raises(UsageError, match="answered the tag probe with 'not json'"):
        install.interpreter_target("/p", {})


def test_gpu_run_reads_the_answer_from_inside_with_the_same_reader(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from cuship.gpurun import execute

    facts = {"interpreter": ANSWER, "torch": {"version": "2.13.0"}, "venv_purelib": "/r/v"}
    monkeypatch.setattr("cuship.process.run", _Run(json.dumps(facts)))
    inside = execute.probe("/v/bin/python", env={}, cwd=tmp_path)
    assert inside.interpreter == read(ANSWER)
    assert inside.torch == {"version": "2.13.0"} and inside.venv_purelib == "/r/v"
    monkeypatch.setattr("cuship.process.run", _Run(json.dumps({"interpreter": {"python": 3}})))
    with pytest.raises(ToolMissing, match=r"cuship inside '/v/bin/python': its answer: no"):
        execute.probe("/v/bin/python", env={}, cwd=tmp_path)
    older = {"executable": "/v/bin/python", "python": "3.13.0", "cuship": "0.9.0"}
    monkeypatch.setattr("cuship.process.run", _Run(json.dumps(older)))
    with pytest.raises(ToolMissing, match=r"'/v/bin/python' is another version \('0.9.0'\)"):
        execute.probe("/v/bin/python", env={}, cwd=tmp_path)
