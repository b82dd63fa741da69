"""Structured logs: one JSON object a line, for the log pipeline beside the traces.

Each record carries ``time`` (RFC 3339, UTC), ``level``, ``logger``, ``message`` and whatever the call
put in ``extra`` (``trace_id``, ``target``, counts); an exception adds ``error`` and ``traceback``.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import sys
import traceback
from typing import Final, TextIO

# The attributes every LogRecord has: anything else on a record came from ``extra``.
_STANDARD: Final = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
LOGGER: Final = "context_integrity.serve"


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "time": _dt.datetime.fromtimestamp(record.created, _dt.timezone.utc).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            out["error"] = f"{type(error).__name__}: {error}"
            out["traceback"] = "".join(traceback.format_exception(*record.exc_info))
        return json.dumps(out, ensure_ascii=False)


def configure(level: int = logging.INFO, stream: TextIO | None = None) -> logging.Handler:
    """Send the stage's and the library's logs to ``stream`` (stderr) as JSON lines."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in (LOGGER, "context_integrity"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level)
        logger.propagate = False
    return handler
