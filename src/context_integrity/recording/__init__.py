"""Reading back: the OTLP/JSON lines the local file exporters write.

When no OTLP endpoint is configured, ``ci.setup()`` appends every export to a
local file, one JSON object per line, in the same OTLP/JSON shape the
OpenTelemetry Collector's ``file`` exporter writes. This package turns that
file back into runs, findings and disposition ledgers:

- :mod:`.otlp_json`: a tolerant reader of the OTLP/JSON encoding itself;
- :mod:`.model`: the records a recording reads back as;
- :mod:`.reader`: the line-by-line reader, decoding every attribute with the
  partner of the function that encoded it (:mod:`..telemetry.schema`).

:mod:`context_integrity.report` renders what it reads. Neither imports
OpenTelemetry: a recording is plain JSON, and reading one must work wherever
the package is installed.
"""

from __future__ import annotations

from ..paths import RECORDING_ENV_VAR, RECORDING_FILE_NAME, default_recording_path
from .model import FindingRecord, Recording, RunRecord, ToolCallRecord
from .reader import read_recording, read_recording_text

__all__ = [
    "RECORDING_ENV_VAR",
    "RECORDING_FILE_NAME",
    "FindingRecord",
    "Recording",
    "RunRecord",
    "ToolCallRecord",
    "default_recording_path",
    "read_recording",
    "read_recording_text",
]
