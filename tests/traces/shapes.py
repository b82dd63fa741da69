"""Spans as OTLP/JSON, built from the documented shapes of the conventions the dialects read.

Each builder writes what an instrumentation following the OpenTelemetry GenAI semantic conventions
(``docs/gen-ai/gen-ai-spans.md``, the message models of ``non-normative/models.py``) exports: an
``invoke_agent`` span, ``chat`` spans whose ``gen_ai.input.messages`` / ``gen_ai.output.messages``
hold messages of typed parts, ``execute_tool`` spans with the opt-in arguments and result. Content
may be written as its JSON text (``as_text=True``, what most SDKs do on spans) or as structure (an
OTLP ``kvlist`` / array).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_integrity.contracts import define_contract
from context_integrity.judge import ContractBook
from context_integrity.telemetry.schema import names

START = 1_750_000_000_000_000_000
_ids = itertools.count(1)


def span_id() -> str:
    return f"{next(_ids):016x}"


def trace_id() -> str:
    return f"{next(_ids):032x}"


def any_value(value: object) -> dict[str, Any]:
    """A Python value as an OTLP/JSON ``AnyValue``."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": [{"key": str(k), "value": any_value(v)} for k, v in value.items()]}}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {}


def attributes(values: Mapping[str, object]) -> list[dict[str, Any]]:
    return [{"key": key, "value": any_value(value)} for key, value in values.items()]


def content(value: object, *, as_text: bool = True) -> object:
    """A content attribute's value: its JSON text, or the structure itself."""
    return json.dumps(value) if as_text else value


@dataclass
class Trace:
    """Spans of one trace, written in the order given (callers list children before parents, as
    exporters do)."""

    trace_id: str = field(default_factory=trace_id)
    spans: list[dict[str, Any]] = field(default_factory=list)
    clock: int = START

    def tick(self) -> int:
        self.clock += 1_000_000
        return self.clock

    def span(
        self,
        name: str,
        attrs: Mapping[str, object],
        *,
        parent: str | None,
        span: str | None = None,
        start: int | None = None,
        end: int | None = None,
        status: int = 0,
        events: Sequence[Mapping[str, Any]] = (),
    ) -> str:
        own = span or span_id()
        began = start if start is not None else self.tick()
        node: dict[str, Any] = {
            "traceId": self.trace_id,
            "spanId": own,
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(began),
            "endTimeUnixNano": str(end if end is not None else began + 500_000),
            "attributes": attributes(attrs),
            "status": {"code": status},
        }
        if parent is not None:
            node["parentSpanId"] = parent
        if events:
            node["events"] = list(events)
        self.spans.append(node)
        return own


def document(
    spans: Iterable[Mapping[str, Any]], *, scope: str = "my-genai-instrumentation", service: str = "agent"
) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attributes({"service.name": service})},
                "scopeSpans": [{"scope": {"name": scope}, "spans": list(spans)}],
            }
        ]
    }


def write_lines(path: Path, documents: Iterable[Mapping[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in documents))
    return path


# ── the GenAI conventions' spans ─────────────────────────────────────────


def text(content_text: str) -> dict[str, Any]:
    return {"type": "text", "content": content_text}


def tool_call(call_id: str | None, name: str, arguments: Mapping[str, object]) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "tool_call", "name": name, "arguments": dict(arguments)}
    if call_id is not None:
        part["id"] = call_id
    return part


def tool_response(call_id: str, response: object) -> dict[str, Any]:
    return {"type": "tool_call_response", "id": call_id, "response": response}


