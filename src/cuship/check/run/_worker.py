"""Worker process of ``cuship check``: loads the check modules once, then runs cases sent on stdin.

Protocol, one JSON document per line: the parent sends a hello (modules, root, pythonpath and,
optionally, the project ``packages`` to trace), the worker answers ``{"ready": true}`` (with
``"provenance"`` when packages were asked for) or ``{"fatal": message}``. Then
``{"prepare": engine}`` imports an engine's modules (``"launch": true``, sent once per engine
and run by the probe, also launches its one-element kernel), answering ``{"prepared": true}``
or ``{"prepared": false, "problem": {...}}``, and ``{"batch": [case, ...]}`` runs cases back to
back, answering one line per case as each finishes (the parent times each case by its answer's
arrival). ``{"fork": {"socket": path, "log": path}}`` forks a copy of the worker that serves
that socket (see :mod:`cuship.check.run._fork`), answering ``{"forked": pid}`` or ``{"forked": 0,
"why": reason}``. Stray prints from kernels go to stderr, so stdout carries only the protocol.

Under compute-sanitizer (``cuship check --sanitize``) the hello carries ``"marks": [path,
worker]``: the worker then writes a marker into that stream (the sanitizer's log, a FIFO) after
loading the modules, after each prepare and after each case that has a ``"mark"``, before it
answers (see :mod:`cuship.check.sanitize.marks`).

``python -c`` puts the working directory first on sys.path; the worker drops that entry, so that
the installed build of the project is imported, not a source tree that happens to be there (the
hello's pythonpath is appended after site-packages; ``PYTHONPATH`` is the user's, before them).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from cuship.errors import CushipError

if TYPE_CHECKING:
    from cuship.check.declare.registry import Op
    from cuship.check.sanitize.marks import Marks


def _send(channel: IO[str], document: dict[str, Any]) -> None:
    channel.write(json.dumps(document) + "\n")
    channel.flush()


def _serve(channel: IO[str], hello: dict[str, Any]) -> int:
    from cuship.check.declare.registry import discover

    ready: dict[str, Any] = {"ready": True}
    with _importing(hello):
        try:
            ops = {
                op.name: op
                for op in discover(
                    hello["modules"], Path(hello["root"]), [Path(p) for p in hello["pythonpath"]]
                )
            }
        except CushipError as err:
            _send(channel, {"fatal": str(err)})
            return 1
        if "packages" in hello:
            ready["provenance"] = _provenance(hello["packages"])
    marks = _marks(hello)
    if marks is not None:
        marks.write("ready", marks.worker)
    _send(channel, ready)
    _loop(ops, sys.stdin, channel, marks)
    return 0


@contextlib.contextmanager
def _importing(hello: Mapping[str, Any]) -> Iterator[None]:
    """The Triton interpreter's adaptation while the check modules and the project's packages
    are imported, for a run with ``triton-interpret`` cases (their decorators run then)."""
    with contextlib.ExitStack() as stack:
        if hello.get("interpret"):
            try:
                from cuship.check.interpret.adapt import adapted

                stack.enter_context(adapted())
            except Exception:  # Triton or NumPy missing: the engine's probe says so
                pass
        yield


def _loop(ops: Mapping[str, Op], requests: IO[str], channel: IO[str], marks: Marks | None) -> None:
    """Answer requests until the parent closes ``requests``."""
    for line in requests:
        request = json.loads(line)
        if "fork" in request:
            _send(channel, _forked(request["fork"], ops, channel, marks))
            continue
        if "prepare" in request:
            answer = _prepare(request["prepare"], launch=bool(request.get("launch")))
            if marks is not None:
                marks.write("prepared", marks.worker, request["prepare"])
            _send(channel, answer)
            continue
        for one in request["batch"]:
            answer = _run(ops, one)
            if marks is not None and "mark" in one:
                marks.write("case", str(one["mark"]))
            _send(channel, answer)


def _forked(
    spec: Mapping[str, str], ops: Mapping[str, Op], channel: IO[str], marks: Marks | None
) -> dict[str, Any]:
    """Fork a copy of this worker (modules and engines already imported) that serves the
    socket ``spec["socket"]`` with its output in ``spec["log"]``; see :mod:`cuship.check.run._fork`."""
    from cuship.check.run import _fork

    why = _fork.blocker(sanitized=marks is not None)
    if why is not None:
        return {"forked": 0, "why": why}
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _fork.child(spec, channel, lambda reader, writer: _loop(ops, reader, writer, None))
    _fork.adopt(pid, spec["log"])
    return {"forked": pid}


def _marks(hello: Mapping[str, Any]) -> Marks | None:
    if "marks" not in hello:
        return None
    from cuship.check.sanitize.marks import Marks

    path, worker = hello["marks"]
    return Marks(str(path), str(worker))


def _provenance(packages: list[str]) -> dict[str, Any]:
    from cuship.provenance import Provenance, collect, one_line

    try:
        return collect(packages).to_json()
    except Exception as err:  # provenance must never cost the run
        return Provenance(note=f"provenance not collected: {one_line(err)}").to_json()


def _prepare(engine: str, *, launch: bool) -> dict[str, Any]:
    """Import the engine's modules; with ``launch`` (the run's one probe of the engine) also
    compile and launch its one-element kernel."""
    from cuship.check.case.engines import engine_imports
    from cuship.check.run.availability import import_problem

    problem = import_problem(engine_imports(engine))
    if problem is None and launch:
        from cuship.check.run.smoke import launch_problem

        problem = launch_problem(engine)
    if problem is not None:
        return {"prepared": False, "problem": problem}
    return {"prepared": True}


def _run(ops: Mapping[str, Op], request: Mapping[str, Any]) -> dict[str, Any]:
    from cuship.check.case.compare import Tolerance
    from cuship.check.case.engines import run_case
    from cuship.check.declare.inputs import CaseSpec

    try:
        return run_case(
            ops[request["op"]],
            request["engine"],
            request["dtype"],
            CaseSpec.from_json(request["case"]),
            Tolerance(rtol=request["rtol"], atol=request["atol"]),
        )
    except Exception as err:
        tail = "".join(traceback.format_exception(err)[-4:]).strip()
        return {"status": "error", "message": f"{type(err).__name__}: {err}\n{tail}"}


def _drop_working_directory() -> None:
    """Undo ``python -c``'s sys.path[0] = working directory."""
    if getattr(sys.flags, "safe_path", False) or not sys.path:
        return
    if Path(sys.path[0] or os.curdir).resolve() == Path.cwd().resolve():
        del sys.path[0]


def main() -> int:
    _drop_working_directory()
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    hello = json.loads(sys.stdin.readline())
    code = _serve(channel, hello)
    if "marks" in hello:  # compute-sanitizer reports at the process's orderly exit
        return code
    # Nothing is left to say: skip tearing down torch, Triton and Numba (seconds, at the end of
    # every run, with the parent waiting).
    sys.stderr.flush()
    channel.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
