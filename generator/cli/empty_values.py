"""An empty value on the command line is refused, for every option of every command, before the command runs.

`--out "$DIR"` with the variable unset gives the option an empty word, and each command read it its own way:
typer makes "" the path `.`, so `perfsite example-models ""` wrote the models into the current folder, `compare
--results ""` read it as the store and `diff --json ""` said "Cannot write .: Is a directory"; a text option
tested for truth (`compare --config ""`, `build --baseline ""`) was silently ignored. An empty word names
nothing, so the group refuses it by the option's name as soon as the command is known (PerfsiteGroup), from the
words click's own parser gives each parameter, before any value is converted or any command code runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import typer

from generator.cli.pipes import PipeSafeGroup
from generator.cli.repeated_values import refuse_repeated_values

# Parameters whose command refuses an empty value itself, in words that say what it takes (docs/errors.md):
# `run ""` and `validate ""` (a spec argument), `diff "" r` (a side), `query ""` (no statement), `--only ""`,
# `--target ""` and `--measure ""`.
OWN_REFUSAL = {("run", "specs"), ("validate", "specs"), ("diff", "baseline"), ("diff", "candidate"),
               ("query", "sql"), ("run", "only"), ("run", "target"), ("diff", "measure")}

# The commands whose --results takes an fsspec URL as well as a folder.
URL_STORES = ("run", "build", "query")


class PerfsiteGroup(PipeSafeGroup):
    """The `perfsite` group: a closed pipe ends it quietly (PipeSafeGroup); an empty value, and a second value
    of an option that takes one (generator.cli.repeated_values), are refused."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, command, rest = super().resolve_command(ctx, args)
        parsed = _parsed(ctx, name, command, rest) if command is not None else None
        if parsed is not None:
            command_ctx, words, order = parsed
            refuse_empty_values(name, command, command_ctx, words)
            refuse_repeated_values(name, command, command_ctx, order, rest)
        return name, command, rest


def _parsed(parent: Any, name: str, command: Any, args: Sequence[str]) -> tuple[Any, dict, list] | None:
    """The command's context, the words click's parser gives each parameter and the parameters in the order
    given (once per occurrence); None for a malformed command line, whose own parse says what is wrong, and
    for --help."""
    ctx = command.context_class(command, info_name=name, parent=parent, resilient_parsing=True)
    try:
        words, _, order = command.make_parser(ctx).parse_args(args=list(args))
    except click_exceptions():
        return None
    return None if words.get("help") else (ctx, words, order)


def refuse_empty_values(name: str, command: Any, ctx: Any, words: dict) -> None:
    """typer.BadParameter naming the first parameter of `command` given an empty (or blank) word."""
    for param in command.get_params(ctx):
        given = words.get(param.name)
        for word in given if isinstance(given, list | tuple) else [given]:
            if isinstance(word, str) and not word.strip() and (name, param.name) not in OWN_REFUSAL:
                raise typer.BadParameter(_allowed(word, param, name), ctx=ctx, param=param,
                                         param_hint=f"'{_named(param)}'")


def _named(param: Any) -> str:
    """`--json`, or an argument's name as the help shows it (`MODEL`)."""
    return param.opts[0] if param.param_type_name == "option" else param.name.upper()


def _allowed(word: str, param: Any, command: str) -> str:
    option = _named(param)
    if option == "--results":
        where = "a results folder or a URL such as s3://bucket/results" if command in URL_STORES else "a results folder"
        return f"got {word!r}, which names no store; allowed: {where}, or no --results at all for <project>/results"
    what = " ".join((param.help or "").split()).rstrip(".")
    leave_out = f", or no {option} at all" if not param.required else ""
    return (f"got {word!r}, which names nothing (an unset variable in a script?); allowed: a value for {option} "
            f"({what}){leave_out}")


def click_exceptions() -> tuple[type[Exception], ...]:
    """Click's error class, and typer's own copy of it: typer 0.26 and later parse with `typer._click`, whose
    ClickException is not click's (../shared/NOTES.md), so catching click's alone let every usage error out
    as a traceback."""
    import click

    classes: list[type[Exception]] = [click.ClickException]
    try:
        from typer._click.exceptions import ClickException as TyperClickException
    except ImportError:  # a typer that uses click itself
        return tuple(classes)
    return (*classes, TyperClickException)
