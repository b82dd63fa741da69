"""``context-integrity judge``: the runs a trace file or backend holds, judged under a contracts file.

Each run is read from its spans (:mod:`context_integrity.traces`) and replayed through the same
registry and pure checks an instrumented agent runs in process; the declarations come from a
contracts file (:mod:`context_integrity.contracts.file`). The judged runs are rendered by the
report renderers (text, ``--html``, ``--find``), or written one JSON object per finding
(``--format json``), and may be sent on: ``--export`` writes them into the judged traces over OTLP,
``--phoenix`` posts each finding as a Phoenix span annotation.

Exit status: 0 when every run was judged; 1 when ``--fail-on`` names a kind a finding was filed
under; 2 for bad usage, an unreadable contracts file or an unreadable source, said in one sentence
on stderr.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final, NoReturn

from ._dials import JUDGED_COLUMN_DIAL, add_dial_arguments, dials_of
from ._sources import SOURCES_EPILOG, SourceUsage, add_source_arguments, headers_of, open_source_of

if TYPE_CHECKING:
    from ..contracts.file import Contracts
    from ..judge import ContractBook, Dials
    from ..recording.model import Recording, RunRecord
    from ..traces import JudgedRun, SpanSource, TraceRuns

NAME: Final = "judge"
COMMAND: Final = f"context-integrity {NAME}"
# --fail-on's word for "a finding of any kind".
ANY: Final = "any"
FORMATS: Final = ("text", "json")
# A file source at least this large gets a progress bar on a terminal (a smaller one is read at once).
PROGRESS_MIN_BYTES: Final = 8 * 1024 * 1024
# How often the progress line is redrawn.
PROGRESS_EVERY_S: Final = 0.2
# The problems of reading a source said on stderr beside JSON output (the text report lists them all).
PROBLEMS_SAID: Final = 3
# The dial offline judging starts from: nothing is enforced offline, so declared columns are checked.
OFFLINE_COLUMN_DIAL: Final = JUDGED_COLUMN_DIAL

EPILOG: Final = (
    SOURCES_EPILOG
    + """\
examples:
  context-integrity judge traces.jsonl --contracts contracts.toml
  context-integrity judge tempo+http://tempo:3200 --trace-id 4bf92f3577b34da6a3ce929d0e0e4736
  context-integrity judge phoenix+http://localhost:6006 --project agent --phoenix http://localhost:6006
  context-integrity judge traces.jsonl --format json --fail-on unsupported-argument,dangling-reference

