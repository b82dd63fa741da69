"""Property: no value in any position of a recording makes a reader raise (issue 38, part 3).

A recording line of each shape the readers meet (our spans, metrics and log records; Tempo's and
Jaeger's trace documents) has one to three of its positions, any of them, replaced by a hostile
value (the wrong type, an absurd number, a deep nesting, control characters). Every reader reads
it: ``report`` and ``report -v`` (the stream), the HTML page, and ``find_context_errors`` from a
file (which detects the shape). None raises, ``find_context_errors`` answers from what it read
(never its last-resort "could not read"), and every piece the reader could not take is a problem
it names, never its catch-all.
"""

from __future__ import annotations

import copy
import io
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.otlp_documents import TRACE_ID, jaeger, recording

from context_integrity.recording import RecordingStream
from context_integrity.recording.reader import UNREADABLE
from context_integrity.report import write_report
from context_integrity.report.find import find_context_errors
from context_integrity.report.html import format_html
from context_integrity.telemetry.schema import names


def _metrics() -> dict[str, Any]:
    point = {
        "attributes": [{"key": names.METRIC_KIND, "value": {"stringValue": "empty-lookup"}}],
        "startTimeUnixNano": "1",
        "timeUnixNano": "2",
        "asInt": "3",
    }
    metric = {"name": names.FINDINGS_METRIC, "sum": {"aggregationTemporality": 2, "dataPoints": [point]}}
    return {
        "resourceMetrics": [
            {"resource": {"attributes": []}, "scopeMetrics": [{"scope": {"name": "s"}, "metrics": [metric]}]}
        ]
    }


def _logs() -> dict[str, Any]:
    record = {
        "attributes": [
            {"key": names.RECORDING_DROPPED_SPANS, "value": {"intValue": "2"}},
            {
                "key": names.RECORDING_DROPPED_TRACES,
                "value": {"arrayValue": {"values": [{"stringValue": TRACE_ID}]}},
            },
        ]
    }
    return {"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}


def _tempo() -> dict[str, Any]:
    batch = recording()["resourceSpans"][0]
    return {"batches": [batch]}


BASES: dict[str, dict[str, Any]] = {
    "spans": recording(),
    "metrics": _metrics(),
    "logs": _logs(),
    "jaeger": jaeger(),
    "tempo": _tempo(),
}


def _positions(node: object, path: tuple[object, ...] = ()) -> Iterator[tuple[object, ...]]:
    """Every position in a document: each key's value, each list's item."""
    if path:
        yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _positions(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _positions(value, (*path, index))


POSITIONS: dict[str, list[tuple[object, ...]]] = {name: list(_positions(doc)) for name, doc in BASES.items()}


def _nested(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth):
        value = [value]
    return value


HOSTILE_VALUES = st.one_of(
    st.sampled_from(
        [
            None,
            True,
            0,
            -1,
            2**63,
            2**64,
            10**30,
            1e30,
            -1e30,
            1.5,
            float("nan"),
            float("inf"),
            "",
            "-5",
            "abc",
            "9" * 5000,
            "\u2028\u2029\x85",
            "\x1b]0;title\x07",
            "\ud800",
            {"a": 1},
            {"stringValue": {"a": 1}},
            {"intValue": "9" * 30},
            {"arrayValue": {"values": 7}},
            {"kvlistValue": {"values": [{"key": 1}]}},
            [1, 2],
            [],
            [{"key": "k"}],
            _nested(60),
        ]
    ),
    st.text(max_size=20),
    st.integers(),
)


def _mutated(doc: dict[str, Any], path: tuple[object, ...], value: object) -> None:
    node: Any = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value


_DIR = Path(tempfile.mkdtemp(prefix="reader-fuzz-"))


def _read_everything(text: str) -> None:
    lines = [text]
    for details in (False, True):
        stream = RecordingStream(lines, details=details)
        write_report(stream, io.StringIO(), verbose=details)
        caught = [p for p in stream.rest.problems if UNREADABLE + " (" in p]
        assert caught == [], caught
    page = format_html(RecordingStream(lines))
    assert page.endswith("</html>\n")
    path = _DIR / "fuzz.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    answer = find_context_errors(path)
    assert "could not read the trace" not in answer, answer


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), shape=st.sampled_from(sorted(BASES)))
def test_no_value_in_any_position_makes_a_reader_raise(data: st.DataObject, shape: str) -> None:
    doc = json.loads(json.dumps(BASES[shape]))
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        positions = list(_positions(doc))
        if not positions:
            break
        path = data.draw(st.sampled_from(positions), label="position")
        # A copy: a later mutation may land inside this value, which must stay as the strategy holds it.
        _mutated(doc, path, copy.deepcopy(data.draw(HOSTILE_VALUES, label="value")))
    _read_everything(json.dumps(doc, ensure_ascii=False) + "\n")


@settings(max_examples=200, deadline=None)
@given(shape=st.sampled_from(sorted(BASES)), cut=st.integers(0, 4000), junk=st.binary(max_size=40))
def test_a_line_cut_anywhere_or_spliced_with_garbage_reads(shape: str, cut: int, junk: bytes) -> None:
    text = json.dumps(BASES[shape], ensure_ascii=False)
    cut %= len(text) + 1
    _read_everything(text[:cut] + junk.decode("utf-8", "replace") + text[cut:] + "\n")
