"""One scripted storage-triage run, on each framework, recorded by a third-party instrumentation only.

The demo's defects, as plain tools that know nothing of this library: LUN 0 written as ``''`` and
counters as quoted strings (column-type-mismatch), a declared column never delivered
(missing-column), a host name the model lifts from its own text (unsupported-argument), a disk
provisioned twice with the same arguments (duplicate-execution), a volume the run served looked up
where it is keyed otherwise (empty-lookup). :data:`DECLARATIONS` are what the
team declared about these tools: the same declarations judge the run in process (``ci.declare_tool``)
and offline (a :class:`~context_integrity.judge.ContractBook`).

Run as a script, it records one run the way a user's agent process does, with no ``ci.setup``: the
framework, one instrumentation, spans exported to an OTLP/JSON lines file::

    python -m tests.traces.recorded_agents pydantic_ai openinference /tmp/run.jsonl [RUNS]

Every model is scripted and offline: pydantic-ai's ``FunctionModel``; the Agents SDK's Chat Completions
model over an httpx mock transport (a real client, so the SDK traces what it sent and got); a LangChain
chat model that binds tools as provider models do; smolagents' ``Model`` with scripted messages.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from pydantic import BaseModel

from context_integrity.contracts import define_contract
from context_integrity.contracts.claims import define_answer_claims
from context_integrity.judge import ContractBook, Dials

AGENT: Final = "storage-triage"
QUESTION: Final = "Why can't the vdi-a desktops see their boot LUN, and is the fabric healthy?"
INSTRUCTIONS: Final = "You triage a storage estate. Use the tools; never guess identifiers."
WWPN: Final = "c0:50:76:0a:11:7e:00:10"
ANSWER: Final = "LUN 0 is missing from the vdi-a mapping; port fc1/3 shows CRC errors."


# ── the tools, bugs and all (no decorator of ours: the agent never imports this library) ──
def list_hosts() -> list[dict[str, str]]:
    """Every host with its initiator WWPN."""
    return [{"host": "esx-07", "wwpn": WWPN}, {"host": "esx-08", "wwpn": "c0:50:76:0a:11:7e:00:12"}]


def host_group_mappings(host_group: str) -> list[dict[str, Any]]:
    """The LUN mappings of a host group."""
    # The field bug: LUN 0 is falsy, so it became an empty string.
    return [{"host_group": host_group, "logical_unit_number": lun or ""} for lun in (0, 1, 2)]


def port_counters(switch: str) -> list[dict[str, Any]]:
    """Traffic counters of a switch's ports."""
    # The family bug: every number rendered as a quoted string on the way out.
    rows = [
        {"port": "fc1/1", "frames_per_sec": 1240, "crc_errors": 0},
        {"port": "fc1/3", "frames_per_sec": 0, "crc_errors": 212},
    ]
    return [{key: str(value) for key, value in row.items()} for row in rows]


def array_volumes(array: str) -> list[dict[str, Any]]:
    """The volumes of an array, with their tier."""
    # The field bug: the tier moved to another endpoint and the column silently vanished.
    return [{"volume": "vdi-a-boot", "size_gb": 40}, {"volume": "vdi-a-data", "size_gb": 500}]


def volume_snapshots(volume: str) -> list[dict[str, str]]:
    """The snapshots of a volume."""
    # The join bug: snapshots are keyed by the volume's id, so a lookup by its name finds nothing.
    return []


def host_paths(host: str) -> list[dict[str, str]]:
    """The storage paths of one host."""
    return [{"path": "vmhba2:C0:T1:L0", "state": "active"}]


def provision_disk(vm: str, size_gb: int) -> str:
    """Provision a new disk for a VM: it must happen once per run."""
    return f"disk of {size_gb} GB provisioned for {vm}"


TOOLS: Final[tuple[Callable[..., Any], ...]] = (
    list_hosts,
    host_group_mappings,
    port_counters,
    array_volumes,
    volume_snapshots,
    host_paths,
    provision_disk,
)

