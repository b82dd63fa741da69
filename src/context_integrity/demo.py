"""The demo: a scripted agent whose tools reproduce three field failures.

No network, no model key: the "model" is a script. Its tools are ordinary
decorated functions carrying the bugs the column-type contract was built from:

1. a mapping report that wrote ``m.get("logical_unit_number") or ""``, so LUN 0
   became ``''`` on every mapping that had it;
2. a family of metrics tools that returned their numbers as quoted strings;
3. a capacity view that rendered ``round(mib / 1024, 1)``, so an 8 MiB disk
   read ``0.0`` GB — a perfectly typed, perfectly wrong number that this check
   passes, and says why.

With ``--only column-types`` the agent runs once in ``warn`` and once in ``enforce``; without it,
:mod:`.demo_family` tells the whole family's story in one run.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from .checks.column_types import COLUMN_TYPE_CEILING
from .findings import Finding
from .integrations.functions import tool
from .ledger import LedgerRow
from .telemetry.run.lifecycle import Run, run
from .telemetry.setup import current, flush, setup

AGENT_NAME = "storage-triage"
# ``context-integrity demo --only column-types``: the short demo of the column checks alone.
ONLY_COLUMN_TYPES = "column-types"

# ── the systems behind the tools (fixtures) ─────────────────────────────
_MAPPINGS = [
    {"host_group": "vdi-a", "initiator": "c0:50:76:0a:11:7e:00:10", "logical_unit_number": lun}
    for lun in (0, 1, 2, 0, 3, 0, 4, 0)
]
_PORT_COUNTERS = [
    {"port": "fc1/1", "frames_per_sec": 1240, "crc_errors": 0},
    {"port": "fc1/2", "frames_per_sec": 980, "crc_errors": 0},
    {"port": "fc1/3", "frames_per_sec": 0, "crc_errors": 212},
]
_DISKS_MIB = {"vdi-a-gold": [("disk0", 40960), ("disk1", 8)]}


# ── the tools, bugs and all ─────────────────────────────────────────────
@tool(
    result_columns={
        "host_group": "string",
        "initiator": "string",
        "logical_unit_number": "number",
    }
)
def host_group_mappings(host_group: str) -> list[dict[str, Any]]:
    """The LUN mappings of a host group."""
    return [
        {
            "host_group": m["host_group"],
            "initiator": m["initiator"],
            # The field bug: LUN 0 is falsy, so it became an empty string.
            "logical_unit_number": m.get("logical_unit_number") or "",
        }
        for m in _MAPPINGS
        if m["host_group"] == host_group
    ]


@tool(result_columns={"port": "string", "frames_per_sec": "number", "crc_errors": "number"})
def port_counters(switch: str) -> list[dict[str, Any]]:
    """Traffic counters of a switch's ports."""
    # The family bug: every number rendered as a quoted string on the way out.
    return [{key: str(value) for key, value in row.items()} for row in _PORT_COUNTERS]


@tool(result_columns={"disk": "string", "size_gb": "number"})
def vm_disk_capacity(vm: str) -> list[dict[str, Any]]:
    """Disk sizes of a virtual machine, in GB."""
    # The capacity bug: an 8 MiB disk rounds to 0.0 GB. A number, so it passes.
    return [{"disk": disk, "size_gb": round(mib / 1024, 1)} for disk, mib in _DISKS_MIB.get(vm, [])]


# ── the scripted agent ──────────────────────────────────────────────────
@dataclass(frozen=True)
class Step:
    tool: Callable[..., Any]
    arguments: dict[str, Any]


SCRIPT: tuple[Step, ...] = (
    Step(host_group_mappings, {"host_group": "vdi-a"}),
    Step(port_counters, {"switch": "edge-sw-02"}),
    Step(vm_disk_capacity, {"vm": "vdi-a-gold"}),
)
QUESTION = "Why can't the vdi-a desktops see their boot LUN, and is the fabric healthy?"


def _scripted_model() -> Iterator[Step]:
    """The 'model': calls each tool once, in order (no network, no key)."""
    yield from SCRIPT


