"""Reading back: the OTLP/JSON lines the local file exporters write.

When no OTLP endpoint is configured, ``ci.setup()`` appends every export to a
local file, one JSON object per line, in the same OTLP/JSON shape the
OpenTelemetry Collector's ``file`` exporter writes. This package turns that
file back into runs, findings and disposition ledgers:

- :mod:`.lines`: opening a recording (a regular file only, refused with a sentence otherwise) and
  cutting it into lines (at ``\n`` only; a line past the bound skipped, never held);
- :mod:`.otlp_json`: a tolerant reader of the OTLP/JSON encoding itself (a piece of the wrong type
  is a problem it names; a time out of range is clamped, and said);
- :mod:`.model`: the records a recording reads back as;
- :mod:`.spans`: one span into what the report needs of it, every attribute decoded
  by the partner of the function that encoded it (:mod:`..telemetry.schema`);
- :mod:`.assembly`: spans into runs, handed out as soon as each is whole;
- :mod:`.metrics`: the findings counter;
- :mod:`.reader`: the line-by-line reader: :class:`RecordingStream` (a run at a
  time, memory bounded by the runs in flight) and :func:`read_recording` (all of it).
- :mod:`.foreign`: Tempo's and Jaeger's trace documents as OTLP/JSON, and :func:`read_trace`,
  which opens a path as any of the three.

:mod:`context_integrity.report` renders what it reads. Neither imports
OpenTelemetry: a recording is plain JSON, and reading one must work wherever
the package is installed.
"""

from __future__ import annotations

from ..paths import RECORDING_ENV_VAR, RECORDING_FILE_NAME, default_recording_path
from .foreign import read_trace
from .lines import OverlongLine, RecordingUnreadable, open_recording, recording_lines
from .model import FindingRecord, Recording, RunRecord, ToolCallRecord
from .reader import RecordingStream, read_recording, read_recording_text

__all__ = [
    "RECORDING_ENV_VAR",
    "RECORDING_FILE_NAME",
    "FindingRecord",
    "OverlongLine",
    "Recording",
    "RecordingStream",
    "RecordingUnreadable",
    "RunRecord",
    "ToolCallRecord",
    "default_recording_path",
    "open_recording",
    "read_recording",
    "read_recording_text",
    "read_trace",
    "recording_lines",
]
