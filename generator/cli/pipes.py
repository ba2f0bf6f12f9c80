"""A reader that stops reading: `perfsite --help | head -1`, `perfsite query ... | head`.

Python ignores SIGPIPE, so a write to a pipe whose reader has gone raises BrokenPipeError. typer (like click)
catches it inside the command, and rich's consoles (the help, tables, the progress bar) catch it in
`Console.on_broken_pipe`; both exit with status 1, perfsite's status for a user error, without a word. A write
outside the command (an error paragraph to a closed stderr) was a traceback. Unix tools die of the
signal instead, which a shell reports as 128 + 13 = 141. perfsite ends the same way, quietly, as Python's
documentation recommends (https://docs.python.org/3/library/signal.html#note-on-sigpipe): the standard
streams are pointed at /dev/null, so that the flush at exit cannot fail again, and SIGPIPE keeps Python's
disposition (setting it to SIG_DFL would kill perfsite on any closed socket too, `perfsite serve`'s among them).
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import sys
from collections.abc import Iterator
from typing import Any, NoReturn

import rich.console
import typer
from typer.core import TyperGroup

# What a shell reports for a process that SIGPIPE ended: 128 + the signal's number (13 on every Unix).
EXIT_OUTPUT_CLOSED = 141


# A pipe takes a write of at most PIPE_BUF bytes whole or not at all (POSIX). A longer one that the reader leaves
# midway returns the part written, and CPython's buffered stdout drops the rest without an error: `perfsite query
# … | head` wrote 600 KB in one call, lost all but 64 KB and exited 0, not 141. 1,024 characters are at most
# 4,096 bytes in UTF-8, PIPE_BUF's smallest POSIX-allowed value being 512 and Linux's 4,096.
WHOLE_WRITE_CHARS = getattr(select, "PIPE_BUF", 4096) // 4


def echo_long(text: str) -> None:
    """Write a long text to stdout in pieces a pipe takes whole, so that a reader that goes away midway is met
    as a broken pipe (exit 141) and not as a short write Python ignores."""
    for start in range(0, len(text), WHOLE_WRITE_CHARS):
        typer.echo(text[start:start + WHOLE_WRITE_CHARS], nl=False)


class OutputClosed(Exception):
    """The reader of stdout or stderr went away. Not an OSError, so that typer lets it through to main()."""


@contextlib.contextmanager
def output_closed_is_raised() -> Iterator[None]:
    try:
        yield
    except OSError as e:
        if e.errno != errno.EPIPE or not standard_output_closed():
            raise
        raise OutputClosed from e


def standard_output_closed() -> bool:
    """Whether the reader of stdout or stderr went away. A broken pipe elsewhere (a measurement worker's, a
    socket's) is an error of its own, to be reported as such, not a reader that stopped reading: poll says
    POLLERR for the write end of a pipe without a reader."""
    for stream in (sys.stdout, sys.stderr):
        try:
            poller = select.poll()
            poller.register(stream.fileno(), select.POLLOUT)
            if any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0)):
                return True
        except (OSError, ValueError, AttributeError):  # a stream replaced (tests) or closed: not a pipe we know
            continue
    return False


class PipeSafeGroup(TyperGroup):
    """The `perfsite` group: a closed pipe met while parsing (the help is printed there) or while a command runs
    reaches main() as OutputClosed instead of typer's silent exit 1."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with output_closed_is_raised():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with output_closed_is_raised():
            return super().invoke(ctx)


def raise_output_closed_from_rich() -> None:
    """rich's consoles raise OutputClosed on a broken pipe instead of exiting 1. Its documentation invites
    replacing `Console.on_broken_pipe`; typer makes its help consoles itself, so the class's method is replaced,
    by main() only (the console-script entry)."""

    def on_broken_pipe(console: rich.console.Console) -> None:
        console.quiet = True  # nothing more from this console
        raise OutputClosed

    rich.console.Console.on_broken_pipe = on_broken_pipe  # type: ignore[method-assign]


def exit_output_closed() -> NoReturn:
    """End quietly with status 141: nothing more can reach the reader, and nothing is left to say."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):  # a stream replaced or already closed
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
    sys.exit(EXIT_OUTPUT_CLOSED)
