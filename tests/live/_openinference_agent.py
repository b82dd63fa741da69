"""A pydantic-ai agent traced by OpenInference alone (no ``ci.setup``), exporting to an OTLP endpoint.

Usage: python _openinference_agent.py OTLP_TRACES_URL PROJECT

The scripted model lists the hosts, then asks for the paths of ``esx-99``, a host the listing never
served: the made-up argument a contracts file declaring ``host_paths`` ``arguments_from``
``list_hosts`` makes an unsupported-argument finding. The spans go to OTLP/HTTP under the Phoenix
project PROJECT. It prints the trace id it wrote.
"""

from __future__ import annotations

import sys

from openinference.instrumentation.pydantic_ai import OpenInferenceSpanProcessor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

QUESTION = "Which paths does host esx-07 have?"
INVENTED_HOST = "esx-99"


def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = sum(1 for message in messages if message.kind == "response")
    if turn == 0:
        return ModelResponse(parts=[ToolCallPart("list_hosts", {}, tool_call_id="call_1")])
    if turn == 1:
        return ModelResponse(
            parts=[ToolCallPart("host_paths", {"host": INVENTED_HOST}, tool_call_id="call_2")]
        )
    return ModelResponse(parts=[TextPart("No paths found.")])


def main(traces_url: str, project: str) -> int:
    provider = TracerProvider(resource=Resource.create({"openinference.project.name": project}))
    provider.add_span_processor(OpenInferenceSpanProcessor())
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=traces_url)))
    agent = Agent(FunctionModel(script), name="triage")
    agent.instrument = InstrumentationSettings(tracer_provider=provider)

    @agent.tool_plain
    def list_hosts() -> list[dict[str, str]]:
        return [{"host": "esx-07", "wwpn": "c0:50:76:0a:11:7e:00:10"}]

    @agent.tool_plain
    def host_paths(host: str) -> list[dict[str, str]]:
        return []

    written = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(written))
    agent.run_sync(QUESTION)
    provider.shutdown()
    (trace_id,) = {
        format(span.context.trace_id, "032x") for span in written.get_finished_spans() if span.context
    }
    print(trace_id, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
