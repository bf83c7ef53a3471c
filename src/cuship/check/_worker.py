"""Worker process of ``cuship check``: loads the check modules once, then runs cases sent on stdin.

Protocol, one JSON document per line: the parent sends a hello (modules, root, pythonpath), the
worker answers ``{"ready": true}`` or ``{"fatal": message}``; then each request names a case
and the worker answers with its result. Stray prints from kernels go to stderr, so stdout
carries only the protocol.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import IO, Any

from cuship.errors import CushipError


def _send(channel: IO[str], document: dict[str, Any]) -> None:
    channel.write(json.dumps(document) + "\n")
    channel.flush()


def _serve(channel: IO[str], hello: dict[str, Any]) -> int:
    from cuship.check.compare import Tolerance
    from cuship.check.engines import ENGINES, prepare, run_case
    from cuship.check.inputs import CaseSpec
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
            try:
                prepare(ENGINES[request["prepare"]])
            except Exception as err:  # the engine's cases will report the same error
                _send(channel, {"prepared": False, "message": str(err)})
            else:
                _send(channel, {"prepared": True})
            continue
        try:
            result = run_case(
                ops[request["op"]],
                request["engine"],
                request["dtype"],
                CaseSpec.from_json(request["case"]),
                Tolerance(rtol=request["rtol"], atol=request["atol"]),
            )
        except Exception as err:
            tail = "".join(traceback.format_exception(err)[-4:]).strip()
            result = {"status": "error", "message": f"{type(err).__name__}: {err}\n{tail}"}
        _send(channel, result)
    return 0


def main() -> int:
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    hello = json.loads(sys.stdin.readline())
    return _serve(channel, hello)


if __name__ == "__main__":
    sys.exit(main())
