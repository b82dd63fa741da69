"""pydantic-ai's own instrumentation (``InstrumentationSettings``, ``Agent.instrument_all()``,
``logfire.instrument_pydantic_ai()``), data formats 2 to 6 (the default is 5).

What it writes (``pydantic_ai/_instrumentation.py``, ``models/instrumented.py``,
``capabilities/instrumentation.py``), under the instrumentation scope ``pydantic-ai``:

- the run span, ``invoke_agent {agent}`` (``agent run`` in format 2): ``gen_ai.agent.name`` (format 2:
  ``agent_name``), ``final_result`` (the output: the text, or the typed output's JSON) and
  ``pydantic_ai.all_messages`` (the whole history, GenAI-shaped messages);
- ``chat {model}`` spans: the GenAI conventions' ``gen_ai.input.messages`` / ``gen_ai.output.messages``
  (messages of typed parts), ``gen_ai.system_instructions``, ``gen_ai.tool.definitions``. Formats 2 to
  5 put tool results in a ``user`` message, format 6 in a ``tool`` one: parts are read by their type,
  never by the role of the message holding them;
- ``execute_tool {tool}`` spans with ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments`` and
  ``gen_ai.tool.call.result``; format 2's ``running tool`` spans write ``tool_arguments`` /
  ``tool_response`` instead.

With ``include_content=False`` pydantic-ai still writes the messages, with every part stripped of its
content (a ``text`` part without ``content``, a ``tool_call`` without ``arguments``): read as
:class:`~..readings.Missing`, never as empty messages. Format 1 wrote messages as span events
(``events``), which is not read: its spans say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ...loop import content_text
from ...telemetry.schema import names
from ..readings import AgentReading, AnswerReading, Missing, ModelCallReading, Reading, ToolReading
from ..spans import Attributes, Span
from ..values import arguments_of, first_of, structured, text_of
from . import genai

KEY: Final = "pydantic_ai"

# The instrumentation scope pydantic-ai's tracer is named by (Logfire keeps it).
SCOPE: Final = "pydantic-ai"
ALL_MESSAGES: Final = "pydantic_ai.all_messages"
FINAL_RESULT: Final = "final_result"
# Format 2's names.
LEGACY_AGENT_RUN: Final = "agent run"
LEGACY_AGENT_NAME: Final = "agent_name"
LEGACY_TOOL_SPAN: Final = "running tool"
LEGACY_TOOL_ARGUMENTS: Final = "tool_arguments"
LEGACY_TOOL_RESPONSE: Final = "tool_response"
# Format 1 wrote the messages as events, into this attribute (``event_mode='attributes'``).
LEGACY_EVENTS: Final = "events"

# Why messages are recorded without their content, said after "... holds its messages without their content: ".
WITHHELD: Final = "pydantic-ai was told not to record it (InstrumentationSettings(include_content=False))"
_FORMAT_1: Final = (
    "the span is in pydantic-ai's data format 1 (messages as events), which is not read: "
    "instrument with version=2 or later (the default, 5, is read)"
)


def _model_call(span: Span) -> ModelCallReading:
    attributes = span.attributes
    if names.GEN_AI_INPUT_MESSAGES not in attributes and LEGACY_EVENTS in attributes:
        return ModelCallReading(
            None,
            None,
            (
                Missing("the request the model received", _FORMAT_1),
                Missing("the model's response", _FORMAT_1),
            ),
        )
    return genai.model_call_of(attributes, span.trace_id, withheld=WITHHELD)


def _tool(span: Span) -> ToolReading:
    attributes = span.attributes
    name = genai.tool_name_of(span, attributes)
    call_id = text_of(attributes.get(names.GEN_AI_TOOL_CALL_ID))
    found_arguments = first_of(attributes, names.GEN_AI_TOOL_CALL_ARGUMENTS, LEGACY_TOOL_ARGUMENTS)
    found_result = first_of(attributes, names.GEN_AI_TOOL_CALL_RESULT, LEGACY_TOOL_RESPONSE)
    arguments: Mapping[str, Any] | Missing
    if found_arguments is None:
        arguments = Missing("the tool's arguments", _absent(names.GEN_AI_TOOL_CALL_ARGUMENTS))
    else:
        arguments = arguments_of(found_arguments[1], key=found_arguments[0])
    result: object
    if found_result is None:
        result = Missing("the tool's result", _absent(names.GEN_AI_TOOL_CALL_RESULT))
    else:
        key, value = found_result
        result = structured(value, key=key, what="the tool's result", text_is_value=True)
    return ToolReading(tool_name=name, call_id=call_id or None, arguments=arguments, result=result)


def _absent(key: str) -> str:
    return (
        f"the span has no {key}: pydantic-ai records it unless InstrumentationSettings(include_content=False)"
    )


def answer_of(value: object, time_unix_nano: int | None) -> AnswerReading:
    """``final_result``: the answer's text, and its typed output when the text is a JSON object (a
    typed output, as pydantic-ai writes one)."""
    if isinstance(value, str):
        output: object = None
        if value.lstrip().startswith("{"):
            read = structured(value, key=FINAL_RESULT, what="the run's final answer")
            output = read if isinstance(read, Mapping) else None
        return AnswerReading(value, output, time_unix_nano)
    if isinstance(value, Mapping):  # written as structure (a kvlist)
        return AnswerReading(content_text(value), dict(value), time_unix_nano)
    return AnswerReading(None if value is None else str(value), None, time_unix_nano)


def _agent(span: Span) -> AgentReading:
    attributes = span.attributes
    name = text_of(attributes.get(names.GEN_AI_AGENT_NAME)) or text_of(attributes.get(LEGACY_AGENT_NAME))
    missing: list[Missing] = []
    answer: AnswerReading | None = None
    if FINAL_RESULT in attributes:
        answer = answer_of(attributes[FINAL_RESULT], span.end_time_unix_nano)
    elif span.status != "error":  # a run that failed gave no answer, in process alike
        missing.append(Missing("the run's final answer", _absent(FINAL_RESULT)))
    messages = None
    history = attributes.get(ALL_MESSAGES)
    if history is not None:
        read = genai.messages_of(
            history,
            key=ALL_MESSAGES,
            what="the run's messages",
            # The history is the last request's and the answer: only the answer is parsed anew.
            conversation=span.trace_id,
            withheld=WITHHELD,
            stripped_calls=True,
        )
        messages = read if not isinstance(read, Missing) else None
    return AgentReading(name or None, answer, messages, tuple(missing))


def read_pydantic_ai(span: Span) -> Reading | None:
    """What a pydantic-ai span says of the agent's work (``None``: no agent work)."""
    operation = genai.operation_of(span)
    if span.name == LEGACY_TOOL_SPAN or operation == names.OPERATION_EXECUTE_TOOL:
        return _tool(span)
    if operation in genai.MODEL_OPERATIONS:
        return _model_call(span)
    attributes: Attributes = span.attributes
    if (
        span.name == LEGACY_AGENT_RUN
        or operation == names.OPERATION_INVOKE_AGENT
        or ALL_MESSAGES in attributes
    ):
        return _agent(span)
    return None


class PydanticAIDialect:
    """pydantic-ai's own instrumentation, directly or through Logfire."""

    key = KEY
    # What every span it claims carries (see Dialect.claims): its scope's name, or the run's history.
    signs: Final = (SCOPE, ALL_MESSAGES)

    def claims(self, span: Span) -> bool:
        return span.scope == SCOPE or ALL_MESSAGES in span.attributes

    def read(self, span: Span) -> Reading | None:
        return read_pydantic_ai(span)


DIALECT: Final = PydanticAIDialect()
