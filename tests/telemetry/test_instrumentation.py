"""Spans, events, attributes and the summary span, read back through the SDK's in-memory exporter.

The laws under test:
(a) a decorated call inside a run is one ``execute_tool {name}`` span with the GenAI attributes;
(b) each finding is a ``context_integrity.finding`` event carrying every witness as flat attributes,
    and the span carries the findings count and kinds;
(c) every run ends with exactly one ``context_integrity.disposition`` span under it — normally,
    by exception, or by cancellation — with one row event per registered check;
(d) dial off is byte-identical: the caller receives the very object the tool returned;
(e) enforce hands the caller the refusal sentence and marks the span ERROR;
(f) never break the host: a failing check or exporter is recorded, never raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Sequence
from typing import Any, cast

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.checks.column_types import COLUMN_TYPE_CEILING
from context_integrity.judge import COLUMN_DIALS, REGISTERED_CHECKS
from context_integrity.judge import registry as judge_module
from context_integrity.judge.seams import unjudged_refusal
from context_integrity.ledger import ROW_FIELDS
from context_integrity.telemetry import schema
from context_integrity.telemetry.schema import names

LUN_ROWS = [
    {"host_group": "vdi-a", "logical_unit_number": ""},
    {"host_group": "vdi-a", "logical_unit_number": 3},
]


def _mappings_tool(rows: Any) -> Any:
    # The demo declares a tool of this name when it is imported: this test's contract replaces it on
    # purpose (the fixture puts the demo's back).
    @ci.tool(
        result_columns={"logical_unit_number": "number", "host_group": "string"},
        name="host_group_mappings",
        replace=True,
    )
    def host_group_mappings(host_group: str) -> Any:
        return rows

    return host_group_mappings


def _events(span: ReadableSpan, name: str) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == name]


def _rows(summary: ReadableSpan) -> list[dict[str, Any]]:
    """The ledger rows the summary span carries, decoded as the recording reader decodes them."""
    problems: list[str] = []
    rows = schema.decode_summary(dict(summary.attributes or {}), problems).rows
    assert problems == []
    return rows


def _row(summary: ReadableSpan, check: str, seam: str) -> dict[str, Any]:
    for row in _rows(summary):
        if row["check"] == check and row["seam"] == seam:
            return row
    raise AssertionError(f"no row {check}@{seam}")


class TestToolSpan:
    def test_tool_call_in_a_run_is_an_execute_tool_span_with_genai_attributes(
        self, telemetry: Telemetry
    ) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _mappings_tool(LUN_ROWS)
        with ci.run("what are the vdi-a mappings?", agent_name="triage"):
            tool("vdi-a")
        span = telemetry.one(names.tool_span_name("host_group_mappings"))
        attrs = dict(span.attributes or {})
        assert attrs[names.GEN_AI_OPERATION_NAME] == names.OPERATION_EXECUTE_TOOL
        assert attrs[names.GEN_AI_TOOL_NAME] == "host_group_mappings"
        assert attrs[names.GEN_AI_TOOL_TYPE] == names.TOOL_TYPE_FUNCTION
        assert attrs[names.GEN_AI_TOOL_CALL_ID]
        run_span = telemetry.one(names.run_span_name("triage"))
        assert span.parent is not None and span.parent.span_id == run_span.context.span_id
        assert dict(run_span.attributes or {})[names.GEN_AI_OPERATION_NAME] == names.OPERATION_INVOKE_AGENT

    def test_finding_event_carries_every_witness_as_flat_attributes(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _mappings_tool(LUN_ROWS)
        with ci.run("q", agent_name="triage"):
            tool("vdi-a")
        span = telemetry.one(names.tool_span_name("host_group_mappings"))
        (event,) = _events(span, names.FINDING_EVENT)
        assert event[names.FINDING_KIND] == "column-type-mismatch"
        assert event[names.FINDING_SEAM] == "write"
        assert event[names.FINDING_PREDICATE] == "logical_unit_number"
        assert event[names.FINDING_ADVISORY] is False
        assert COLUMN_TYPE_CEILING in event[names.FINDING_MESSAGE]
        assert "1 of 2 rows" in event[names.FINDING_MESSAGE]
        assert event[names.GEN_AI_TOOL_NAME] == "host_group_mappings"
        assert event[names.GEN_AI_TOOL_CALL_ID] == dict(span.attributes or {})[names.GEN_AI_TOOL_CALL_ID]
        assert event[names.FINDING_IDENTITY].startswith("column-type-mismatch @write")
        assert event[names.FINDING_WITNESS_COUNT] == 2
        for index in range(2):
            for field in names.WITNESS_FIELDS:
                assert names.witness_attribute(index, field) in event, (index, field)
        assert event[names.witness_attribute(0, "subject")] == "tool host_group_mappings"
        assert "1 of 2 rows" in str(event[names.witness_attribute(1, "value")])
        attrs = dict(span.attributes or {})
        assert attrs[names.FINDINGS_COUNT] == 1
        assert list(cast("Sequence[str]", attrs[names.FINDINGS_KINDS])) == ["column-type-mismatch"]

    def test_findings_counter_counts_by_kind_seam_and_tool(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _mappings_tool([{"host_group": 7}])  # one mistyped, one missing column
        with ci.run("q"):
            tool("vdi-a")
        points = {
            (p[names.METRIC_KIND], p[names.METRIC_SEAM], p[names.METRIC_TOOL]): v
            for p, v in telemetry.findings_metric()
        }
        assert points == {
            ("column-type-mismatch", "write", "host_group_mappings"): 1,
            ("missing-column", "write", "host_group_mappings"): 1,
        }

    def test_the_same_defect_twice_in_a_run_is_one_event_and_two_ledger_encounters(
        self, telemetry: Telemetry
    ) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _mappings_tool(LUN_ROWS)
        with ci.run("q") as agent_run:
            tool("vdi-a")
            tool("vdi-a")
        spans = telemetry.named(names.tool_span_name("host_group_mappings"))
        assert [len(_events(s, names.FINDING_EVENT)) for s in spans] == [1, 0]
        mismatch = next(r for r in agent_run.ledger() if r.check == "column-type-mismatch")
        assert (mismatch.checked, mismatch.findings) == (2, 2)

    def test_async_tools_are_traced_and_judged(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")

        @ci.tool(result_columns={"size_gb": "number"})
        async def disk_sizes(vm: str) -> list[dict[str, Any]]:
            await asyncio.sleep(0)
            return [{"size_gb": "0.0"}]

        async def main() -> None:
            async with ci.run("q", agent_name="async-agent"):
                await disk_sizes("vm-1")

        asyncio.run(main())
        span = telemetry.one(names.tool_span_name("disk_sizes"))
        assert len(_events(span, names.FINDING_EVENT)) == 1
        assert len(telemetry.summaries()) == 1

    def test_a_call_outside_any_run_is_traced_and_judged_without_a_ledger(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _mappings_tool(LUN_ROWS)
        assert tool("vdi-a") is LUN_ROWS
        span = telemetry.one(names.tool_span_name("host_group_mappings"))
        assert span.parent is None
        assert len(_events(span, names.FINDING_EVENT)) == 1
        assert telemetry.summaries() == []

    def test_undecorated_setup_never_called_still_returns_the_result(self, isolated_contracts: None) -> None:
        ci.shutdown()
        tool = _mappings_tool(LUN_ROWS)
        with ci.run("q") as agent_run:
            assert tool("vdi-a") is LUN_ROWS
        assert agent_run.findings == []


class TestDials:
    def test_dial_off_returns_the_very_same_object_and_judges_nothing(self, telemetry: Telemetry) -> None:
        telemetry.configure()
        tool = _mappings_tool(LUN_ROWS)
        with ci.run("q") as agent_run:
            assert tool("vdi-a") is LUN_ROWS
        span = telemetry.one(names.tool_span_name("host_group_mappings"))
        assert _events(span, names.FINDING_EVENT) == []
        assert names.FINDINGS_COUNT not in dict(span.attributes or {})
        summary = telemetry.summaries()[0]
        row = _row(summary, "column-type-mismatch", "write")
        assert row["not_applicable"] == 1
        assert row["checked"] == 0
        assert agent_run.findings == []

    def test_warn_returns_the_very_same_object_with_findings_filed(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _mappings_tool(LUN_ROWS)
        with ci.run("q"):
            assert tool("vdi-a") is LUN_ROWS

    def test_enforce_hands_the_caller_the_refusal_and_marks_the_span_error(
        self, telemetry: Telemetry
    ) -> None:
        telemetry.configure(check_column_types="enforce")
        tool = _mappings_tool(LUN_ROWS)
        with ci.run("q"):
            delivered = tool("vdi-a")
        assert isinstance(delivered, str)
        assert delivered.startswith("Result rejected: ")
        assert delivered.endswith("No data was returned.")
        span = telemetry.one(names.tool_span_name("host_group_mappings"))
        assert span.status.status_code is StatusCode.ERROR
        assert dict(span.attributes or {})[names.ERROR_TYPE] == names.ERROR_RESULT_REJECTED

    def test_enforce_passes_clean_rows_through_untouched(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="enforce")
        clean = [{"host_group": "vdi-a", "logical_unit_number": 0}]
        tool = _mappings_tool(clean)
        with ci.run("q"):
            assert tool("vdi-a") is clean
        span = telemetry.one(names.tool_span_name("host_group_mappings"))
        assert span.status.status_code is not StatusCode.ERROR

    @pytest.mark.parametrize("bad", ["warning", "ON", "", None, True, 1])
    def test_a_bad_dial_is_refused_listing_the_three_words(self, bad: object) -> None:
        with pytest.raises(ci.SetupError) as refused:
            ci.setup(check_column_types=bad)
        for word in COLUMN_DIALS:
            assert repr(word) in str(refused.value)

    def test_setup_again_reconfigures_dials_without_a_second_processor(self, telemetry: Telemetry) -> None:
        first = telemetry.configure(check_column_types="warn")
        processors_before = len(telemetry.provider._active_span_processor._span_processors)
        second = telemetry.configure(check_column_types="enforce")
        assert second is first
        assert second.dials.check_column_types == "enforce"
        assert len(telemetry.provider._active_span_processor._span_processors) == processors_before


class TestSummarySpan:
    def _assert_one_summary_under(self, telemetry: Telemetry, run_name: str, outcome: str) -> ReadableSpan:
        (summary,) = telemetry.summaries()
        run_span = telemetry.one(run_name)
        assert summary.parent is not None and summary.parent.span_id == run_span.context.span_id
        assert summary.context.trace_id == run_span.context.trace_id
        attrs = dict(summary.attributes or {})
        assert attrs[names.RUN_OUTCOME] == outcome
        rows = _rows(summary)
        assert [(r["check"], r["seam"]) for r in rows] == [(c.check, c.seam) for c in REGISTERED_CHECKS]
        assert not summary.events  # the ledger is written once, as attributes
        return summary

    def test_a_normal_run_has_one_summary_with_rows_totals_and_scalars(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _mappings_tool(LUN_ROWS)
        with ci.run("q", agent_name="triage"):
            tool("vdi-a")
        summary = self._assert_one_summary_under(telemetry, names.run_span_name("triage"), "ok")
        attrs = dict(summary.attributes or {})
        assert attrs[names.POSTURE] == "observe"
        assert attrs[names.WORK_EXISTED] is True
        assert attrs[names.totals_attribute("findings")] == 1
        assert attrs[names.row_attribute("column-type-mismatch", "write", "checked")] == 1
        assert attrs[names.row_attribute("column-type-mismatch", "write", "findings")] == 1
        assert attrs[names.row_attribute("missing-column", "write", "checked")] == 1
        assert attrs[names.row_attribute("missing-column", "write", "findings")] == 0
        assert names.row_attribute("column-type-mismatch", "write", "last_fired_at") in attrs
        assert names.row_attribute("missing-column", "write", "last_fired_at") not in attrs
        for row in _rows(summary):
            for field in ROW_FIELDS:
                key = names.row_attribute(row["check"], row["seam"], field)
                if field in schema.SPARSE_COUNT_FIELDS:  # written only when nonzero
                    assert (key in attrs) is (row[field] != 0)
                elif field not in ("check", "seam", "last_fired_at"):
                    assert key in attrs

    def test_every_unarmed_check_is_noted_not_applicable_once(self, telemetry: Telemetry) -> None:
        telemetry.configure()
        with ci.run("q"):
            pass
        (summary,) = telemetry.summaries()
        for row in _rows(summary):
            assert row["not_applicable"] == 1, row
            assert row["checked"] == 0
        assert dict(summary.attributes or {})[names.WORK_EXISTED] is False

    def test_a_run_that_raises_still_has_exactly_one_summary(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _mappings_tool(LUN_ROWS)
        with pytest.raises(RuntimeError, match="model went away"), ci.run("q", agent_name="crashy"):
            tool("vdi-a")
            raise RuntimeError("model went away")
        self._assert_one_summary_under(telemetry, names.run_span_name("crashy"), "error")
        run_span = telemetry.one(names.run_span_name("crashy"))
        assert run_span.status.status_code is StatusCode.ERROR

    def test_a_cancelled_asyncio_run_still_has_exactly_one_summary(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _mappings_tool(LUN_ROWS)
        started = asyncio.Event()

        async def agent() -> None:
            async with ci.run("q", agent_name="cancelled"):
                tool("vdi-a")
                started.set()
                await asyncio.sleep(3600)

        async def main() -> None:
            task = asyncio.create_task(agent())
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(main())
        self._assert_one_summary_under(telemetry, names.run_span_name("cancelled"), "cancelled")

    def test_a_run_inside_a_stream_its_caller_closes_early_is_cancelled(self, telemetry: Telemetry) -> None:
        """A generator streaming a run's steps, closed after the first (a client gone): the run ends
        with the generator's GeneratorExit, the caller stopping it, not the agent failing."""
        telemetry.configure(check_column_types="warn")
        tool = _mappings_tool(LUN_ROWS)

        def steps() -> Generator[str, None, None]:
            with ci.run("q", agent_name="streamed"):
                for step in ("lookup", "answer"):
                    tool("vdi-a")
                    yield step

        stream = steps()
        assert next(stream) == "lookup"
        stream.close()
        self._assert_one_summary_under(telemetry, names.run_span_name("streamed"), "cancelled")
        run_span = telemetry.one(names.run_span_name("streamed"))
        assert dict(run_span.attributes or {})[names.ERROR_TYPE] == "GeneratorExit"


