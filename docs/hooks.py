"""MkDocs hook: add the reference pages generated from the code (``cuship.docs``) to the build.

The pages are made in memory from this checkout's ``src/`` (never from another installed
cuship), so ``mkdocs build --strict`` checks the text the code declares today.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

SRC = Path(__file__).resolve().parents[1] / "src"


def _render_pages() -> dict[str, str]:
    # MkDocs restores sys.path after loading a hook, so this checkout's src/ goes first here.
    if str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    import cuship
    from cuship.docs import render_pages

    if Path(cuship.__file__).resolve().parent != SRC / "cuship":
        raise SystemExit(f"the docs must be made from {SRC}, not from {cuship.__file__}")
    return render_pages()


def on_files(files: Files, config: Any) -> Files:
    """Add every generated page; a hand-written file of the same path is an error."""
    for path, content in _render_pages().items():
        if files.get_file_from_path(path) is not None:
            raise SystemExit(f"docs/{path} is generated from the code: delete that file")
        files.append(File.generated(config, path, content=content))
    return files
