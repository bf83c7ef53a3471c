"""The reference pages of the documentation site, rendered from the code (pure, deterministic).

Each page is Markdown made from what the code declares, so it cannot drift from it: the click
commands (:mod:`cuship.docs.cli`), cuship.toml's dataclasses and JSON Schema
(:mod:`cuship.docs.config`), the ``CUSHIP_*`` settings (:mod:`cuship.docs.env`), the exit codes
of the error classes (:mod:`cuship.docs.exits`), the data files (:mod:`cuship.docs.compat`), the
published schemas (:mod:`cuship.docs.schemas`) and the judge's problems and fixes
(:mod:`cuship.docs.faq`). ``docs/hooks.py`` adds them to the MkDocs build under ``reference/``.
"""

from __future__ import annotations

from collections.abc import Callable

from cuship.docs import cli, compat, config, env, exits, faq, schemas

__all__ = ["PAGES", "render_pages"]

PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli.render,
    "reference/config.md": config.render,
    "reference/environment.md": env.render,
    "reference/exit-codes.md": exits.render,
    "reference/compatibility.md": compat.render,
    "reference/schemas.md": schemas.render,
    "reference/json.md": schemas.render_documents,
    "reference/faq.md": faq.render,
}
"""Each generated page by its path under the docs directory, and the function that makes it."""


def render_pages() -> dict[str, str]:
    """Every generated page: path under the docs directory -> Markdown."""
    return {path: render() for path, render in PAGES.items()}
