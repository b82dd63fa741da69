"""``context-integrity``: the command line. One module per subcommand, each with ``NAME``,
``add_parser(commands)`` (its arguments, description and example) and ``run`` (what it does,
returning the exit status); the habits they share (help, ``--kind``, refusing an option that would
be ignored, exit status, a closed pipe, ``--version``) live in :mod:`._common`.

Exit status: 0 when the command did what was asked (a reader that closed the pipe early
included), 1 where a subcommand says so (``judge --fail-on``), 2 for bad usage or an unreadable
source.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from . import _common, demo, judge, report, serve, suggest

# THE list of subcommands, in the order help lists them.
SUBCOMMANDS = (demo, judge, report, suggest, serve)


def parser() -> argparse.ArgumentParser:
    """The whole command line, as ``--help`` shows it (the docs' CLI reference is generated from it)."""
    top = argparse.ArgumentParser(
        prog=_common.PROG,
        description="Check what AI agents and their tools hand each other, as OpenTelemetry.",
        epilog="example:\n  context-integrity demo\n  context-integrity report",
        formatter_class=_common.HelpFormatter,
    )
    _common.add_version_option(top)
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in SUBCOMMANDS:
        command.add_parser(commands)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    top = parser()
    args, extra = top.parse_known_args(argv)
    if extra:  # said by the subcommand's own parser when it has one (``judge`` says it in one sentence)
        getattr(args, "_parser", top).error(f"unrecognized arguments: {' '.join(extra)}")
    return _common.quiet_on_closed_pipe(lambda: int(args.run(args)))
