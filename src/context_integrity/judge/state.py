"""What one run's checks remember, and what each seam hands them.

:class:`RunState` is the per-run memory (the epoch, which tool results were
served and evicted, what producers served). Only the judge writes it; the
registry's seam functions read it. The ``*Seen`` classes are the encounter a
seam hands every check registered there, each input read at most once and
only if some check asks for it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .._memo import IdentityMemo
from ..checks.duplicate_execution import Execution, arguments_key
from ..checks.empty_lookup import ProducedCorpus
from ..checks.unsupported_argument import TextCorpus, _Corpus
from ..contracts import ToolContract, declared_enum_values
from ..contracts.meta import ServerVerdict, is_marked_semantic, read_server_verdict
from ..contracts.results import ResultReading, judged_value, mcp_result, read_result
from ..contracts.semantic import FactRow, declared_fact_rows, fact_rows_of, is_envelope
from ..findings import Seam
from ..limits import (
    MAX_ENUM_SCHEMAS_PER_RUN,
    MAX_FACT_ROWS_PER_RUN,
    MAX_ONCE_EXECUTIONS,
    MAX_SERVED_TEXT_CHARS,
    MAX_SUSPENDED_GROUPS,
)
from ..loop import (
    FrameGround,
    ModelResponse,
    RequestFrame,
    content_text,
    frame_ground,
    message_text,
)
from ..text import bounded_json
from .book import ContractBook
from .dials import Dials
from .ground_index import FrameIndex


def served_text(value: object) -> str:
    """A tool result as the text a producer served: what empty-lookup searches for ids."""
    if isinstance(value, str):
        return value[:MAX_SERVED_TEXT_CHARS]
    if isinstance(value, (list, tuple, dict)):
        try:
            return bounded_json(value, MAX_SERVED_TEXT_CHARS)[:MAX_SERVED_TEXT_CHARS]
        except (TypeError, ValueError, RecursionError):
            pass
    return content_text(value)[:MAX_SERVED_TEXT_CHARS]


def settled_value(result: object) -> object:
    """What a tool result settles facts with: itself, or an MCP result's structured content when
    that is a semantic envelope (marked so by its server in ``_meta``, or shaped like one). Never raises."""
    if type(result) is list:
        return result  # the common result: rows
    try:
        fields = mcp_result(result)
        if fields is None or fields.is_error:
            return result
        if is_marked_semantic(fields.meta) or is_envelope(fields.structured):
            return fields.structured
    except Exception:  # the result's own code raised: it settles nothing
        pass
    return result


# ── What each seam hands its checks ─────────────────────────────────────


_UNREAD: Final = object()


class ToolResultSeen:
    """The write seam: one finished tool call. ``reading`` is computed on first use, once."""

    __slots__ = ("_arguments", "_reading", "_server_verdict", "call_id", "contract", "result", "tool_name")

    def __init__(
        self,
        tool_name: str,
        call_id: str,
        result: object,
        contract: ToolContract | None,
        arguments: Callable[[], Mapping[str, Any]] | Mapping[str, Any] | None,
    ) -> None:
        self.tool_name = tool_name
        self.call_id = call_id
        self.result = result
        self.contract = contract
        self._arguments = arguments
        self._reading: ResultReading | None = None
        self._server_verdict: object = _UNREAD

    @property
    def reading(self) -> ResultReading:
        if self._reading is None:
            contract = self.contract
            # MCP structured content is always an object: rows a tool declared can only arrive as
            # the SDK's and fastmcp's {"result": [...]}, whether or not an output schema said so.
            wrapped = contract is not None and (contract.result_wrapped or bool(contract.result_columns))
            self._reading = read_result(judged_value(self.result, wrapped=wrapped))
        return self._reading

    @property
    def server_verdict(self) -> ServerVerdict | None:
        """What the MCP server that judged this result said it found (its ``_meta``), else ``None``."""
        if self._server_verdict is _UNREAD:
            found = None
            if type(self.result) is not list:  # the common result carries no _meta: nothing to read
                try:
                    fields = mcp_result(self.result)
                    found = read_server_verdict(fields.meta) if fields is not None else None
                except Exception:  # the result's own code raised: no verdict taken from it
                    found = None
            self._server_verdict = found
        return self._server_verdict  # type: ignore[return-value]

    def arguments(self) -> Mapping[str, Any]:
        given = self._arguments
        if callable(given):
            return given()
        return given if given is not None else {}


@dataclass(slots=True)
class RequestSeen:
    """The compose seam: one assembled request, and which tools' results it holds."""

    frame: RequestFrame
    offered: tuple[str, ...]
    present: frozenset[str]


