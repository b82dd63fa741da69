"""``context-integrity report``: findings and the ledger per run, from a recording."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..limits import FIND_MAX_LIMIT
from . import _common

NAME = "report"

DESCRIPTION = """\
Read a recording back: per run, its findings (each with the message its check wrote) and its
disposition ledger (what each check concluded at each encounter), then a summary line. What
each kind of check can never see (its ceiling) is said once per kind, after the runs.

The recording is the local one `ci.setup()` writes when no OTLP endpoint is configured
($CONTEXT_INTEGRITY_RECORDING, else ~/.local/state/context-integrity/recording.otlp.jsonl), or
any file named. Three ways to read it, one at a time: the text report (-v adds every witness),
--find (the answer find_context_errors gives an agent, from a recording, an OTLP-JSON export, or
a Jaeger or Tempo trace JSON; --kind and --limit narrow it), or --html (one self-contained page).
"""

EXAMPLE = """\
context-integrity report                       # the local recording, as text
context-integrity report -v recording.jsonl    # with every witness
context-integrity report --find --kind missing-column --limit 5 trace.json
context-integrity report --html report.html    # one page: waterfalls, findings, ledgers
"""


def add_parser(commands: Any) -> None:
    report = _common.subcommand(
        commands,
        NAME,
        help="print findings and the ledger per run from a recording",
        description=DESCRIPTION,
        example=EXAMPLE,
    )
    report.add_argument("file", nargs="?", help="an OTLP-JSON-lines recording (default: the local recording)")
    mode = report.add_mutually_exclusive_group()
    mode.add_argument("-v", "--verbose", action="store_true", help="also print every witness (text report)")
    mode.add_argument(
        "--find",
        action="store_true",
        help="answer as find_context_errors: findings, coverage and ledgers, from a recording, an "
        "OTLP-JSON export, or a Jaeger or Tempo trace JSON",
    )
    mode.add_argument("--html", metavar="OUT", help="write the report as one self-contained HTML page to OUT")
    _common.add_kind_option(report, help="with --find: only findings of this kind")
    report.add_argument(
        "--limit",
        metavar="N",
        type=_common.bounded_int(1, FIND_MAX_LIMIT),
        help=f"with --find: how many findings to list (1 to {FIND_MAX_LIMIT})",
    )
    report.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..paths import default_recording_path
    from ..recording import RecordingStream
    from ..report import write_report
    from ..text import visible

    narrowing = [
        option for option, given in (("--kind", args.kind), ("--limit", args.limit)) if given is not None
    ]
    if narrowing and not args.find:
        _common.refuse(args, f"{' and '.join(narrowing)} narrow the --find answer: add --find, or drop them")
    path = args.file or str(default_recording_path())
    if args.find:
        from ..report.find import find_context_errors

        print(find_context_errors(path, kind=args.kind, limit=args.limit))
        return _common.EXIT_OK
    try:
        if args.html:
            from pathlib import Path

            from ..report.html import format_html

            # Streamed too: the page shows the first runs in full and counts the rest.
            page = format_html(RecordingStream(path))
            Path(args.html).write_text(page, encoding="utf-8")
            print(visible(f"context-integrity report: wrote {args.html}"))
            return _common.EXIT_OK
        # Streamed: each run is printed as it is read, so a recording of any size reads in
        # the memory of the runs in flight. Witnesses are read only when they are printed.
        stream = RecordingStream(path, details=args.verbose)
    except OSError as error:  # no such file, a directory, a FIFO or a device, a loop, no permission
        return _unreadable(error)
    try:
        write_report(stream, sys.stdout, verbose=args.verbose)
        sys.stdout.flush()
    except BrokenPipeError:  # `report | head` closed the pipe: not an error
        sys.stderr.close()
    except OSError as error:  # the file went away, or its disk failed, part-way through
        return _unreadable(error)
    return _common.EXIT_OK


def _unreadable(error: OSError) -> int:
    from ..text import visible

    said = error.strerror if isinstance(error.strerror, str) and error.strerror else str(error)
    print(visible(f"context-integrity report: {said}"), file=sys.stderr)
    return _common.EXIT_USAGE
