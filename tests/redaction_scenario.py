"""One agent run with a secret in every position a tool, a model or a user controls.

Run as a script by ``tests/test_marker_sweep.py`` (a process of its own, so ``setup()`` builds the
whole pipeline it builds for a user: the local recording with its spans, log records and metrics,
and the Phoenix annotation processor):

    python tests/redaction_scenario.py RECORDING PHOENIX_URL HOOK CAPTURE SEEN

``HOOK`` is ``constant`` (every text becomes ``[gone]``) or ``pattern`` (a regular expression
replaces each secret, the hook a user writes for API keys); ``CAPTURE`` is ``on`` or ``off``;
``SEEN`` is a file the hook appends every text it is handed to, one JSON string a line.

Every secret is 32 characters of the shape :data:`PATTERN` matches, so a pattern hook that is
handed a secret whole recognises it, and a secret it is handed cut in two leaks.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import string
import sys
from typing import Any

from pydantic import BaseModel

import context_integrity as ci
from context_integrity import Message, RequestFrame, ToolCall, ToolDefinition

PATTERN = re.compile(r"zq7[A-Za-z0-9]{29}")
_ALPHABET = string.ascii_letters + string.digits


def _secret(position: str) -> str:
    """A 32-character secret of :data:`PATTERN`'s shape, the same on every run, distinct per position."""
    digest = int.from_bytes(hashlib.sha256(position.encode()).digest(), "big")
    tail = ""
    for _ in range(29):
        digest, index = divmod(digest, len(_ALPHABET))
        tail += _ALPHABET[index]
    return "zq7" + tail


# One secret per position, so a leak names the position it came from.
POSITIONS = (
    "question",
    "user_message",
    "system",
    "tool_result",
    "padded_cell",
    "argument_value",
    "argument_key",
    "column_key",
    "unserved_value",
    "once_value",
    "once_key",
    "model_text",
    "answer_text",
    "answer_field",
    "settled_value",
    "measured_at",
    "excused_value",
    "exception",
)
SECRETS: dict[str, str] = {position: _secret(position) for position in POSITIONS}
# What the library never exports (the request's messages and instructions, the model's own text), and
# what it exports only as opt-in content (the question and the answer's text): every other secret is
# quoted somewhere, and so handed to the hook.
NEVER_EXPORTED = frozenset({"user_message", "system", "model_text"})
CONTENT_ONLY = frozenset({"question", "answer_text"})
assert all(PATTERN.fullmatch(secret) for secret in SECRETS.values())
# Past the 80 characters a quoted value is clipped to: a hook handed the clipped quote sees half a secret.
PAD = "p" * 60


class Answer(BaseModel):
    status: str


