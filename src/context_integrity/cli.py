"""``context-integrity demo | report``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="context-integrity",
        description="Check what AI agents and their tools hand each other, as OpenTelemetry.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo",
        help="run a scripted agent whose story trips every check once (no network, no key)",
    )
    demo.add_argument(
        "--only",
        choices=("column-types",),
        help="only the short column-types demo: three field failures, in warn then enforce",
    )
    demo.add_argument(
        "--mode",
        choices=("warn", "enforce", "both"),
        default="both",
        help="with --only column-types: the check_column_types dial (default: both, warn then enforce)",
    )
    demo.add_argument(
        "--recording",
        metavar="FILE",
        help="where to record traces when no OTLP endpoint is configured",
    )
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "demo":
        import logging

        logging.basicConfig(level=logging.WARNING, format="%(message)s")
        from . import demo
        from .telemetry import setup as telemetry_setup

        if args.recording:
            # The same service name the demo asks for: a second setup() may not change it.
            service = os.environ.get("OTEL_SERVICE_NAME") or demo.AGENT_NAME
            telemetry_setup.setup(recording_path=args.recording, service_name=service)
        modes = ("warn", "enforce") if args.mode == "both" else (args.mode,)
        return demo.main(sys.stdout, modes, only=args.only)
    if args.command == "report":
        from .paths import default_recording_path
        from .recording import RecordingStream
        from .report import write_report

        path = args.file or str(default_recording_path())
        if args.find or args.kind is not None or args.limit is not None:
            from .report.find import find_context_errors

            print(find_context_errors(path, kind=args.kind, limit=args.limit))
            return 0
        try:
            if args.html:
                from pathlib import Path

                from .recording import read_recording
                from .report.html import format_html

                # The page shows every run at once (timelines, charts), so it reads the whole recording.
                Path(args.html).write_text(format_html(read_recording(path)), encoding="utf-8")
                print(f"context-integrity report: wrote {args.html}")
                return 0
            # Streamed: each run is printed as it is read, so a recording of any size reads in
            # the memory of the runs in flight. Witnesses are read only when they are printed.
            stream = RecordingStream(path, details=args.verbose)
        except (FileNotFoundError, IsADirectoryError) as error:
            print(f"context-integrity report: {error}", file=sys.stderr)
            return 2
        try:
            write_report(stream, sys.stdout, verbose=args.verbose)
            sys.stdout.flush()
        except BrokenPipeError:  # `report | head` closed the pipe: not an error
            sys.stderr.close()
        return 0
    return 2  # pragma: no cover - argparse enforces the choice


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
