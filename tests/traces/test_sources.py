"""Where spans come from: files in every shape, Tempo's and Jaeger's HTTP APIs, an OTLP request.

The laws under test:

- One trace judged from OTLP/JSON lines, from Tempo's and Jaeger's trace JSON saved to a file, and
  from their HTTP APIs (a trace by id; a service's traces in a time range) yields the same findings.
- A backend source asks what its documentation says: Tempo ``/api/traces/<id>`` and a TraceQL
  search on the exact service name; Jaeger ``/api/traces/<id>`` and ``/api/traces?service=&start=&end=``
  in microseconds.
- A source that cannot be read raises :class:`SourceError` with one sentence saying what and what to
  do: an unknown scheme, a missing file, a directory, a FIFO, a document past the bound, a backend
  that answers 404 or is not there or answers something that is not JSON, options a file cannot take.
- ``spans_of_otlp_request`` reads an export request with protobuf JSON's base64 ids.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from tests.traces.backends import (
    jaeger_answer,
    jaeger_trace,
    serving,
    tempo_search,
    tempo_trace,
)
from tests.traces.shapes import document, triage_book, triage_trace, write_lines

from context_integrity.judge import Dials
from context_integrity.traces import SourceError, judge_runs, read_runs, spans_of_otlp_request
from context_integrity.traces.read import TraceRuns
from context_integrity.traces.sources import files as file_sources
from context_integrity.traces.sources.backends import trace_id_of

EXPECTED = {("unsupported-argument", "choice", "host_paths", "call_2")}
SINCE = datetime(2025, 6, 1, tzinfo=timezone.utc)
UNTIL = datetime(2025, 6, 2, tzinfo=timezone.utc)


def findings_of(runs: TraceRuns) -> list[set[tuple[str, str, str | None, str | None]]]:
    judged = list(judge_runs(runs, triage_book(), Dials()))
    assert runs.problems.listed == []
    return [{(f.finding.kind, f.finding.seam, f.tool_name, f.call_id) for f in j.findings} for j in judged]


def test_every_file_shape_reads_the_same_run(tmp_path: Path) -> None:
    traces = [triage_trace(), triage_trace()]
    documents = [document(t.spans) for t in traces]
    lines = write_lines(tmp_path / "collector-export.jsonl", documents)
    tempo = tmp_path / "tempo.json"
    tempo.write_text(json.dumps(tempo_trace(documents[0]), indent=2))  # saved pretty-printed
    tempo_old = tmp_path / "tempo-old.json"
    root_first = tempo_trace(documents[0], old_scope_name=True)
    for batch in root_first["batches"]:  # a backend lists a trace's spans in its own order
        for scope in batch["instrumentationLibrarySpans"]:
            scope["spans"].reverse()
    tempo_old.write_text(json.dumps(root_first))
    jaeger = tmp_path / "jaeger.json"
    jaeger.write_text(json.dumps(jaeger_answer([jaeger_trace(d) for d in documents])))
    assert findings_of(read_runs(lines)) == [EXPECTED, EXPECTED]
    assert findings_of(read_runs(tempo)) == [EXPECTED]
    assert findings_of(read_runs(tempo_old)) == [EXPECTED]
    assert findings_of(read_runs(jaeger)) == [EXPECTED, EXPECTED]


def test_tempo_by_trace_id_and_by_service(tmp_path: Path) -> None:
    traces = [triage_trace(), triage_trace()]
    for trace in traces:
        trace.spans.reverse()  # the root first: whole traces are judged when marked whole, not at their root
    by_id = {t.trace_id: tempo_trace(document(t.spans)) for t in traces}

    def route(path: str, query: dict[str, list[str]]) -> tuple[int, object]:
        if path == "/api/search":
            # Tempo lists trace ids as it prints them: 64-bit ones without their leading zeros.
            return 200, tempo_search([t.lstrip("0") for t in by_id], "agent")
        wanted = path.removeprefix("/api/traces/")
        return (200, by_id[wanted]) if wanted in by_id else (404, {"error": "trace not found"})

    with serving(route) as tempo:
        one = read_runs(f"tempo+{tempo.url}", trace_id=traces[0].trace_id)
        assert findings_of(one) == [EXPECTED]
        assert "Tempo" in one.description
        searched = read_runs(f"tempo+{tempo.url}", service='agent "a"', start=SINCE, end=UNTIL)
        assert findings_of(searched) == [EXPECTED, EXPECTED]
    search = next(query for path, query in tempo.asked if path == "/api/search")
    assert search["q"] == ['{ resource.service.name = "agent \\"a\\"" }']
    assert search["start"] == [str(int(SINCE.timestamp()))]
    assert int(search["end"][0]) >= int(UNTIL.timestamp())
    fetched = [path for path, _ in tempo.asked if path.startswith("/api/traces/")]
    assert fetched == [f"/api/traces/{t.trace_id}" for t in (traces[0], *traces)]


def test_jaeger_by_trace_id_and_by_service() -> None:
    traces = [triage_trace(), triage_trace()]
    answers = {t.trace_id: jaeger_trace(document(t.spans)) for t in traces}

    def route(path: str, query: dict[str, list[str]]) -> tuple[int, object]:
        if path == "/api/traces":
            return 200, jaeger_answer(list(answers.values()))
        wanted = path.removeprefix("/api/traces/")
        return (200, jaeger_answer([answers[wanted]])) if wanted in answers else (404, jaeger_answer([]))

    with serving(route) as jaeger:
        assert findings_of(read_runs(f"jaeger+{jaeger.url}", trace_id=traces[1].trace_id)) == [EXPECTED]
        searched = read_runs(f"jaeger+{jaeger.url}", service="agent", start=SINCE, end=UNTIL)
        assert findings_of(searched) == [EXPECTED, EXPECTED]
    search = next(query for path, query in jaeger.asked if path == "/api/traces")
    assert search["service"] == ["agent"]
    assert search["start"] == [str(int(SINCE.timestamp()) * 1_000_000)]
    assert search["end"] == [str(int(UNTIL.timestamp()) * 1_000_000)]


def _sentence(excinfo: pytest.ExceptionInfo[SourceError]) -> str:
    return str(excinfo.value)


def test_unreadable_sources_raise_one_sentence(tmp_path: Path) -> None:
    cases: list[tuple[Any, dict[str, Any], str]] = [
        ("http://localhost:3200", {}, "Say which backend"),
        ("tempo+localhost:3200", {}, "base URL"),
        (tmp_path / "absent.jsonl", {}, "There is no file"),
        (tmp_path, {}, "is a directory"),
        (tmp_path / "absent.jsonl", {"trace_id": "ab"}, "is a file"),
        ("tempo+http://127.0.0.1:9", {}, "needs a trace id"),
        ("tempo+http://127.0.0.1:9", {"trace_id": "not-hex!"}, "trace id"),
        ("jaeger+http://127.0.0.1:9", {"service": "s", "start": UNTIL, "end": SINCE}, "time range is empty"),
        ("jaeger+http://127.0.0.1:9", {"service": "s", "start": datetime(2025, 1, 1)}, "time zone"),
        ("phoenix+http://127.0.0.1:9", {"service": "s"}, "by project"),
        ("phoenix+http://127.0.0.1:9", {"project": "a/b"}, "cannot hold"),
    ]
    for source, options, said in cases:
        with pytest.raises(SourceError) as excinfo:
            read_runs(source, **options)
        assert said in _sentence(excinfo), (source, options, _sentence(excinfo))


def test_a_fifo_is_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "traces.fifo"
    os.mkfifo(fifo)
    with pytest.raises(SourceError, match="not a regular file"):
        read_runs(fifo)


def test_a_document_past_the_bound_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tempo = tmp_path / "tempo.json"
    tempo.write_text(json.dumps(tempo_trace(document(triage_trace().spans)), indent=2))
    monkeypatch.setattr(file_sources, "MAX_TRACE_DOCUMENT_BYTES", 1000)
    with pytest.raises(SourceError, match=r"one JSON document of .* above the"):
        list(read_runs(tempo))


def test_backends_that_fail_raise_one_sentence() -> None:
    def route(path: str, query: dict[str, list[str]]) -> tuple[int, object]:
        if path.endswith("404"):
            return 404, {"error": "trace not found"}
        return 200, b"<html>not an API</html>"

    with serving(route) as backend:
        with pytest.raises(SourceError, match="answered 404"):
            list(read_runs(f"tempo+{backend.url}", trace_id="0" * 29 + "404"))
        with pytest.raises(SourceError, match="did not answer JSON"):
            list(read_runs(f"jaeger+{backend.url}", trace_id="ab12"))
    with pytest.raises(SourceError, match="Could not reach Tempo"):
        list(read_runs(f"tempo+{backend.url}", trace_id="ab12"))  # the server is gone


def test_trace_ids_are_taken_as_backends_print_them() -> None:
    assert trace_id_of("D6E9329D67B6146A") == "0000000000000000d6e9329d67b6146a"
    assert trace_id_of(" 2f3e0cee77ae5dc9c17ade3689eb2e54 ") == "2f3e0cee77ae5dc9c17ade3689eb2e54"


def test_an_export_request_with_base64_ids_is_read() -> None:
    trace = triage_trace()
    request = tempo_trace(document(trace.spans))  # protobuf JSON: base64 ids, enum names
    spans = list(spans_of_otlp_request({"resourceSpans": request["batches"]}))
    assert {span.trace_id for span in spans} == {trace.trace_id}
    assert [span.span_id for span in spans] == [s["spanId"] for s in trace.spans]
    assert all(span.scope == "my-genai-instrumentation" for span in spans)
    assert spans[-1].parent_span_id is None and spans[0].parent_span_id == trace.spans[-1]["spanId"]
