"""``context-integrity suggest``: the cheapest declarations recorded runs support, with their evidence."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ._sources import SOURCES_EPILOG, SourceUsage, add_source_arguments, open_source_of

if TYPE_CHECKING:
    from ..advisor.proposals import Proposals
    from ..traces import JudgedRun

NAME = "suggest"
FORMATS = ("toml", "python", "report")

_EXAMPLE = """\
examples:
  context-integrity suggest runs.jsonl > contracts.toml
  context-integrity suggest runs.jsonl --format report --retro
  context-integrity suggest phoenix+http://localhost:6006 --project agents --format python

A run recorded with content capture is replayed; one recorded with setup(profile=True) is read from
its profile (names and counts only). Nothing is armed: you read the proposals and copy what you agree
with. --retro judges the same runs under the proposals and shows what they would have filed.
"""


def add_parser(commands: Any) -> None:
    suggest = commands.add_parser(
        NAME,
        help="propose declarations (result_columns, arguments_from) from recorded runs, with their evidence",
        description="Propose the cheapest declarations the recorded runs support, each with its evidence.",
        epilog=SOURCES_EPILOG + "\n" + _EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_source_arguments(suggest)
    suggest.add_argument(
        "--format",
        choices=FORMATS,
        default="toml",
        help="toml: a contracts file, ready to save (default); python: declare_tool lines; report: the evidence",
    )
    suggest.add_argument(
        "--retro",
        action="store_true",
        help="also judge the same runs under the proposals and print the findings they would have filed",
    )
    suggest.set_defaults(run=run, _parser=suggest)


def run(args: argparse.Namespace) -> int:
    from ..advisor.gather import gather
    from ..advisor.proposals import propose
    from ..advisor.render import as_python, as_report, as_toml
    from ..traces import SourceError

    try:
        _, runs = open_source_of(args)
        evidence = gather(runs)
    except (SourceUsage, SourceError) as error:
        print(f"context-integrity suggest: {error}", file=sys.stderr)
        return 2
    proposals = propose(evidence.profile, evidence.claims.proposals())
    how = evidence.sentence()
    if args.format == "toml":
        text = as_toml(proposals, how_read=how)
    elif args.format == "python":
        text = as_python(proposals)
    else:
        text = f"{how}.\n\n" + as_report(proposals)
    for problem in evidence.problems[:20]:
        print(f"context-integrity suggest: {problem}", file=sys.stderr)
    retro_text = ""
    if args.retro:
        try:
            retro_text = _retro(args, proposals)
        except (SourceUsage, SourceError) as error:
            print(f"context-integrity suggest: --retro: {error}", file=sys.stderr)
            return 2
        if args.format != "report":  # keep the file a valid contracts file / Python module
            retro_text = "".join(f"# {line}".rstrip() + "\n" for line in retro_text.splitlines())
    try:
        sys.stdout.write(text + retro_text)
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stderr.close()
    return 0


def _retro(args: argparse.Namespace, proposals: Proposals) -> str:
    """The runs judged again under the proposals: the runs that would have filed, whole (the first
    :data:`~context_integrity.limits.MAX_RETRO_RUNS_SHOWN`), and the count of the rest."""
    from ..advisor.gather import retro
    from ..limits import MAX_RETRO_RUNS_SHOWN
    from ..report.text import format_report
    from ..traces import recording_of

    if not proposals.declared_tools:
        return "\n--retro: nothing was proposed, so nothing would have been filed.\n"
    runs = found = with_findings = 0
    # Runs in which no check could judge anything, and in which some could not: a run that filed
    # nothing because nothing could be read is not a clean run.
    unjudged = partly = not_judged = 0
    reason: str | None = None
    shown: list[JudgedRun] = []
    for judged in retro(open_source_of(args)[1], proposals):
        runs += 1
        if judged.findings:
            with_findings += 1
            found += len(judged.findings)
            if len(shown) < MAX_RETRO_RUNS_SHOWN:
                shown.append(judged)
        totals = judged.totals
        if totals["unreachable"]:
            not_judged += totals["unreachable"]
            if totals["checked"]:
                partly += 1
            else:
                unjudged += 1
            if reason is None and judged.unreachable:
                reason = judged.unreachable[0].reason
    text = (
        f"\nUnder these declarations, {runs} run(s) judged again would have filed {found} finding(s), "
        f"in {with_findings} run(s)"
    )
    if runs and unjudged == runs:
        return (
            text + f". None of the {runs} run(s) could be judged again: --retro reads the values the "
            f"checks judge, and these runs hold none (the first: {reason}). Record with "
            "setup(capture_content=True) to see what the proposals catch; a profile holds names and "
            "counts only.\n"
        )
    if unjudged or partly:
        text += (
            f"; {not_judged} check(s) could not be judged, in {unjudged + partly} run(s) "
            f"(the first: {reason})"
        )
    if not shown:
        return text + ".\n"
    more = with_findings - len(shown)
    text += f"; {'the first ' + str(len(shown)) if more else 'each'} of them:\n\n"
    text += format_report(recording_of(shown, source=args.source))
    if more:
        text += f"\n... and {more} more run(s) with findings.\n"
    return text
