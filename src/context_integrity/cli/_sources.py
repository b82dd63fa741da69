"""The SOURCE every trace-reading subcommand takes (``judge``, ``suggest``), read one way.

SOURCE is a file (our recording, OTLP/JSON lines, a Collector file export, a Tempo or Jaeger trace
JSON), ``tempo+http://host:3200`` or ``jaeger+http://host:16686`` with ``--trace-id`` or
``--service`` and a time range, or ``phoenix+http://host:6006`` with ``--project``.
"""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta, timezone
from typing import Any

from ..traces.read import TraceRuns

SOURCE_HELP = (
    "a recording or OTLP/JSON file; tempo+http://HOST:3200 or jaeger+http://HOST:16686 with --trace-id, "
    "or with --service and a time range; phoenix+http://HOST:6006 with --project"
)


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="SOURCE", help=SOURCE_HELP)
    parser.add_argument("--trace-id", help="with a Tempo or Jaeger SOURCE: the one trace to read")
    parser.add_argument("--service", help="with a Tempo or Jaeger SOURCE: the service whose traces to read")
    parser.add_argument(
        "--start",
        type=when,
        help="with --service: the earliest time, ISO 8601 (2026-12-05T10:00:00Z) or an age (90m, 6h, 2d)",
    )
    parser.add_argument("--end", type=when, help="with --service: the latest time (default: now)")
    parser.add_argument("--project", help="with a Phoenix SOURCE: the project whose spans to read")
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        type=header,
        help="an HTTP header for a backend SOURCE (repeatable), e.g. Authorization=Bearer ...",
    )


_AGES = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def when(text: str) -> datetime:
    """An ISO 8601 time (UTC when it names no zone) or an age before now (``90m``, ``6h``, ``2d``)."""
    unit = _AGES.get(text[-1:]) if text[:-1].isdigit() else None
    if unit is not None:
        return datetime.now(timezone.utc) - timedelta(**{unit: int(text[:-1])})
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither an ISO 8601 time (2026-12-05T10:00:00Z) nor an age (90m, 6h, 2d)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name.strip(), value


def open_runs(args: argparse.Namespace) -> TraceRuns:
    """The runs SOURCE holds. Raises :class:`~context_integrity.traces.SourceError` (one sentence)
    for a source that cannot be read; the caller exits 2 with it."""
    from ..traces import read_runs

    options: dict[str, Any] = {
        "trace_id": args.trace_id,
        "service": args.service,
        "start": args.start,
        "end": args.end,
        "project": args.project,
        "headers": dict(args.header) or None,
    }
    return read_runs(args.source, **options)
