"""The judge's index of the conversation answers exactly as a full scan of each request would.

The laws under test:
(a) equivalence (property): over any sequence of frames -- grown, windowed, with messages
    re-created as equal copies, inserted in the middle, repeated, or rebuilt whole, with string,
    part-list and structured content and a changing system prompt -- the index's served and
    own-text corpora agree with the full-scan reference (``grounding_reference.py``) on every
    needle's membership and on their counts, and its tool presence agrees with
    ``tool_names_present``;
(b) the same at the seam: the choice seam's findings through the index equal the pure check's
    findings on the whole frame;
(c) bound: each request renders only the messages new to it (a message kept by identity is
    never rendered again, however long the conversation), and a window that evicts forgets:
    the index then holds only what the last frame holds;
(d) bound: producer results offered through frames are remembered once each, so past the
    producer memory's bound a request does not re-remember what was aged out (no cascade).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.grounding_reference import reference_corpora, reference_present

from context_integrity import limits
from context_integrity.checks.unsupported_argument import ArmedCall, unsupported_arguments_of
from context_integrity.contracts import define_contract
from context_integrity.judge import ContractBook, Dials, RunJudge
from context_integrity.judge.ground_index import SCAN_CHARS, FrameIndex, SubstringIndex
from context_integrity.loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition

# Small alphabets, so needles and texts collide often: word and non-word characters, a final-sigma
# pair (lowering is context-dependent there), the reference's own separator, digits.
_CHARS = "aAbBz09-_. \n/ΣσςİI\x00"
_WORDS = ["host", "HOST-0001", "vdi-a", "lun7", "ΑΣ", "ab", "x", "42", "host-0001-b", "σα"]
_TOOLS = ["list_hosts", "lookup", ""]
_CALL_IDS = ["c1", "c2", "c3", "c4"]

texts = st.one_of(
    st.text(alphabet=_CHARS, max_size=24),
    st.lists(st.sampled_from([*_WORDS, " ", "-", ", "]), max_size=8).map("".join),
)
contents = st.one_of(
    texts,
    texts,
    st.lists(
        st.one_of(texts, st.builds(lambda t: {"type": "text", "text": t}, texts), st.just({"k": 1})),
        max_size=3,
    ),
    st.builds(lambda t: {"rows": [t]}, texts),
    st.none(),
)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
    content = draw(contents)
    if role == "tool":
        named = draw(st.booleans())
        return Message(
            "tool",
            content,
            tool_name=draw(st.sampled_from(_TOOLS)) if named else None,
            tool_call_id=draw(st.sampled_from([*_CALL_IDS, None])),
        )
    if role == "assistant":
        calls = draw(
            st.lists(
                st.builds(ToolCall, st.sampled_from(_TOOLS), st.sampled_from(_CALL_IDS), st.just({})),
                max_size=2,
            )
        )
        return Message("assistant", content, tool_calls=tuple(calls))
    return Message(role, content)  # type: ignore[arg-type]


def _copy(message: Message) -> Message:
    """An equal message under a new identity, as a framework rebuilding its history makes."""
    return Message(
        message.role,
        message.content,
        tool_name=message.tool_name,
        tool_call_id=message.tool_call_id,
        tool_calls=message.tool_calls,
    )


def _evolve(data: st.DataObject, history: list[Message], retired: list[Message]) -> None:
    """One step of a conversation: mostly growth, sometimes a window, a copy, a repeat, a rebuild."""
    step = data.draw(
        st.sampled_from(
            ["append", "append", "append", "evict", "evict_front", "copy", "insert", "repeat", "rebuild"]
        )
    )
    if step == "append" or not history:
        history.extend(data.draw(st.lists(messages(), min_size=1, max_size=3)))
    elif step == "evict":
        retired.append(history.pop(data.draw(st.integers(0, len(history) - 1))))
    elif step == "evict_front":
        cut = data.draw(st.integers(1, len(history)))
        retired.extend(history[:cut])
        del history[:cut]
    elif step == "copy":
        at = data.draw(st.integers(0, len(history) - 1))
        history[at] = _copy(history[at])
    elif step == "insert":
        back = retired.pop() if retired else data.draw(messages())
        history.insert(data.draw(st.integers(0, len(history))), back)
    elif step == "repeat":
        history.append(history[data.draw(st.integers(0, len(history) - 1))])
    else:
        history[:] = [_copy(message) for message in history]


def _needles(data: st.DataObject, frame: RequestFrame) -> list[str]:
    """Pieces of what the frame holds (in any case), pieces of nothing, and stray strings."""
    served, own = reference_corpora(frame)
    pool = served.texts + own.texts
    found: list[str] = []
    for _ in range(6):
        if pool:
            text = data.draw(st.sampled_from(pool))
            start = data.draw(st.integers(0, len(text)))
            end = data.draw(st.integers(start, len(text)))
            piece = text[start:end]
            found.append(data.draw(st.sampled_from([piece, piece.upper(), piece.title()])))
        found.append(data.draw(st.text(alphabet=_CHARS, min_size=1, max_size=8)))
        found.append(data.draw(st.sampled_from(_WORDS)))
    return [needle.lower() for needle in found if needle]


# Every text tokenised at once (0), some waiting and some tokenised (48), and all waiting (the
# default, far above what these conversations hold): each answers as the full scan.
@pytest.mark.parametrize("scan_chars", [0, 48, SCAN_CHARS])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_index_answers_as_the_full_scan_over_any_conversation(
    data: st.DataObject, scan_chars: int
) -> None:
    index = FrameIndex(scan_chars)
    history: list[Message] = []
    retired: list[Message] = []
    for _ in range(data.draw(st.integers(1, 12))):
        _evolve(data, history, retired)
        system = data.draw(st.sampled_from([None, "", "You serve HOST-0001.", "ΑΣ rules"]))
        frame = RequestFrame.of(list(history), system=system)
        index.sync(frame)
        served, own = reference_corpora(frame)
        assert index.grounded.count == served.count
        assert index.assistant.count == own.count
        assert index.present() == reference_present(frame)
        for needle in _needles(data, frame):
            assert index.grounded.contains(needle) == served.contains(needle), needle
            assert index.assistant.contains(needle) == own.contains(needle), needle


PRODUCER, CONSUMER = "list_hosts", "hosts_by_wwpn"


def _judge() -> RunJudge:
    book = ContractBook()
    book.declare(define_contract(PRODUCER))
    book.declare(define_contract(CONSUMER, arguments_from=[PRODUCER]))
    return RunJudge(book, Dials())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_choice_seam_through_the_index_files_what_the_whole_frame_files(data: st.DataObject) -> None:
    judge = _judge()
    history: list[Message] = []
    retired: list[Message] = []
    for _ in range(data.draw(st.integers(1, 8))):
        _evolve(data, history, retired)
        frame = RequestFrame.of(list(history), system="Use the tools.")
        judge.compose(frame)
        values = {f"a{i}": value for i, value in enumerate(_needles(data, frame)[:5])}
        verdict = judge.choice(frame, ModelResponse(calls=(ToolCall(CONSUMER, "k1", values),)))
        served, own = reference_corpora(frame)
        expected = unsupported_arguments_of(
            calls=[ArmedCall(CONSUMER, "k1", values, (PRODUCER,), frozenset())],
            grounded=served.texts,
            assistant=own.texts,
            epoch=judge.epoch,
        )
        # The judge files a defect once per run; the reference has no memory, so compare the
        # judge's whole run so far against every finding the reference has ever made.
        expected_messages = {finding.message for finding in expected.findings}
        assert {finding.message for finding in verdict.findings} <= expected_messages
        assert not judge.internal_errors


class _Counted:
    """Message content that counts how often it is rendered."""

    renders = 0

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def __str__(self) -> str:
        type(self).renders += 1
        return self.text


def test_each_request_renders_only_the_messages_new_to_it() -> None:
    judge = _judge()
    history: list[Message] = [Message("user", "list the hosts of fabric A")]
    _Counted.renders = 0
    per_result = 0
    for turn in range(60):
        history.append(Message("tool", _Counted(f"host-{turn:04d} online"), tool_name=PRODUCER))
        history.append(Message("assistant", f"Turn {turn} read."))
        window = history[-20:]  # a window: the oldest fall out
        frame = RequestFrame.of(window, tools=[ToolDefinition(PRODUCER), ToolDefinition(CONSUMER)])
        judge.compose(frame)
        judge.choice(
            frame, ModelResponse(calls=(ToolCall(CONSUMER, f"k{turn}", {"id": f"host-{turn:04d}"}),))
        )
        per_result = per_result or _Counted.renders
    # Each tool result is rendered a fixed number of times when it arrives (the index, the
    # producer memory), and never again while it stays in the frame.
    assert 1 <= per_result <= 3
    assert _Counted.renders == 60 * per_result
    index = judge.state.index
    assert index.grounded.count + index.assistant.count == 20  # holds the last window, nothing older
    assert index.grounded.contains("host-0059") and not index.grounded.contains("host-0000")
    assert not judge.findings


def test_producer_results_past_the_memory_bound_are_not_remembered_again() -> None:
    judge = _judge()
    history: list[Message] = []
    bound = limits.MAX_SERVED_RESULTS_PER_RUN
    keys: list[str] = []
    for batch in range(3):
        for i in range(bound // 2 + 10):
            key = f"r{batch}-{i}"
            keys.append(key)
            history.append(Message("tool", f"host-{batch}-{i}", tool_name=PRODUCER, tool_call_id=key))
        judge.compose(RequestFrame.of(list(history)))
    judge.compose(RequestFrame.of([*history, Message("user", "and now?")]))
    # Plain FIFO: the newest results, in arrival order. Re-remembering the aged-out ones that are
    # still in the frame would have pushed out others, request after request.
    assert [key for _, key in judge.state.produced.kept()] == keys[-bound:]


def test_a_query_scans_a_bounded_text_and_a_long_run_tokenises_each_text_once() -> None:
    index = SubstringIndex(scan_chars=1_000)
    texts = [f"host-{i:04d} online in fabric {'ab'[i % 2]}" for i in range(400)]
    waited_most = 0
    for text in texts:
        index.add(text)
        waited_most = max(waited_most, index._pending_chars)
    assert waited_most <= 1_000  # what a query scans beside the postings stays under the bound
    assert index._postings  # past the bound, the texts went to the postings
    assert all(index.contains(f"host-{i:04d}") for i in (0, 199, 399))
    assert not index.contains("host-0400")
    # Removed while waiting: gone from the scan, never tokenised.
    index.add("vdi-z only here")
    assert index.contains("vdi-z")
    index.remove("vdi-z only here")
    assert not index.contains("vdi-z") and "vdi" not in index._postings
    # Removed after tokenising: gone from the postings.
    index.remove(texts[0])
    assert not index.contains("host-0000")