# What the team declared about those tools: the same declarations in process and offline.
DECLARATIONS: Final[Mapping[str, Mapping[str, Any]]] = {
    "list_hosts": {},
    "host_group_mappings": {"result_columns": {"host_group": "string", "logical_unit_number": "number"}},
    "port_counters": {
        "result_columns": {"port": "string", "frames_per_sec": "number", "crc_errors": "number"}
    },
    "array_volumes": {"result_columns": {"volume": "string", "size_gb": "number", "tier": "string"}},
    "volume_snapshots": {"arguments_from": ["array_volumes"]},
    "host_paths": {"arguments_from": ["list_hosts"]},
    "provision_disk": {"once_per_run": True},
}
DIALS: Final = Dials(check_column_types="warn", notice_empty_lookups=True, notice_prior_turn_evidence=True)
SETUP_DIALS: Final[Mapping[str, Any]] = {
    "check_column_types": "warn",
    "notice_empty_lookups": True,
    "notice_prior_turn_evidence": True,
}


def contract_book() -> ContractBook:
    book = ContractBook()
    for name, declared in DECLARATIONS.items():
        book.declare(define_contract(name, **declared))
    return book


@dataclass(frozen=True)
class Turn:
    """One scripted model response: its text, and the calls it makes (tool, arguments, call id)."""

    text: str | None
    calls: tuple[tuple[str, dict[str, Any], str], ...] = ()


DISK: Final[dict[str, Any]] = {"vm": "vdi-a-gold", "size_gb": 40}
SCRIPT: Final[tuple[Turn, ...]] = (
    Turn(None, (("list_hosts", {}, "call-1"),)),
    Turn(None, (("host_group_mappings", {"host_group": "vdi-a"}, "call-2"),)),
    Turn(None, (("port_counters", {"switch": "edge-sw-02"}, "call-3"),)),
    Turn(None, (("array_volumes", {"array": "fs-array-2"}, "call-4"),)),
    # A volume the run served, looked up where it is keyed otherwise: nothing comes back.
    Turn(None, (("volume_snapshots", {"volume": "vdi-a-boot"}, "call-4s"),)),
    # The host name comes from the model's own text, never from list_hosts.
    Turn(
        "The initiator belongs to esx-07-mgmt; checking its paths.",
        (("host_paths", {"host": "esx-07-mgmt"}, "call-5"),),
    ),
    Turn(None, (("provision_disk", dict(DISK), "call-6"),)),
    # The first call returned; the model, unsure, asks for the same disk again.
    Turn(None, (("provision_disk", dict(DISK), "call-7"),)),
    Turn(ANSWER),
)


# ── pydantic-ai ──────────────────────────────────────────────────────────
def pydantic_ai_agent(instrument: Any = None) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = SCRIPT[sum(1 for m in messages if m.kind == "response")]
        parts: list[Any] = [TextPart(turn.text)] if turn.text else []
        parts += [ToolCallPart(name, args, tool_call_id=call_id) for name, args, call_id in turn.calls]
        return ModelResponse(parts=parts)

    agent = Agent(
        FunctionModel(model, model_name="scripted"), name=AGENT, instructions=INSTRUCTIONS, tools=list(TOOLS)
    )
    if instrument is not None:
        agent.instrument = instrument
    return agent


def run_pydantic_ai(agent: Any) -> str:
    return str(agent.run_sync(QUESTION).output)


# ── the OpenAI Agents SDK ────────────────────────────────────────────────
def chat_completion(turn: Turn, final_answer_tool: str | None = None) -> dict[str, Any]:
    """The Chat Completions response playing ``turn``; with ``final_answer_tool``, a text answer is a
    call of that tool (smolagents' agents answer so)."""
    calls = list(turn.calls)
    if not calls and final_answer_tool is not None:
        calls = [(final_answer_tool, {"answer": turn.text}, "call-answer")]
    message: dict[str, Any] = {
        "role": "assistant",
        "content": turn.text if turn.calls or final_answer_tool is None else None,
    }
    if calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for name, args, call_id in calls
        ]
    choice = {"index": 0, "finish_reason": "tool_calls" if calls else "stop", "message": message}
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [choice],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def scripted_transport(final_answer_tool: str | None = None) -> Any:
    """An httpx (the OpenAI client's own line) transport answering each request with the next turn."""
    import httpx2

    played = iter(SCRIPT)

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=chat_completion(next(played), final_answer_tool))

    return httpx2.MockTransport(handler)


