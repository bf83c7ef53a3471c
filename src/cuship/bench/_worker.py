"""Runs one benchmark point N times in a fresh process: the payload of instruction counting.

``python -m cuship.bench._worker ROOT MODULE CASE PARAMS_JSON SEED CALLS`` imports the module,
builds the inputs, calls the case once (warm-up) and then CALLS more times.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from cuship.bench.registry import discover

    root, module, name, params, seed, calls = argv
    cases = {c.name: c for c in discover((module,), Path(root))}
    case = cases[name]
    kwargs = case.inputs(json.loads(params), int(seed))
    case.fn(**kwargs)
    for _ in range(int(calls)):
        case.fn(**kwargs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
