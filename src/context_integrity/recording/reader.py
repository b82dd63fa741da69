"""Reads a recording back: OTLP/JSON lines into runs, findings and ledgers.

Every attribute is decoded by the partner of the function that encoded it
(:mod:`context_integrity.telemetry.schema`), and every name comes from
:mod:`context_integrity.telemetry.schema.names`, so the writer and the reader cannot
drift apart silently.

The file is opened and cut into lines by :mod:`.lines` (a regular file only; lines end at ``\n``
only; a line past the bound is skipped, never held) and never held: each line is parsed, what the
report needs is taken from it, and the rest is let go. :class:`RecordingStream`
hands each run out as soon as it is whole, so its memory follows the runs still
in flight; :func:`read_recording` collects every run (for callers that want the
whole :class:`Recording`). Nothing is dropped silently: a line or span that
cannot be read becomes an entry in :attr:`Recording.problems` naming the line. Nothing a line
holds makes the reader raise: a piece of the wrong type is a problem, counted like the others.
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Final

from ..limits import MAX_LISTED_PROBLEMS, MAX_OPEN_TRACES_READ, MAX_RECORDING_LINE_BYTES
from ..paths import rotated_path
from ..telemetry import schema
from ..telemetry.schema import names
from ..text import clip
from .assembly import Assembler
from .lines import OverlongLine, open_recording, recording_lines
from .metrics import FindingCounter
from .model import Recording, RunRecord
from .otlp_json import (
    RESOURCE_KEYS,
    RESOURCE_LOGS,
    RESOURCE_METRICS,
    RESOURCE_SPANS,
    Malformed,
    as_list,
    as_object,
    attributes,
    json_type,
)
from .spans import Summary, read_span

_DROPPED_KEYS: Final = frozenset({names.RECORDING_DROPPED_SPANS, names.RECORDING_DROPPED_TRACES})


_RECORD_START: Final = '{"resource'
# What a problem says of a piece the reader met in a shape no rule of its own names (its last net).
UNREADABLE: Final = "could not be read"
_MAX_RESYNC_TRIES: Final = 4


def _after_a_torn_record(text: str) -> tuple[object | None, int]:
    """A line that is not JSON may be a torn record (a writer cut off part-way) followed by a whole
    one, from before writers ended torn lines: the document that starts at a later record start,
    and where it starts; ``(None, 0)`` when there is none."""
    start = 0
    for _ in range(_MAX_RESYNC_TRIES):
        start = text.find(_RECORD_START, start + 1)
        if start < 0:
            break
        try:
            return json.loads(text[start:]), start
        except (ValueError, RecursionError):  # not JSON, nested too deeply, a number past 4300 digits
            continue
    return None, 0


def parse_json(text: str) -> object:
    """``json.loads`` with the cyclic collector paused (when it ran): a parsed document holds no
    cycles, yet while a line of megabytes is being built every object it allocates counts toward the
    collector's thresholds, so collection after collection walks the half-built document for
    nothing. The pause covers the parse alone, never a moment the caller's code runs."""
    if not gc.isenabled():
        return json.loads(text)
    gc.disable()
    try:
        return json.loads(text)
    finally:
        gc.enable()


def _terminated(text: str | bytes | OverlongLine) -> bool:
    if isinstance(text, OverlongLine):
        return text.terminated
    return text.endswith("\n") if isinstance(text, str) else text.endswith(b"\n")