def message(role: str, *parts: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def tool_definitions(*tool_names: str) -> list[dict[str, Any]]:
    return [{"type": "function", "name": name, "parameters": {"type": "object"}} for name in tool_names]


def chat_attributes(
    inputs: Sequence[Mapping[str, Any]] | None,
    outputs: Sequence[Mapping[str, Any]] | None,
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    system: str | None = None,
    as_text: bool = True,
) -> dict[str, object]:
    out: dict[str, object] = {
        names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT,
        names.GEN_AI_REQUEST_MODEL: "test-model",
    }
    if inputs is not None:
        out[names.GEN_AI_INPUT_MESSAGES] = content(list(inputs), as_text=as_text)
    if outputs is not None:
        out[names.GEN_AI_OUTPUT_MESSAGES] = content(list(outputs), as_text=as_text)
    if tools is not None:
        out[names.GEN_AI_TOOL_DEFINITIONS] = content(list(tools), as_text=as_text)
    if system is not None:
        out[names.GEN_AI_SYSTEM_INSTRUCTIONS] = content([text(system)], as_text=as_text)
    return out


def tool_attributes(
    name: str,
    call_id: str | None,
    arguments: object = None,
    result: object = None,
    *,
    as_text: bool = True,
) -> dict[str, object]:
    out: dict[str, object] = {
        names.GEN_AI_OPERATION_NAME: names.OPERATION_EXECUTE_TOOL,
        names.GEN_AI_TOOL_NAME: name,
    }
    if call_id is not None:
        out[names.GEN_AI_TOOL_CALL_ID] = call_id
    if arguments is not None:
        out[names.GEN_AI_TOOL_CALL_ARGUMENTS] = content(arguments, as_text=as_text)
    if result is not None:
        out[names.GEN_AI_TOOL_CALL_RESULT] = content(result, as_text=as_text)
    return out


def agent_attributes(agent: str, answer: str | None = None) -> dict[str, object]:
    out: dict[str, object] = {
        names.GEN_AI_OPERATION_NAME: names.OPERATION_INVOKE_AGENT,
        names.GEN_AI_AGENT_NAME: agent,
    }
    if answer is not None:
        out[names.GEN_AI_OUTPUT_MESSAGES] = json.dumps([message("assistant", text(answer))])
    return out


# ── one scenario: a lookup grounded in a producer, and a made-up argument ──

QUESTION = "Which paths does host esx-07 have?"
HOSTS = [{"host": "esx-07", "wwpn": "c0:50:76:0a:11:7e:00:10"}]


def triage_book() -> ContractBook:
    """``host_paths`` takes its host from ``list_hosts``; ``list_hosts`` returns typed rows."""
    book = ContractBook()
    book.declare(define_contract("list_hosts", result_columns={"host": "string", "wwpn": "string"}))
    book.declare(define_contract("host_paths", arguments_from=["list_hosts"]))
    return book


def triage_trace(
    *,
    as_text: bool = True,
    call_ids: bool = True,
    results_in_user_message: bool = False,
    capture: bool = True,
    invented_host: str = "esx-99",
) -> Trace:
    """An agent that lists hosts, then asks for the paths of a host the listing never served.

    Spans are listed as an exporter writes them: each as it ends, children before their parents.
    """
    trace = Trace()
    agent = span_id()
    first_id, second_id = ("call_1", "call_2") if call_ids else (None, None)
    offered = tool_definitions("list_hosts", "host_paths")
    ask = message("user", text(QUESTION))
    first_call = message("assistant", tool_call("call_1", "list_hosts", {}))
    result_role = "user" if results_in_user_message else "tool"
    listed = message(result_role, tool_response("call_1", HOSTS))
    second_call = message("assistant", tool_call("call_2", "host_paths", {"host": invented_host}))

    def chat(inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> None:
        attrs = (
            chat_attributes(inputs, outputs, tools=offered, system="Use the tools.", as_text=as_text)
            if capture
            else chat_attributes(None, None)
        )
        trace.span("chat test-model", attrs, parent=agent)

    chat([ask], [first_call])
    trace.span(
        "execute_tool list_hosts",
        tool_attributes("list_hosts", first_id, {}, HOSTS, as_text=as_text)
        if capture
        else tool_attributes("list_hosts", first_id),
        parent=agent,
    )
    chat([ask, first_call, listed], [second_call])
    trace.span(
        "execute_tool host_paths",
        tool_attributes("host_paths", second_id, {"host": invented_host}, [], as_text=as_text)
        if capture
        else tool_attributes("host_paths", second_id),
        parent=agent,
    )
    paths = message(result_role, tool_response("call_2", []))
    chat([ask, first_call, listed, second_call, paths], [message("assistant", text("No paths found."))])
    trace.span(
        "invoke_agent triage",
        agent_attributes("triage", "No paths found." if capture else None),
        parent=None,
        span=agent,
        start=START,
        end=trace.tick(),
    )
    return trace
