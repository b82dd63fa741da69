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
from typing import cast

from hypothesis import given
from hypothesis import strategies as st

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


def _part_by_part(parts: list[dict[str, object]]) -> str:
    """The law of (b), spelled out: a text part is its text, any other part its JSON."""
    return "\n".join(
        cast(str, p["text"])  # a str: the isinstance beside it, which mypy cannot carry from p.get
        if p.get("type") == "text" and isinstance(p.get("text"), str)
        else json.dumps(p, default=str, ensure_ascii=False)
        for p in parts
    )


# Values that could confuse a reading of the rows' JSON as a whole: a row boundary, a text part's
# mark, nested rows.
_TRICKY = st.sampled_from(["}, {", '"type": "text"', "text", "}\n{", "é", ""])
_VALUES = st.recursive(
    st.one_of(st.none(), st.integers(), _TRICKY, st.text(max_size=6)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "type", "text"]), inner, max_size=3),
    ),
    max_leaves=8,
)
_ROWS = st.lists(
    st.dictionaries(st.sampled_from(["key", "type", "text", "}, {"]), _VALUES, max_size=4), max_size=6
)


@given(_ROWS)
def test_property_a_results_rows_render_part_by_part(rows: list[dict[str, object]]) -> None:
    # Rows are rendered from one encode of the whole list where that is provably the same text.
    assert content_text(rows) == _part_by_part(rows)
    assert content_text(tuple(rows)) == _part_by_part(rows)


def test_unit_rows_render_one_per_line() -> None:
    rows: list[dict[str, object]] = [
        {"key": "k0", "size": 0},
        {"key": "k1", "note": "a}, {b"},
        {"type": "text", "text": "hi"},
    ]
    assert content_text(rows[:1] * 3).splitlines() == ['{"key": "k0", "size": 0}'] * 3
    assert content_text(rows) == _part_by_part(rows)
    assert content_text(rows).splitlines()[-1] == "hi"


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
