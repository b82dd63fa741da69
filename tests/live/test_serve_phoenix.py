"""``context-integrity serve`` in front of a real trace backend (Arize Phoenix): the findings it writes
in flight arrive on the spans, and show in Phoenix's UI.

A pydantic-ai agent instrumented only by pydantic-ai (no ``ci.setup`` in it) exports over OTLP/gRPC
with the SDK's exporter to the stage, which forwards over OTLP/HTTP to Phoenix; the spans are read
back through Phoenix's REST API and looked at in headless Chromium.

The laws under test:

- every span of the agent's trace arrives in Phoenix, with the stage's summary span under the run span;
- the tool's span carries the ``context_integrity.finding`` event the stage wrote (kind, seam, the
  column, every witness attribute) and the span-level findings count;
- in Phoenix's UI, that span's Events tab shows the finding and its witness value; the screenshot is
  kept as a test artifact.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.serve._agent import TOOL, book, run_agent

from context_integrity.judge import Dials
from context_integrity.serve.forward import target_of
from context_integrity.serve.hold import HoldLimits
from context_integrity.serve.judging import TraceJudge
from context_integrity.serve.server import Server
from context_integrity.telemetry.schema import names

from ._services import ARTIFACTS, Phoenix, finding_event_in_phoenix_ui, http_json, running_phoenix, wait_until

pytestmark = pytest.mark.live

PROJECT = "ci-serve"
ARRIVE_TIMEOUT_S = 60
SCREENSHOT = ARTIFACTS / "phoenix-serve-finding.png"


@dataclass(frozen=True)
class Delivered:
    phoenix: Phoenix
    spans: dict[str, dict[str, Any]]  # by name


@pytest.fixture(scope="module")
def delivered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Delivered]:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    with running_phoenix(tmp_path_factory.mktemp("phoenix-serve")) as phoenix:
        server = Server(
            TraceJudge(book(), Dials(check_column_types="warn")),
            target_of(f"{phoenix.base_url}/v1/traces"),
            grpc=("127.0.0.1", 0),
            http=None,
            limits=HoldLimits(quiet_seconds=0.2, max_wait_seconds=10.0),
        )
        server.start()
        try:
            run_agent(
                OTLPSpanExporter(endpoint=f"http://{server.addresses()['grpc']}", insecure=True),
                **{"openinference.project.name": PROJECT},
            )

            def arrived() -> dict[str, dict[str, Any]] | None:
                url = f"{phoenix.base_url}/v1/projects/{PROJECT}/spans?limit=100"
                spans = {span["name"]: span for span in http_json(url)["data"]}
                return spans if names.DISPOSITION_SPAN in spans else None

            spans = wait_until(
                arrived,
                timeout_s=ARRIVE_TIMEOUT_S,
                what="the judged trace in Phoenix",
                log=phoenix.service.log_tail(),
            )
        finally:
            server.stop(bound_seconds=10)
        yield Delivered(phoenix, spans)


def _findings(span: dict[str, Any]) -> list[dict[str, Any]]:
    return [e["attributes"] for e in span.get("events", []) if e["name"] == names.FINDING_EVENT]


def test_the_whole_trace_arrives_with_the_summary_under_the_run_span(delivered: Delivered) -> None:
    spans = delivered.spans
    run = next(span for name, span in spans.items() if name.startswith(names.OPERATION_INVOKE_AGENT))
    assert names.tool_span_name(TOOL) in spans
    assert sum(name.startswith(names.OPERATION_CHAT) for name in spans) == 1  # one name, two calls
    assert {span["context"]["trace_id"] for span in spans.values()} == {run["context"]["trace_id"]}
    summary = spans[names.DISPOSITION_SPAN]
    assert summary["parent_id"] == run["context"]["span_id"]
    assert summary["attributes"][names.totals_attribute("findings")] == 1


def test_the_tool_span_carries_the_finding_the_stage_wrote(delivered: Delivered) -> None:
    span = delivered.spans[names.tool_span_name(TOOL)]
    (finding,) = _findings(span)
    assert finding[names.FINDING_KIND] == "column-type-mismatch"
    assert finding[names.FINDING_SEAM] == "write"
    assert finding[names.FINDING_PREDICATE] == "logical_unit_number"
    for index in range(finding[names.FINDING_WITNESS_COUNT]):
        for field in names.WITNESS_FIELDS:
            if field != "epoch":
                assert names.witness_attribute(index, field) in finding, (index, field)
    assert span["attributes"][names.FINDINGS_COUNT] == 1


def test_phoenix_ui_shows_the_finding_the_stage_wrote(delivered: Delivered) -> None:
    span = delivered.spans[names.tool_span_name(TOOL)]
    (finding,) = _findings(span)
    witness_key = names.witness_attribute(0, "value")
    witness_value = str(finding[witness_key])
    body = finding_event_in_phoenix_ui(
        delivered.phoenix.base_url, span["context"]["span_id"], witness_key, witness_value, SCREENSHOT
    )
    assert names.FINDING_EVENT in body
    assert witness_key in body and witness_value in body
    assert "column-type-mismatch" in body
    assert Path(SCREENSHOT).stat().st_size > 10_000
