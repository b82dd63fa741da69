"""The demo's findings arrive intact in a real OTLP trace backend (Arize Phoenix), and show in its UI.

Phoenix runs from its own virtual environment (.ci/system-deps), on free loopback ports with its
own working directory. ``context-integrity demo`` runs as a subprocess configured only through the
standard ``OTEL_*`` environment, once over OTLP/HTTP and once over OTLP/gRPC, each into its own
Phoenix project; the spans are read back through Phoenix's REST API.

The laws under test:

- over either protocol, each demo run arrives as one trace: the run span, one ``execute_tool``
  span per scripted tool call and the ``context_integrity.disposition`` summary under the run;
- the ``host_group_mappings`` span carries a ``context_integrity.finding`` event of kind
  ``column-type-mismatch`` with every witness attribute of every witness, the LUN ``''`` among
  the witness values, and the span-level findings count;
- the quoted-numbers tool carries column-type-mismatch findings too; the ``0.0 GB`` disk tool
  carries none (its result is well typed, which is all this check can see);
- the summary span carries one row per registered check (its per-row attributes), naming each
  (check, seam) once;
- in Phoenix's UI (headless Chromium), the tool span's Events tab shows the finding event with
  its witness values; the screenshot is kept as a test artifact.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from context_integrity import demo
from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.telemetry import schema
from context_integrity.telemetry.schema import names

from ._services import (
    ARTIFACTS,
    Phoenix,
    finding_event_in_phoenix_ui,
    http_json,
    library_env,
    phoenix_span_page,
    run_demo,
    running_phoenix,
    wait_until,
)

pytestmark = pytest.mark.live

SPANS_ARRIVE_TIMEOUT_S = 60
DEMO_MODES = ("warn", "enforce")  # `context-integrity demo` runs both, in this order
SPANS_PER_RUN = 1 + len(demo.SCRIPT) + 1  # the run, each tool call, the summary
COLUMN_TYPE_MISMATCH = "column-type-mismatch"
MAPPINGS_TOOL = demo.host_group_mappings.__name__
QUOTED_NUMBERS_TOOL = demo.port_counters.__name__
ZERO_GB_TOOL = demo.vm_disk_capacity.__name__


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    with running_phoenix(tmp_path_factory.mktemp("phoenix")) as started:
        yield started


@dataclass(frozen=True)
class Delivered:
    protocol: str
    project: str
    spans: list[dict[str, Any]]
    demo_stdout: str

    def run_trace_id(self, mode: str) -> str:
        """The trace id the demo printed for its run in ``mode``."""
        match = re.search(rf"run in '{mode}' mode \(trace ([0-9a-f]{{32}})\)", self.demo_stdout)
        assert match, self.demo_stdout
        return match[1]

    def traces(self) -> dict[str, list[dict[str, Any]]]:
        by_trace: dict[str, list[dict[str, Any]]] = {}
        for span in self.spans:
            by_trace.setdefault(span["context"]["trace_id"], []).append(span)
        return by_trace


def _project_spans(phoenix: Phoenix, project: str) -> list[dict[str, Any]]:
    return list(http_json(f"{phoenix.base_url}/v1/projects/{project}/spans?limit=1000")["data"])


@pytest.fixture(scope="module", params=["http/protobuf", "grpc"])
def delivered(phoenix: Phoenix, request: pytest.FixtureRequest) -> Delivered:
    protocol: str = request.param
    project = "ci-demo-" + re.sub(r"\W", "-", protocol)
    endpoint = phoenix.base_url if protocol == "http/protobuf" else f"http://127.0.0.1:{phoenix.grpc_port}"
    result = run_demo(
        library_env(
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
            OTEL_SERVICE_NAME="context-integrity-demo",
            # Phoenix files spans under the project this resource attribute names.
            OTEL_RESOURCE_ATTRIBUTES=f"openinference.project.name={project}",
            # Phoenix is a trace backend; metrics are proven against Prometheus elsewhere.
            OTEL_METRICS_EXPORTER="none",
        )
    )
    expected = SPANS_PER_RUN * len(DEMO_MODES)

    def arrived() -> list[dict[str, Any]] | None:
        spans = _project_spans(phoenix, project)
        return spans if len(spans) >= expected else None

    spans = wait_until(
        arrived,
        timeout_s=SPANS_ARRIVE_TIMEOUT_S,
        what=f"{expected} spans in Phoenix project {project!r} over {protocol}",
        log=phoenix.service.log_tail() + "\n--- demo stdout ---\n" + result.stdout + result.stderr,
    )
    return Delivered(protocol=protocol, project=project, spans=spans, demo_stdout=result.stdout)


def _one(spans: list[dict[str, Any]], name: str) -> dict[str, Any]:
    found = [s for s in spans if s["name"] == name]
    assert len(found) == 1, f"expected one {name!r} span, got {[s['name'] for s in spans]}"
    return found[0]


def _findings(span: dict[str, Any]) -> list[dict[str, Any]]:
    return [e["attributes"] for e in span.get("events", []) if e["name"] == names.FINDING_EVENT]


def test_each_demo_run_arrives_as_one_trace_with_its_spans(delivered: Delivered) -> None:
    traces = delivered.traces()
    assert len(traces) == len(DEMO_MODES), delivered.protocol
    # The demo prints each run's trace id; these are the traces Phoenix holds.
    assert set(traces) == {delivered.run_trace_id(mode) for mode in DEMO_MODES}
    for spans in traces.values():
        run_span = _one(spans, names.run_span_name(demo.AGENT_NAME))
        for step in demo.SCRIPT:
            tool_span = _one(spans, names.tool_span_name(step.tool.__name__))
            assert tool_span["parent_id"] == run_span["context"]["span_id"]
            assert tool_span["attributes"][names.GEN_AI_TOOL_NAME] == step.tool.__name__
        assert _one(spans, names.DISPOSITION_SPAN)["parent_id"] == run_span["context"]["span_id"]


def test_the_mappings_span_carries_the_finding_with_every_witness_attribute(delivered: Delivered) -> None:
    for spans in delivered.traces().values():
        span = _one(spans, names.tool_span_name(MAPPINGS_TOOL))
        (finding,) = _findings(span)
        assert finding[names.FINDING_KIND] == COLUMN_TYPE_MISMATCH
        assert finding[names.FINDING_SEAM] == "write"
        assert finding[names.FINDING_PREDICATE] == "logical_unit_number"
        assert finding[names.GEN_AI_TOOL_NAME] == MAPPINGS_TOOL
        for attribute in (names.FINDING_MESSAGE, names.FINDING_IDENTITY, names.FINDING_ADVISORY):
            assert attribute in finding
        witnesses = finding[names.FINDING_WITNESS_COUNT]
        assert witnesses >= 1
        for index in range(witnesses):
            for field in names.WITNESS_FIELDS:
                assert names.witness_attribute(index, field) in finding, (index, field)
        values = [str(finding[names.witness_attribute(i, "value")]) for i in range(witnesses)]
        assert any('""' in value for value in values), values  # LUN 0 written as ''
        assert span["attributes"][names.FINDINGS_COUNT] == 1
        assert COLUMN_TYPE_MISMATCH in span["attributes"][names.FINDINGS_KINDS]


def test_quoted_numbers_are_findings_and_the_zero_gb_disk_passes(delivered: Delivered) -> None:
    for spans in delivered.traces().values():
        quoted = _findings(_one(spans, names.tool_span_name(QUOTED_NUMBERS_TOOL)))
        assert quoted and {f[names.FINDING_KIND] for f in quoted} == {COLUMN_TYPE_MISMATCH}
        assert any(
            "1240" in str(f[names.witness_attribute(i, "value")])
            for f in quoted
            for i in range(f[names.FINDING_WITNESS_COUNT])
        )
        zero_gb = _one(spans, names.tool_span_name(ZERO_GB_TOOL))
        assert _findings(zero_gb) == []
        assert zero_gb["attributes"].get(names.FINDINGS_COUNT, 0) == 0


def test_the_summary_span_carries_one_row_per_registered_check(delivered: Delivered) -> None:
    for spans in delivered.traces().values():
        summary = _one(spans, names.DISPOSITION_SPAN)
        problems: list[str] = []
        rows = schema.decode_summary(summary["attributes"], problems).rows
        assert problems == []
        assert sorted((r["check"], r["seam"]) for r in rows) == sorted(
            (c.check, c.seam) for c in REGISTERED_CHECKS
        )
        by_check = {(r["check"], r["seam"]): r for r in rows}
        mismatch_row = by_check[(COLUMN_TYPE_MISMATCH, "write")]
        assert isinstance(mismatch_row["findings"], int) and mismatch_row["findings"] >= 1
        assert mismatch_row["checked"] == len(demo.SCRIPT)


# ── The UI ─────────────────────────────────────────────────────────────────────────────────────

SCREENSHOT = ARTIFACTS / "phoenix-finding.png"


@pytest.mark.parametrize("delivered", ["grpc"], indirect=True)  # one screenshot is enough
def test_phoenix_ui_shows_the_finding_event_and_its_witnesses(phoenix: Phoenix, delivered: Delivered) -> None:
    warn_run = delivered.traces()[delivered.run_trace_id("warn")]
    span = _one(warn_run, names.tool_span_name(MAPPINGS_TOOL))
    (finding,) = _findings(span)
    witness_key = names.witness_attribute(finding[names.FINDING_WITNESS_COUNT] - 1, "value")
    witness_value = str(finding[witness_key])
    body = finding_event_in_phoenix_ui(
        phoenix.base_url, span["context"]["span_id"], witness_key, witness_value, SCREENSHOT
    )

    assert names.FINDING_EVENT in body
    assert witness_key in body
    assert witness_value in body
    assert COLUMN_TYPE_MISMATCH in body
    assert Path(SCREENSHOT).stat().st_size > 10_000


LEDGER_SCREENSHOT = ARTIFACTS / "phoenix-ledger.png"


@pytest.mark.parametrize("delivered", ["grpc"], indirect=True)
def test_phoenix_ui_shows_the_ledger_on_the_summary_span(phoenix: Phoenix, delivered: Delivered) -> None:
    """The ledger is written once, as the summary span's attributes: the UI path to it is that
    span's Attributes tab, where each check's row reads with its counts."""
    summary = _one(delivered.traces()[delivered.run_trace_id("warn")], names.DISPOSITION_SPAN)
    ARTIFACTS.mkdir(exist_ok=True)
    with phoenix_span_page(phoenix.base_url, summary["context"]["span_id"], height=1600) as page:
        page.get_by_role("tab", name=re.compile(r"^Attributes")).click()
        page.get_by_text(re.compile(re.escape(COLUMN_TYPE_MISMATCH))).first.wait_for()
        page.screenshot(path=str(LEDGER_SCREENSHOT), full_page=True)
        body = page.inner_text("body")

    for check in REGISTERED_CHECKS:
        assert check.check in body, check
    for field in ("checked", "findings", "not_applicable"):
        assert field in body, field
    assert Path(LEDGER_SCREENSHOT).stat().st_size > 10_000


# ── Findings as span annotations ───────────────────────────────────────────────────────────────

ANNOTATIONS_PROJECT = "ci-annotations"
ANNOTATIONS_ARRIVE_TIMEOUT_S = 90  # Phoenix retries an annotation whose span is not in yet every 10 s
ANNOTATIONS_SCREENSHOT = ARTIFACTS / "phoenix-annotations.png"


@dataclass(frozen=True)
class Annotated:
    spans: dict[str, dict[str, Any]]  # by span name
    annotations: list[dict[str, Any]]


@pytest.fixture(scope="module")
def annotated(phoenix: Phoenix) -> Iterator[Annotated]:
    """An agent whose findings go to Phoenix twice: as span events over OTLP, and as annotations."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    import context_integrity as ci
    from context_integrity.telemetry.setup import CONTRACTS

    before = CONTRACTS.names()
    provider = TracerProvider(resource=Resource.create({"openinference.project.name": ANNOTATIONS_PROJECT}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix.base_url}/v1/traces"))
    )
    ci.shutdown()
    ci.setup(
        tracer_provider=provider,
        meter_provider=MeterProvider(),
        check_column_types="warn",
        phoenix_annotations=phoenix.base_url,
    )
    try:

        @ci.tool(result_columns={"size_gb": "number", "lun": "number"})
        def disks() -> list[dict[str, str]]:
            return [{"size_gb": "12", "lun": ""}]

        @ci.tool(result_columns={"size_gb": "number"})
        def volumes() -> list[dict[str, float]]:
            return [{"size_gb": 7.0}]

        with ci.run("which disks are mistyped?", agent_name="annotated"):
            disks()
            volumes()
        assert ci.flush()
    finally:
        ci.shutdown()
        provider.shutdown()
        for name in CONTRACTS.names() - before:
            CONTRACTS.forget(name)

    def spans_in() -> dict[str, dict[str, Any]] | None:
        spans = {s["name"]: s for s in _project_spans(phoenix, ANNOTATIONS_PROJECT)}
        return spans if names.tool_span_name("disks") in spans and names.DISPOSITION_SPAN in spans else None

    spans = wait_until(
        spans_in,
        timeout_s=SPANS_ARRIVE_TIMEOUT_S,
        what="the annotated run's spans",
        log=phoenix.service.log_tail(),
    )
    query = "&".join(f"span_ids={s['context']['span_id']}" for s in spans.values())

    def annotations_in() -> list[dict[str, Any]] | None:
        url = f"{phoenix.base_url}/v1/projects/{ANNOTATIONS_PROJECT}/span_annotations?{query}&limit=100"
        found = list(http_json(url)["data"])
        return found if len(found) >= 2 else None

    annotations = wait_until(
        annotations_in,
        timeout_s=ANNOTATIONS_ARRIVE_TIMEOUT_S,
        what="two finding annotations read back from Phoenix",
        log=phoenix.service.log_tail(),
    )
    yield Annotated(spans=spans, annotations=annotations)


