"""Emission: nothing we put on a span carries a string longer than the attribute bound."""

from __future__ import annotations

from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.limits import MAX_ATTRIBUTE_CHARS
from context_integrity.telemetry.emit import clipped
from context_integrity.telemetry.schema import names


def test_clipped_cuts_strings_and_strings_in_sequences_and_leaves_the_rest() -> None:
    long = "x" * (MAX_ATTRIBUTE_CHARS + 10)
    out = clipped({"s": long, "l": [long, 3], "n": 7, "b": True})
    assert isinstance(out["s"], str) and len(out["s"]) == MAX_ATTRIBUTE_CHARS
    assert isinstance(out["l"], list) and len(out["l"][0]) == MAX_ATTRIBUTE_CHARS and out["l"][1] == 3
    assert (out["n"], out["b"]) == (7, True)


def test_a_call_id_of_any_length_leaves_on_the_span_and_its_finding_event_clipped(
    telemetry: Telemetry,
) -> None:
    telemetry.configure(check_column_types="warn")
    ci.declare_tool("lun_mappings", result_columns={"logical_unit_number": "number"})
    call_id = "c" * (MAX_ATTRIBUTE_CHARS * 3)
    with ci.run("q") as agent_run:
        agent_run.tool_result("lun_mappings", call_id, [{"logical_unit_number": ""}])
    span = telemetry.one(names.tool_span_name("lun_mappings"))
    (event,) = [dict(e.attributes or {}) for e in span.events if e.name == names.FINDING_EVENT]
    sent = event[names.GEN_AI_TOOL_CALL_ID]
    assert isinstance(sent, str) and len(sent) == MAX_ATTRIBUTE_CHARS and call_id.startswith(sent[:-1])
    assert dict(span.attributes or {})[names.GEN_AI_TOOL_CALL_ID] == sent