exit status: 0 judged; 1 a --fail-on kind was filed; 2 bad usage or an unreadable source.
"""
)


# Bad usage, an unreadable contracts file or source: one sentence, exit 2.
_Usage = SourceUsage


def _refuse_usage(message: str) -> NoReturn:
    sys.stderr.write(f"{COMMAND}: {message.rstrip('.')}. See {COMMAND} --help.\n")
    raise SystemExit(2)


def add_parser(commands: Any) -> None:
    from ..judge.dials import COLUMN_DIALS

    judge = commands.add_parser(
        NAME,
        help="judge the runs a trace file or backend holds, under a contracts file",
        description=(
            "Read agent runs from recorded traces (any instrumentation: GenAI conventions, "
            "OpenInference, pydantic-ai/Logfire, OpenLLMetry, ours) and judge them with the same "
            "checks an instrumented agent runs, under the declarations of a contracts file."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    judge.error = _refuse_usage
    add_source_arguments(judge)
    judge.add_argument(
        "--contracts",
        metavar="FILE",
        help="the contracts file (default: $CONTEXT_INTEGRITY_CONTRACTS, else ./pyproject.toml's "
        "[tool.context-integrity])",
    )
    out = judge.add_argument_group("output")
    out.add_argument(
        "--format", choices=FORMATS, default="text", help="text (default) or json: one finding a line"
    )
    out.add_argument("-v", "--verbose", action="store_true", help="text: also print every witness")
    out.add_argument("--html", metavar="OUT", help="also write the report as one HTML page to OUT")
    out.add_argument("--find", action="store_true", help="answer as find_context_errors does")
    out.add_argument("--kind", help="with --find: only findings of this kind")
    out.add_argument("--limit", type=int, help="with --find: how many findings to list")
    out.add_argument(
        "--fail-on",
        metavar="KINDS",
        help="exit 1 when a finding of one of these kinds (comma-separated, or 'any') was filed",
    )
    sent = judge.add_argument_group("sending results on")
    sent.add_argument(
        "--export",
        metavar="OTLP_ENDPOINT",
        help="send each run's summary span, findings as log records and carrier spans into the "
        "judged traces over OTLP (e.g. http://collector:4318)",
    )
    sent.add_argument("--export-protocol", choices=("http/protobuf", "grpc"), help="--export's protocol")
    sent.add_argument(
        "--phoenix", metavar="URL", help="post each finding to this Phoenix as a span annotation"
    )
    add_dial_arguments(judge, column_choices=COLUMN_DIALS, why="nothing is refused offline")
    judge.set_defaults(run=run, _parser=judge)


# ── Reading the command line ────────────────────────────────────────────


def _kinds(text: str, option: str, *, allow_any: bool) -> frozenset[str] | None:
    """The kinds ``text`` names (comma-separated); ``None`` for ``any``. Raises :class:`_Usage`."""
    from ..findings import KINDS

    words = [word.strip() for word in text.split(",") if word.strip()]
    if allow_any and words == [ANY]:
        return None
    unknown = [word for word in words if word not in KINDS]
    if unknown or not words:
        valid = ", ".join(KINDS) + (f", or {ANY}" if allow_any else "")
        named = ", ".join(repr(word) for word in unknown) if unknown else "no kind"
        raise _Usage(f"{option} got {named}; the kinds are {valid}")
    return frozenset(words)


def _contracts(given: str | None) -> tuple[Contracts | None, str]:
    """The contracts file that applies, loaded, and the sentence saying which it is."""
    from ..contracts.file import CONTRACTS_ENV_VAR, ContractsFileError, find_contracts, load_contracts

    found = find_contracts(given, directory=Path.cwd())
    if found is None:
        return None, (
            f"no contracts file (none given with --contracts, ${CONTRACTS_ENV_VAR} is not set, and no "
            "pyproject.toml here has a [tool.context-integrity] table): nothing is declared, so only "
            "checks a dial arms can file"
        )
    try:
        loaded = load_contracts(found.path)
    except ContractsFileError as refused:
        raise _Usage(str(refused)) from None
    how = "--contracts" if found.chosen_by == "given" else found.chosen_by
    counted = (
        f"{len(loaded.tools)} tools, {len(loaded.claims)} claims contracts, {len(loaded.toolsets)} toolsets"
    )
    return loaded, f"declarations from {found.path} ({how}): {counted}"


def _book(contracts: Contracts | None) -> ContractBook:
    from ..judge import ContractBook

    book = ContractBook()
    if contracts is not None:
        book.declare_all(contracts.tools, contracts.claims, contracts.toolsets)
    return book


# ── Progress ────────────────────────────────────────────────────────────


@dataclass
class _Progress:
    """One line on a terminal's stderr, redrawn at most every :data:`PROGRESS_EVERY_S`: how far into
    a large file (or, for a backend, how many runs so far), and the findings filed."""

    source: SpanSource
    out: IO[str]
    total: int | None
    runs: int = 0
    findings: int = 0
    _drawn: float = field(default=0.0)
    _shown: bool = False

    @classmethod
    def of(cls, source: SpanSource, out: IO[str]) -> _Progress | None:
        isatty = getattr(out, "isatty", None)
        if not (callable(isatty) and isatty()):
            return None
        size = getattr(source, "size", None)
        if isinstance(size, int):
            return cls(source, out, size) if size >= PROGRESS_MIN_BYTES and not source.whole_traces else None
        return cls(source, out, None)  # a backend: slow per trace, its size unknown

    def judged(self, run: JudgedRun) -> None:
        self.runs += 1
        self.findings += len(run.findings)
        now = time.monotonic()
        if now - self._drawn >= PROGRESS_EVERY_S:
            self._drawn = now
            self._draw()

    def _draw(self) -> None:
        width = max(shutil.get_terminal_size((80, 24)).columns - 1, 20)
        counts = f"{self.runs} runs, {self.findings} findings"
        if self.total:
            reader = getattr(self.source, "bytes_read", None)
            done = min(reader() / self.total, 1.0) if callable(reader) else 0.0
            bar_width = max(width - len(counts) - 10, 10)
            filled = int(done * bar_width)
            line = f"[{'#' * filled}{'.' * (bar_width - filled)}] {done:4.0%} {counts}"
        else:
            line = f"judging {self.source.description}: {counts}"
        self.out.write("\r" + line[:width].ljust(width))
        self.out.flush()
        self._shown = True

    def done(self) -> None:
        if self._shown:
            width = max(shutil.get_terminal_size((80, 24)).columns - 1, 20)
            self.out.write("\r" + " " * width + "\r")
            self.out.flush()


# ── Judging ─────────────────────────────────────────────────────────────


@dataclass
class _Judging:
    """The judged runs of one source, with everything done per run: progress, export, annotations,
    the tally ``--fail-on`` reads. Iterate it once."""

    runs: TraceRuns
    book: ContractBook
    dials: Dials
    progress: _Progress | None
    sinks: list[Any]
    kinds_filed: set[str] = field(default_factory=set)
    findings: int = 0

    def __iter__(self) -> Iterator[JudgedRun]:
        from ..traces import judge_runs

        for judged in judge_runs(self.runs, self.book, self.dials):
            self.findings += len(judged.findings)
            self.kinds_filed.update(f.finding.kind for f in judged.findings)
            for sink in self.sinks:
                sink.judged(judged)
            if self.progress is not None:
                self.progress.judged(judged)
            yield judged


class _Records:
    """Judged runs as the report renderers read a recording streamed: runs one by one, and ``rest``
    (the source's problems) complete once they are all read."""

    def __init__(self, judging: _Judging) -> None:
        from ..recording.model import Recording

        self.judging = judging
        self.rest: Recording = Recording(source=judging.runs.description)

    def __iter__(self) -> Iterator[RunRecord]:
        from ..traces import run_record

        for judged in self.judging:
            yield run_record(judged)
        self.finish()

    def finish(self) -> None:
        """What the source said besides its runs: its problems and how many spans it held."""
        runs = self.judging.runs
        self.rest.problems, self.rest.unlisted_problems = list(runs.problems.listed), runs.problems.unlisted
        self.rest.spans = runs.spans

    def whole(self) -> Recording:
        runs = list(self)
        self.rest.runs = runs
        return self.rest


# ``--format json``: the keys of each finding's object, in order.
FINDING_FIELDS: Final = (
    "kind",
    "seam",
    "tool",
    "call_id",
    "predicate",
    "advisory",
    "message",
    "trace_id",
    "span_id",
)


def finding_line(judged: JudgedRun) -> Iterator[dict[str, object]]:
    """``--format json``: one object per finding (:data:`FINDING_FIELDS`), with the span it is about."""
    from ..limits import MAX_ATTRIBUTE_CHARS
    from ..text import clip

    for found in judged.findings:
        finding = found.finding
        values = (
            finding.kind,
            finding.seam,
            found.tool_name,
            found.call_id,
            finding.predicate,
            finding.advisory,
            clip(finding.message, MAX_ATTRIBUTE_CHARS),
            judged.run.trace_id,
            found.span_id,
        )
        yield dict(zip(FINDING_FIELDS, values, strict=True))


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except _Usage as usage:
        sys.stderr.write(f"{COMMAND}: {usage}\n")
        return 2
    except BrokenPipeError:  # `judge ... | head` closed the pipe: not an error
        sys.stderr.close()
        return 0


def _run(args: argparse.Namespace) -> int:
    from ..traces import SourceError

    fail_on = _kinds(args.fail_on, "--fail-on", allow_any=True) if args.fail_on is not None else frozenset()
    if args.kind is not None:
        _kinds(args.kind, "--kind", allow_any=False)
    find = args.find or args.kind is not None or args.limit is not None
    if find and args.format == "json":
        raise _Usage("--find answers in text; leave out --format json, or --find")
    contracts, said = _contracts(args.contracts)
    sys.stderr.write(f"{COMMAND}: {said}\n")
    book, dials = _book(contracts), dials_of(args)
    opened, runs = open_source_of(args)
    sinks = _sinks(args)
    progress = _Progress.of(opened, sys.stderr)
    judging = _Judging(runs, book, dials, progress, [sink for _, sink in sinks])
    try:
        _write(args, judging, find=find)
    except SourceError as error:
        raise _Usage(str(error)) from None
    finally:
        if progress is not None:
            progress.done()
        for label, sink in sinks:
            sys.stderr.write(f"{COMMAND}: {label(sink)}\n")
    if fail_on is None:
        return 1 if judging.findings else 0
    return 1 if judging.kinds_filed & fail_on else 0


def _sinks(args: argparse.Namespace) -> list[tuple[Any, Any]]:
    """Where judged runs go besides the output: (how to say what it did, the sink)."""
    sinks: list[tuple[Any, Any]] = []
    if args.export is not None:
        if not args.export.startswith(("http://", "https://")):
            raise _Usage(
                f"--export {args.export!r} is not a URL; give the OTLP endpoint, e.g. http://localhost:4318"
            )
        from ..judge import SetupError
        from ..telemetry.export.posthoc import PosthocExport

        try:
            exported = PosthocExport(args.export, protocol=args.export_protocol)
        except SetupError as error:
            raise _Usage(str(error)) from None
        sinks.append((lambda sink: sink.close().sentence(args.export), exported))
    if args.phoenix is not None:
        if not args.phoenix.startswith(("http://", "https://")):
            raise _Usage(
                f"--phoenix {args.phoenix!r} is not a URL; give Phoenix's base URL, e.g. http://localhost:6006"
            )
        from ..telemetry.export.posthoc import PhoenixFindings

        def annotated(sink: PhoenixFindings) -> str:
            sink.close()
            failed = f"; {sink.failed} could not be posted" if sink.failed else ""
            return f"posted {sink.posted} findings to Phoenix at {sink.base_url} as span annotations{failed}"

        sinks.append((annotated, PhoenixFindings(args.phoenix, headers=headers_of(args.header))))
    return sinks


def _write(args: argparse.Namespace, judging: _Judging, *, find: bool) -> None:
    records = _Records(judging)
    if find:
        from ..report.find import find_context_errors

        print(find_context_errors(records.whole(), kind=args.kind, limit=args.limit))
        return
    if args.format == "json":
        held: list[RunRecord] = []
        for judged in judging:
            for line in finding_line(judged):
                sys.stdout.write(json.dumps(line) + "\n")
            if args.html:
                from ..traces import run_record

                held.append(run_record(judged))
        sys.stdout.flush()
        records.finish()
        problems = judging.runs.problems
        if len(problems):
            first = "; ".join(problems.listed[:PROBLEMS_SAID])
            sys.stderr.write(
                f"{COMMAND}: {len(problems)} problems reading {judging.runs.description}: {first}\n"
            )
        if args.html:
            records.rest.runs = held
            _html(args.html, records.rest)
        return
    if args.html:
        _html(args.html, records.whole())
        print(f"{COMMAND}: wrote {args.html}")
        return
    from ..report import write_report

    write_report(records, sys.stdout, verbose=args.verbose)
    sys.stdout.flush()


def _html(path: str, recording: Recording) -> None:
    from ..report.html import format_html

    try:
        Path(path).write_text(format_html(recording), encoding="utf-8")
    except OSError as error:
        raise _Usage(f"--html {path} could not be written ({error.strerror or error})") from None
