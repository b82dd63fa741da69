"""The loop protocol: what the judge sees of an agent loop.

The laws under test:
(a) sequences passed as lists (or any iterable) become tuples; odd content never raises;
(b) message_text renders strings as themselves, text parts joined, anything else as
    deterministic JSON (default=str), and never raises (cycles, hostile __str__);
(c) tool_names_present names tool results by tool_name, and falls back to the asking
    assistant message's tool_calls when the tool message carries only a call id
    (regression: wire-shape histories must still count as re-fetched);
(d) frame_ground: the system instructions and every non-assistant message are ground;
    assistant text is kept apart; tool-call arguments are in neither.
"""

from __future__ import annotations

import json

from context_integrity.contracts import absent
from context_integrity.loop import (
    Message,
    ModelResponse,
    RequestFrame,
    ToolCall,
    ToolDefinition,
    content_text,
    frame_ground,
    message_text,
    tool_names_present,
)

# ── (a) construction ─────────────────────────────────────────────────────


def test_unit_lists_become_tuples() -> None:
    call = ToolCall("lookup", "c1", {"id": "abcd"})
    frame = RequestFrame(
        messages=[Message("assistant", "", tool_calls=[call])],  # type: ignore[arg-type]
        tools=[ToolDefinition("lookup")],  # type: ignore[arg-type]
    )
    assert isinstance(frame.messages, tuple)
    assert isinstance(frame.tools, tuple)
    assert frame.messages[0].tool_calls == (call,)
    response = ModelResponse(calls=[call])  # type: ignore[arg-type]
    assert response.calls == (call,)


def test_unit_of_reads_any_iterable_once() -> None:
    messages = (Message("user", str(i)) for i in range(3))
    frame = RequestFrame.of(messages, system="be brief", tools=iter([ToolDefinition("t")]))
    assert [m.content for m in frame.messages] == ["0", "1", "2"]
    assert frame.tools == (ToolDefinition("t"),)
    assert frame.system == "be brief"


def test_negative_garbage_sequences_become_empty_not_errors() -> None:
    frame = RequestFrame(messages=None)  # type: ignore[arg-type]
    assert frame.messages == ()
    assert Message("assistant", tool_calls=42).tool_calls == ()  # type: ignore[arg-type]


# ── (b) message_text ─────────────────────────────────────────────────────


def test_unit_string_content_is_itself() -> None:
    assert message_text(Message("user", "host-4417 please")) == "host-4417 please"


def test_unit_absence_renders_as_plain_text() -> None:
    text = message_text(Message("tool", absent("abcd")))
    assert type(text) is str
    assert text.startswith("No match")
    assert "abcd" not in text


def test_unit_text_parts_are_joined() -> None:
    content = [{"type": "text", "text": "first"}, "second", {"type": "text", "text": "third"}]
    assert message_text(Message("user", content)) == "first\nsecond\nthird"


def test_unit_other_parts_render_as_json() -> None:
    part = {"type": "tool_result", "content": "WWPN 50:06:01:60"}
    text = message_text(Message("user", [part]))
    assert json.loads(text) == part


def test_unit_structured_content_is_json_with_default_str() -> None:
    class Opaque:
        def __str__(self) -> str:
            return "opaque-7781"

    text = content_text({"rows": [{"lun": 0, "who": Opaque()}]})
    assert json.loads(text) == {"rows": [{"lun": 0, "who": "opaque-7781"}]}
    assert content_text({"b": 1, "a": 2}) == content_text({"b": 1, "a": 2})


def test_unit_none_content_is_empty() -> None:
    assert content_text(None) == ""


def test_negative_cycles_and_hostile_objects_never_raise() -> None:
    cyclic: list[object] = ["abcd"]
    cyclic.append(cyclic)

    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("no")

        def __repr__(self) -> str:
            raise RuntimeError("no")

    cyclic_dict: dict[str, object] = {}
    cyclic_dict["self"] = cyclic_dict
    assert "abcd" in content_text(cyclic)
    assert isinstance(content_text({"x": Hostile()}), str)
    assert isinstance(content_text(Hostile()), str)
    assert isinstance(content_text(cyclic_dict), str)
    assert isinstance(content_text({(1, 2): "tuple key"}), str)


# ── (c) tool_names_present ───────────────────────────────────────────────


def test_unit_tool_name_counts_as_present() -> None:
    frame = RequestFrame.of([Message("tool", "[...]", tool_name="list_hosts", tool_call_id="c1")])
    assert tool_names_present(frame) == frozenset({"list_hosts"})


def test_regression_missing_tool_name_resolved_through_asking_assistant() -> None:
    frame = RequestFrame.of(
        [
            Message("user", "which hosts?"),
            Message("assistant", "", tool_calls=(ToolCall("list_hosts", "c9", {}),)),
            Message("tool", "host-a, host-b", tool_call_id="c9"),
        ]
    )
    assert tool_names_present(frame) == frozenset({"list_hosts"})


def test_negative_unresolvable_tool_message_is_not_named() -> None:
    frame = RequestFrame.of(
        [
            Message("tool", "orphan result", tool_call_id="gone"),
            Message("assistant", "", tool_calls=(ToolCall("later_tool", "gone-later", {}),)),
        ]
    )
    assert tool_names_present(frame) == frozenset()


def test_unit_non_tool_messages_name_nothing() -> None:
    frame = RequestFrame.of(
        [
            Message("user", "x", tool_name="list_hosts"),
            Message("assistant", "y", tool_calls=(ToolCall("list_hosts", "c1", {}),)),
        ]
    )
    assert tool_names_present(frame) == frozenset()


# ── (d) frame_ground ─────────────────────────────────────────────────────


def test_unit_frame_ground_splits_by_author() -> None:
    frame = RequestFrame.of(
        [
            Message("system", "policy text"),
            Message("user", "the user's words"),
            Message(
                "assistant",
                "my earlier answer",
                tool_calls=(ToolCall("lookup", "c1", {"id": "chosen-id-1234"}),),
            ),
            Message("tool", "tool output", tool_name="lookup", tool_call_id="c1"),
            Message("assistant", ""),
        ],
        system="instructions",
    )
    ground = frame_ground(frame)
    assert ground.grounded == ("instructions", "policy text", "the user's words", "tool output")
    assert ground.assistant == ("my earlier answer",)
    everything = " ".join(ground.grounded + ground.assistant)
    assert "chosen-id-1234" not in everything


def test_unit_no_system_means_no_system_text() -> None:
    ground = frame_ground(RequestFrame.of([Message("user", "hi there")]))
    assert ground.grounded == ("hi there",)
