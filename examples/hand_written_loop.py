"""A hand-written agent loop reporting to context-integrity through the loop protocol.

No network and no model key: the "model" is a script of planned responses. Everything else is
what a real loop does -- build a request from the history through a window, report it, ask the
model, report the response, run the tools it called, append their results, repeat until it
answers -- and every step goes through the protocol:

    ci.setup(...)                       once, at start-up
    with ci.run(question) as run:       one agent run: an ``invoke_agent`` span and its ledger
        run.request(frame)              the compose seam: a ``chat`` span, judged before the call
        call.respond(response)          the choice seam: the calls the model made, judged
        decorated_tool(**arguments)     the write seam, for tools the application owns
        run.tool_result(name, id, ...)  the write seam, for tools a framework owns
        run.answer(text)                the final answer

Run it from a checkout:  PYTHONPATH=src python examples/hand_written_loop.py
Traces go where ``ci.setup()`` sends them: OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set, otherwise
a local recording that ``context-integrity report`` prints.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import context_integrity as ci
from context_integrity import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition

WWPN = "c0:50:76:0a:11:7e:00:10"
HOSTS = [
    {"host": "esx-07", "wwpn": WWPN},
    {"host": "esx-08", "wwpn": "c0:50:76:0a:11:7e:00:12"},
]
PATHS = {"esx-07": [{"path": "vmhba2:C0:T1:L0", "state": "active"}]}


# ── Tools the application owns: decorated, declared where they are defined ──
@ci.tool
def list_hosts() -> list[dict[str, str]]:
    """Every host with its initiator WWPN."""
    return [dict(host) for host in HOSTS]


@ci.tool(arguments_from=["list_hosts"])  # its argument must come from a list_hosts result
def host_paths(host: str) -> Any:
    """The storage paths of one host."""
    paths = PATHS.get(host)
    return paths if paths is not None else ci.absent(host, reason="no host by that name")


@ci.tool
def fabric_logins(switch: str) -> list[dict[str, str]]:
    """The initiators logged in on a switch."""
    return [{"switch": switch, "port": "fc1/3", "wwpn": WWPN}]


# ── A tool a framework owns (say, an MCP server's): declared by name ─────
HOSTS_BY_WWPN = ci.declare_tool(
    "hosts_by_wwpn",
    arguments_from=["list_hosts"],
    input_schema={"type": "object", "properties": {"wwpn": {"type": "string"}}, "required": ["wwpn"]},
    description="The hosts logged in with one WWPN.",
)


def mcp_hosts_by_wwpn(wwpn: str) -> list[dict[str, str]]:
    # The server's bug: it indexes WWPNs without colons, so every lookup comes back empty.
    index = {h["wwpn"].replace(":", ""): h for h in HOSTS}
    return [index[wwpn]] if wwpn in index else []


APP_TOOLS: dict[str, Callable[..., Any]] = {
    "list_hosts": list_hosts,
    "host_paths": host_paths,
    "fabric_logins": fabric_logins,
}
FRAMEWORK_TOOLS: dict[str, Callable[..., Any]] = {"hosts_by_wwpn": mcp_hosts_by_wwpn}
# What the model is offered in every request: name, description and (where there is one) schema.
OFFERED = (
    *(ToolDefinition(name, fn.__doc__) for name, fn in APP_TOOLS.items()),
    ToolDefinition(HOSTS_BY_WWPN.name, HOSTS_BY_WWPN.description, HOSTS_BY_WWPN.input_schema),
)


# ── The scripted model ───────────────────────────────────────────────────
SCRIPT = [
    ModelResponse(calls=(ToolCall("list_hosts", "call-1", {}),)),
    ModelResponse(calls=(ToolCall("hosts_by_wwpn", "call-2", {"wwpn": WWPN}),)),
    ModelResponse(calls=(ToolCall("fabric_logins", "call-3", {"switch": "edge-sw-02"}),)),
    # By now the window has dropped the list_hosts result; the model misremembers the host name.
    ModelResponse(calls=(ToolCall("host_paths", "call-4", {"host": "esx-7"}),)),
    ModelResponse(text=f"No host is logged in with {WWPN}, and esx-7 has no storage paths."),
]


def scripted_model(frame: RequestFrame) -> ModelResponse:
    return SCRIPT.pop(0)


def window(history: Sequence[Message], keep_tool_results: int = 2) -> list[Message]:
    """Keep every user and assistant message, and only the newest tool results."""
    tool_positions = [i for i, message in enumerate(history) if message.role == "tool"]
    dropped = set(tool_positions[:-keep_tool_results])
    return [message for i, message in enumerate(history) if i not in dropped]


# ── The loop ─────────────────────────────────────────────────────────────
def run_agent(question: str) -> ci.Run:
    history = [Message("user", question)]
    with ci.run(question, agent_name="fabric-triage") as run:
        while True:
            frame = RequestFrame.of(window(history), system="Never guess identifiers.", tools=OFFERED)
            with run.request(frame, model="scripted-model") as call:
                response = scripted_model(frame)
                call.respond(response)
            history.append(Message("assistant", response.text or "", tool_calls=response.calls))
            if not response.calls:
                run.answer(response.text or "")
                return run
            for planned in response.calls:
                if planned.name in APP_TOOLS:
                    result = APP_TOOLS[planned.name](**planned.arguments)
                else:
                    raw = FRAMEWORK_TOOLS[planned.name](**planned.arguments)
                    result = run.tool_result(planned.name, planned.call_id, raw, arguments=planned.arguments)
                history.append(Message("tool", result, tool_name=planned.name, tool_call_id=planned.call_id))


def main() -> int:
    instrumentation = ci.setup(service_name="hand-written-loop", notice_empty_lookups=True)
    agent_run = run_agent(f"Which host owns initiator {WWPN}, and what are its paths?")
    ci.flush()
    print(f"trace {agent_run.trace_id}: {len(agent_run.findings)} finding(s)")
    for finding in agent_run.findings:
        tools = ", ".join(subject.id for subject in finding.subjects)
        argument = f" argument {finding.predicate}" if finding.predicate else ""
        advisory = " (advisory)" if finding.advisory else ""
        print(f"- {finding.kind} @{finding.seam} [{tools}]{argument}{advisory}")
        print(textwrap.fill(finding.message, width=100, initial_indent="    ", subsequent_indent="    "))
    print(f"{'check':<22} {'seam':<8} {'checked':>7} {'findings':>8} {'n/a':>4} {'unreachable':>11}")
    for row in agent_run.ledger():
        print(
            f"{row.check:<22} {row.seam:<8} {row.checked:>7} {row.findings:>8} "
            f"{row.not_applicable:>4} {row.unreachable:>11}"
        )
    print(instrumentation.destination)
    ci.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
