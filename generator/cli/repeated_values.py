"""An option that takes one value, given twice, is refused by its name before the command runs.

click keeps the last value of a repeated single-value option and drops the others without a word, so
`perfsite profile m.onnx --threads 1 --threads 4` measured 4 threads only, and `run spec.yaml --target arm
--target x86` sent every trial to x86, where the user expected both (a spec's `targets:` and sweeps are lists).
The options that take several values are declared so (`--results` of `build`, `--only`, `--dim`, ...); for
every other one a second, different value is a mistake to say, not a choice to make silently. The same value
twice, and a repeated flag (`--quick`), mean what they meant once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import typer


def refuse_repeated_values(name: str, command: Any, ctx: Any, order: list, args: Sequence[str]) -> None:
    """typer.BadParameter naming the first single-value option of `command` given more than once (`order`: the
    parameters as click's parser met them, once per occurrence; `args`: the words, to name the values)."""
    times = Counter(param.name for param in order)
    for param in command.get_params(ctx):
        if times[param.name] > 1 and _takes_one_value(param):
            values = _values(param.opts, args)
            if len(values) == times[param.name] and len(set(values)) == 1:
                continue  # the same value again (a script's defaults and its override agreeing): nothing is lost
            raise typer.BadParameter(_message(name, param, values, times[param.name]), ctx=ctx, param=param,
                                     param_hint=f"'{param.opts[0]}'")


def _takes_one_value(param: Any) -> bool:
    return (param.param_type_name == "option" and not param.multiple and not param.is_flag
            and not getattr(param, "count", False))


# Where a repeat says the user wanted several values measured: how to get them.
HINTS = {("run", "target"): "to measure on several targets, list them in the spec's `targets:`, docs/ray.md",
         ("profile", "threads"): "to measure several thread counts, run it once for each, or sweep them in a spec",
         ("profile", "provider"): "to measure on several providers, run it once for each"}


def _message(command: str, param: Any, values: list[str], times: int) -> str:
    given = f" ({', '.join(repr(v) for v in values)})" if len(values) == times else ""
    hint = HINTS.get((command, param.name))
    return (f"given {times} times{given}; it takes one value, and only the last would have been used. Give it "
            f"once{f' ({hint})' if hint else ''}")


def _values(opts: Sequence[str], args: Sequence[str]) -> list[str]:
    """The words given to the option in `args`: `--opt VALUE` and `--opt=VALUE` (up to a `--`)."""
    found = []
    for i, word in enumerate(args):
        if word == "--":
            break
        for opt in opts:
            if word == opt and i + 1 < len(args):
                found.append(args[i + 1])
            elif word.startswith(f"{opt}="):
                found.append(word.split("=", 1)[1])
    return found
