"""Proposals as the user adopts them: declarations as data, as Python, and as a readable report.

:func:`declarations` is the one place proposals become declarations (tool -> keyword -> value, in
the shape ``declare_tool`` and the contracts file take); the Python lines, the contracts file and the
contracts ``--retro`` judges under are all made from it, so what is shown is what is judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ..contracts.claims import ClaimsContract, define_answer_claims
from ..contracts.file import Contracts, dump_contracts
from ..contracts.tool import define_contract
from ..ledger import CheckId
from .claims import settles_of
from .proposals import ColumnProposal, Proposals, ToolProposals, rows_armed_by

# What else a declaration needs before its checks run: a dial, named for the user.
_DIALS_NEEDED: Final[Mapping[str, str]] = {
    "column-type-mismatch": "setup(check_column_types='warn')",
    "missing-column": "setup(check_column_types='warn')",
    "empty-lookup": "setup(notice_empty_lookups=True)",
}

Declaration = dict[str, object]


def column_declaration(column: ColumnProposal) -> object:
    """One column as ``result_columns`` takes it: the type, or ``{type, nullable}``."""
    return {"type": column.type, "nullable": True} if column.nullable else column.type


def declarations(proposals: Proposals) -> dict[str, Declaration]:
    """Tool -> the keywords ``declare_tool`` (and the contracts file) take, for every proposed tool
    and every producer it names (a producer named in ``arguments_from`` must be declared too)."""
    out: dict[str, Declaration] = {}
    for tool in proposals.tools:
        declared: Declaration = {}
        if tool.columns:
            declared["result_columns"] = {c.name: column_declaration(c) for c in tool.columns}
        if tool.producers:
            declared["arguments_from"] = list(tool.arguments_from)
        if declared:
            out[tool.tool] = declared
    for tool in proposals.tools:
        for producer in tool.arguments_from:
            out.setdefault(producer, {})
    for tool_name, (entity_field, facts) in settles_of(proposals.claims).items():
        out.setdefault(tool_name, {})["settles"] = {"entity": entity_field, "facts": list(facts)}
    return dict(sorted(out.items()))


def claims_contracts(proposals: Proposals) -> tuple[ClaimsContract, ...]:
    """The proposed claims as validated contracts, one per agent, through the file's own assert."""
    by_agent: dict[str, dict[str, dict[str, str]]] = {}
    for claim in proposals.claims:
        by_agent.setdefault(claim.agent, {})[claim.path] = {"entity": claim.entity, "field": claim.field}
    return tuple(define_answer_claims(claims, agent=agent) for agent, claims in sorted(by_agent.items()))


def proposed_contracts(proposals: Proposals) -> Contracts:
    """The proposals as validated contracts, through the same asserts as ``declare_tool``."""
    tools = tuple(define_contract(name, **keywords) for name, keywords in declarations(proposals).items())  # type: ignore[arg-type]
    return Contracts(tools=tools, claims=claims_contracts(proposals), source="the proposals")


def as_toml(proposals: Proposals, *, how_read: str = "") -> str:
    """A contracts file, ready to save: the proposals (each tool's evidence in a comment above the
    file), and the once-per-run candidates as comments for the user to judge."""
    lines = [
        "# Proposed by `context-integrity suggest`"
        + (f" ({how_read})" if how_read else f" from {proposals.runs} recorded run(s)")
        + ".",
        "# Review each declaration before adopting it: declared, never inferred.",
    ]
    for tool in proposals.tools:
        if tool.columns or tool.producers:
            what = []
            if tool.columns:
                mixed = tool.mixed_columns
                what.append(
                    f"result_columns from {_evidence(tool)}"
                    + (f"; mixed: {', '.join(c.name for c in mixed)} (see the report)" if mixed else "")
                )
            if tool.producers:
                what.append(
                    "arguments_from "
                    + ", ".join(
                        f"{p.producer} ({p.served}/{p.judged} of {p.argument})" for p in tool.producers
                    )
                )
            lines.append(f"#   {tool.tool}: {'; '.join(what)}")
    for tool in _repeat_candidates(proposals):
        lines.append(
            f"#   {_repeat_sentence(tool)} If it has side effects, add once_per_run = true to its table."
        )
    body = dump_contracts(proposed_contracts(proposals))
    return "\n".join(lines) + "\n\n" + (body or "# Nothing to propose yet: see `--format report` for why.\n")


def _arms(declaration: str) -> str:
    """The rows a declaration arms, and the dials those rows also need (each said once)."""
    rows = rows_armed_by(declaration)
    needed: dict[str, list[str]] = {}
    for row in rows:
        dial = _DIALS_NEEDED.get(row.check)
        if dial is not None:
            needed.setdefault(dial, []).append(row.check)
    text = ", ".join(map(_row, rows))
    for dial, checks in needed.items():
        scope = "" if len(checks) == len(rows) else f" for {', '.join(checks)}"
        text += f"; needs {dial}{scope}"
    return text