def chat_completions_model() -> Any:
    """The SDK's Chat Completions model on a real OpenAI client whose transport plays :data:`SCRIPT`."""
    import httpx2
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    client = AsyncOpenAI(
        api_key="sk-offline-never-used",
        base_url="http://model.test/v1",
        http_client=httpx2.AsyncClient(transport=scripted_transport()),
    )
    return OpenAIChatCompletionsModel(model="scripted", openai_client=client)


def run_openai_agents() -> str:
    from agents import Agent, Runner, function_tool

    agent = Agent(
        name=AGENT,
        instructions=INSTRUCTIONS,
        model=chat_completions_model(),
        tools=[function_tool(tool) for tool in TOOLS],
    )
    return str(asyncio.run(Runner.run(agent, QUESTION)).final_output)


# ── LangChain ────────────────────────────────────────────────────────────
def langchain_model(script: Sequence[Turn] = SCRIPT) -> Any:
    """A chat model playing ``script`` (one turn per AI message the history holds) that binds tools as provider chat models do (their OpenAI
    schemas) and serializes like them, so tracers see what they see from a real model."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool

    class ScriptedChatModel(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        @classmethod
        def is_lc_serializable(cls) -> bool:
            return True

        def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
            return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

        def _generate(
            self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            turn = script[sum(1 for m in messages if m.type == "ai")]
            calls = [{"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in turn.calls]
            reply = AIMessage(content=turn.text or "", tool_calls=calls)
            return ChatResult(generations=[ChatGeneration(message=reply)])

    return ScriptedChatModel()


def run_langchain() -> str:
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    agent = create_agent(
        langchain_model(), tools=[tool(t) for t in TOOLS], system_prompt=INSTRUCTIONS, name=AGENT
    )
    result = agent.invoke({"messages": [{"role": "user", "content": QUESTION}]})
    return str(result["messages"][-1].content)


# ── smolagents (no integration of ours) ──────────────────────────────────
def run_smolagents() -> str:
    """A ``ToolCallingAgent`` on smolagents' own OpenAI model, whose client's transport plays the
    script (a text answer is a ``final_answer`` call, as smolagents' agents answer)."""
    import httpx2
    from smolagents import OpenAIModel, Tool, ToolCallingAgent

    def as_tool(function: Callable[..., Any]) -> Tool:
        import inspect

        parameters = inspect.signature(function).parameters
        kinds = {int: "integer", "int": "integer"}

        class Wrapped(Tool):  # type: ignore[misc]  # smolagents ships no type information
            name = function.__name__
            description = function.__doc__ or function.__name__
            inputs: ClassVar[dict[str, dict[str, str]]] = {
                n: {"type": kinds.get(p.annotation, "string"), "description": n}
                for n, p in parameters.items()
            }
            output_type = "object"
            skip_forward_signature_validation = True

            def forward(self, **arguments: Any) -> Any:
                return function(**arguments)

        return Wrapped()

    model = OpenAIModel(
        model_id="scripted",
        api_base="http://model.test/v1",
        api_key="sk-offline-never-used",
        client_kwargs={"http_client": httpx2.Client(transport=scripted_transport("final_answer"))},
    )
    agent = ToolCallingAgent(
        tools=[as_tool(t) for t in TOOLS],
        model=model,
        name="storage_triage",
        max_steps=len(SCRIPT) + 2,
        verbosity_level=0,
    )
    return str(agent.run(QUESTION))


# ── a conversation: a typed answer claiming a fact, and a follow-up answered from memory ──
FOLLOW_UP: Final = "And is that port still failing?"
PORT: Final = "fc1/3"


def link_status(switch: str) -> list[dict[str, str]]:
    """The link status of a switch's ports."""
    return [{"port": "fc1/1", "status": "up"}, {"port": PORT, "status": "down"}]


class PortReport(BaseModel):
    """The agent's typed answer: a port and the status it claims the port has."""

    port: str
    status: str


# The tool's rows settle each port's status; the answer's status field claims fc1/3's.
CONVERSATION_DECLARATIONS: Final[Mapping[str, Mapping[str, Any]]] = {
    "link_status": {"settles": {"entity": "port", "facts": ["status"]}},
}
CLAIMS: Final[Mapping[str, tuple[str, str]]] = {"status": (PORT, "status")}
CONVERSATION_DIALS: Final = Dials(notice_prior_turn_evidence=True)
CONVERSATION_SETUP_DIALS: Final[Mapping[str, Any]] = {"notice_prior_turn_evidence": True}
# Turn 1 reads the status and answers it wrong (the port is down); turn 2, asked a follow-up, answers
# from what turn 1 served without looking again.
CONVERSATION: Final[tuple[tuple[Turn, ...], ...]] = (
    (
        Turn(None, (("link_status", {"switch": "edge-sw-02"}, "call-s1"),)),
        Turn(json.dumps({"port": PORT, "status": "healthy"})),
    ),
    (Turn(json.dumps({"port": PORT, "status": "down"})),),
)


def conversation_book() -> ContractBook:
    """The conversation's declarations as a trace is judged by them: a recorded answer has JSON and no
    class, so the claims are read from the agent's structured answers."""
    book = ContractBook()
    for name, declared in CONVERSATION_DECLARATIONS.items():
        book.declare(define_contract(name, **declared))
    book.declare_claims(define_answer_claims(dict(CLAIMS), agent=AGENT))
    return book


def run_pydantic_ai_conversation(instrument: Any = None) -> list[str]:
    """Both turns on one pydantic-ai agent with a typed output (its output tool), the second given the
    first's messages; each turn is a run of its own."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked = sum(1 for m in messages if _asks(m))
        turns = CONVERSATION[asked - 1]
        since = max(i for i, m in enumerate(messages) if _asks(m))
        turn = turns[sum(1 for m in messages[since:] if m.kind == "response")]
        if turn.calls:
            return ModelResponse(parts=[ToolCallPart(n, a, tool_call_id=i) for n, a, i in turn.calls])
        output = info.output_tools[0].name
        assert turn.text is not None
        return ModelResponse(parts=[ToolCallPart(output, json.loads(turn.text), tool_call_id=f"out-{asked}")])

    agent = Agent(
        FunctionModel(model, model_name="scripted"),
        name=AGENT,
        instructions=INSTRUCTIONS,
        tools=[link_status],
        output_type=PortReport,
    )
    if instrument is not None:
        agent.instrument = instrument
    first = agent.run_sync("Which port of edge-sw-02 is failing?")
    second = agent.run_sync(FOLLOW_UP, message_history=first.all_messages())
    return [first.output.model_dump_json(), second.output.model_dump_json()]


# The same conversation in words: a LangChain agent answers in text (no typed answer to claim from).
SPOKEN_CONVERSATION: Final[tuple[Turn, ...]] = (
    Turn(None, (("link_status", {"switch": "edge-sw-02"}, "call-s1"),)),
    Turn(f"Port {PORT} reads as healthy."),
    Turn(f"Port {PORT} is still down."),
)


def run_langchain_conversation() -> list[str]:
    """Both turns on one LangChain agent, the second invoked with the first's messages."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    agent = create_agent(
        langchain_model(SPOKEN_CONVERSATION),
        tools=[tool(link_status)],
        system_prompt=INSTRUCTIONS,
        name=AGENT,
    )
    first = agent.invoke({"messages": [{"role": "user", "content": "Which port of edge-sw-02 is failing?"}]})
    second = agent.invoke({"messages": [*first["messages"], {"role": "user", "content": FOLLOW_UP}]})
    return [str(first["messages"][-1].content), str(second["messages"][-1].content)]


