"""Findings posted as Phoenix span annotations, against a local HTTP endpoint speaking Phoenix's shape.

The laws under test (the real Phoenix round trip is in tests/live/test_phoenix.py):
(a) ``setup(phoenix_annotations=url)`` posts every finding of a span to ``/v1/span_annotations``:
    annotator kind CODE, label = kind, explanation = message, score 0.0, the span's id, the
    evaluator's provenance in metadata, and an identifier per finding (two findings of one kind on
    one span stay two annotations);
(b) the findings of many spans exported together go in one POST;
(c) Phoenix down or refusing never reaches the agent: the tool's result is unchanged, nothing raises;
(d) a value that is not a URL is refused at setup, naming the option.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export import SpanExportResult
from tests.conftest import Telemetry
from tests.fake_phoenix import FakePhoenix, serve

import context_integrity as ci
from context_integrity.telemetry.export.phoenix import (
    ANNOTATIONS_PATH,
    ANNOTATOR_KIND,
    PhoenixAnnotationExporter,
)
from context_integrity.telemetry.schema import names
from context_integrity.telemetry.setup import VERSION


@pytest.fixture
def phoenix() -> Iterator[FakePhoenix]:
    yield from serve(200)


@pytest.fixture
def refusing_phoenix() -> Iterator[FakePhoenix]:
    yield from serve(500)


ROWS = [{"size_gb": "12", "lun": ""}]


def _agent() -> list[object]:
    @ci.tool(result_columns={"size_gb": "number", "lun": "number"})
    def disks() -> list[dict[str, str]]:
        return ROWS

    @ci.tool(result_columns={"size_gb": "number"})
    def volumes() -> list[dict[str, str]]:
        return [{"size_gb": "7"}]

    with ci.run("q", agent_name="annotated"):
        return [disks(), volumes()]


def test_each_finding_is_one_code_annotation_on_its_span(telemetry: Telemetry, phoenix: FakePhoenix) -> None:
    telemetry.configure(check_column_types="warn", phoenix_annotations=phoenix.url)
    _agent()
    assert ci.flush()

    assert {path for path, _ in phoenix.posts} == {ANNOTATIONS_PATH}
    annotations = [a for _, data in phoenix.posts for a in data]
    spans = {format(s.context.span_id, "016x"): s for s in telemetry.finished()}
    expected = [
        (format(span.context.span_id, "016x"), dict(event.attributes or {}))
        for span in telemetry.finished()
        for event in span.events
        if event.name == names.FINDING_EVENT
    ]
    assert len(expected) == 3 and len(annotations) == 3
    by_key = {(a["span_id"], a["result"]["explanation"]): a for a in annotations}
    for span_id, finding in expected:
        annotation = by_key[(span_id, finding[names.FINDING_MESSAGE])]
        assert spans[span_id].name.startswith(names.OPERATION_EXECUTE_TOOL)
        assert annotation["name"] == names.PHOENIX_ANNOTATION_NAME
        assert annotation["annotator_kind"] == ANNOTATOR_KIND
        assert annotation["result"]["label"] == finding[names.FINDING_KIND]
        assert annotation["result"]["score"] == names.EVALUATION_SCORE_FAIL
        assert annotation["metadata"][names.EVALUATOR_VERSION] == VERSION
        assert annotation["metadata"][names.EVALUATOR_RULE_VERSION] == finding[names.EVALUATOR_RULE_VERSION]
    # The disks span carries two findings of one kind: two identifiers, so Phoenix keeps both.
    disks_span = next(i for i, s in spans.items() if s.name == names.tool_span_name("disks"))
    on_disks = [a for a in annotations if a["span_id"] == disks_span]
    assert len(on_disks) == 2 and len({a["identifier"] for a in on_disks}) == 2
    assert len({a["identifier"] for a in annotations}) == 3


def test_the_findings_of_many_spans_go_in_one_post(telemetry: Telemetry, phoenix: FakePhoenix) -> None:
    telemetry.configure(check_column_types="warn")
    _agent()
    exporter = PhoenixAnnotationExporter(phoenix.url)
    assert exporter.export(telemetry.finished()) is SpanExportResult.SUCCESS
    (post,) = phoenix.posts
    assert len(post[1]) == 3 and len({a["span_id"] for a in post[1]}) == 2
    assert exporter.posted == 3


def test_a_refusing_phoenix_never_reaches_the_agent(
    telemetry: Telemetry, refusing_phoenix: FakePhoenix
) -> None:
    telemetry.configure(check_column_types="warn", phoenix_annotations=refusing_phoenix.url)
    assert _agent() == [ROWS, [{"size_gb": "7"}]]
    ci.flush()
    assert refusing_phoenix.posts, "the annotations were never attempted"


def test_an_unreachable_phoenix_never_reaches_the_agent(telemetry: Telemetry) -> None:
    with FakePhoenix(200) as closed:
        url = closed.url  # bound, then closed: nothing listens there
    telemetry.configure(check_column_types="warn", phoenix_annotations=url)
    assert _agent() == [ROWS, [{"size_gb": "7"}]]
    ci.flush()


def test_a_phoenix_option_that_is_not_a_url_is_refused(telemetry: Telemetry) -> None:
    with pytest.raises(ci.SetupError, match="phoenix_annotations must be Phoenix's base URL"):
        telemetry.configure(phoenix_annotations="localhost:6006")