def main(recording: str, phoenix: str, hook_kind: str, capture: str, seen_path: str) -> None:
    seen = open(seen_path, "a", encoding="utf-8")  # noqa: SIM115  # held for the process's life

    def hook(text: str) -> str:
        seen.write(json.dumps(text) + "\n")
        seen.flush()
        return "[gone]" if hook_kind == "constant" else PATTERN.sub("[key]", text)

    def vouched() -> list[ci.ExternalGround]:
        return [ci.ExternalGround(SECRETS["excused_value"], "the application's own registry")]

    ci.setup(
        recording_path=recording,
        log_events=True,
        evaluation_events="all",
        phoenix_annotations=phoenix,
        capture_content=capture == "on",
        redact=hook,
        check_column_types="warn",
        notice_empty_lookups=True,
        notice_prior_turn_evidence=True,
        external_grounds=vouched,
        profile=True,  # the run's profile names column keys and argument paths: the world's names
        instrument=(),
    )
    ci.declare_tool("producer")
    ci.declare_tool("lookup", arguments_from=["producer"], result_columns={"lun": "number"})
    ci.declare_tool("search", arguments_from=["producer"])
    ci.declare_tool("provision", once_per_run=True)
    ci.declare_tool("status_of")
    ci.declare_claims(Answer, {"status": ("fc1/3", "status")})

    @ci.tool(name="fails")
    def fails(reason: str) -> None:
        raise ValueError(f"backend refused {reason}")

    offered = [ToolDefinition(name) for name in ("producer", "lookup", "search", "provision", "status_of")]
    history: list[Message] = [Message("user", f"please find {SECRETS['user_message']}")]

    def frame() -> RequestFrame:
        return RequestFrame.of(history, system=f"instructions {SECRETS['system']}", tools=offered)

    def model_turn(agent: ci.Run, calls: list[ToolCall], text: str | None = None) -> None:
        with agent.request(frame(), model="scripted") as call:
            call.respond(calls=calls, text=text)
        history.append(Message("assistant", text or "", tool_calls=tuple(calls)))

    def tool_turn(agent: ci.Run, name: str, call_id: str, result: Any, arguments: dict[str, Any]) -> None:
        agent.tool_result(name, call_id, result, arguments=arguments)
        history.append(Message("tool", result, tool_name=name, tool_call_id=call_id))

    with ci.run(f"question {SECRETS['question']}", agent_name="sweep") as agent:
        model_turn(agent, [ToolCall("producer", "c1", {})], text=f"thinking {SECRETS['model_text']}")
        tool_turn(
            agent,
            "producer",
            "c1",
            [{"id": SECRETS["tool_result"], "note": PAD + SECRETS["padded_cell"], SECRETS["column_key"]: 1}],
            {},
        )
        # An argument the producer served, looked up and found empty (empty-lookup); a value nothing
        # served (unsupported-argument), under a key the model made up; a value the app vouches for.
        lookup_arguments = {"id": SECRETS["tool_result"]}
        search_arguments: dict[str, Any] = {
            "filters": {SECRETS["argument_key"]: PAD + SECRETS["unserved_value"]},
            "owner": SECRETS["argument_value"],
            "vouched": SECRETS["excused_value"],
        }
        model_turn(
            agent, [ToolCall("lookup", "c2", lookup_arguments), ToolCall("search", "c3", search_arguments)]
        )
        tool_turn(agent, "lookup", "c2", [], lookup_arguments)
        tool_turn(agent, "search", "c3", [{"hit": SECRETS["tool_result"]}], search_arguments)
        # A cell of the wrong type holding a secret past the quote's cut (column-type-mismatch).
        model_turn(agent, [ToolCall("lookup", "c4", {"id": SECRETS["tool_result"]})])
        tool_turn(
            agent, "lookup", "c4", [{"lun": PAD + SECRETS["padded_cell"]}], {"id": SECRETS["tool_result"]}
        )
        # A once-per-run tool asked again with equal arguments (duplicate-execution).
        once = {"name": PAD + SECRETS["once_value"], "labels": {SECRETS["once_key"]: True}}
        model_turn(agent, [ToolCall("provision", "c5", once)])
        tool_turn(agent, "provision", "c5", {"ok": True}, once)
        model_turn(agent, [ToolCall("provision", "c6", once)])
        tool_turn(agent, "provision", "c6", {"ok": True}, once)
        # A fact a tool settles, and an answer that contradicts it (unsupported-claim).
        settled = ci.semantic(
            facts=[{"entity": "fc1/3", "status": PAD + SECRETS["settled_value"]}],
            provenance={"measured_at": SECRETS["measured_at"]},
        )
        model_turn(agent, [ToolCall("status_of", "c7", {})])
        tool_turn(agent, "status_of", "c7", settled, {})
        # A tool that raises with a secret in its message.
        with contextlib.suppress(ValueError):
            fails(SECRETS["exception"])
        answer = Answer(status=PAD + SECRETS["answer_field"])
        model_turn(agent, [], text=f"done {SECRETS['answer_text']}")
        agent.answer(f"done {SECRETS['answer_text']}", output=answer)
    kinds = sorted({finding.kind for finding in agent.findings})
    print(json.dumps({"kinds": kinds}))
    ci.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:6])
