"""Trace files: OTLP/JSON lines (our recording, the Collector's ``file`` exporter) and one-document
trace JSON (Tempo's and Jaeger's ``/api/traces/{id}`` saved to a file).

OTLP/JSON lines are streamed through the recording reader's line reading
(:class:`~context_integrity.recording.reader.LineDocuments`: one line in memory at a time, each
tolerance written once). A file whose first line is not an OTLP/JSON document but which starts a
JSON object is one document: it is read whole, up to
:data:`~context_integrity.limits.MAX_TRACE_DOCUMENT_BYTES` (a larger one is refused with a sentence),
converted by :mod:`context_integrity.recording.foreign`, and each of its traces marked whole.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ...limits import MAX_TRACE_DOCUMENT_BYTES
from ...recording.foreign import jaeger_to_otlp, tempo_to_otlp
from ...recording.lines import OverlongLine, open_recording, recording_lines
from ...recording.otlp_json import RESOURCE_KEYS, RESOURCE_SPANS, json_type
from ...recording.reader import LineDocuments
from ...text import clip
from .base import Say, SourceError, SourceItem, SpanSource, TraceComplete
from .otlp import spans_of_document

_MIB = 1024 * 1024
# How much of a file is looked at to tell one JSON document from OTLP/JSON lines.
_SNIFF_BYTES = 64 * 1024
_FIRST_KEY = re.compile(rb'\s*\{\s*"([^"\\]{1,64})"')


def _is_otlp(document: object) -> bool:
    return isinstance(document, dict) and any(key in document for key in RESOURCE_KEYS)


class FileSource(SpanSource):
    """A trace file on disk."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.description = str(self.path)
        try:
            info = self.path.stat()
        except FileNotFoundError:
            raise SourceError(
                f"There is no file at {self.path}. Pass a recording, an OTLP/JSON export (the "
                "Collector's file exporter), or a trace saved from Tempo's or Jaeger's /api/traces/<id>."
            ) from None
        except OSError as error:
            raise SourceError(f"{self.path} could not be read ({error.strerror or error}).") from None
        if stat.S_ISDIR(info.st_mode):
            raise SourceError(f"{self.path} is a directory; pass the trace file inside it.")
        if not stat.S_ISREG(info.st_mode):
            # A FIFO or a device has no end to wait for and no size to bound: never opened.
            raise SourceError(
                f"{self.path} is not a regular file (a pipe or a device); save the traces to a file."
            )
        self.size = info.st_size
        self._reading: Any = None
        # One trace document is whole traces in any order; OTLP/JSON lines are spans as they ended.
        with self._opened() as handle:
            self.whole_traces = _is_document(handle.read(_SNIFF_BYTES))

    def _opened(self) -> Any:
        try:
            handle = open_recording(self.path)
        except OSError as error:
            raise SourceError(f"{self.path} could not be opened ({error.strerror or error}).") from None
        return handle

    def bytes_read(self) -> int:
        """How far into the file the reading has come (for a progress bar); 0 before and after."""
        handle = self._reading
        try:
            return int(handle.tell()) if handle is not None else 0
        except (OSError, ValueError):
            return 0

    def items(self, say: Say) -> Iterator[SourceItem]:
        with self._opened() as handle:
            self._reading = handle
            try:
                if self.whole_traces:
                    document = self._whole_document(handle)
                    if document is not None:
                        yield from document_items(document, self.description, say)
                        return
                    # Not one JSON document after all: read line by line, which says what each line is.
                    handle.seek(0)
                yield from _line_items(recording_lines(handle), say)
            finally:
                self._reading = None

    def _whole_document(self, handle: Any) -> dict[str, Any] | None:
        if self.size > MAX_TRACE_DOCUMENT_BYTES:
            raise SourceError(
                f"{self.path} is one JSON document of {self.size / _MIB:.0f} MiB, above the "
                f"{MAX_TRACE_DOCUMENT_BYTES / _MIB:.0f} MiB a trace document may take (it cannot be read "
                "piece by piece). Export the trace as OTLP/JSON lines (the Collector's file exporter), "
                "which is read a line at a time."
            )
        try:
            document = json.loads(handle.read(MAX_TRACE_DOCUMENT_BYTES + 1))
        except (ValueError, RecursionError):
            return None
        return document if isinstance(document, dict) else None