class TestNeverBreakTheHost:
    @pytest.mark.parametrize("mode", ["warn", "enforce"])
    def test_a_check_that_raises_is_recorded_as_unreachable_and_enforce_fails_closed(
        self, telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, mode: str
    ) -> None:
        telemetry.configure(check_column_types=mode)

        def broken(*_: Any, **__: Any) -> Any:
            raise ZeroDivisionError("a bug of ours")

        monkeypatch.setattr(judge_module, "column_types_of", broken)
        tool = _mappings_tool(LUN_ROWS)
        with ci.run("q") as agent_run:
            delivered = tool("vdi-a")
        if mode == "warn":  # warn changes nothing: the rows go through
            assert delivered is LUN_ROWS
        else:  # enforce never hands over rows it could not judge
            assert delivered == unjudged_refusal("host_group_mappings")
        row = next(r for r in agent_run.ledger() if r.check == "column-type-mismatch")
        assert (row.checked, row.unreachable) == (0, 1)
        span = telemetry.one(names.tool_span_name("host_group_mappings"))
        (event,) = _events(span, names.INTERNAL_ERROR_EVENT)
        assert event[names.INTERNAL_ERROR_TYPE] == "ZeroDivisionError"

    def test_a_recurring_failure_of_ours_logs_one_traceback_and_records_every_occurrence(
        self, telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        telemetry.configure(check_column_types="warn")

        class OurBug(Exception):
            pass

        def broken(*_: Any, **__: Any) -> Any:
            raise OurBug("still broken")

        monkeypatch.setattr(judge_module, "column_types_of", broken)
        tool = _mappings_tool(LUN_ROWS)
        with caplog.at_level("DEBUG", logger="context_integrity"), ci.run("q"):
            for _ in range(3):
                tool("vdi-a")
        tracebacks = [r for r in caplog.records if r.levelname == "ERROR" and r.exc_info]
        assert len(tracebacks) == 1
        spans = telemetry.named(names.tool_span_name("host_group_mappings"))
        assert [len(_events(s, names.INTERNAL_ERROR_EVENT)) for s in spans] == [1, 1, 1]

    def test_the_tools_own_exception_reaches_the_caller_unchanged(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")

        class ArrayOffline(Exception):
            pass

        @ci.tool(result_columns={"lun": "number"})
        def flaky() -> list[dict[str, Any]]:
            raise ArrayOffline("array 7 unreachable")

        with pytest.raises(ArrayOffline), ci.run("q"):
            flaky()
        span = telemetry.one(names.tool_span_name("flaky"))
        assert span.status.status_code is StatusCode.ERROR
        error_type = dict(span.attributes or {})[names.ERROR_TYPE]
        assert isinstance(error_type, str) and error_type.endswith("ArrayOffline")
        assert len(telemetry.summaries()) == 1

    @pytest.mark.parametrize(
        "strange",
        [
            None,
            "prose",
            42,
            {"rows": []},
            [1, 2],
            [],
            iter([{"a": 1}]),
            [{"logical_unit_number": float("nan")}],
        ],
        ids=["none", "prose", "int", "wrapper", "scalars", "empty", "iterator", "nan"],
    )
    def test_nothing_a_tool_returns_makes_the_wrapper_raise(
        self, telemetry: Telemetry, strange: object
    ) -> None:
        telemetry.configure(check_column_types="enforce")
        tool = _mappings_tool(strange)
        with ci.run("q"):
            delivered = tool("vdi-a")
        if isinstance(strange, list) and strange and isinstance(strange[0], dict):
            assert isinstance(delivered, str)
        else:
            assert delivered is strange

    def test_an_exporter_that_raises_never_reaches_the_agent(self, isolated_contracts: None) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

        class DownExporter(SpanExporter):
            def export(self, spans: Any) -> Any:
                raise ConnectionError("collector is down")

        ci.shutdown()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(DownExporter()))
        ci.setup(tracer_provider=provider, check_column_types="warn")
        try:
            tool = _mappings_tool(LUN_ROWS)
            with ci.run("q") as agent_run:
                assert tool("vdi-a") is LUN_ROWS
            assert len(agent_run.findings) == 1
        finally:
            ci.shutdown()


class TestFrameworkSpans:
    """A framework that opens the execute_tool span itself (pydantic-ai does) keeps one span."""

    def _framework_span(self, telemetry: Telemetry, tool: str, call_id: str) -> Any:
        tracer = telemetry.provider.get_tracer("framework")
        return tracer.start_as_current_span(
            names.tool_span_name(tool),
            attributes={
                names.GEN_AI_OPERATION_NAME: names.OPERATION_EXECUTE_TOOL,
                names.GEN_AI_TOOL_NAME: tool,
                names.GEN_AI_TOOL_CALL_ID: call_id,
            },
        )

    def test_a_decorated_call_inside_the_frameworks_span_adopts_it(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _mappings_tool(LUN_ROWS)
        with ci.run("q"), self._framework_span(telemetry, "host_group_mappings", "fw-call-7"):
            assert tool("vdi-a") is LUN_ROWS
        (span,) = telemetry.named(names.tool_span_name("host_group_mappings"))
        assert span.instrumentation_scope is not None and span.instrumentation_scope.name == "framework"
        (event,) = _events(span, names.FINDING_EVENT)
        assert event[names.GEN_AI_TOOL_CALL_ID] == "fw-call-7"
        assert dict(span.attributes or {})[names.FINDINGS_COUNT] == 1

    def test_a_span_for_another_tool_is_a_parent_not_adopted(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _mappings_tool(LUN_ROWS)
        with ci.run("q"), self._framework_span(telemetry, "some_other_tool", "fw-call-8"):
            tool("vdi-a")
        ours = telemetry.one(names.tool_span_name("host_group_mappings"))
        outer = telemetry.one(names.tool_span_name("some_other_tool"))
        assert ours.parent is not None and ours.parent.span_id == outer.context.span_id
        assert _events(outer, names.FINDING_EVENT) == []

    def test_the_tools_exception_inside_an_adopted_span_is_the_frameworks_to_record(
        self, telemetry: Telemetry
    ) -> None:
        telemetry.configure(check_column_types="warn")

        @ci.tool(result_columns={"lun": "number"}, name="flaky_mappings")
        def flaky() -> Any:
            raise TimeoutError("array busy")

        with (
            pytest.raises(TimeoutError),
            ci.run("q"),
            self._framework_span(telemetry, "flaky_mappings", "fw-9"),
        ):
            flaky()
        (span,) = telemetry.named(names.tool_span_name("flaky_mappings"))
        # the framework's own context manager recorded it once; we did not add a second record
        assert [e.name for e in span.events].count("exception") == 1