def test_each_finding_reads_back_from_phoenix_as_a_code_annotation_on_its_span(annotated: Annotated) -> None:
    from context_integrity.telemetry.export.phoenix import ANNOTATOR_KIND

    disks = annotated.spans[names.tool_span_name("disks")]
    findings = _findings(disks)
    assert len(findings) == 2  # size_gb and lun, both column-type-mismatch
    assert len(annotated.annotations) == 2  # one per finding: their identifiers keep them apart
    by_explanation = {a["result"]["explanation"]: a for a in annotated.annotations}
    for finding in findings:
        annotation = by_explanation[finding[names.FINDING_MESSAGE]]
        assert annotation["span_id"] == disks["context"]["span_id"]
        assert annotation["name"] == names.PHOENIX_ANNOTATION_NAME
        assert annotation["annotator_kind"] == ANNOTATOR_KIND
        assert annotation["result"]["label"] == COLUMN_TYPE_MISMATCH == finding[names.FINDING_KIND]
        assert annotation["metadata"][names.EVALUATOR_RULE_VERSION] == finding[names.EVALUATOR_RULE_VERSION]
        assert annotation["metadata"][names.EVALUATOR_VERSION] == finding[names.EVALUATOR_VERSION]
    assert len({a["identifier"] for a in annotated.annotations}) == 2


def test_phoenix_ui_shows_the_findings_annotations_on_the_span(
    phoenix: Phoenix, annotated: Annotated
) -> None:
    disks = annotated.spans[names.tool_span_name("disks")]
    ARTIFACTS.mkdir(exist_ok=True)
    with phoenix_span_page(phoenix.base_url, disks["context"]["span_id"]) as page:
        # The trace tree shows each span's annotations by name, with their mean score.
        page.get_by_text(names.PHOENIX_ANNOTATION_NAME).first.wait_for()
        page.get_by_role("tab", name=re.compile(r"^Events")).first.wait_for()  # the span's pane is in
        page.screenshot(path=str(ANNOTATIONS_SCREENSHOT), full_page=True)
        body = page.inner_text("body")

    assert names.PHOENIX_ANNOTATION_NAME in body
    assert Path(ANNOTATIONS_SCREENSHOT).stat().st_size > 10_000