def _row(row: CheckId) -> str:
    return f"{row.check}@{row.seam}"


def _python_value(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_python_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_python_value(v) for v in value) + "]"
    return repr(value)


def as_python(proposals: Proposals) -> str:
    """``declare_tool(...)`` lines ready to paste (a decorated tool takes the same keywords in
    ``@ci.tool(...)``), with the once-per-run candidates as comments for the user to judge."""
    lines = [
        "import context_integrity as ci",
        "",
        "# Proposed by `context-integrity suggest` from "
        f"{proposals.runs} recorded run(s). Review each before adopting it:",
        "# a tool you decorate takes the same keywords: @ci.tool(result_columns=..., arguments_from=...).",
        "",
    ]
    for name, declared in declarations(proposals).items():
        keywords = "".join(f", {key}={_python_value(value)}" for key, value in declared.items())
        lines.append(f"ci.declare_tool({name!r}{keywords})")
    if proposals.claims:
        lines.append("")
        lines.append(
            "# Claims name a pydantic output model in code; the contracts file states them without one:"
        )
        for claim in proposals.claims:
            lines.append(
                f"# ci.declare_claims(<{claim.agent}'s answer model>, {{{claim.path!r}: ({claim.entity!r}, {claim.field!r})}})"
            )
    candidates = _repeat_candidates(proposals)
    if candidates:
        lines.append("")
        for tool in candidates:
            lines.append(f"# {_repeat_sentence(tool)} If it has side effects:")
            lines.append(f"# ci.declare_tool({tool.tool!r}, once_per_run=True)")
    lines.append("")
    return "\n".join(lines)


def _repeat_candidates(proposals: Proposals) -> list[ToolProposals]:
    return [tool for tool in proposals.tools if tool.repeats]


def _repeat_sentence(tool: ToolProposals) -> str:
    return (
        f"{tool.tool!r} was called again with the same arguments {tool.repeats} time(s), "
        f"in {tool.runs_with_repeats} run(s)."
    )


def _evidence(tool: ToolProposals) -> str:
    rows = f"{tool.rows} row(s) over " if tool.rowset_calls else ""
    return f"{rows}{tool.calls} call(s) in {tool.runs} run(s)"


def as_report(proposals: Proposals) -> str:
    """A readable account: per tool, what is proposed and its evidence, what it arms, and what was
    looked at and not proposed (with why)."""
    lines = [f"context-integrity suggest: {proposals.runs} run(s) read", ""]
    if not proposals.tools:
        lines.append("No tool results were seen: nothing to propose.")
    for tool in proposals.tools:
        lines.append(f"{tool.tool}: {_evidence(tool)}")
        if tool.columns:
            lines.append(f"  result_columns, arms {_arms('result_columns')}:")
            width = max(len(column.name) for column in tool.columns)
            for column in tool.columns:
                kind = column.type + (", nullable" if column.nullable else "")
                line = f"    {column.name.ljust(width)}  {kind}  ({column.values} value(s))"
                if column.offending:
                    mix = ", ".join(f"{count} {kind}" for kind, count in column.offending.items())
                    line += f"  mixed: {mix} would have filed column-type-mismatch"
                lines.append(line)
        if tool.producers:
            lines.append(f"  arguments_from = {list(tool.arguments_from)}, arms {_arms('arguments_from')}:")
            for producer in tool.producers:
                share = 100 * producer.served // max(producer.judged, 1)
                lines.append(
                    f"    {producer.argument}: served by {producer.producer} in {producer.served} of "
                    f"{producer.judged} value(s) ({share}%)"
                )
        if tool.repeats:
            lines.append(
                f"  once_per_run? {_repeat_sentence(tool)} Declare once_per_run=True if it has side "
                f"effects (arms {_arms('once_per_run')})."
            )
        if not (tool.columns or tool.producers or tool.repeats or tool.notes):
            lines.append("  nothing to propose: no rows and no arguments another tool served")
        for note in tool.notes:
            lines.append(f"  - {note}")
        lines.append("")
    if proposals.claims:
        lines.append(f"claims, arm {_arms('claims')}:")
        for claim in proposals.claims:
            how = (
                f"its rows name the entity in {claim.entity_field!r}"
                if claim.entity_field
                else "a semantic() envelope"
            )
            lines.append(
                f"  agent {claim.agent}: answer field {claim.path!r} states fact {claim.field!r} of "
                f"{claim.entity!r}, which {claim.tool} settles ({how}); held in {claim.held} of "
                f"{claim.runs_with_field} run(s) whose answer had the field"
            )
        lines.append("")
    if proposals.unnamed_tools:
        lines.append(
            f"{proposals.unnamed_tools} tool(s) were left out of the evidence (past the profile's caps, "
            "or names not shaped like names)."
        )
    return "\n".join(lines).rstrip("\n") + "\n"