def _asks(message: Any) -> bool:
    from pydantic_ai.messages import ModelRequest

    return isinstance(message, ModelRequest) and message.parts[-1].part_kind == "user-prompt"


# ── recording, as a user's agent process does ────────────────────────────
def _file_processor(path: str) -> Any:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from context_integrity.telemetry.export.file_export import OtlpJsonLinesSpanExporter

    return SimpleSpanProcessor(OtlpJsonLinesSpanExporter(path))


def _provider(path: str, *before: Any) -> Any:
    """A provider writing to ``path``, after the span processors ``before`` (one that maps spans must
    run before the exporter sees them)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider(resource=Resource.create({"service.name": AGENT}))
    for processor in (*before, _file_processor(path)):
        provider.add_span_processor(processor)
    return provider


def _quiet_agents_sdk() -> None:
    """The Agents SDK's default trace processor uploads to OpenAI: nothing leaves this machine."""
    from agents import set_trace_processors

    os.environ.setdefault("OPENAI_API_KEY", "sk-offline-never-used")
    set_trace_processors([])


def _logfire(path: str) -> None:
    import logfire

    logfire.configure(
        send_to_logfire=False,
        console=False,
        inspect_arguments=False,
        service_name=AGENT,
        additional_span_processors=[_file_processor(path)],
    )


