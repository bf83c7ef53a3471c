"""``python -m cuship``."""

from __future__ import annotations

import sys

from cuship.cli import main

sys.exit(main())
