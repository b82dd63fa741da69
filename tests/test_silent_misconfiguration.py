"""No misconfiguration is silent: each is said where it happens, naming the fix, once.

The laws under test, each against the real library a user meets it with:
(a) ``ci.setup()`` before ``logfire.configure()``: the run's spans go to Logfire's provider, so the
    run's summary span has no run span above it in our recording. One log line names the cause and
    the fix, once however many runs; the report's problem about the orphaned summary names it too;
(b) next to Logfire configured first: the meter provider (and, with log events, the logger provider)
    Logfire installed is used, not replaced: OpenTelemetry prints no "Overriding of current ..."
    line, our findings counter reaches Logfire's metric readers, and nothing we log on setup() is
    a warning (where traces go is information);
(c) a LangChain agent created before ``setup()`` (its middleware read once, at ``create_agent``) is
    told once, at its first run, naming the fix; an agent created after it is not;
(d) ``ci.semantic`` facts or series in a shape the claim check cannot read: one warning, naming
    the call site and the shape wanted, once per call site and problem, bounded; the tool still
    gets its envelope, and never an exception;
(e) a typo'd ``arguments_from`` producer, and a declared tool the agent never offers, get the
    nearest declared or offered name suggested in the warnings that already name them;
(f) ``ci.tool(result_column=...)``'s keyword error names the function, never "Tool None".
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.contracts import semantic as semantic_module
from context_integrity.limits import MAX_WARNED_SEMANTIC_SHAPES
from context_integrity.telemetry.schema import names

ROOT = Path(__file__).resolve().parents[1]


def _python(*parts: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """A script of its own process, each part dedented apart (the agents are shared parts)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    clean["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + str(ROOT)
    clean["CONTEXT_INTEGRITY_RECORDING"] = str(tmp_path / "recording.otlp.jsonl")
    return subprocess.run(
        [sys.executable, "-c", "\n".join(textwrap.dedent(part) for part in parts)],
        capture_output=True,
        text=True,
        env=clean,
        timeout=180,
        cwd=tmp_path,
    )


# A pydantic-ai agent whose one tool returns a LUN 0 written as '': one column-type-mismatch a run.
AGENT = """
from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models.function import FunctionModel

def model(messages, info):
    if len(messages) == 1:
        return pm.ModelResponse(parts=[pm.ToolCallPart("host_group_mappings", {"host_group": "vdi-a"}, tool_call_id="call_lun")])
    return pm.ModelResponse(parts=[pm.TextPart("done")])

agent = Agent(FunctionModel(model), name="storage")

@agent.tool_plain
@ci.tool(result_columns={"logical_unit_number": "number", "host_group": "string"})
def host_group_mappings(host_group: str) -> list:
    return [{"host_group": "vdi-a", "logical_unit_number": ""}, {"host_group": "vdi-a", "logical_unit_number": 3}]
"""


def test_setup_before_logfire_configure_is_said_once_naming_the_fix(tmp_path: Path) -> None:
    done = _python(
        """
        import logging
        logging.basicConfig(level=logging.WARNING, format="LOG %(levelname)s %(name)s: %(message)s")
        import context_integrity as ci
        ci.setup(check_column_types="warn")
        import logfire
        logfire.configure(send_to_logfire=False, console=False, inspect_arguments=False)
        logfire.instrument_pydantic_ai()
        """,
        AGENT,
        """
        for _ in range(3):
            agent.run_sync("Map host group vdi-a.")
        ci.flush()
        """,
        tmp_path=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    told = [line for line in done.stderr.splitlines() if "logfire.configure()" in line]
    assert len(told) == 1, done.stderr
    (line,) = told
    assert line.startswith("LOG WARNING context_integrity:")
    assert "ci.setup() after" in line and "tracer_provider=" in line
    # Where setup() sends the summary, said as setup() says it (here: no endpoint, the recording).
    assert (
        "summary follows ci.setup()'s pipeline (no OTLP endpoint is configured, so traces are recorded"
        in line
    )
    report = subprocess.run(
        [sys.executable, "-m", "context_integrity.cli", "report", str(tmp_path / "recording.otlp.jsonl")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=60,
    )
    flat = " ".join(report.stdout.split())
    assert "no run span above it" in flat
    assert "after ci.setup()" in flat and "logfire.configure()" in flat


def test_setup_after_logfire_joins_its_providers_without_a_warning(tmp_path: Path) -> None:
    done = _python(
        f"FINDINGS_METRIC, DISPOSITION_SPAN = {names.FINDINGS_METRIC!r}, {names.DISPOSITION_SPAN!r}",
        """
        import json, logging
        logging.basicConfig(level=logging.INFO, format="LOG %(levelname)s %(name)s: %(message)s")
        import logfire
        from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
        from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        spans, reader, logs = InMemorySpanExporter(), InMemoryMetricReader(), InMemoryLogRecordExporter()
        logfire.configure(
            send_to_logfire=False, console=False, inspect_arguments=False,
            additional_span_processors=[SimpleSpanProcessor(spans)],
            metrics=logfire.MetricsOptions(additional_readers=[reader]),
            advanced=logfire.AdvancedOptions(log_record_processors=[SimpleLogRecordProcessor(logs)]),
        )
        logfire.instrument_pydantic_ai()
        import context_integrity as ci
        state = ci.setup(check_column_types="warn", log_events=True)
        """,
        AGENT,
        """
        agent.run_sync("Map host group vdi-a.")
        ci.flush()
        data = reader.get_metrics_data()
        points = [
            (metric.name, point.value)
            for rm in (data.resource_metrics if data is not None else [])
            for sm in rm.scope_metrics for metric in sm.metrics for point in metric.data.data_points
            if metric.name == FINDINGS_METRIC
        ]
        print(json.dumps({
            "points": points,
            "log_events": [r.log_record.event_name for r in logs.get_finished_logs()],
            "summaries": [s.name for s in spans.get_finished_spans() if s.name == DISPOSITION_SPAN],
        }))
        """,
        tmp_path=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "Overriding of current" not in done.stderr, done.stderr
    ours = [
        line for line in done.stderr.splitlines() if line.startswith("LOG ") and " context_integrity:" in line
    ]
    assert ours and all(line.startswith("LOG INFO") for line in ours), done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert [names.FINDINGS_METRIC, 1] in seen["points"]
    assert names.FINDING_EVENT in seen["log_events"]
    assert seen["summaries"] == [names.DISPOSITION_SPAN]
    assert not (tmp_path / "recording.otlp.jsonl").exists()  # nothing fell back to the local file


# ── (c) LangChain: an agent created before setup() ─────────────────────────

LANGCHAIN_AGENT = """
from typing import Any
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

class Model(FakeMessagesListChatModel):
    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self.bind(tools=list(tools), tool_choice=tool_choice, **kwargs)

@tool("lun_mappings")
def mappings(host_group: str) -> list:
    \"\"\"The LUN mappings of a host group.\"\"\"
    return [{"logical_unit_number": ""}, {"logical_unit_number": 3}]

mappings.metadata = {"context_integrity": {"result_columns": {"logical_unit_number": "number"}}}

def agent(name):
    model = Model(responses=[
        AIMessage(content="", tool_calls=[{"name": "lun_mappings", "args": {"host_group": "a"}, "id": "c1", "type": "tool_call"}]),
        AIMessage(content="done"),
    ] * 3)
    return create_agent(model, tools=[mappings], name=name)

QUESTION = {"messages": [{"role": "user", "content": "why can't vdi-a see its boot LUN?"}]}
"""


def test_a_langchain_agent_created_before_setup_is_told_once_at_its_first_run(tmp_path: Path) -> None:
    done = _python(
        """
        import logging
        logging.basicConfig(level=logging.WARNING, format="LOG %(levelname)s %(name)s: %(message)s")
        import context_integrity as ci
        """,
        LANGCHAIN_AGENT,
        """
        early = agent("early")
        ci.setup(check_column_types="warn")
        late = agent("late")
        for _ in range(3):
            early.invoke(QUESTION)
            late.invoke(QUESTION)
        ci.flush()
        """,
        tmp_path=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    told = [line for line in done.stderr.splitlines() if "before ci.setup()" in line]
    assert len(told) == 1, done.stderr
    (line,) = told
    assert line.startswith("LOG WARNING context_integrity:")
    assert "'early'" in line and "'late'" not in line
    assert "ContextIntegrityMiddleware()" in line
    from context_integrity.recording import read_recording

    judged = read_recording(tmp_path / "recording.otlp.jsonl").runs
    assert {run.agent for run in judged} == {"late"}  # the early agent was told about, not judged


# ── (d) semantic facts in a shape nothing can read ─────────────────────────

UNREADABLE = [
    ("no-entity", {"facts": [{"port": "fc1/3", "status": "down"}]}, ("'entity'", "'port', 'status'")),
    ("entity-not-text", {"facts": [{"entity": 7, "status": "down"}]}, ("'entity'", "int")),
    ("entity-only", {"facts": [{"entity": "fc1/3"}]}, ("'fc1/3'", "no field")),
    ("facts-a-mapping", {"facts": {"entity": "fc1/3", "status": "down"}}, ("facts", "list")),
    ("row-not-a-mapping", {"facts": [("fc1/3", "down")]}, ("facts", "tuple")),
    ("point-no-metric", {"series": [{"entity": "fc1/3", "value": 3}]}, ("'metric'",)),
    ("point-no-value", {"series": [{"entity": "fc1/3", "metric": "crc"}]}, ("'value'",)),
]


@pytest.mark.parametrize(("case", "given", "words"), UNREADABLE, ids=[c[0] for c in UNREADABLE])
def test_semantic_facts_nothing_can_read_are_told_where_they_are_made(
    case: str, given: dict[str, Any], words: tuple[str, ...], caplog: pytest.LogCaptureFixture
) -> None:
    semantic_module._TOLD_SHAPES.clear()

    def port_status() -> dict[str, object]:
        return ci.semantic(**given)

    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        for _ in range(3):
            envelope = port_status()
    assert isinstance(envelope, dict)  # the tool still returns its envelope
    told = [r for r in caplog.records if "ci.semantic(" in r.getMessage()]
    assert len(told) == 1, [r.getMessage() for r in caplog.records]
    message = told[0].getMessage()
    assert "port_status" in message and Path(__file__).name in message  # where the facts are made
    assert "unreachable" in message
    for word in words:
        assert word in message, message


def test_readable_semantic_facts_say_nothing(caplog: pytest.LogCaptureFixture) -> None:
    semantic_module._TOLD_SHAPES.clear()
    with caplog.at_level(logging.DEBUG, logger="context_integrity"):
        ci.semantic(
            facts=[{"entity": "fc1/3", "status": "down", "crc_errors": 212}],
            series=[{"entity": "fc1/3", "metric": "crc_errors", "value": 212, "t": "2026-01-01T00:00:00Z"}],
        )
    assert caplog.records == []


def test_semantic_shape_warnings_are_bounded(caplog: pytest.LogCaptureFixture) -> None:
    semantic_module._TOLD_SHAPES.clear()
    source = "\n".join(
        f"def settle_{i}():\n    return ci.semantic(facts=[{{'port': 'p{i}'}}])"
        for i in range(MAX_WARNED_SEMANTIC_SHAPES + 5)
    )
    scope: dict[str, Any] = {"ci": ci}
    exec(compile(source, "many_call_sites.py", "exec"), scope)
    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        for i in range(MAX_WARNED_SEMANTIC_SHAPES + 5):
            scope[f"settle_{i}"]()
    told = [r for r in caplog.records if "ci.semantic(" in r.getMessage()]
    assert len(told) == MAX_WARNED_SEMANTIC_SHAPES == len(semantic_module._TOLD_SHAPES)


# ── (e) near matches ───────────────────────────────────────────────────────


def test_a_typod_producer_gets_the_nearest_declared_name(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry.configure(check_column_types="warn")
    ci.declare_tool("list_hosts_nearby")
    ci.declare_tool("host_paths_nearby", arguments_from=["list_host_nearby"])
    with caplog.at_level(logging.WARNING, logger="context_integrity"), ci.run("q"):
        pass
    (line,) = [r.getMessage() for r in caplog.records if "list_host_nearby" in r.getMessage()]
    assert "did you mean 'list_hosts_nearby'?" in line


def test_a_typod_declaration_gets_the_nearest_offered_name(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    from context_integrity.integrations.functions import warn_unoffered

    ci.declare_tool("host_group_mapings", result_columns={"lun": "number"})
    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        warn_unoffered(
            "pydantic-ai",
            "storage",
            ["host_group_mappings", "port_counters"],
            superseded=frozenset(),
            fix="the tool's name",
        )
    (line,) = [r.getMessage() for r in caplog.records if "host_group_mapings" in r.getMessage()]
    assert "'host_group_mapings' (did you mean 'host_group_mappings'?)" in line


# ── (f) the keyword error names the function ───────────────────────────────


def test_a_misspelled_keyword_names_the_function_not_none(isolated_contracts: None) -> None:
    with pytest.raises(ci.DeclarationError) as refused:

        @ci.tool(result_column={"lun": "number"})  # type: ignore[call-overload, untyped-decorator]
        def host_group_mappings() -> list[dict[str, int]]:
            return []

    message = str(refused.value)
    assert "None" not in message
    assert message.startswith("Tool 'host_group_mappings':")
    assert "'result_columns'" in message