def _is_document(head: bytes) -> bool:
    """Whether a file beginning ``head`` is one JSON document (its first key names no OTLP/JSON
    signal: Tempo's ``batches`` or ``trace``, Jaeger's ``data``) rather than OTLP/JSON lines. Read
    from the first key, so a line of megabytes is not parsed to find out."""
    first = _FIRST_KEY.match(head)
    return first is not None and first[1].decode("utf-8", "replace") not in RESOURCE_KEYS


def _line_items(lines: Iterable[bytes | OverlongLine], say: Say) -> Iterator[SourceItem]:
    def problem(line: int | None, text: str) -> None:
        say(f"line {line}: {text}" if line is not None else text)

    documents = LineDocuments(lines, problem)
    for number, document in documents:
        if not isinstance(document, dict):
            problem(number, f"expected a JSON object, found {json_type(document)}")
            continue
        if RESOURCE_SPANS in document:
            # The line's spans first, then the document let go: the spans are yielded to the
            # assembler and the judge, whose work would otherwise keep the parsed line alive.
            spans = list(spans_of_document(document, f"line {number}", say))
            del document
            yield from spans
        elif not _is_otlp(document):
            keys = ", ".join(clip(str(key), 40) for key in list(document)[:5]) or "none"
            problem(number, f"no {RESOURCE_SPANS} key, so it holds no OTLP/JSON spans (keys found: {keys})")
    if documents.lines == 0:
        say("the file is empty: it holds no spans")
    elif documents.data_lines == 0:
        say("the file holds only blank lines: no spans")


def document_shape(document: Mapping[str, Any]) -> str | None:
    """Which trace document ``document`` is: ``"otlp"``, ``"tempo"``, ``"jaeger"``, or ``None``."""
    if RESOURCE_SPANS in document:
        return "otlp"
    if "batches" in document or isinstance(document.get("trace"), dict):
        return "tempo"
    data = document.get("data")
    if isinstance(data, list) and all(isinstance(t, dict) and "spans" in t for t in data):
        return "jaeger"
    return None


def document_items(document: dict[str, Any], origin: str, say: Say) -> Iterator[SourceItem]:
    """The spans of one trace document, each trace marked whole after its spans."""
    shape = document_shape(document)
    if shape is None:
        keys = ", ".join(clip(str(key), 40) for key in list(document)[:5]) or "none"
        say(
            f"{origin} is a JSON document but not a trace this reader knows (OTLP/JSON, Tempo's or "
            f"Jaeger's trace JSON); keys found: {keys}"
        )
        return
    if shape == "jaeger":
        for index, trace in enumerate(document["data"]):
            yield from _converted_items(
                lambda trace=trace: jaeger_to_otlp({"data": [trace]}),
                f"{origin} (Jaeger trace {index + 1})",
                say,
            )
        return
    convert = (lambda: tempo_to_otlp(document)) if shape == "tempo" else (lambda: document)
    yield from _converted_items(convert, origin, say)


def _converted_items(convert: Any, origin: str, say: Say) -> Iterator[SourceItem]:
    try:
        converted = convert()
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as error:
        say(
            f"{origin} could not be converted to OTLP/JSON ({type(error).__name__}: {clip(str(error), 120)}); skipped"
        )
        return
    seen: dict[str, None] = {}
    for span in spans_of_document(converted, origin, say):
        seen[span.trace_id] = None
        yield span
    for trace_id in seen:
        yield TraceComplete(trace_id)
