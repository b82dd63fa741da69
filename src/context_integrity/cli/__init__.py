"""``context-integrity``: the command line. One module per subcommand, each with ``add_parser``
(its arguments, help and example) and ``run`` (what it does, returning the exit status).

Exit status: 0 when the command did what was asked, 1 where a subcommand says so (``judge
--fail-on``), 2 for bad usage or an unreadable source.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from . import demo, judge, report, serve, suggest

# THE list of subcommands, in the order help lists them.
SUBCOMMANDS = (demo, judge, report, suggest, serve)


def parser() -> argparse.ArgumentParser:
    """The whole command line, as ``--help`` shows it (the docs' CLI reference is generated from it)."""
    top = argparse.ArgumentParser(
        prog="context-integrity",
        description="Check what AI agents and their tools hand each other, as OpenTelemetry.",
    )
    commands = top.add_subparsers(dest="command", required=True)
    for command in SUBCOMMANDS:
        command.add_parser(commands)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    top = parser()
    args, extra = top.parse_known_args(argv)
    if extra:  # said by the subcommand's own parser when it has one (``judge`` says it in one sentence)
        getattr(args, "parser", top).error(f"unrecognized arguments: {' '.join(extra)}")
    result: int = args.run(args)
    return result
