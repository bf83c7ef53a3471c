"""The docs site's reference pages say what the code declares: every command and option, every
configuration key, every error class and exit code, every FAQ answer the judge gives today; and
the site's navigation holds every page."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from cuship import docs, errors
from cuship.config import json_schema
from cuship.docs import _md, cli, config, exits, faq, schemas

REPO = Path(docs.__file__).resolve().parents[3]


def test_the_cli_page_has_every_command_and_option() -> None:
    page = cli.render()
    paths = []
    for ctx, command in cli.commands():
        paths.append(ctx.command_path)
        assert f"# {ctx.command_path}\n" in page
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert f"`{param.opts[0]}`" in page, (ctx.command_path, param.opts)
    assert {"cuship ship", "cuship toolkit install", "cuship bench history"} <= set(paths)


def test_the_config_page_has_every_key_of_the_schema_with_its_override() -> None:
    page = config.render()
    listed = {(key.section, key.name) for key in config.all_keys()}
    for section, table in json_schema()["properties"].items():
        for name, sub in table["properties"].items():
            nested = sub.get("type") == "object" and "properties" in sub
            assert nested or (section, name) in listed, (section, name)
    rows = {line.split(" | ")[0] + " " + line for line in page.splitlines()}
    assert any("`parallel`" in r and "`cuship build --parallel`" in r for r in rows)
    assert any("`store`" in r and "`CUSHIP_STORE`" in r for r in rows)
    assert "## [check.quick]" in page


def test_the_exit_code_page_has_every_error_class_and_its_code() -> None:
    page = exits.render()
    for name in errors.__all__:
        cls = getattr(errors, name)
        if not (isinstance(cls, type) and issubclass(cls, errors.CushipError)):
            continue  # INTERNAL_ERROR, INTERRUPTED: the codes the CLI adds, checked below
        assert f"| `{name}` | `{cls.exit_code}` |" in page
    for code in (0, 1, 2, 3, 4, 70, 130):
        assert f"| `{code}` |" in page


def test_every_faq_question_is_answered_by_the_judge_with_a_fix() -> None:
    page = faq.render()
    for question in faq.QUESTIONS:
        problems = faq.answers(question)
        assert problems, f"the judge finds nothing wrong any more: {question.situation}"
        for problem in problems:
            assert problem.fix and _md.code(problem.fix) in page


def test_the_schema_page_flattens_nested_keys() -> None:
    keys = [key for key, _, _ in schemas.flatten(json_schema())]
    assert "check.quick.dtypes" in keys and "matrix.include[].cuda" in keys


def test_the_schema_page_has_every_key_of_the_json_documents() -> None:
    from cuship.docs.documents import document_schemas

    page = schemas.render_documents()
    assert "## cuship build --json" not in schemas.render(), "on its own page"
    for schema in document_schemas().values():
        assert f"## {schema['title']}" in page
        items = schema.get("items")
        keys = schemas.flatten(items, "[]") if items is not None else schemas.flatten(schema)
        for key, _, _ in keys:
            assert f"| {_md.code(key)} |" in page, key
    assert "`[].report.extensions[].sass`" in page and "`jobs[].wheel`" in page


def test_the_pages_are_the_same_every_time() -> None:
    assert docs.render_pages() == docs.render_pages()


def test_the_navigation_holds_every_page() -> None:
    site = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    pages: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, str):
            pages.append(node)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(site["nav"])
    written = {p.name for p in (REPO / "docs").glob("*.md")}
    assert sorted(pages) == sorted(written | set(docs.PAGES))
    assert not any((REPO / "docs" / path).exists() for path in docs.PAGES)


def test_markdown_text_shows_what_was_written() -> None:
    assert _md.text("a <b> *c* `x|y` d_e") == r"a &lt;b&gt; \*c\* `x\|y` d\_e"
    assert _md.code("a|b") == r"`a\|b`"
