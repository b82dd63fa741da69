"""Traces read back from a real Phoenix through its REST span API, and judged.

Phoenix runs from its own venv (.ci/system-deps). Traces written to the GenAI conventions are sent to
it as an OTLP/HTTP export request, each batch into its own project; ``read_runs("phoenix+http://...")``
reads them back, page by page, one whole trace at a time.

The laws under test:

- a project's traces read from Phoenix judge as the same traces read from a file: the same findings
  on the same spans;
- one trace can be read by its id, the others left alone; a project that holds nothing says so;
- what Phoenix changes on the way is undone: the OpenInference span kind it lifts out of the
  attributes is put back, and the attributes it stores parsed (``tool.parameters``, ``metadata``)
  read back as their JSON text;
- paging: more spans than one page holds are all read (``next_cursor``).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from tests.traces.backends import tempo_trace
from tests.traces.shapes import Trace, attributes, document, span_id, triage_book, triage_trace, write_lines

from context_integrity.judge import Dials
from context_integrity.telemetry.schema import names
from context_integrity.traces import Span, judge_runs, open_source, read_runs
from context_integrity.traces.read import TraceRuns
from context_integrity.traces.sources import phoenix as phoenix_source

from ._services import Phoenix, running_phoenix, wait_until

pytestmark = pytest.mark.live

ARRIVE_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    with running_phoenix(tmp_path_factory.mktemp("phoenix-source")) as started:
        yield started


def send(phoenix: Phoenix, project: str, traces: list[Trace]) -> None:
    """The traces as one OTLP/HTTP export request (protobuf), filed under ``project``."""
    exported = document([span for trace in traces for span in trace.spans])
    exported["resourceSpans"][0]["resource"]["attributes"] += attributes(
        {"openinference.project.name": project}
    )
    request = ParseDict({"resourceSpans": tempo_trace(exported)["batches"]}, ExportTraceServiceRequest())
    posted = urllib.request.Request(
        f"{phoenix.base_url}/v1/traces",
        data=request.SerializeToString(),
        headers={"Content-Type": "application/x-protobuf"},
        method="POST",
    )
    with urllib.request.urlopen(posted, timeout=30) as answer:
        assert answer.status == 200
    expected = sum(len(t.spans) for t in traces)

    def arrived() -> bool:
        url = f"{phoenix.base_url}/v1/projects/{project}/spans?limit=1000"
        try:
            with urllib.request.urlopen(url, timeout=10) as page:
                return len(json.loads(page.read())["data"]) >= expected
        except OSError:
            return False

    wait_until(
        arrived,
        timeout_s=ARRIVE_TIMEOUT_S,
        what=f"{expected} spans in {project}",
        log=phoenix.service.log_tail(),
    )


def judged(runs: TraceRuns) -> list[set[tuple[str, str, str | None, str]]]:
    out: list[set[tuple[str, str, str | None, str]]] = [
        {(f.finding.kind, f.finding.seam, f.tool_name, f.span_id) for f in run.findings}
        for run in judge_runs(runs, triage_book(), Dials())
    ]
    assert runs.problems.listed == []
    return out


def test_a_project_read_from_phoenix_judges_as_the_file_does(phoenix: Phoenix, tmp_path: Path) -> None:
    traces = [triage_trace(), triage_trace()]
    send(phoenix, "judged", traces)
    from_file = judged(read_runs(write_lines(tmp_path / "t.jsonl", [document(t.spans) for t in traces])))
    from_phoenix = judged(read_runs(f"phoenix+{phoenix.base_url}", project="judged"))
    assert sorted(map(sorted, from_phoenix)) == sorted(map(sorted, from_file))
    assert all(findings for findings in from_phoenix)
    one = read_runs(f"phoenix+{phoenix.base_url}", project="judged", trace_id=traces[1].trace_id)
    assert judged(one) == [from_file[1]]


def test_what_phoenix_changes_on_the_way_is_undone(phoenix: Phoenix) -> None:
    trace = Trace()
    parameters = {"type": "object", "properties": {"host": {"type": "string"}}, "required": ["host"]}
    trace.span(
        "host_paths",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "host_paths",
            "tool.parameters": json.dumps(parameters),
            "metadata": json.dumps({"team": "storage"}),
            names.GEN_AI_OPERATION_NAME: names.OPERATION_EXECUTE_TOOL,
        },
        parent=None,
    )
    send(phoenix, "undone", [trace])
    source = open_source(f"phoenix+{phoenix.base_url}", project="undone")
    (span,) = [item for item in source.items(lambda text: None) if isinstance(item, Span)]
    assert span.attributes["openinference.span.kind"] == "TOOL"
    assert json.loads(str(span.attributes["tool.parameters"])) == parameters
    assert json.loads(str(span.attributes["metadata"])) == {"team": "storage"}


def test_every_page_is_read(phoenix: Phoenix, monkeypatch: pytest.MonkeyPatch) -> None:
    traces = [triage_trace() for _ in range(3)]
    send(phoenix, "paged", traces)
    monkeypatch.setattr(phoenix_source, "PHOENIX_PAGE_SPANS", 2)  # a trace of 6 spans takes 3 pages
    runs = read_runs(f"phoenix+{phoenix.base_url}", project="paged")
    assert len(judged(runs)) == 3
    assert runs.spans == sum(len(t.spans) for t in traces)


def test_an_empty_project_says_it_holds_nothing(phoenix: Phoenix) -> None:
    trace = Trace()
    trace.span("unrelated", {"http.method": "GET"}, parent=None, span=span_id())
    send(phoenix, "nothing-agentic", [trace])
    runs = read_runs(f"phoenix+{phoenix.base_url}", project="nothing-agentic")
    assert list(runs) == []
    assert any("no span is in a dialect this reader knows" in p for p in runs.problems.listed)
