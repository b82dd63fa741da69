"""The SOURCE every trace-reading subcommand takes (``judge``, ``suggest``): one set of options, read
one way.

SOURCE is a file (our recording, OTLP/JSON lines, a Collector file export, a Tempo or Jaeger trace
JSON), ``tempo+http://host:3200`` or ``jaeger+http://host:16686`` with ``--trace-id`` or
``--service`` and a time range, or ``phoenix+http://host:6006`` with ``--project``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ..traces import SpanSource, TraceRuns

SOURCE_HELP: Final = "a trace file, or a backend's base URL (see below)"
SOURCES_EPILOG: Final = """\
sources:
  recording.jsonl                      our recording, an OTLP/JSON export, or a trace saved from
                                       Tempo's or Jaeger's /api/traces/<id>
  tempo+http://tempo:3200              with --trace-id, or --service and a time range
  jaeger+http://jaeger:16686           with --trace-id, or --service and a time range
  phoenix+http://phoenix:6006          with --project (default "default"), or --trace-id

"""
# --since's units, in seconds.
AGE_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class SourceUsage(Exception):
    """Bad usage or an unreadable source: one sentence; the subcommand exits 2 with it."""


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """SOURCE and the options that choose which of a backend's traces to read."""
    parser.add_argument("source", metavar="SOURCE", help=SOURCE_HELP)
    chosen = parser.add_argument_group("which traces (backends)")
    chosen.add_argument("--trace-id", metavar="ID", help="one trace, by its id (32 hex digits)")
    chosen.add_argument("--service", help="Tempo and Jaeger: the traces of this service")
    chosen.add_argument("--project", help="Phoenix: the project (default: 'default')")
    chosen.add_argument("--start", metavar="WHEN", help="the time range's start (ISO 8601; UTC if no zone)")
    chosen.add_argument("--end", metavar="WHEN", help="the time range's end (ISO 8601; default now)")
    chosen.add_argument(
        "--since", metavar="AGE", help="the time range's start as an age before its end: 30m, 6h, 2d"
    )
    chosen.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an HTTP header for the backend (repeatable), e.g. Authorization='Bearer ...'",
    )


def open_source_of(args: argparse.Namespace) -> tuple[SpanSource, TraceRuns]:
    """The source the options name, opened, and the runs it holds. Raises :class:`SourceUsage`."""
    from ..traces import SourceError, open_source
    from ..traces.read import TraceRuns

    end = _when(args.end, "--end")
    start = _when(args.start, "--start")
    if args.since is not None:
        if start is not None:
            raise SourceUsage("--since and --start both set the time range's start; give one")
        start = (end or datetime.now(timezone.utc)) - _age(args.since)
    try:
        opened = open_source(
            args.source,
            trace_id=args.trace_id,
            service=args.service,
            start=start,
            end=end,
            project=args.project,
            headers=headers_of(args.header),
        )
    except SourceError as error:
        raise SourceUsage(str(error)) from None
    return opened, TraceRuns(opened)


def headers_of(pairs: Sequence[str]) -> dict[str, str] | None:
    """``--header NAME=VALUE`` pairs as a mapping (``None`` when none were given)."""
    out: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not name.strip():
            raise SourceUsage(f"--header {pair!r} is not NAME=VALUE")
        out[name.strip()] = value.strip()
    return out or None


def _when(text: str | None, option: str) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise SourceUsage(
            f"{option} {text!r} is not an ISO 8601 time, such as 2026-05-01T09:00:00Z"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _age(text: str) -> timedelta:
    unit = AGE_UNITS.get(text.strip()[-1:])
    try:
        amount = float(text.strip()[:-1]) if unit is not None else -1.0
    except ValueError:
        amount = -1.0
    if unit is None or amount <= 0:
        raise SourceUsage(f"--since {text!r} is not an age such as 30m, 6h or 2d")
    return timedelta(seconds=amount * unit)
