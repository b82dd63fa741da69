"""The habits every ``context-integrity`` subcommand shares, in one place.

A subcommand module (``cli/<name>.py``) has ``NAME``, ``add_parser(commands)`` and ``run(args)``,
and is listed in ``cli/__init__.py``'s ``SUBCOMMANDS``. It takes its habits from here:

- **Help**: :func:`subcommand` makes its parser with a one-line ``help`` (the top-level list), a
  ``description`` (what it does, said whole) and an ``example`` (command lines a person can paste),
  laid out as written (:class:`HelpFormatter`). The docs' CLI reference reads the parser.
- **Kinds**: :func:`add_kind_option` adds ``--kind``, whose valid values are the vocabulary's
  (:data:`~context_integrity.findings.KINDS`, their one owner): help lists them, and a bad one exits
  :data:`EXIT_USAGE` naming them all.
- **No option silently ignored**: :func:`refuse` ends with :data:`EXIT_USAGE` and the subcommand's
  usage, for an option that would not be honoured in the combination given (say which, and what
  to add or drop). Options that exclude each other go in an argparse mutually exclusive group.
- **Exit status**: :data:`EXIT_OK` when the command did what was asked; :data:`EXIT_FOUND` where a
  subcommand documents it (findings at or above a threshold); :data:`EXIT_USAGE` for bad usage or
  an unreadable source.
- **A closed pipe is not an error**: :func:`quiet_on_closed_pipe` runs a subcommand so that a
  reader that leaves early (``report --find | head -1``) ends it quietly, with :data:`EXIT_OK`
  and no traceback, from any write, including the last flush at exit.
- **Version**: ``--version`` (:func:`add_version_option`, on the top-level parser) prints the
  installed distribution's version, read only when asked.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, NoReturn

from ..findings import KINDS

PROG: Final = "context-integrity"

EXIT_OK: Final = 0
EXIT_FOUND: Final = 1
EXIT_USAGE: Final = 2


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and examples as written; option help wrapped without splitting a hyphenated
    word (a kind, a flag) across lines."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)


def subcommand(
    commands: Any, name: str, *, help: str, description: str, example: str
) -> argparse.ArgumentParser:
    """The parser of one subcommand, its help laid out as written, ending in its example.

    ``example`` is one or more command lines (a ``#`` comment after one says what it does).
    """
    lines = "\n".join(f"  {line}" for line in example.strip().splitlines())
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=help,
        description=description.strip(),
        epilog=f"example:\n{lines}",
        formatter_class=HelpFormatter,
    )
    parser.set_defaults(_parser=parser)
    return parser


def refuse(args: argparse.Namespace, message: str) -> NoReturn:
    """End the subcommand for bad usage: its usage line and ``message`` on stderr, :data:`EXIT_USAGE`."""
    parser: argparse.ArgumentParser = args._parser
    parser.error(message)  # argparse exits with status 2, which EXIT_USAGE names


def kind_words() -> str:
    """The valid kinds, as help and the refusal of a bad kind list them."""
    return ", ".join(KINDS)


def _kind(value: str) -> str:
    if value not in KINDS:
        raise argparse.ArgumentTypeError(f"{value!r} is not a kind of finding; the kinds are: {kind_words()}")
    return value


def add_kind_option(parser: argparse.ArgumentParser, *, help: str) -> None:
    """``--kind KIND``: one of the vocabulary's kinds; ``help`` says what it narrows."""
    parser.add_argument("--kind", metavar="KIND", type=_kind, help=f"{help} (one of: {kind_words()})")


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number within ``low``..``high``, refusing anything else."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{number} is outside {low}..{high}")
        return number

    return parse


class _Version(argparse.Action):
    """``--version``: the version is read when asked, so building the parser stays cheap."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, help="print the installed version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> NoReturn:
        from ..telemetry.instrumentation import instrumentation_version

        print(f"{PROG} {instrumentation_version()}")
        parser.exit(EXIT_OK)


def add_version_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", action=_Version)


def quiet_on_closed_pipe(run: Callable[[], int]) -> int:
    """``run()``, ended quietly with :data:`EXIT_OK` when whoever reads stdout has gone.

    A reader that stops early (``| head``) is not a failure of ours: the rest of the output has
    nowhere to go, so stdout is pointed at the null device (the interpreter's final flush would
    raise again otherwise) and nothing is said.
    """
    try:
        status = run()
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):  # stdout without a descriptor (a test's capture): nothing to flush
            pass
        return EXIT_OK