class ResponseSeen:
    """The choice seam: one model response, with the request it answered.

    ``index`` is the run's index of the conversation; :meth:`corpora` reads the request's ground
    from it, at the cost of what the request added since the last one the index was shown.
    """

    __slots__ = ("_ground", "frame", "index", "response")

    def __init__(
        self, frame: RequestFrame | None, response: ModelResponse, index: FrameIndex | None = None
    ) -> None:
        self.frame = frame
        self.response = response
        self.index = index
        self._ground: FrameGround | None = None

    def ground(self) -> FrameGround:
        """The request's texts split by author, rendered whole; empty when the request is unknown."""
        if self._ground is None:
            self._ground = frame_ground(self.frame) if self.frame is not None else FrameGround((), ())
        return self._ground

    def corpora(self) -> tuple[TextCorpus, TextCorpus]:
        """(what the request served, the model's own text), each searchable by substring."""
        if self.frame is None:
            return _Corpus(()), _Corpus(())
        if self.index is None:
            ground = self.ground()
            return _Corpus(ground.grounded), _Corpus(ground.assistant)
        self.index.sync(self.frame)
        return self.index.grounded, self.index.assistant

    def offered_schema(self, tool_name: str) -> object:
        if self.frame is None:
            return None
        for tool in self.frame.tools:
            if tool.name == tool_name:
                return tool.input_schema
        return None


@dataclass(frozen=True, slots=True)
class AnswerSeen:
    """The claim seam: the run's final answer."""

    text: str | None
    output: object = None


@dataclass(frozen=True, slots=True)
class WireSeen:
    """The wire seam: what actually crossed to the model provider, against the request composed.

    ``tool_names`` is ``None`` when no wire reader saw or could read the body; ``source`` names
    the reader (which provider's body it read).
    """

    composed: tuple[str, ...]
    tool_names: frozenset[str] | None
    source: str = "the serialized request body"


# ── The per-run memory ──────────────────────────────────────────────────


