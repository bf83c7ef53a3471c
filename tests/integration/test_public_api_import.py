"""``import cuship`` loads no subpackage: the public names load on first use."""

from __future__ import annotations

import subprocess
import sys


def test_importing_cuship_imports_no_subpackage() -> None:
    code = "import sys, cuship; print(sorted(m for m in sys.modules if m.startswith('cuship.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
