"""``context-integrity report``: findings and the ledger per run, from a recording."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(commands: Any) -> None:
    report = commands.add_parser("report", help="print findings and the ledger per run from a recording")
    report.add_argument("file", nargs="?", help="an OTLP-JSON-lines recording (default: the local recording)")
    report.add_argument("-v", "--verbose", action="store_true", help="also print every witness")
    report.add_argument(
        "--find",
        action="store_true",
        help="answer as find_context_errors: findings, coverage and ledgers, from a recording, an "
        "OTLP-JSON export, or a Jaeger or Tempo trace JSON",
    )
    report.add_argument(
        "--html", metavar="OUT", help="write the report as one self-contained HTML page to OUT"
    )
    report.add_argument("--kind", help="with --find: only findings of this kind")
    report.add_argument("--limit", type=int, help="with --find: how many findings to list")
    report.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..paths import default_recording_path
    from ..recording import RecordingStream
    from ..report import write_report
    from ..text import visible

    path = args.file or str(default_recording_path())
    if args.find or args.kind is not None or args.limit is not None:
        from ..report.find import find_context_errors

        print(find_context_errors(path, kind=args.kind, limit=args.limit))
        return 0
    try:
        if args.html:
            from pathlib import Path

            from ..report.html import format_html

            # Streamed too: the page shows the first runs in full and counts the rest.
            page = format_html(RecordingStream(path))
            Path(args.html).write_text(page, encoding="utf-8")
            print(visible(f"context-integrity report: wrote {args.html}"))
            return 0
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
    return 0


def _unreadable(error: OSError) -> int:
    from ..text import visible

    said = error.strerror if isinstance(error.strerror, str) and error.strerror else str(error)
    print(visible(f"context-integrity report: {said}"), file=sys.stderr)
    return 2
