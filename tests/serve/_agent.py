"""An agent instrumented only by its framework: pydantic-ai's own OpenTelemetry spans, content on,
no ``ci.setup`` in it; and the contracts the judge holds it to."""

from __future__ import annotations

from typing import Any

from context_integrity.contracts import define_contract
from context_integrity.judge import ContractBook

TOOL = "host_group_mappings"
ROWS: list[dict[str, object]] = [
    {"logical_unit_number": "", "host_group": "hg-1"},
    {"logical_unit_number": 3, "host_group": "hg-2"},
]


def book() -> ContractBook:
    contracts = ContractBook()
    contracts.declare(
        define_contract(TOOL, result_columns={"logical_unit_number": "number", "host_group": "string"})
    )
    return contracts


def run_agent(exporter: Any, **resource: str) -> None:
    """A pydantic-ai agent under pydantic-ai's own instrumentation, exported by ``exporter``."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    provider = TracerProvider(resource=Resource.create({"service.name": "storage-agent", **resource}))
    provider.add_span_processor(BatchSpanProcessor(exporter))

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(TOOL, {}, tool_call_id="call-1")])
        return ModelResponse(parts=[TextPart("LUN 0 is on hg-1.")])

    agent = Agent(FunctionModel(model), name="storage")
    agent.instrument = InstrumentationSettings(tracer_provider=provider, include_content=True)

    @agent.tool_plain
    def host_group_mappings() -> list[dict[str, object]]:
        return [dict(row) for row in ROWS]

    assert agent.run_sync("Which host group has LUN 0?").output == "LUN 0 is on hg-1."
    provider.shutdown()
