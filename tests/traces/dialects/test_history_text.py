"""A run's history, written as JSON text on every request, read once: each request costs what it added.

The laws under test, for ``genai.messages_of`` with a conversation (a trace id), as every dialect
reading the GenAI conventions' ``gen_ai.input.messages`` uses it:

- a request whose text is the last request's text with messages appended is read exactly as the
  same text read alone: the same messages, the same ``Missing`` when it cannot be read (cut short,
  trailing junk, stripped of its content), whatever the serializer's spacing (fuzzed);
- only what it appended is parsed: the history the last request already held is not parsed again;
- a history that does not extend the last one (a window that dropped its oldest messages, another
  serializer's spacing) is read whole, to the same messages.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_integrity.traces import values
from context_integrity.traces.dialects import genai
from context_integrity.traces.readings import Missing

KEY = "gen_ai.input.messages"


def text_part(words: str) -> dict[str, Any]:
    return {"type": "text", "content": words}


def call_part(index: int) -> dict[str, Any]:
    return {"type": "tool_call", "id": f"c{index}", "name": "list_hosts", "arguments": {"page": index}}


def result_part(index: int) -> dict[str, Any]:
    return {"type": "tool_call_response", "id": f"c{index}", "name": "list_hosts", "response": [index]}


def history(turns: int) -> list[dict[str, Any]]:
    """A question, then a call and its result per turn."""
    messages: list[dict[str, Any]] = [{"role": "user", "parts": [text_part("Which hosts are up?")]}]
    for index in range(turns):
        messages.append({"role": "assistant", "parts": [call_part(index)]})
        messages.append({"role": "user", "parts": [result_part(index)]})
    return messages


def read(text: str, conversation: str | None, **options: Any) -> object:
    return genai.messages_of(text, key=KEY, conversation=conversation, **options)


def alone(text: str, **options: Any) -> object:
    """``text`` read with nothing remembered."""
    genai._CONVERSATIONS.clear()
    return read(text, None, **options)


SPACINGS: list[dict[str, Any]] = [
    {"separators": (",", ":")},  # pydantic-ai's
    {},  # json.dumps' default
    {"indent": 2},
]


@settings(max_examples=60, deadline=None)
@given(
    turns=st.integers(min_value=1, max_value=6),
    spacing=st.sampled_from(SPACINGS),
    trailing=st.sampled_from(["", " ", "\n"]),
    words=st.text(max_size=20),
)
def test_each_request_of_a_run_reads_as_its_text_alone(
    turns: int, spacing: dict[str, Any], trailing: str, words: str
) -> None:
    messages = history(turns)
    messages[0]["parts"][0]["content"] = words
    texts = [json.dumps(messages[: count + 1], **spacing) + trailing for count in range(len(messages))]
    expected = [alone(text) for text in texts]
    genai._CONVERSATIONS.clear()
    assert [read(text, "trace-1") for text in texts] == expected


def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the dialect hands the JSON parser, from now on."""
    seen: list[str] = []
    parse = values.parsed_json

    def counted(text: str) -> object:
        seen.append(text)
        return parse(text)

    monkeypatch.setattr(genai, "parsed_json", counted, raising=False)
    monkeypatch.setattr(values, "parsed_json", counted)
    return seen


def test_only_what_a_request_appended_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = history(3)
    genai._CONVERSATIONS.clear()
    first = json.dumps(messages[:3], separators=(",", ":"))
    second = json.dumps(messages, separators=(",", ":"))
    read(first, "trace-1")
    seen = parses(monkeypatch)
    again = read(second, "trace-1")
    assert seen == ["[" + json.dumps(messages[3:], separators=(",", ":"))[1:]]
    assert again == alone(second)


def test_a_history_that_does_not_extend_the_last_is_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = history(3)
    genai._CONVERSATIONS.clear()
    read(json.dumps(messages[:5]), "trace-1")
    seen = parses(monkeypatch)
    windowed = json.dumps(messages[2:])  # the oldest messages dropped
    respaced = json.dumps(messages, indent=1)
    assert read(windowed, "trace-1") == alone(windowed)
    genai._CONVERSATIONS.clear()
    read(json.dumps(messages[:5]), "trace-1")
    assert read(respaced, "trace-1") == alone(respaced)
    assert windowed in seen and respaced in seen


@pytest.mark.parametrize(
    "tail",
    [
        pytest.param(',{"role":"user","parts":[{"type":"text","content":"and the LU…', id="cut short"),
        pytest.param(',{"role":"user","parts":[]}] trailing', id="junk after the list"),
        pytest.param(',{"role":"user","parts":[{"type":"text"}]}]', id="stripped of its content"),
        pytest.param(",]", id="an empty element"),
        pytest.param(",1]", id="an entry that is no message"),
    ],
)
def test_an_extension_that_cannot_be_read_reads_as_the_text_alone(tail: str) -> None:
    first = json.dumps(history(1), separators=(",", ":"))
    second = first[:-1] + tail
    expected = alone(second)
    genai._CONVERSATIONS.clear()
    read(first, "trace-1")
    assert read(second, "trace-1") == expected


def test_a_stricter_read_checks_the_remembered_history_too() -> None:
    # A tool_call without arguments is stripped only for a read that counts calls (the run's whole
    # history, pydantic-ai's all_messages): one the last request's read let pass must not be reused.
    messages = history(1)
    del messages[1]["parts"][0]["arguments"]
    first = json.dumps(messages, separators=(",", ":"))
    later = json.dumps(
        [*messages, {"role": "assistant", "parts": [text_part("Both.")]}], separators=(",", ":")
    )
    genai._CONVERSATIONS.clear()
    assert not isinstance(read(first, "trace-1"), Missing)
    assert isinstance(read(later, "trace-1", stripped_calls=True), Missing)
    assert read(later, "trace-1", stripped_calls=True) == alone(later, stripped_calls=True)