def _played(runs: int, play: Callable[[], str]) -> str:
    """The scripted run played ``runs`` times in this process (one trace each); the last answer."""
    answer = ""
    for _ in range(runs):
        answer = play()
    return answer


def record(framework: str, instrumentation: str, path: str, runs: int = 1) -> str:
    """Run the scripted agent ``runs`` times on ``framework`` with ``instrumentation`` only; spans go
    to ``path``. The frameworks ``pydantic_ai_conversation`` and ``langchain_conversation`` play the
    two-turn conversation once (:data:`CONVERSATION`, :data:`SPOKEN_CONVERSATION`)."""
    if framework in ("pydantic_ai", "pydantic_ai_conversation"):
        from pydantic_ai.models.instrumented import InstrumentationSettings

        instrument: Any = None
        if instrumentation == "pydantic_ai":
            instrument = InstrumentationSettings(tracer_provider=_provider(path))
        elif instrumentation == "logfire":
            import logfire

            _logfire(path)
            logfire.instrument_pydantic_ai()
        elif instrumentation == "openinference":
            from openinference.instrumentation.pydantic_ai import OpenInferenceSpanProcessor

            instrument = InstrumentationSettings(
                tracer_provider=_provider(path, OpenInferenceSpanProcessor())
            )
        else:
            raise SystemExit(f"no recording for {framework} under {instrumentation}")
        if framework == "pydantic_ai_conversation":
            return json.dumps(run_pydantic_ai_conversation(instrument))
        return _played(runs, lambda: run_pydantic_ai(pydantic_ai_agent(instrument)))
    if framework == "openai_agents":
        _quiet_agents_sdk()
        if instrumentation == "openinference":
            from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

            OpenAIAgentsInstrumentor().instrument(tracer_provider=_provider(path))
            return _played(runs, run_openai_agents)
        if instrumentation == "logfire":
            import logfire

            _logfire(path)
            logfire.instrument_openai_agents()
            return _played(runs, run_openai_agents)
        if instrumentation == "contrib":
            from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor as Contrib

            Contrib().instrument(tracer_provider=_provider(path))
            return _played(runs, run_openai_agents)
    if framework == "langchain_conversation":
        if instrumentation == "openinference":
            from openinference.instrumentation.langchain import LangChainInstrumentor

            LangChainInstrumentor().instrument(tracer_provider=_provider(path))
        elif instrumentation == "openllmetry":
            from opentelemetry.instrumentation.langchain import LangchainInstrumentor

            LangchainInstrumentor().instrument(tracer_provider=_provider(path))
        else:
            raise SystemExit(f"no recording for {framework} under {instrumentation}")
        return json.dumps(run_langchain_conversation())
    if framework == "langchain":
        if instrumentation == "openinference":
            from openinference.instrumentation.langchain import LangChainInstrumentor

            LangChainInstrumentor().instrument(tracer_provider=_provider(path))
            return _played(runs, run_langchain)
        if instrumentation == "openllmetry":
            from opentelemetry.instrumentation.langchain import LangchainInstrumentor

            LangchainInstrumentor().instrument(tracer_provider=_provider(path))
            return _played(runs, run_langchain)
    if framework == "smolagents" and instrumentation == "openinference":
        from openinference.instrumentation.smolagents import SmolagentsInstrumentor

        SmolagentsInstrumentor().instrument(tracer_provider=_provider(path))
        return _played(runs, run_smolagents)
    raise SystemExit(f"no recording for {framework} under {instrumentation}")


def main(argv: Sequence[str]) -> int:
    """``FRAMEWORK INSTRUMENTATION PATH [RUNS]``."""
    framework, instrumentation, path, *runs = argv
    answer = record(framework, instrumentation, path, int(runs[0]) if runs else 1)
    print(json.dumps({"answer": answer}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