class RecordingStream:
    """A recording read as it goes: iterating yields each run as soon as it is whole.

    After the iteration ends, :attr:`rest` holds everything else the recording
    said (calls outside any run, the findings counter, problems, counts), with
    ``runs`` empty. The file is opened when the iteration starts (a missing one
    raises :class:`FileNotFoundError` whose message says how one comes to
    exist) and closed when it ends.

    A run is whole once its span and its ``context_integrity.disposition``
    summary have both been read; runs that never get a summary come out at the
    end, in start order. ``details=False`` keeps of each finding only what the
    plain report prints.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | Iterable[str] | Iterable[bytes],
        *,
        details: bool = True,
        hold: bool = False,
    ) -> None:
        self._source = source
        self._details = details
        self._hold = hold
        self.rest = Recording()
        if isinstance(source, (str, os.PathLike)):
            location = Path(source)
            open_recording(source).close()  # a missing file or a FIFO is said now, not part-way through
            self.rest.source = str(location)
            older = rotated_path(location)
            if older.is_file():
                self.rest.rotated = str(older)

    def __iter__(self) -> Iterator[RunRecord]:
        source = self._source
        if isinstance(source, (str, os.PathLike)):
            handle = open_recording(source)
            with handle:
                yield from _Reader(self.rest, details=self._details, hold=self._hold).read(
                    recording_lines(handle)
                )
        else:
            yield from _Reader(self.rest, details=self._details, hold=self._hold).read(source)


def read_recording(path: str | os.PathLike[str]) -> Recording:
    """Read a whole recording file. A missing file raises :class:`FileNotFoundError`
    whose message says what the file is and how one comes to exist.

    Runs are in start order, and the order of the lines never changes the result.
    """
    stream = RecordingStream(path, hold=True)
    runs = list(stream)
    stream.rest.runs = runs
    return stream.rest


def read_recording_text(lines: Iterable[str]) -> Recording:
    """Read a recording from lines of text (with or without their newlines)."""
    stream = RecordingStream(lines, hold=True)
    runs = list(stream)
    stream.rest.runs = runs
    return stream.rest


Problem = Callable[[int | None, str], None]


class LineDocuments:
    """The JSON documents of OTLP/JSON lines, each with its line number, read one line at a time.

    A line that cannot be read (not UTF-8, not JSON, cut short by an interrupted writer) is said
    through ``problem`` naming its line, and skipped; a torn record followed by a whole one on the
    same line yields the whole one. After the iteration, :attr:`lines` counts every line and
    :attr:`data_lines` those that were not blank. Every reader of OTLP/JSON lines goes through here,
    so each tolerance is written once.
    """

    def __init__(self, lines: Iterable[str | bytes | OverlongLine], problem: Problem) -> None:
        self._lines = lines
        self._problem = problem
        self.lines = 0
        self.data_lines = 0

    def __iter__(self) -> Iterator[tuple[int, object]]:
        number = 0
        text: str | bytes | OverlongLine
        pending: str | bytes | OverlongLine | None = None
        saw_terminated_line = False
        # One line of look-ahead: only the last line can be "truncated".
        for number, text in enumerate(self._lines, start=1):
            if pending is not None:
                yield from self._line(number - 1, pending, last=False, earlier=saw_terminated_line)
                saw_terminated_line = saw_terminated_line or _terminated(pending)
            pending = text
        if pending is not None:
            yield from self._line(number, pending, last=True, earlier=saw_terminated_line)
        self.lines = number

    def _line(
        self, number: int, raw: str | bytes | OverlongLine, *, last: bool, earlier: bool
    ) -> Iterator[tuple[int, object]]:
        if isinstance(raw, OverlongLine):
            self.data_lines += 1
            self._problem(
                number,
                f"{raw.size} bytes long, past the {MAX_RECORDING_LINE_BYTES} a recording line is read "
                "at (limits.MAX_RECORDING_LINE_BYTES): skipped without being read"
                + ("" if raw.terminated else "; the file ends part-way through it"),
            )
            return
        if not raw or raw.isspace():  # never strip(): that copies a line of megabytes
            return
        self.data_lines += 1
        if isinstance(raw, bytes):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                self._problem(number, f"not UTF-8 ({error.reason} at byte {error.start})")
                return
        else:
            text = raw
        try:
            document = parse_json(text)
        except json.JSONDecodeError as error:
            document, torn = _after_a_torn_record(text)
            if document is not None:
                self._problem(
                    number,
                    f"a torn record ({torn} characters: a writer was cut off part-way through its line) "
                    "was skipped; the record after it on the same line was read",
                )
                yield number, document
                return
            if last and not text.endswith("\n") and earlier:
                self._problem(
                    number,
                    f"truncated: the file ends part-way through this line, so it was skipped "
                    f"(a writer was interrupted or is still writing; {error.msg} at column {error.colno})",
                )
            else:
                self._problem(number, f"not JSON ({error.msg} at column {error.colno})")
            return
        except RecursionError:
            self._problem(number, "not readable JSON (nested too deeply)")
            return
        except ValueError as error:  # a number of more than 4300 digits, which Python will not parse
            self._problem(number, f"not readable JSON ({clip(str(error), 120)})")
            return
        # Handed over, not kept: while the caller works through the document, this suspended frame
        # holds no reference to it, so a caller that lets it go early frees it there and then (a
        # line's document is tens of thousands of objects; kept alive through the work on its spans,
        # the cyclic collector's older generations would walk it again and again).
        handed = [document]
        del document
        yield number, handed.pop()


class _Reader:
    """Feeds each line's spans to the assembler, and keeps the rest of what the lines say."""

    def __init__(self, recording: Recording, *, details: bool, hold: bool) -> None:
        self.recording = recording
        self._details = details
        self._assembler = Assembler(self.problem, hold=hold, max_open_traces=MAX_OPEN_TRACES_READ)
        self._counter = FindingCounter()

    def problem(self, line: int | None, text: str) -> None:
        recording = self.recording
        if len(recording.problems) < MAX_LISTED_PROBLEMS:
            recording.problems.append(f"line {line}: {text}" if line is not None else text)
        else:
            recording.unlisted_problems += 1

    def read(self, lines: Iterable[str | bytes | OverlongLine]) -> Iterator[RunRecord]:
        documents = LineDocuments(lines, self.problem)
        for number, document in documents:
            yield from self._document(number, document)
            # Let go before the next line is parsed: held by this loop, one line's document (tens of
            # thousands of objects) stayed alive beside the next one's, and the peak doubled.
            del document
        yield from self._finish(documents.lines, documents.data_lines)

    def _document(self, number: int, document: object) -> Iterator[RunRecord]:
        if type(document) is not dict:
            self.problem(number, f"expected a JSON object, found {json_type(document)}")
            return
        present = [key for key in RESOURCE_KEYS if key in document]
        if not present:
            keys = ", ".join(clip(str(key), 40) for key in list(document)[:5]) or "none"
            self.problem(
                number,
                f"no {', '.join(RESOURCE_KEYS[:-1])} or {RESOURCE_KEYS[-1]} key, so it is not OTLP/JSON "
                f"(keys found: {keys})",
            )
            return
        for key in present:
            try:
                if key == RESOURCE_SPANS:
                    yield from self._spans(number, document[key])
                elif key == RESOURCE_METRICS:
                    self._counter.line(document[key], lambda text: self.problem(number, text))
                else:
                    self._logs(number, document[key])
            except Malformed as error:
                self.problem(number, f"{key}: {error}")
            except RecursionError:
                self.problem(number, f"{key}: nested too deeply to read")
            except Exception as error:  # the last net: a line of garbage is a problem, never a crash
                self.problem(
                    number, f"{key}: {UNREADABLE} ({type(error).__name__}); the rest of the line was skipped"
                )

    def _spans(self, number: int, resource_spans: object) -> Iterator[RunRecord]:
        def problem(text: str) -> None:
            self.problem(number, text)

        assembler = self._assembler
        details = self._details
        recording = self.recording
        for resource_entry in as_list(resource_spans, RESOURCE_SPANS):
            resource = as_object(resource_entry, "a resourceSpans entry")
            for scope_entry in as_list(resource.get("scopeSpans"), "scopeSpans"):
                scope = as_object(scope_entry, "a scopeSpans entry")
                spans = as_list(scope.get("spans"), "spans")
                recording.spans += len(spans)
                for span in spans:
                    try:
                        read = read_span(
                            number,
                            span if type(span) is dict else as_object(span, "a span"),
                            problem,
                            details=details,
                        )
                    except (Malformed, RecursionError, ValueError, TypeError, OverflowError) as error:
                        name = span.get("name") if type(span) is dict else None
                        label = f"span {clip(name, 60)!r}" if isinstance(name, str) else "a span"
                        said = (
                            error
                            if isinstance(error, Malformed)
                            else f"{UNREADABLE} ({type(error).__name__})"
                        )
                        self.problem(number, f"{label} skipped: {said}")
                        continue
                    if not assembler.add(number, read):
                        name = span.get("name") if type(span) is dict else None
                        self.problem(
                            number,
                            f"span {clip(str(name), 60)!r} ({read.span_id}) was already read; "
                            "this copy was ignored",
                        )
                    elif type(read) is RunRecord or type(read) is Summary:
                        # A run can only become whole when its span or its summary arrives: hand it
                        # out at once, so what it holds dies young instead of waiting for the line.
                        yield from assembler.completed(read.trace_id)

    def _logs(self, number: int, resource_logs: object) -> None:
        recording = self.recording
        for resource_entry in as_list(resource_logs, RESOURCE_LOGS):
            resource = as_object(resource_entry, "a resourceLogs entry")
            for scope_entry in as_list(resource.get("scopeLogs"), "scopeLogs"):
                scope = as_object(scope_entry, "a scopeLogs entry")
                records = as_list(scope.get("logRecords"), "logRecords")
                recording.log_records += len(records)
                for record in records:
                    node = record.get("attributes") if type(record) is dict else None
                    if not node:
                        continue
                    dropped = schema.decode_dropped(attributes(node, keep=_DROPPED_KEYS))
                    if dropped is None:
                        continue
                    count, traces = dropped
                    recording.dropped_spans += count
                    for trace_id in traces:
                        if (
                            len(recording.dropped_traces) < MAX_LISTED_PROBLEMS
                            and trace_id not in recording.dropped_traces
                        ):
                            recording.dropped_traces.append(trace_id)
                    self.problem(
                        number,
                        f"the recording says {count} span(s) could not be kept in it (its writer fell "
                        f"behind); the runs of trace(s) {', '.join(traces[:5]) or 'unknown'}"
                        f"{', ...' if len(traces) > 5 else ''} are incomplete",
                    )

    def _finish(self, total_lines: int, data_lines: int) -> Iterator[RunRecord]:
        recording = self.recording
        recording.lines = total_lines
        if data_lines == 0:
            self.problem(
                None,
                "the recording is empty: nothing has been exported to it yet"
                if total_lines == 0
                else "the recording holds only blank lines: nothing has been exported to it yet",
            )
        yield from self._assembler.finish()
        recording.loose_calls = self._assembler.loose_calls
        recording.finding_counts = self._counter.counts()
        recording.metric_points = self._counter.points
