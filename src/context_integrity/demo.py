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
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from .checks.column_types import COLUMN_TYPE_CEILING
from .findings import SEAM_MEANINGS, Finding
from .integrations.functions import tool
from .ledger import LedgerRow
from .report.text import split_ceiling
from .telemetry.run.lifecycle import Run, run
from .telemetry.setup import current, flush, setup
from .text import plural

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


_WIDTH = 100


def wrapped(text: str, indent: str) -> str:
    """``text`` wrapped to the demo's width, every line indented, words whole."""
    return textwrap.fill(
        text,
        width=_WIDTH,
        initial_indent=indent,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def seam_key() -> str:
    """The one-line key to the seams a finding names (``@write``, ...), from the vocabulary."""
    return "Seams: " + "; ".join(f"@{seam} {meaning}" for seam, meaning in SEAM_MEANINGS.items()) + "."


def traces_sentence(destination: str, recording: str | None) -> str:
    """Where the traces went, said once."""
    if recording is not None:
        return (
            f"Traces: recorded to {recording}, since no OTLP endpoint is configured; read them back "
            f"with `context-integrity report {recording}`."
        )
    return f"Traces: {destination}."


def _about(finding: Finding) -> str:
    subjects = ", ".join(s.id for s in finding.subjects[:3])
    more = f" +{len(finding.subjects) - 3}" if len(finding.subjects) > 3 else ""
    predicate = f" [{finding.predicate}]" if finding.predicate else ""
    advisory = " (advisory)" if finding.advisory else ""
    return f"{subjects}{more}{predicate}{advisory}"


def _first_sentence(message: str) -> str:
    end = message.find(". ")
    return message if end < 0 else message[: end + 1]


def finding_lines(number: int, finding: Finding, ceilings: dict[str, list[str]], *, brief: bool) -> list[str]:
    """One finding: its head, then its message whole and wrapped, without the ceiling its check
    quoted (kept in ``ceilings``, said once); ``brief``: the head and the first sentence, one line."""
    message, ceiling = split_ceiling(finding.message, finding.kind, finding.seam)
    if ceiling:
        rows = ceilings.setdefault(ceiling, [])
        if f"{finding.kind} @{finding.seam}" not in rows:
            rows.append(f"{finding.kind} @{finding.seam}")
    head = f"  {number:>2}. {finding.kind} @{finding.seam} on {_about(finding)}"
    if brief:
        return [f"{head}: {_first_sentence(message)}"]
    return [head, wrapped(message, "      ")]


def ledger_lines(rows: Sequence[LedgerRow], findings: Sequence[Finding]) -> list[str]:
    """The ledger as the demo prints it, with a ``filed`` column: the distinct findings of each row."""
    filed = Counter((f.kind, f.seam) for f in findings)
    lines = [
        f"    {'check':<22} {'seam':<8} {'checked':>7} {'findings':>8} {'filed':>5} {'n/a':>4} {'unreachable':>11}"
    ]
    for row in rows:
        lines.append(
            f"    {row.check:<22} {row.seam:<8} {row.checked:>7} {row.findings:>8} "
            f"{filed[(row.check, row.seam)]:>5} {row.not_applicable:>4} {row.unreachable:>11}"
        )
    return lines


def counts_sentence(rows: Sequence[LedgerRow], findings: Sequence[Finding]) -> str:
    """Why the ledger's ``findings`` column and the header's count differ, when they do."""
    encounters = sum(row.findings for row in rows)
    return (
        f"The ledger counts encounters: a check meets its subject once per call or request, so its "
        f"findings column adds up to {encounters} failed encounters (a defect seen at six requests "
        f"fails six of them and is filed once; one call can file two). The filed column counts the "
        f"distinct findings listed above, and adds up to the {len(findings)} in the header."
    )


def ceiling_lines(ceilings: dict[str, list[str]]) -> list[str]:
    """What the checks that filed can never see: each ceiling once, with the rows that quoted it."""
    if not ceilings:
        return []
    lines = ["", "What these checks can never see (each check's ceiling, left out of its findings above):"]
    for ceiling, rows in ceilings.items():
        lines.append(wrapped(f"{', '.join(rows)}: {ceiling}", "  "))
    return lines


def print_summary(outcomes: list[DemoOutcome], destination: str, out: TextIO, *, brief: bool = False) -> None:
    intro = (
        "Three tools reproduce column-type field failures: LUN 0 written as '', counters as quoted "
        "strings, and an 8 MiB disk rounded to 0.0 GB. The scripted agent calls each once, and two of "
        "them break on purpose, in each check_column_types mode asked for."
    )
    for sentence in (intro, seam_key(), traces_sentence(destination, current_recording())):
        print(wrapped(sentence, ""), file=out)
    ceilings: dict[str, list[str]] = {}
    for outcome in outcomes:
        agent_run = outcome.run
        findings = agent_run.findings
        print(file=out)
        print(
            f"== run in {outcome.mode!r} mode (trace {agent_run.trace_id}) — {plural(len(findings), 'finding')}",
            file=out,
        )
        for number, finding in enumerate(findings, start=1):
            for line in finding_lines(number, finding, ceilings, brief=brief):
                print(line, file=out)
        for tool_name, observed in outcome.observations:
            if isinstance(observed, str):
                print(f"  the model read, instead of {tool_name}'s rows:", file=out)
                print(wrapped(observed, "      "), file=out)
        rows = agent_run.ledger()
        print("  ledger (the column checks only: the others are not armed in this demo, so n/a):", file=out)
        for line in ledger_lines(rows, findings):
            print(line, file=out)
        print(wrapped(counts_sentence(rows, findings), "  "), file=out)
    print(file=out)
    print(
        wrapped(
            "vm_disk_capacity passed: its 8 MiB disk reads 0.0 GB, and 0.0 is a number. The ceiling:", ""
        ),
        file=out,
    )
    print(wrapped(COLUMN_TYPE_CEILING, "  "), file=out)


def current_recording() -> str | None:
    inst = current()
    return str(inst.recording_path) if inst is not None and inst.recording_path is not None else None


def main(
    out: TextIO, modes: tuple[str, ...] = ("warn", "enforce"), *, only: str | None = None, brief: bool = False
) -> int:
    """``only="column-types"``: the short column demo (warn, then enforce); else the whole family.
    ``brief``: one line per finding."""
    if only == ONLY_COLUMN_TYPES:
        outcomes = [run_agent(mode) for mode in modes]
        flush()
        inst = current()
        print_summary(
            outcomes, inst.destination if inst is not None else "(not configured)", out, brief=brief
        )
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
    demo_family.print_family(outcome, destination, current_recording(), out, brief=brief)
    return 0