@dataclass(slots=True)
class RunState:
    """Everything one run's checks need to remember. Written by the judge only."""

    contracts: ContractBook
    dials: Dials
    # The agent whose run this is, when known: claims declared for one agent's answers read it.
    agent: str | None = None
    epoch: int = 0
    # The seams at which real work happened (a request, a response, a tool result): the signal
    # dev posture reads, which no check writes.
    worked: set[Seam] = field(default_factory=set)
    # The identities (per run, clipped) of the findings filed so far: a check may skip building a
    # finding the run has already filed, and the judge drops any it builds anyway.
    filed: set[str] = field(default_factory=set)
    grounds: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The tools whose ``arguments_from`` was declared and could not be read: their grounding checks
    # read unreachable, never not-applicable.
    unread_grounds: frozenset[str] = frozenset()
    producers: frozenset[str] = frozenset()
    served: set[str] = field(default_factory=set)
    # Every tool whose served results some request of this run lacked: the union of all evictions so
    # far, never shrunk. A re-fetch does not remove a name from it; the check's re-fetch fence (the
    # ground is present again) is what keeps that request silent, and it is still a real comparison
    # (checked-pass), not "nothing to be about".
    evicted: set[str] = field(default_factory=set)
    # What producers served, lowered and shelved once as it is served (empty-lookup's corpus).
    produced: ProducedCorpus = field(default_factory=ProducedCorpus)
    # invariant-violation @ compose: group -> the tools the application suspended (``run.suspend``).
    suspended: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # duplicate-execution: once-per-run calls the model asked for (call id -> tool, arguments key),
    # and the first successful execution of each (tool, arguments key).
    once_asked: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    executed: dict[tuple[str, str], Execution] = field(default_factory=dict)
    # unsupported-claim: every fact a tool settled with semantic(), oldest first.
    facts: deque[FactRow] = field(default_factory=deque)
    # prior-turn evidence reads the last request of the run as it stands.
    last_frame: RequestFrame | None = None
    # The conversation so far, indexed: what the last request held, updated by each new one's difference.
    index: FrameIndex = field(default_factory=FrameIndex)
    # The enum words of each schema offered, by identity: hosts offer the same schema object on
    # every request, and it was walked again for every armed call.
    offered_enums: IdentityMemo[object, frozenset[str]] = field(
        default_factory=lambda: IdentityMemo(MAX_ENUM_SCHEMAS_PER_RUN), repr=False
    )

    @classmethod
    def begin(
        cls, contracts: ContractBook, dials: Dials, *, grounding: bool, agent: str | None = None
    ) -> RunState:
        grounds = contracts.grounds() if grounding else {}
        return cls(
            contracts=contracts,
            dials=dials,
            agent=agent,
            grounds=grounds,
            unread_grounds=contracts.unread_grounds() if grounding else frozenset(),
            producers=frozenset(g for names in grounds.values() for g in names),
        )

    def regrounded(self, contracts: ContractBook) -> None:
        """The grounds as the book now declares them (a grounding check armed during the run)."""
        self.grounds = contracts.grounds()
        self.unread_grounds = contracts.unread_grounds()
        self.producers = frozenset(g for names in self.grounds.values() for g in names)

    # ── reading ────────────────────────────────────────────────────────

    def enum_values(self, tool_name: str, offered_schema: object) -> frozenset[str]:
        """The lowered enum words the model was told for a tool: the offered schema's, else the contract's."""
        if offered_schema is not None:
            return self.offered_enums.of(offered_schema, declared_enum_values)
        contract = self.contracts.get(tool_name)
        return contract.enum_values if contract is not None else frozenset()

    # ── bookkeeping (the judge calls these) ────────────────────────────
    def open_request(self, frame: RequestFrame) -> RequestSeen:
        """Advance the epoch and measure which served results this request holds and which it lost."""
        self.epoch += 1
        present: frozenset[str] = frozenset()
        if self.grounds:
            self.index.sync(frame)
            present = self.index.present()
            self.remember_frame_results(frame)
            self.evicted |= self.served - present
        offered: list[str] = []
        for tool in frame.tools:
            if tool.name not in offered:
                offered.append(tool.name)
        return RequestSeen(frame=frame, offered=tuple(offered), present=present)

    def close_request(self, seen: RequestSeen) -> None:
        self.served |= seen.present

    def after_tool_result(self, seen: ToolResultSeen) -> None:
        if not self.grounds:
            return
        self.served.add(seen.tool_name)
        if seen.tool_name in self.producers:
            self.remember_produced(seen.tool_name, seen.call_id, seen.result)

    def remember_produced(self, tool_name: str, key: str, value: object) -> None:
        if (tool_name, key) in self.produced:
            return
        self.produced.add(tool_name, key, served_text(value))

    def remember_frame_results(self, frame: RequestFrame) -> None:
        """Producer results that reach the model through frames count as served, once each.

        Only the messages new since the last request are read: a result already offered is in the
        memory (or was aged out of it, which must stay so: re-adding it would age out another).
        """
        self.index.sync(frame)
        fresh = self.index.take_fresh()
        if not self.producers:
            return
        for seen in fresh:
            if not seen.tool_role:
                continue
            message = seen.message
            name = getattr(message, "tool_name", None) or self.index.asker_of(
                getattr(message, "tool_call_id", None)
            )
            if name in self.producers and name is not None:
                key = getattr(message, "tool_call_id", None) or f"frame:{hash(message_text(message))}"  # type: ignore[arg-type]
                self.remember_produced(name, key, getattr(message, "content", ""))

    # ── the family's bookkeeping (suspensions, executions, settled facts, the last request) ──
    def suspend(self, group: str, tools: tuple[str, ...]) -> None:
        self.suspended.pop(group, None)
        if len(self.suspended) >= MAX_SUSPENDED_GROUPS:
            self.suspended.pop(next(iter(self.suspended)))
        self.suspended[group] = tools

    def resume(self, group: str) -> None:
        self.suspended.pop(group, None)

    def after_request(self, seen: RequestSeen) -> None:
        self.last_frame = seen.frame

    def after_response(self, seen: ResponseSeen) -> None:
        """Remember the arguments of each once-per-run call the model asked for, until it runs."""
        for call in seen.response.calls:
            contract = self.contracts.get(call.name)
            if contract is None or not contract.once_per_run:
                continue
            if len(self.once_asked) >= MAX_ONCE_EXECUTIONS:
                self.once_asked.pop(next(iter(self.once_asked)))
            self.once_asked[call.call_id] = (call.name, arguments_key(call.arguments))

    def after_result(self, seen: ToolResultSeen) -> None:
        """A tool returned: a once-per-run execution succeeded; a semantic envelope, or rows its
        contract declares ``settles`` for, settled facts."""
        contract = seen.contract
        if contract is not None and contract.once_per_run:
            asked = self.once_asked.pop(seen.call_id, None)
            # The model's own arguments when it asked for this call, so both sides of the comparison
            # are the same kind of thing; the bound arguments for a call no response announced.
            key = (
                asked[1]
                if asked is not None and asked[0] == seen.tool_name
                else arguments_key(seen.arguments())
            )
            if key is not None and (seen.tool_name, key) not in self.executed:
                if len(self.executed) >= MAX_ONCE_EXECUTIONS:
                    self.executed.pop(next(iter(self.executed)))
                self.executed[(seen.tool_name, key)] = Execution(seen.call_id, self.epoch)
        if self.contracts.any_claims():
            rows = fact_rows_of(
                settled_value(seen.result), tool_name=seen.tool_name, call_id=seen.call_id, epoch=self.epoch
            )
            if contract is not None and contract.settles is not None:
                # Plain rows settle facts too, where the tool's contract says which fields do.
                rows.extend(
                    declared_fact_rows(
                        seen.reading,
                        seen.result,
                        contract.settles,
                        tool_name=seen.tool_name,
                        call_id=seen.call_id,
                        epoch=self.epoch,
                    )
                )
            for row in rows:
                if len(self.facts) >= MAX_FACT_ROWS_PER_RUN:
                    self.facts.popleft()
                self.facts.append(row)
