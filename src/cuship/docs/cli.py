"""The command-line reference: every command and subcommand of ``cuship``, read from click."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import click

from cuship.docs._md import code, fence, table, text

__all__ = ["commands", "render"]


def commands(group: click.Group | None = None) -> Iterator[tuple[click.Context, click.Command]]:
    """Every command under ``group`` (default: ``cuship`` itself), depth first, with its
    context (whose ``command_path`` is ``cuship toolkit install``)."""
    if group is None:
        from cuship.cli import cli

        group = cli
    yield from _walk(click.Context(group, info_name="cuship"))


def _walk(ctx: click.Context) -> Iterator[tuple[click.Context, click.Command]]:
    group = ctx.command
    yield ctx, group
    if not isinstance(group, click.Group):
        return
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        if sub is not None and not sub.hidden:
            yield from _walk(click.Context(sub, info_name=name, parent=ctx))


def _help(command: click.Command) -> str:
    """The command's help as Markdown paragraphs; a ``\\b`` paragraph keeps its lines."""
    raw = inspect.cleandoc(command.help or "").split("\f", 1)[0]
    out = []
    for paragraph in raw.split("\n\n"):
        if paragraph.startswith("\b"):
            out.append(fence(paragraph[1:].strip("\n")))
        elif paragraph.strip():
            out.append(text(paragraph) + "\n")
    return "\n".join(out)


def _kind(param: click.Parameter, ctx: click.Context) -> str:
    if isinstance(param, click.Option) and param.is_flag and not param.count:
        return "flag"
    if isinstance(param.type, click.Choice):
        kind = " \\| ".join(code(str(c)) for c in param.type.choices)
    else:
        kind = code(param.make_metavar(ctx).removesuffix("...").strip())
    if param.multiple or (param.nargs != 1):
        kind += ", repeatable"
    return kind


def _default(param: click.Parameter) -> str:
    if isinstance(param, click.Option) and isinstance(param.show_default, str):
        return text(param.show_default)
    value = param.default
    if callable(value):
        return "computed"
    if _unset(value) or value in (False, (), [], ""):
        return ""
    if isinstance(param, click.Option) and param.is_flag and value is True:
        return "on"
    if isinstance(value, tuple | list):
        return ", ".join(code(str(v)) for v in value)
    return code(str(value))


def _unset(value: object) -> bool:
    """No default: None, or click's own marker for "not given" (click 8.3 and later)."""
    return value is None or type(value).__name__ == "Sentinel"


def _option_row(param: click.Option, ctx: click.Context) -> list[str]:
    names = [*param.opts, *param.secondary_opts]
    return [
        " / ".join(code(n) for n in names),
        _kind(param, ctx),
        _default(param),
        text(param.help or ""),
    ]


def _section(ctx: click.Context, command: click.Command) -> str:
    depth = 2 if ctx.parent is None else min(ctx.command_path.count(" ") + 1, 4)
    parts = [f"{'#' * depth} {ctx.command_path}\n"]
    pieces = " ".join(command.collect_usage_pieces(ctx))
    parts.append(fence(f"{ctx.command_path} {pieces}".rstrip()))
    help_text = _help(command)
    if help_text:
        parts.append(help_text)
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    if arguments:
        rows = [
            [code(p.make_metavar(ctx)), "required" if p.required else "optional", _default(p)]
            for p in arguments
        ]
        parts.append(table(["argument", "", "default"], rows))
    options = [
        p
        for p in command.params
        if isinstance(p, click.Option) and not p.hidden and p.name != "help"
    ]
    if options:
        rows = [_option_row(p, ctx) for p in options]
        parts.append(table(["option", "takes", "default", "meaning"], rows))
    if isinstance(command, click.Group):
        names = [n for n in command.list_commands(ctx)]
        parts.append("Subcommands: " + ", ".join(code(f"{ctx.command_path} {n}") for n in names))
        parts.append("")
    return "\n".join(parts)


def render() -> str:
    """The page: one section per command, in the order ``cuship --help`` lists them."""
    head = [
        "# Command line\n",
        "Generated from the click commands of `src/cuship/cli/` when the site is built: every "
        "command, argument and option, with its help as `cuship COMMAND --help` prints it. "
        "Exit codes are on [Exit codes](exit-codes.md).\n",
    ]
    sections = [_section(ctx, command) for ctx, command in commands()]
    return "\n".join(head + sections)