@dataclass(frozen=True)
class DemoOutcome:
    mode: str
    run: Run
    # What the model read back from each tool: the rows, or a refusal sentence.
    observations: tuple[tuple[str, Any], ...]


def run_agent(mode: str) -> DemoOutcome:
    """One run of the scripted agent with the column dial set to ``mode``."""
    # The demo names its service after its agent unless the environment names one: a trace UI
    # lists services, and "unknown_service" is no place to send someone.
    setup(check_column_types=mode, service_name=os.environ.get("OTEL_SERVICE_NAME") or AGENT_NAME)
    observations: list[tuple[str, Any]] = []
    with run(QUESTION, agent_name=AGENT_NAME) as agent_run:
        for step in _scripted_model():
            observations.append((step.tool.__name__, step.tool(**step.arguments)))
    return DemoOutcome(mode, agent_run, tuple(observations))


def _wrap(text: str, indent: str = "      ") -> str:
    return textwrap.fill(text, width=100, initial_indent=indent, subsequent_indent=indent)


def _ledger_lines(rows: list[LedgerRow]) -> list[str]:
    header = f"    {'check':<22} {'seam':<8} {'checked':>7} {'findings':>8} {'n/a':>4} {'unreach':>7}"
    lines = [header]
    for row in rows:
        lines.append(
            f"    {row.check:<22} {row.seam:<8} {row.checked:>7} {row.findings:>8} "
            f"{row.not_applicable:>4} {row.unreachable:>7}"
        )
    return lines


def _finding_line(finding: Finding) -> str:
    tool_name = finding.subjects[0].id if finding.subjects else "?"
    return f"  - {finding.kind} @{finding.seam} on {tool_name}.{finding.predicate}"


def print_summary(outcomes: list[DemoOutcome], destination: str, out: TextIO) -> None:
    print(f"Traces: {destination}", file=out)
    recording = current_recording()
    if recording is not None:
        print(f"Read them back with: context-integrity report {recording}", file=out)
    for outcome in outcomes:
        agent_run = outcome.run
        print(file=out)
        print(
            f"== run in {outcome.mode!r} mode (trace {agent_run.trace_id}) — "
            f"{len(agent_run.findings)} finding(s)",
            file=out,
        )
        for finding in agent_run.findings:
            print(_finding_line(finding), file=out)
            print(_wrap(finding.message.split(COLUMN_TYPE_CEILING)[0].strip()), file=out)
        for tool_name, observed in outcome.observations:
            if isinstance(observed, str):
                print(f"  the model read, instead of {tool_name}'s rows:", file=out)
                print(_wrap(observed), file=out)
        print("  ledger:", file=out)
        for line in _ledger_lines(agent_run.ledger()):
            print(line, file=out)
    print(file=out)
    print("vm_disk_capacity passed: its 8 MiB disk reads 0.0 GB, and 0.0 is a number. The ceiling:", file=out)
    print(_wrap(COLUMN_TYPE_CEILING, indent="  "), file=out)


def current_recording() -> str | None:
    inst = current()
    return str(inst.recording_path) if inst is not None and inst.recording_path is not None else None


def main(out: TextIO, modes: tuple[str, ...] = ("warn", "enforce"), *, only: str | None = None) -> int:
    """``only="column-types"``: the short column demo (warn, then enforce); else the whole family."""
    if only == ONLY_COLUMN_TYPES:
        outcomes = [run_agent(mode) for mode in modes]
        flush()
        inst = current()
        print_summary(outcomes, inst.destination if inst is not None else "(not configured)", out)
        return 0
    from . import demo_family

    setup(
        check_column_types="warn",
        notice_empty_lookups=True,
        notice_prior_turn_evidence=True,
        service_name=os.environ.get("OTEL_SERVICE_NAME") or AGENT_NAME,
    )
    outcome = demo_family.run_family()
    flush()
    inst = current()
    destination = inst.destination if inst is not None else "(not configured)"
    demo_family.print_family(outcome, destination, current_recording(), out)
    return 0
