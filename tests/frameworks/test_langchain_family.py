"""The rest of the family through LangChain v1 ``create_agent`` (real, offline, scripted model).

The laws under test:
(a) the wire reader works on the framework's model client: a chat model that sends its request
    through an httpx client (scripted transport, no network) whose body carries a tool the agent
    never offered -> one invariant-violation @ wire on that model call's ``chat`` span;
(b) the installer finds every httpx client inside a LangChain-shaped chat model (``root_client``,
    ``root_async_client``);
(c) the claim seam reads the framework's typed structured output: a tool settled the fact with
    ``ci.semantic``, the structured response contradicts it -> one unsupported-claim on the run span,
    the structured response returned unchanged;
(d) ``once_per_run`` is declared through ``BaseTool.metadata``: the second equal call is one
    duplicate-execution on the ``chat`` span of the response that asked for it.
"""

from __future__ import annotations

import os
import types
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.conftest import Telemetry

try:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatResult
    from langchain_core.tools import tool
except ImportError:  # pragma: no cover - CI installs the extra
    if os.environ.get("CI"):
        raise
    pytest.skip("langchain is not installed", allow_module_level=True)

from opentelemetry.sdk.trace import ReadableSpan
from pydantic import BaseModel, ConfigDict, Field

import context_integrity as ci
from context_integrity.integrations import langchain as integration
from context_integrity.telemetry.schema import names

QUESTION = [{"role": "user", "content": "is fc1/3 healthy?"}]


def _ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={})


class WiredModel(FakeMessagesListChatModel):
    """A scripted chat model that, like a provider SDK, serializes each request onto an httpx client."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    http: Any = None
    injected: list[str] = Field(default_factory=list)

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self.bind(tools=list(tools), tool_choice=tool_choice, **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        names_ = [getattr(t, "name", None) or getattr(t, "__name__", "") for t in kw.get("tools", [])]
        body = {"tools": [{"type": "function", "function": {"name": n}} for n in [*names_, *self.injected]]}
        self.http.post("http://model.test/v1/chat/completions", json=body)
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kw)


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}]
    )


def events(span: ReadableSpan) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == names.FINDING_EVENT]


@pytest.fixture
def armed(telemetry: Telemetry) -> Iterator[Telemetry]:
    integration.instrument_all()
    yield telemetry
    integration.uninstrument_all()


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    client = httpx.Client(transport=httpx.MockTransport(_ok))
    yield client
    client.close()


def _list_hosts() -> Any:
    @tool("list_hosts")
    def list_hosts() -> list[dict[str, str]]:
        """Every host."""
        return [{"host": "esx-07"}]

    return list_hosts


def test_the_wire_reader_reads_the_framework_model_clients_body(armed: Telemetry, http: httpx.Client) -> None:
    armed.configure()
    model = WiredModel(responses=[AIMessage(content="done")], http=http, injected=["trace_eval"])
    reader = ci.install_wire_reader(http)
    try:
        create_agent(model, tools=[_list_hosts()]).invoke({"messages": QUESTION})
    finally:
        reader.uninstall()
    (chat,) = [s for s in armed.finished() if s.name.startswith(names.OPERATION_CHAT)]
    (event,) = events(chat)
    assert (event[names.FINDING_KIND], event[names.FINDING_SEAM]) == ("invariant-violation", "wire")
    assert "'trace_eval'" in event[names.FINDING_MESSAGE] and "list_hosts" not in event[names.FINDING_MESSAGE]


def test_the_installer_finds_the_clients_inside_a_langchain_shaped_model() -> None:
    openai = pytest.importorskip("openai")
    sync_http = httpx.Client(transport=httpx.MockTransport(_ok))
    async_http = httpx.AsyncClient(transport=httpx.MockTransport(_ok))
    chat_model = types.SimpleNamespace(
        root_client=openai.OpenAI(api_key="sk-test", http_client=sync_http),
        root_async_client=openai.AsyncOpenAI(api_key="sk-test", http_client=async_http),
    )
    reader = ci.install_wire_reader(chat_model)
    try:
        assert len(sync_http.event_hooks["request"]) == 1
        assert len(async_http.event_hooks["request"]) == 1
    finally:
        reader.uninstall()
    assert sync_http.event_hooks["request"] == [] and async_http.event_hooks["request"] == []


class PortAnswer(BaseModel):
    port: str
    status: str


def test_the_claim_seam_reads_the_structured_response(armed: Telemetry) -> None:
    armed.configure()

    @tool("port_status")
    def port_status(port: str) -> dict[str, object]:
        """The link state of one port."""
        return ci.semantic(facts=[{"entity": port, "status": "down"}])

    ci.declare_claims(PortAnswer, {"status": ("fc1/3", "status")})
    model = WiredModel(
        responses=[
            call("port_status", {"port": "fc1/3"}, "c1"),
            call("PortAnswer", {"port": "fc1/3", "status": "healthy"}, "c2"),
        ],
        http=httpx.Client(transport=httpx.MockTransport(_ok)),
    )
    result = create_agent(model, tools=[port_status], response_format=PortAnswer).invoke(
        {"messages": QUESTION}
    )
    assert result["structured_response"] == PortAnswer(port="fc1/3", status="healthy")  # detection only
    (run_span,) = armed.named(names.run_span_name("agent"))
    (event,) = events(run_span)
    assert (event[names.FINDING_KIND], event[names.FINDING_PREDICATE]) == ("unsupported-claim", "status")
    assert event[names.witness_attribute(0, "value")] == "down"


def test_once_per_run_through_tool_metadata(armed: Telemetry) -> None:
    armed.configure()
    ran: list[str] = []

    @tool("provision_disk")
    def provision_disk(vm: str, size_gb: int) -> str:
        """Provision a disk."""
        ran.append(vm)
        return "provisioned"

    provision_disk.metadata = {"context_integrity": {"once_per_run": True}}
    same = {"vm": "vdi-a-gold", "size_gb": 40}
    model = WiredModel(
        responses=[
            call("provision_disk", dict(same), "p1"),
            call("provision_disk", dict(same), "p2"),
            AIMessage(content="done"),
        ],
        http=httpx.Client(transport=httpx.MockTransport(_ok)),
    )
    create_agent(model, tools=[provision_disk]).invoke({"messages": QUESTION})
    assert ran == ["vdi-a-gold", "vdi-a-gold"]
    chats = [s for s in armed.finished() if s.name.startswith(names.OPERATION_CHAT)]
    found = [(i, e) for i, s in enumerate(chats) for e in events(s)]
    assert [(i, e[names.FINDING_KIND], e[names.GEN_AI_TOOL_CALL_ID]) for i, e in found] == [
        (1, "duplicate-execution", "p2")
    ]
