"""Worker process of ``cuship check``: loads the check modules once, then runs cases sent on stdin.

Protocol, one JSON document per line: the parent sends a hello (modules, root, pythonpath), the
worker answers ``{"ready": true}`` or ``{"fatal": message}``. Then ``{"prepare": engine}``
imports an engine's modules, and ``{"batch": [case, ...]}`` runs cases back to back, answering
one line per case as each finishes (the parent times each case by its answer's arrival). Stray prints from kernels go to stderr, so stdout
carries only the protocol.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from cuship.errors import CushipError

if TYPE_CHECKING:
    from cuship.check.registry import Op


def _send(channel: IO[str], document: dict[str, Any]) -> None:
    channel.write(json.dumps(document) + "\n")
    channel.flush()


def _serve(channel: IO[str], hello: dict[str, Any]) -> int:
    from cuship.check.registry import discover

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
    _send(channel, {"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        if "prepare" in request:
            _send(channel, _prepare(request["prepare"]))
            continue
        for one in request["batch"]:
            _send(channel, _run(ops, one))
    return 0


def _prepare(engine: str) -> dict[str, Any]:
    from cuship.check.engines import ENGINES, prepare

    try:
        prepare(ENGINES[engine])
    except Exception as err:  # the engine's cases will report the same error
        return {"prepared": False, "message": str(err)}
    return {"prepared": True}


def _run(ops: Mapping[str, Op], request: Mapping[str, Any]) -> dict[str, Any]:
    from cuship.check.compare import Tolerance
    from cuship.check.engines import run_case
    from cuship.check.inputs import CaseSpec

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


def main() -> int:
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    hello = json.loads(sys.stdin.readline())
    return _serve(channel, hello)


if __name__ == "__main__":
    sys.exit(main())
