"""unsupported-argument @ choice: the model acted on a value nothing served.

The laws under test:
(a) a value found only in the model's own earlier text and a value found nowhere file with
    TWO DIFFERENT messages; both name the fix (call the declared grounds again) and the
    ceiling verbatim; nothing is blocked;
(b) one finding per argument path; nested dot-paths are predicates;
(c) fences: non-strings; values shorter than MIN_CHECKED_ARGUMENT_CHARS once trimmed
    (incl. 'a1 '); served anywhere, case-insensitively (instructions, user messages, tool
    results); declared enum values, case-insensitive and nested; an absent schema is no crash;
(d) what is NOT ground: assistant text, and the arguments of earlier calls;
(e) witnesses: the chosen value raw and whole (the message clips it), and the frame;
(f) external grounds: an external-only value is excused with its source and files nothing;
    the same corpus without the entry files; a run-served value gets NO excusal and the
    provider is not even called; garbage entries and non-iterables are ignored; a raising
    provider contributes nothing; the provider is called at most once;
(g) dispositions per response: armed calls -> checked-*; none -> not-applicable; never
    unreachable;
(h) the canary catches exactly one unsupported-argument, marked synthetic.

NEUTRALIZE-PROOFS: dropping the self-reference branch turns (a) red; judging assistant text
as ground turns (d) red; consulting the external door before the run's corpus turns the
"run-served value gets no excusal" test red.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_integrity import ExternalGround, limits
from context_integrity.checks import CANARY_EPOCH
from context_integrity.checks.unsupported_argument import (
    UNSUPPORTED_ARGUMENT_CEILING,
    ArmedCall,
    check_unsupported_arguments,
    unsupported_argument_canary,
)
from context_integrity.contracts import declared_enum_values
from context_integrity.findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    UNREACHABLE,
    Encounter,
    ExternalGrounding,
    tool_subject,
)
from context_integrity.loop import Message, RequestFrame, ToolCall, frame_ground
from context_integrity.text import clip


def _call(
    arguments: object,
    *,
    tool: str = "backup_status",
    call_id: str = "call-1",
    grounds: tuple[str, ...] = ("list_machines",),
    schema: object = None,
) -> ArmedCall:
    return ArmedCall(
        tool_name=tool,
        call_id=call_id,
        arguments=arguments,
        arguments_from=grounds,
        declared_enums=declared_enum_values(schema),
    )


def _check(
    arguments: object,
    *,
    grounded: Sequence[str] = ("You are a backup triage assistant.",),
    assistant: Sequence[str] = (),
    external: object = None,
    schema: object = None,
    epoch: int = 0,
) -> Encounter:
    return check_unsupported_arguments(
        calls=[_call(arguments, schema=schema)],
        grounded=grounded,
        assistant=assistant,
        external=external,
        epoch=epoch,
    )


# ── (a) the two messages ─────────────────────────────────────────────────

SELF_REFERENCE_ANSWER = "The job bkp-4417-ganymede-tier2 finished at 02:00."


def test_functional_self_reference_and_nowhere_messages_differ() -> None:
    self_ref = _check({"machine": "4417-ganymede"}, assistant=[SELF_REFERENCE_ANSWER])
    nowhere = _check({"machine": "9999-callisto"}, assistant=[SELF_REFERENCE_ANSWER])
    [a] = self_ref.findings
    [b] = nowhere.findings

    def without_value(message: str) -> str:
        return message.replace("4417-ganymede", "V").replace("9999-callisto", "V")

    assert without_value(a.message) != without_value(b.message)
    assert "own earlier text" in a.message
    assert "appears nowhere" in b.message
    for finding in (a, b):
        assert "call 'list_machines' again" in finding.message
        assert UNSUPPORTED_ARGUMENT_CEILING in finding.message
        assert "Nothing here blocked the call" in finding.message
        assert "call-1" in finding.message


def test_functional_finding_shape() -> None:
    [finding] = _check({"machine": "4417-ganymede"}, epoch=4).findings
    assert finding.kind == "unsupported-argument"
    assert finding.seam == "choice"
    assert finding.subjects == (tool_subject("backup_status"),)
    assert finding.predicate == "machine"
    assert finding.epoch == 4
    assert not finding.advisory


def test_unit_fix_names_every_declared_ground() -> None:
    encounter = check_unsupported_arguments(
        calls=[_call({"machine": "4417-ganymede"}, grounds=("list_machines", "search_jobs"))],
        grounded=[],
        assistant=[],
    )
    assert "'list_machines' or 'search_jobs'" in encounter.findings[0].message


# ── (b) one finding per path; nested paths ───────────────────────────────


def test_functional_one_finding_per_argument_path() -> None:
    encounter = _check({"machine": "4417-ganymede", "site": "site-europa-3"})
    assert [f.predicate for f in encounter.findings] == ["machine", "site"]
    identities = {f.identity() for f in encounter.findings}
    assert len(identities) == 2


def test_unit_nested_dot_paths() -> None:
    encounter = _check({"filter": {"hosts": ["served-host", "ghost-host"]}}, grounded=["served-host"])
    assert [f.predicate for f in encounter.findings] == ["filter.hosts.1"]


_ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=4, max_size=12)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.dictionaries(st.text(alphabet="abcdef", min_size=1, max_size=4), _ids, max_size=6))
def test_property_findings_count_unserved_distinct_paths(values: dict[str, str]) -> None:
    served = [v for i, v in enumerate(values.values()) if i % 2 == 0]
    corpus = " ".join(served)
    encounter = _check(values, grounded=[corpus])
    expected = [path for path, value in values.items() if value.strip().lower() not in corpus.lower()]
    assert [f.predicate for f in encounter.findings] == expected
    assert encounter.disposition == (CHECKED_FAIL if expected else CHECKED_PASS)


# ── (c) fences ───────────────────────────────────────────────────────────


def test_fence_non_strings_are_not_judged() -> None:
    encounter = _check({"count": 44178, "ratio": 0.5, "on": True, "none": None})
    assert encounter.findings == []
    assert encounter.disposition == CHECKED_PASS


def test_fence_short_values_are_not_judged() -> None:
    short = "x" * (limits.MIN_CHECKED_ARGUMENT_CHARS - 1)
    encounter = _check({"a": "a1", "b": "a1 ", "c": "  abc  ", "d": short})
    assert encounter.findings == []
    long_enough = _check({"a": "abcd"})
    assert [f.predicate for f in long_enough.findings] == ["a"]


def test_fence_served_value_case_insensitive_and_trimmed() -> None:
    encounter = _check({"machine": "  HOST-4417 "}, grounded=["machines: host-4417, host-2"])
    assert encounter.findings == []


def test_fence_tool_results_are_ground() -> None:
    frame = RequestFrame.of(
        [
            Message("user", "status of the first machine?"),
            Message("assistant", "", tool_calls=(ToolCall("list_machines", "c0", {}),)),
            Message("tool", '[{"id": "m-7781-io"}]', tool_name="list_machines", tool_call_id="c0"),
        ]
    )
    ground = frame_ground(frame)
    encounter = _check({"machine": "m-7781-io"}, grounded=ground.grounded, assistant=ground.assistant)
    assert encounter.findings == []


def test_fence_user_and_system_are_ground() -> None:
    frame = RequestFrame.of([Message("user", "check io-1234")], system="default site: eu-west-9")
    ground = frame_ground(frame)
    encounter = _check({"m": "io-1234", "s": "EU-WEST-9"}, grounded=ground.grounded)
    assert encounter.findings == []


def test_fence_enum_values_case_insensitive_and_nested() -> None:
    schema = {
        "type": "object",
        "properties": {
            "options": {"type": "object", "properties": {"mode": {"enum": ["Incremental", "FULL"]}}}
        },
    }
    encounter = _check({"options": {"mode": "incremental"}, "other": "full"}, schema=schema, grounded=[])
    assert encounter.findings == []


def test_fence_enum_on_the_call_is_lowercased_even_if_given_raw() -> None:
    call = ArmedCall("t", "c", {"mode": "incremental"}, ("g",), frozenset({"Incremental"}))
    encounter = check_unsupported_arguments(calls=[call], grounded=[], assistant=[])
    assert encounter.findings == []


def test_negative_absent_schema_is_no_crash() -> None:
    encounter = _check({"mode": "incremental"}, schema=None)
    assert [f.predicate for f in encounter.findings] == ["mode"]


# ── (d) what is not ground ───────────────────────────────────────────────


def test_negative_assistant_text_is_not_ground() -> None:
    frame = RequestFrame.of(
        [Message("user", "status for that machine?"), Message("assistant", SELF_REFERENCE_ANSWER)]
    )
    ground = frame_ground(frame)
    encounter = _check({"machine": "4417-ganymede"}, grounded=ground.grounded, assistant=ground.assistant)
    assert encounter.disposition == CHECKED_FAIL
    assert "own earlier text" in encounter.findings[0].message


def test_negative_earlier_call_arguments_are_not_ground() -> None:
    frame = RequestFrame.of(
        [
            Message("user", "go"),
            Message(
                "assistant",
                "",
                tool_calls=(ToolCall("backup_status", "c0", {"machine": "4417-ganymede"}),),
            ),
            Message("tool", "nothing found", tool_name="backup_status", tool_call_id="c0"),
        ]
    )
    ground = frame_ground(frame)
    encounter = _check({"machine": "4417-ganymede"}, grounded=ground.grounded, assistant=ground.assistant)
    assert encounter.disposition == CHECKED_FAIL
    assert "appears nowhere" in encounter.findings[0].message


# ── (e) witnesses ────────────────────────────────────────────────────────


def test_unit_long_value_clipped_in_message_whole_in_witness() -> None:
    long_value = "ganymede-" + "x" * 200
    [finding] = _check({"machine": long_value}).findings
    chosen, _frame = finding.witnesses
    assert chosen.value == long_value
    assert long_value not in finding.message
    assert clip(long_value) in finding.message
    assert chosen.provenance == "tool call call-1: argument 'machine' as the model chose it"
    assert chosen.subject == tool_subject("backup_status")
    assert chosen.predicate == "machine"


def test_unit_frame_witness_counts_and_wording() -> None:
    [self_ref] = _check(
        {"m": "4417-ganymede"}, grounded=["a", "b"], assistant=[SELF_REFERENCE_ANSWER], epoch=2
    ).findings
    [nowhere] = _check({"m": "4417-ganymede"}, grounded=["a", "b"], epoch=2).findings
    frame_a = self_ref.witnesses[1]
    frame_b = nowhere.witnesses[1]
    assert "2 served texts" in frame_a.provenance
    assert "1 assistant turn" in frame_a.provenance
    assert "0 assistant turns" in frame_b.provenance
    assert frame_a.value != frame_b.value
    assert "served by nothing" in str(frame_a.value)
    assert "served by nothing" in str(frame_b.value)
    assert frame_a.epoch == frame_b.epoch == 2


# ── (f) external grounds ─────────────────────────────────────────────────

VERIFIED = [ExternalGround(value="Row: 4417-GANYMEDE (verified)", source="viewer-selection")]


def test_functional_external_only_value_is_excused_with_source() -> None:
    encounter = _check({"machine": "4417-ganymede"}, external=VERIFIED)
    assert encounter.findings == []
    assert encounter.disposition == CHECKED_PASS
    assert encounter.excusals == [
        ExternalGrounding(
            tool_name="backup_status",
            call_id="call-1",
            path="machine",
            value="4417-ganymede",
            source="viewer-selection",
        )
    ]


def test_functional_same_corpus_without_the_entry_files() -> None:
    assert len(_check({"machine": "4417-ganymede"}, external=None).findings) == 1
    assert len(_check({"machine": "4417-ganymede"}, external=[]).findings) == 1
    other = [ExternalGround(value="something-else", source="viewer-selection")]
    assert len(_check({"machine": "4417-ganymede"}, external=other).findings) == 1


def test_negative_run_served_value_gets_no_excusal_and_provider_is_not_called() -> None:
    calls: list[int] = []

    def provider() -> list[ExternalGround]:
        calls.append(1)
        return VERIFIED

    encounter = _check({"machine": "4417-ganymede"}, grounded=["machine 4417-ganymede"], external=provider)
    assert encounter.excusals == []
    assert encounter.findings == []
    assert calls == []


def test_unit_provider_called_at_most_once() -> None:
    calls: list[int] = []

    def provider() -> list[ExternalGround]:
        calls.append(1)
        return [ExternalGround("first-value", "app"), ExternalGround("second-value", "app")]

    encounter = check_unsupported_arguments(
        calls=[
            _call({"a": "first-value", "b": "second-value", "c": "third-value"}),
            _call({"a": "first-value"}, call_id="call-2"),
        ],
        grounded=[],
        assistant=[],
        external=provider,
    )
    assert calls == [1]
    assert [(e.call_id, e.path) for e in encounter.excusals] == [
        ("call-1", "a"),
        ("call-1", "b"),
        ("call-2", "a"),
    ]
    assert [f.predicate for f in encounter.findings] == ["c"]


@dataclass
class _Entry:
    value: object
    source: object


def test_negative_garbage_entries_are_ignored() -> None:
    garbage: list[Any] = [
        None,
        42,
        "4417-ganymede",
        {"value": "4417-ganymede"},
        {"source": "app"},
        {"value": "4417-ganymede", "source": "  "},
        {"value": "   ", "source": "app"},
        {"value": 4417, "source": "app"},
        _Entry(value="4417-ganymede", source=None),
    ]
    encounter = _check({"machine": "4417-ganymede"}, external=garbage)
    assert encounter.excusals == []
    assert len(encounter.findings) == 1
    good = [*garbage, {"value": "4417-ganymede", "source": "app-map"}, _Entry("x", "y")]
    assert _check({"machine": "4417-ganymede"}, external=good).excusals[0].source == "app-map"
    as_object = [_Entry(value="4417-GANYMEDE", source="app-object")]
    assert _check({"machine": "4417-ganymede"}, external=as_object).excusals[0].source == "app-object"


def test_negative_non_iterable_external_is_absent() -> None:
    for external in (42, "4417-ganymede", {"value": "4417-ganymede", "source": "app"}, object()):
        encounter = _check({"machine": "4417-ganymede"}, external=external)
        assert encounter.excusals == []
        assert len(encounter.findings) == 1


def test_negative_raising_provider_contributes_nothing() -> None:
    def provider() -> list[ExternalGround]:
        raise RuntimeError("the selection store is down")

    def half_generator() -> Iterable[ExternalGround]:
        yield ExternalGround("4417-ganymede", "app")
        raise RuntimeError("mid-way")

    for external in (provider, half_generator):
        encounter = _check({"machine": "4417-ganymede"}, external=external)
        assert encounter.excusals == []
        assert len(encounter.findings) == 1


def test_negative_provider_returning_garbage_contributes_nothing() -> None:
    encounter = _check({"machine": "4417-ganymede"}, external=lambda: None)
    assert encounter.excusals == []
    assert len(encounter.findings) == 1


# ── (g) dispositions ─────────────────────────────────────────────────────


def test_disposition_no_armed_calls_is_not_applicable() -> None:
    encounter = check_unsupported_arguments(calls=[], grounded=["x"], assistant=[])
    assert encounter.disposition == NOT_APPLICABLE
    assert encounter.findings == []


def test_disposition_one_per_response_fail_if_any() -> None:
    encounter = check_unsupported_arguments(
        calls=[_call({"m": "served-1234"}), _call({"m": "ghost-1234"}, call_id="call-2")],
        grounded=["served-1234"],
        assistant=[],
    )
    assert encounter.disposition == CHECKED_FAIL
    assert len(encounter.findings) == 1


def test_disposition_armed_call_with_no_judged_arguments_passes() -> None:
    encounter = check_unsupported_arguments(calls=[_call({})], grounded=[], assistant=[])
    assert encounter.disposition == CHECKED_PASS
    assert encounter.disposition != UNREACHABLE


# ── scale: linear in the corpus ──────────────────────────────────────────


def test_unit_benchmark_shape_is_judged_correctly() -> None:
    # 200 messages, ~100 KB, 20 arguments (the benchmark's shape); correctness only, no timing.
    grounded = [f"row {i}: " + "lorem ipsum " * 40 + f"host-{i:04d}" for i in range(200)]
    arguments = {f"a{i}": f"host-{i * 7:04d}" for i in range(20)}
    encounter = _check(arguments, grounded=grounded)
    assert [f.predicate for f in encounter.findings] == [f"a{i}" for i in range(20) if i * 7 >= 200]


def test_negative_a_match_never_straddles_two_texts() -> None:
    encounter = _check({"m": "abcdef"}, grounded=["xxabc", "defxx"])
    assert len(encounter.findings) == 1
    encounter = _check({"m": "abc\x00def"}, grounded=["abc", "def"])
    assert len(encounter.findings) == 1


# ── (h) canary ───────────────────────────────────────────────────────────


def test_canary_catches_exactly_one_unsupported_argument() -> None:
    encounter = unsupported_argument_canary()
    assert encounter.disposition == CHECKED_FAIL
    assert [f.kind for f in encounter.findings] == ["unsupported-argument"]
    assert all(f.synthetic for f in encounter.findings)
    assert encounter.findings[0].epoch == CANARY_EPOCH
