"""The family demo: one scripted storage-triage agent whose story trips every built check once.

No network, no model key: the "model" is a script, the "SDK client" a scripted one that
serializes each request the way a provider SDK does and runs its request hooks like httpx. Two
conversation turns in one run:

turn 1 -- the desktops cannot see their boot LUN:
  the column field failures (LUN 0 written as ``''``, counters as quoted strings; the 0.0 GB disk
  passes), a declared column never delivered, the window evicting ``list_hosts`` while
  ``host_paths`` is still offered, a host id the model lifts from its own earlier text, the
  reverse lookup that comes back empty for a WWPN the run served, a tracing helper's tool riding
  the wire uncomposed, the ticketing server disconnected while ``open_ticket`` is still offered,
  the disk provisioned twice with the same arguments, and a typed answer calling port fc1/3
  healthy while the tool settled it down;
turn 2 -- "which port was that again?": an answer assembled only from turn-one values (typed like
  the first, its claim agrees with the settled fact: every ledger row is checked, none unreachable).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

from pydantic import BaseModel

from .contracts.results import absent
from .contracts.semantic import semantic
from .demo import (
    AGENT_NAME,
    ceiling_lines,
    counts_sentence,
    finding_lines,
    host_group_mappings,
    ledger_lines,
    port_counters,
    seam_key,
    traces_sentence,
    vm_disk_capacity,
    wrapped,
)
from .findings import Finding
from .integrations.functions import declare_claims, tool
from .integrations.wire import WireReader, install_wire_reader
from .loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition
from .telemetry.run.lifecycle import Run, run
from .text import plural

WWPN = "c0:50:76:0a:11:7e:00:10"
MODEL = "scripted-model"
SYSTEM = "You triage a storage estate. Use the tools; never guess identifiers."
QUESTION = "Why can't the vdi-a desktops see their boot LUN, and is the fabric healthy?"
FOLLOW_UP = "Thanks. Which initiator and port was that again?"
# The window keeps this many of the newest tool results (observation masking).
KEEP_TOOL_RESULTS = 6


# ── the tools, bugs and all (the column tools come from the short demo) ──
@tool
def list_hosts() -> list[dict[str, str]]:
    """Every host with its initiator WWPN."""
    return [{"host": "esx-07", "wwpn": WWPN}, {"host": "esx-08", "wwpn": "c0:50:76:0a:11:7e:00:12"}]


@tool(arguments_from=["list_hosts"])
def host_paths(host: str) -> Any:
    """The storage paths of one host."""
    paths = {"esx-07": [{"path": "vmhba2:C0:T1:L0", "state": "active"}]}.get(host)
    return paths if paths is not None else absent(host, reason="no host by that name")


@tool
def fabric_logins(switch: str) -> list[dict[str, str]]:
    """The initiators logged in on a switch."""
    return [{"switch": switch, "port": "fc1/3", "wwpn": WWPN}]


@tool(arguments_from=["fabric_logins"])
def hosts_by_wwpn(wwpn: str) -> list[dict[str, str]]:
    """The hosts logged in with one WWPN."""
    # The field bug: the index stores WWPNs without colons, so every lookup comes back empty.
    index = {"c050760a117e0010": {"host": "esx-07"}}
    return [index[wwpn]] if wwpn in index else []


@tool(result_columns={"volume": "string", "size_gb": "number", "tier": "string"})
def array_volumes(array: str) -> list[dict[str, Any]]:
    """The volumes of an array, with their tier."""
    # The field bug: the tier moved to another endpoint and the column silently vanished.
    return [{"volume": "vdi-a-boot", "size_gb": 40}, {"volume": "vdi-a-data", "size_gb": 500}]


@tool
def port_status(port: str) -> dict[str, object]:
    """The link state of one fabric port (a semantic envelope: it settles facts)."""
    return semantic(facts=[{"entity": port, "status": "down", "crc_errors": 212}])


@tool(once_per_run=True)
def provision_disk(vm: str, size_gb: int) -> str:
    """Provision a new disk for a VM: it must happen once per run."""
    return f"disk of {size_gb} GB provisioned for {vm}"


@tool
def open_ticket(summary: str) -> str:
    """Open a ticket with the storage team (the ticketing MCP server's tool)."""
    return "ticket opened"


TOOLS: dict[str, Callable[..., Any]] = {
    fn.__name__: fn
    for fn in (
        list_hosts,
        host_group_mappings,
        port_counters,
        vm_disk_capacity,
        array_volumes,
        fabric_logins,
        hosts_by_wwpn,
        host_paths,
        port_status,
        provision_disk,
        open_ticket,
    )
}
OFFERED = tuple(ToolDefinition(name, fn.__doc__) for name, fn in TOOLS.items())


class TriageAnswer(BaseModel):
    """The agent's typed answer."""

    host: str
    port: str
    port_status: str
    summary: str


def _calls(name: str, call_id: str, text: str = "", **arguments: Any) -> ModelResponse:
    return ModelResponse(calls=(ToolCall(name, call_id, arguments),), text=text or None)


def _script() -> list[ModelResponse]:
    disk: dict[str, Any] = {"vm": "vdi-a-gold", "size_gb": 40}
    return [
        _calls("list_hosts", "call-1"),
        _calls("host_group_mappings", "call-2", host_group="vdi-a"),
        _calls("port_counters", "call-3", switch="edge-sw-02"),
        _calls("vm_disk_capacity", "call-4", vm="vdi-a-gold"),
        _calls("array_volumes", "call-5", array="fs-array-2"),
        _calls(
            "fabric_logins",
            "call-6",
            "The initiator belongs to esx-07-mgmt; checking logins.",
            switch="edge-sw-02",
        ),
        _calls("hosts_by_wwpn", "call-7", wwpn=WWPN),
        # list_hosts has left the window; the model takes the host name from its own text.
        _calls("host_paths", "call-8", host="esx-07-mgmt"),
        _calls("port_status", "call-9", port="fc1/3"),
        _calls("provision_disk", "call-10", **disk),
        # The first call returned; the model, unsure, asks for the same disk again.
        _calls("provision_disk", "call-11", **disk),
        ModelResponse(
            text=TriageAnswer(
                host="esx-07",
                port="fc1/3",
                port_status="healthy",
                summary="LUN 0 is missing from the mapping.",
            ).model_dump_json()
        ),
        # turn 2: no tool, only what turn one read; typed like the first answer, so its claim is
        # checked too (a prose answer would leave the claims contract nothing to read: unreachable)
        ModelResponse(
            text=TriageAnswer(
                host="esx-07",
                port="fc1/3",
                port_status="down",
                summary=f"Initiator {WWPN} behind port fc1/3.",
            ).model_dump_json()
        ),
    ]


# ── the scripted SDK client: serializes the request, runs its request hooks ──
@dataclass
class _URL:
    path: str


@dataclass
class _Request:
    url: _URL
    content: bytes


@dataclass
class ScriptedClient:
    """Stands in for an OpenAI SDK client's httpx client: same hooks, no network."""

    event_hooks: dict[str, list[Callable[[Any], Any]]] = field(
        default_factory=lambda: {"request": [], "response": []}
    )
    sent: int = 0

    def send(self, request: _Request) -> None:
        for hook in self.event_hooks.get("request", []):
            hook(request)

    def chat(self, frame: RequestFrame) -> None:
        tools = [{"type": "function", "function": {"name": t.name}} for t in frame.tools]
        if self.sent == 0:
            # A tracing helper's evaluation tool rides along on the first request.
            tools.append({"type": "function", "function": {"name": "trace_eval"}})
        self.sent += 1
        body = {"model": MODEL, "messages": [{"role": "user", "content": "..."}], "tools": tools}
        self.send(_Request(_URL("/v1/chat/completions"), json.dumps(body).encode()))


def _window(history: Sequence[Message]) -> list[Message]:
    tool_positions = [i for i, m in enumerate(history) if m.role == "tool"]
    dropped = set(tool_positions[:-KEEP_TOOL_RESULTS])
    return [m for i, m in enumerate(history) if i not in dropped]


@dataclass(frozen=True)
class FamilyOutcome:
    run: Run
    turns: tuple[tuple[str, list[Finding]], ...]


def _turn(agent_run: Run, history: list[Message], script: list[ModelResponse], client: ScriptedClient) -> str:
    while True:
        frame = RequestFrame.of(_window(history), system=SYSTEM, tools=OFFERED, model=MODEL)
        with agent_run.request(frame) as call:
            client.chat(frame)
            response = script.pop(0)
            call.respond(response)
        history.append(Message("assistant", response.text or "", tool_calls=response.calls))
        if not response.calls:
            return response.text or ""
        for planned in response.calls:
            result = TOOLS[planned.name](**planned.arguments)
            history.append(Message("tool", result, tool_name=planned.name, tool_call_id=planned.call_id))
            if planned.name == "provision_disk" and planned.call_id == "call-10":
                # The ticketing MCP server disconnects; the agent's tool list still offers its tool.
                agent_run.suspend("ticketing-mcp", ["open_ticket"])


def run_family() -> FamilyOutcome:
    """The whole story in one run (``setup`` is the caller's)."""
    declare_claims(TriageAnswer, {"port_status": ("fc1/3", "status")})
    client = ScriptedClient()
    reader: WireReader = install_wire_reader(client)
    script = _script()
    turns: list[tuple[str, list[Finding]]] = []
    try:
        with run(QUESTION, agent_name=AGENT_NAME) as agent_run:
            history = [Message("user", QUESTION)]
            text = _turn(agent_run, history, script, client)
            answer = TriageAnswer.model_validate_json(text)
            turns.append((QUESTION, agent_run.answer(text, output=answer)))
            history.append(Message("user", FOLLOW_UP))
            text = _turn(agent_run, history, script, client)
            turns.append((FOLLOW_UP, agent_run.answer(text, output=TriageAnswer.model_validate_json(text))))
    finally:
        reader.uninstall()
    return FamilyOutcome(agent_run, tuple(turns))


INTRO: Final = (
    "A scripted storage-triage agent, with no network and no model key, scripted to break once per "
    "check: each finding below is a defect its story plants on purpose, filed by the check built to "
    "catch it."
)


def print_family(
    outcome: FamilyOutcome, destination: str, recording: str | None, out: TextIO, *, brief: bool = False
) -> None:
    agent_run = outcome.run
    findings = agent_run.findings
    print(wrapped(INTRO, ""), file=out)
    print(wrapped(seam_key(), ""), file=out)
    print(wrapped(traces_sentence(destination, recording), ""), file=out)
    print(file=out)
    print(
        f"== the whole family, one run (trace {agent_run.trace_id}) — {plural(len(findings), 'finding')}",
        file=out,
    )
    ceilings: dict[str, list[str]] = {}
    for number, finding in enumerate(findings, start=1):
        for line in finding_lines(number, finding, ceilings, brief=brief):
            print(line, file=out)
    print(file=out)
    print("  ledger (what each check concluded at each encounter):", file=out)
    rows = agent_run.ledger()
    for line in ledger_lines(rows, findings):
        print(line, file=out)
    print(wrapped(counts_sentence(rows, findings), "  "), file=out)
    unchecked = [f"{r.check} @{r.seam}" for r in rows if r.checked == 0]
    unreachable = [f"{r.check} @{r.seam}" for r in rows if r.unreachable]
    if unchecked:
        print(wrapped(f"rows never checked: {', '.join(unchecked)}", "  "), file=out)
    if unreachable:
        print(wrapped(f"rows that could not look at something: {', '.join(unreachable)}", "  "), file=out)
    if not unchecked and not unreachable:
        print("  every row was checked at least once, and none was unreachable.", file=out)
    if not brief:
        for line in ceiling_lines(ceilings):
            print(line, file=out)


def turn_findings(outcome: FamilyOutcome) -> Mapping[str, list[Finding]]:
    return dict(outcome.turns)
