"""A run's profile: the evidence ``suggest`` proposes declarations from, gathered without values.

Per tool it counts what its results held (for each column, how many values of each kind: a number,
a string, a date, ``None``, a missing key, ...), which earlier tool's result served each argument the
model chose (tool names and counts), how often a call repeated an earlier identical one, and how often
a tool's result echoed its own arguments (a search tool that repeats its query serves every value it
was asked for, which makes it no ground). It holds names and counts, never a value: the profile leaves
the process on the run's summary span, where content capture is off.

The same collector runs in process (``setup(profile=True)``, on by default in dev posture) and offline
(``suggest`` replays recorded runs through the judge with it on), so the two read alike. Bounded: the
tools, columns, arguments and producers it names are capped in :mod:`context_integrity.limits`, and
what it had to leave out it counts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, get_args

from ..checks.column_types.values import OFFENCE, is_iso_date
from ..checks.duplicate_execution import arguments_key
from ..contracts.results import ResultReading
from ..limits import (
    MAX_ISO_DATE_CHARS,
    MAX_PROFILE_PRODUCERS,
    MAX_PROFILED_ARGUMENTS,
    MAX_PROFILED_COLUMNS,
    MAX_PROFILED_TOOLS,
    MAX_SERVED_RESULTS_PER_RUN,
    MAX_SERVED_TEXT_CHARS,
    MIN_CHECKED_ARGUMENT_CHARS,
)
from ..loop import ModelResponse, RequestFrame, content_text
from .state import served_text  # the one rendering of a served result

# What a column's value was seen to be. ``date-string`` is a string that ``datetime.fromisoformat``
# accepts (a ``date`` column accepts it; a ``string`` column does too).
ValueKind = Literal["number", "string", "date-string", "boolean", "date", "null", "missing", "other"]
VALUE_KINDS: Final[tuple[ValueKind, ...]] = get_args(ValueKind)

# The format of the profile as written to the summary span; a reader refuses another.
PROFILE_VERSION: Final = 1

# What the profile may name: a column, an argument or a tool name shaped like an identifier. A key
# made of data (``{"alice@example.com": true}``) is counted, never written.
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-\[\]]{0,63}")
# How deep argument paths are followed into nested objects ("filters.host").
_ARGUMENT_DEPTH: Final = 3


def value_kind(value: object) -> ValueKind:
    """The kind of one column value, by the column check's own rules (one owner of "what is a number")."""
    if value is None:
        return "null"
    if OFFENCE["boolean"](value) is None:
        return "boolean"
    if OFFENCE["number"](value) is None:
        return "number"
    if isinstance(value, str):
        return "date-string" if len(value) <= MAX_ISO_DATE_CHARS and is_iso_date(value) else "string"
    if OFFENCE["date"](value) is None:
        return "date"
    return "other"


def _named(name: object) -> str | None:
    return name if isinstance(name, str) and _NAME.fullmatch(name) else None


@dataclass(slots=True)
class ArgumentTally:
    """One argument of one tool: what served the values the model chose for it."""

    # Values long enough to judge (the grounding checks' minimum), and those shorter.
    judged: int = 0
    short: int = 0
    # Producer tool -> values an earlier result of it held (and its own call's arguments did not).
    producers: dict[str, int] = field(default_factory=dict)
    # Producer tool -> values its result held only because its call was asked for them (an echo).
    echoed: dict[str, int] = field(default_factory=dict)
    # Values a user (or system) message of the request held.
    from_user: int = 0
    # Values nothing in the run had served.
    unserved: int = 0

    def merge(self, other: ArgumentTally) -> None:
        self.judged += other.judged
        self.short += other.short
        _add_counts(self.producers, other.producers, MAX_PROFILE_PRODUCERS)
        _add_counts(self.echoed, other.echoed, MAX_PROFILE_PRODUCERS)
        self.from_user += other.from_user
        self.unserved += other.unserved


@dataclass(slots=True)
class ToolTally:
    """One tool: its calls, its result columns' value kinds, its arguments' sources."""

    calls: int = 0
    # Runs in which the tool returned at least once.
    runs: int = 0
    rowset_calls: int = 0
    rows: int = 0
    # Column -> value kind -> values of that kind.
    columns: dict[str, dict[str, int]] = field(default_factory=dict)
    # Column -> rowset calls in which some row had it (a column absent from every row of a call is
    # what missing-column files, nullable or not).
    column_calls: dict[str, int] = field(default_factory=dict)
    arguments: dict[str, ArgumentTally] = field(default_factory=dict)
    # Calls whose arguments repeated an earlier call of the same tool in the same run, and the runs
    # (within this tally: 1 for one run's profile) in which that happened.
    repeats: int = 0
    runs_with_repeats: int = 0
    # Calls whose result held one of the call's own argument values.
    echoing_calls: int = 0
    # Column values and argument values left out: their column or argument was over the caps, or
    # its name was not shaped like one (data used as a key).
    unnamed: int = 0

    def merge(self, other: ToolTally) -> None:
        self.calls += other.calls
        self.runs += other.runs
        self.rowset_calls += other.rowset_calls
        self.rows += other.rows
        for column, kinds in other.columns.items():
            held = self.columns.get(column)
            if held is None:
                if len(self.columns) >= MAX_PROFILED_COLUMNS:
                    self.unnamed += 1
                    continue
                held = self.columns[column] = {}
            _add_counts(held, kinds, len(VALUE_KINDS))
        _add_counts(self.column_calls, other.column_calls, MAX_PROFILED_COLUMNS)
        for name, tally in other.arguments.items():
            mine = self.arguments.get(name)
            if mine is None:
                if len(self.arguments) >= MAX_PROFILED_ARGUMENTS:
                    self.unnamed += 1
                    continue
                mine = self.arguments[name] = ArgumentTally()
            mine.merge(tally)
        self.repeats += other.repeats
        self.runs_with_repeats += other.runs_with_repeats
        self.echoing_calls += other.echoing_calls
        self.unnamed += other.unnamed

    def renamed(self, rename: Callable[[str], str]) -> ToolTally:
        """This tally with its column and argument names, and the producers it names, renamed (see
        :meth:`Profile.renamed`)."""
        out = replace(self, columns={}, column_calls={}, arguments={})
        for column, kinds in self.columns.items():
            shown = _named(rename(column))
            if shown is None:
                out.unnamed += sum(kinds.values())
                continue
            _add_counts(out.columns.setdefault(shown, {}), kinds, len(VALUE_KINDS))
            calls = out.column_calls.get(shown, 0) + self.column_calls.get(column, 0)
            out.column_calls[shown] = min(calls, self.rowset_calls)  # two columns merged: calls overlap
        for path, argument in self.arguments.items():
            shown = _named(rename(path))
            if shown is None:
                out.unnamed += argument.judged + argument.short
                continue
            producers = _renamed_counts(argument.producers, rename, out)
            echoed = _renamed_counts(argument.echoed, rename, out)
            renamed = replace(argument, producers=producers, echoed=echoed)
            out.arguments.setdefault(shown, ArgumentTally()).merge(renamed)
        return out


def _renamed_counts(
    counts: Mapping[str, int], rename: Callable[[str], str], tally: ToolTally
) -> dict[str, int]:
    """Producer -> values, the producers renamed; the values of one left out are counted on ``tally``."""
    out: dict[str, int] = {}
    for name, count in counts.items():
        shown = _named(rename(name))
        if shown is None:
            tally.unnamed += count
        else:
            out[shown] = out.get(shown, 0) + count
    return out


def _add_counts(into: dict[str, int], counts: Mapping[str, int], cap: int) -> None:
    for key, count in counts.items():
        if key in into:
            into[key] += count
        elif len(into) < cap:
            into[key] = count


@dataclass(slots=True)
class Profile:
    """The tallies of one run, or of many merged. ``unnamed_tools`` counts tools over the cap."""

    tools: dict[str, ToolTally] = field(default_factory=dict)
    runs: int = 0
    unnamed_tools: int = 0

    def tool(self, name: str) -> ToolTally | None:
        tally = self.tools.get(name)
        if tally is None:
            if len(self.tools) >= MAX_PROFILED_TOOLS or _named(name) is None:
                self.unnamed_tools += 1
                return None
            tally = self.tools[name] = ToolTally()
        return tally

    def merge(self, other: Profile) -> None:
        self.runs += other.runs
        self.unnamed_tools += other.unnamed_tools
        for name, tally in other.tools.items():
            mine = self.tool(name)
            if mine is not None:
                mine.merge(tally)

    def renamed(self, rename: Callable[[str], str]) -> Profile:
        """The profile with every name it holds (tools, columns, argument paths, producers) as
        ``rename`` returns it: how the names leave through the application's redaction hook. Names
        that come back equal are merged; one that comes back not shaped like a name is left out and
        counted, as a key made of data is."""
        out = Profile(runs=self.runs, unnamed_tools=self.unnamed_tools)
        for name, tally in self.tools.items():
            shown = _named(rename(name))
            if shown is None:
                out.unnamed_tools += 1
                continue
            mine = out.tool(shown)  # past the cap it is counted there
            if mine is not None:
                mine.merge(tally.renamed(rename))
                mine.runs = min(mine.runs, self.runs)  # two tools merged ran in the same runs
        return out

    # ── the summary span's form: compact JSON of names and counts ──────

    def encode(self, max_chars: int) -> str:
        """The profile as one JSON text of at most ``max_chars``: when it would not fit, the tools
        first seen last are left out whole, and counted in ``unnamed_tools``."""
        tools = {name: _tally_json(tally) for name, tally in self.tools.items()}
        dropped = self.unnamed_tools
        while True:
            text = json.dumps(
                {"v": PROFILE_VERSION, "runs": self.runs, "unnamed_tools": dropped, "tools": tools},
                separators=(",", ":"),
            )
            if len(text) <= max_chars or not tools:
                return text if len(text) <= max_chars else ""
            tools.pop(next(reversed(tools)))
            dropped += 1


def _tally_json(tally: ToolTally) -> dict[str, object]:
    out: dict[str, object] = {"calls": tally.calls, "runs": tally.runs}
    if tally.rowset_calls:
        out["rowset_calls"] = tally.rowset_calls
        out["rows"] = tally.rows
    if tally.columns:
        out["columns"] = tally.columns
        out["column_calls"] = tally.column_calls
    if tally.arguments:
        out["arguments"] = {
            name: {
                key: value
                for key, value in (
                    ("judged", a.judged),
                    ("short", a.short),
                    ("producers", a.producers),
                    ("echoed", a.echoed),
                    ("from_user", a.from_user),
                    ("unserved", a.unserved),
                )
                if value
            }
            for name, a in tally.arguments.items()
        }
    for key, value in (
        ("repeats", tally.repeats),
        ("runs_with_repeats", tally.runs_with_repeats),
        ("echoing_calls", tally.echoing_calls),
        ("unnamed", tally.unnamed),
    ):
        if value:
            out[key] = value
    return out


class ProfileUnreadable(ValueError):
    """A profile attribute that is not one this version wrote."""


def decode_profile(text: object) -> Profile:
    """A profile from its summary-span form. Raises :class:`ProfileUnreadable` with the reason."""
    if not isinstance(text, str):
        raise ProfileUnreadable(f"the profile is {type(text).__name__}, not JSON text")
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ProfileUnreadable(f"the profile is not JSON ({error})") from None
    if not isinstance(document, dict) or document.get("v") != PROFILE_VERSION:
        raise ProfileUnreadable(f"the profile is not version {PROFILE_VERSION}")
    profile = Profile(runs=_count(document.get("runs")), unnamed_tools=_count(document.get("unnamed_tools")))
    tools = document.get("tools")
    if not isinstance(tools, dict):
        raise ProfileUnreadable("the profile has no tools object")
    for name, raw in tools.items():
        tally = profile.tool(name)
        if tally is None or not isinstance(raw, dict):
            continue
        tally.calls = _count(raw.get("calls"))
        tally.runs = _count(raw.get("runs"))
        tally.rowset_calls = _count(raw.get("rowset_calls"))
        tally.rows = _count(raw.get("rows"))
        tally.repeats = _count(raw.get("repeats"))
        tally.runs_with_repeats = _count(raw.get("runs_with_repeats"))
        tally.echoing_calls = _count(raw.get("echoing_calls"))
        tally.unnamed = _count(raw.get("unnamed"))
        for column, kinds in _items(raw.get("columns"))[:MAX_PROFILED_COLUMNS]:
            if _named(column) is not None:
                tally.columns[column] = {k: _count(v) for k, v in _items(kinds) if k in VALUE_KINDS}
        tally.column_calls = {
            column: _count(calls)
            for column, calls in _items(raw.get("column_calls"))
            if column in tally.columns
        }
        for argument, counts in _items(raw.get("arguments"))[:MAX_PROFILED_ARGUMENTS]:
            if _named(argument) is None or not isinstance(counts, dict):
                continue
            tally.arguments[argument] = ArgumentTally(
                judged=_count(counts.get("judged")),
                short=_count(counts.get("short")),
                producers=_names_counts(counts.get("producers")),
                echoed=_names_counts(counts.get("echoed")),
                from_user=_count(counts.get("from_user")),
                unserved=_count(counts.get("unserved")),
            )
    return profile


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _items(value: object) -> list[tuple[str, object]]:
    return [(k, v) for k, v in value.items() if isinstance(k, str)] if isinstance(value, dict) else []


def _names_counts(value: object) -> dict[str, int]:
    return {k: _count(v) for k, v in _items(value)[:MAX_PROFILE_PRODUCERS] if _named(k) is not None}


# ── gathering, as the run goes ──────────────────────────────────────────


@dataclass(slots=True)
class _Served:
    """One earlier tool result: its tool, its lowered text, and its own call's argument texts."""

    tool_name: str
    text: str
    asked: tuple[str, ...]


def _argument_values(arguments: object, path: str = "", depth: int = 0) -> Iterable[tuple[str | None, str]]:
    """(path, value text) for every scalar leaf of the arguments; the path ``None`` when a key on the
    way is not shaped like a name. Lists collapse to ``path[]``."""
    if depth > _ARGUMENT_DEPTH:
        return
    if isinstance(arguments, Mapping):
        for key, value in list(arguments.items())[:MAX_PROFILED_ARGUMENTS]:
            name = _named(key)
            child = None if name is None or path is None else (f"{path}.{name}" if path else name)
            yield from _argument_values(value, child, depth + 1)  # type: ignore[arg-type]
    elif isinstance(arguments, (list, tuple)):
        for value in arguments[:MAX_PROFILED_ARGUMENTS]:
            yield from _argument_values(value, f"{path}[]" if path else None, depth + 1)  # type: ignore[arg-type]
    elif isinstance(arguments, str):
        yield path or None, arguments
    elif isinstance(arguments, int) and not isinstance(arguments, bool):
        yield path or None, str(arguments)


class RunProfiler:
    """Gathers one run's :class:`Profile` from what the judge sees at the write and choice seams."""

    __slots__ = ("_repeated_tools", "_seen_calls", "_served", "_served_chars", "profile")

    def __init__(self) -> None:
        self.profile = Profile(runs=1)
        self._served: list[_Served] = []
        self._served_chars = 0
        self._seen_calls: set[tuple[str, str]] = set()
        self._repeated_tools: set[str] = set()

    def on_result(
        self, tool_name: str, reading: ResultReading, result: object, arguments: Mapping[str, Any] | None
    ) -> None:
        """A tool returned: tally its columns, note repeats and echoes, and keep its text as ground.
        ``arguments`` is ``None`` where they are not known (a trace that did not record them): the
        columns are tallied, and no repeat or echo is guessed."""
        tally = self.profile.tool(tool_name)
        asked = tuple(value.lower() for _, value in _argument_values(arguments) if value)
        text = _lowered_text(result)
        if tally is not None:
            tally.calls += 1
            tally.runs = 1
            key = arguments_key(arguments) if arguments is not None else None
            if key is not None:
                if (tool_name, key) in self._seen_calls:
                    tally.repeats += 1
                    if tool_name not in self._repeated_tools:
                        self._repeated_tools.add(tool_name)
                        tally.runs_with_repeats += 1
                else:
                    self._seen_calls.add((tool_name, key))
            if any(len(value) >= MIN_CHECKED_ARGUMENT_CHARS and value in text for value in asked):
                tally.echoing_calls += 1
            if reading.is_rowset:
                tally.rowset_calls += 1
                tally.rows += reading.row_count
                _tally_columns(tally, reading)
        self._keep(_Served(tool_name, text, asked))

    def on_response(self, frame: RequestFrame | None, response: ModelResponse) -> None:
        """A model chose calls: for each argument value, which earlier result (or user) served it."""
        user_text: str | None = None
        for call in response.calls:
            tally = self.profile.tool(call.name)
            if tally is None:
                continue
            for path, value in _argument_values(call.arguments):
                if path is None:
                    tally.unnamed += 1
                    continue
                argument = tally.arguments.get(path)
                if argument is None:
                    if len(tally.arguments) >= MAX_PROFILED_ARGUMENTS:
                        tally.unnamed += 1
                        continue
                    argument = tally.arguments[path] = ArgumentTally()
                if len(value) < MIN_CHECKED_ARGUMENT_CHARS:
                    argument.short += 1
                    continue
                argument.judged += 1
                lowered = value.lower()
                found = False
                for served in self._served:
                    if lowered in served.text:
                        found = True
                        counts = argument.echoed if lowered in served.asked else argument.producers
                        if served.tool_name in counts or len(counts) < MAX_PROFILE_PRODUCERS:
                            counts[served.tool_name] = counts.get(served.tool_name, 0) + 1
                if user_text is None:
                    user_text = _user_text(frame)
                if lowered in user_text:
                    argument.from_user += 1
                    found = True
                if not found:
                    argument.unserved += 1

    def _keep(self, served: _Served) -> None:
        self._served.append(served)
        self._served_chars += len(served.text)
        while len(self._served) > MAX_SERVED_RESULTS_PER_RUN:
            self._served_chars -= len(self._served.pop(0).text)


def _lowered_text(result: object) -> str:
    return served_text(result).lower()[:MAX_SERVED_TEXT_CHARS]


def _user_text(frame: RequestFrame | None) -> str:
    if frame is None:
        return ""
    parts = [frame.system or ""]
    parts.extend(
        content_text(message.content) for message in frame.messages if message.role in ("user", "system")
    )
    return "\n".join(parts).lower()


def _tally_columns(tally: ToolTally, reading: ResultReading) -> None:
    if reading.columns and reading.fields is not None:
        for name, values in zip(reading.fields, reading.columns, strict=False):
            kinds = _column(tally, name)
            if kinds is not None:
                tally.column_calls[name] = tally.column_calls.get(name, 0) + 1
                for value in values:
                    kind = value_kind(value)
                    kinds[kind] = kinds.get(kind, 0) + 1
        return
    # Every column any row has (a row that lacks one is counted "missing" there), in first-seen order.
    seen_columns: dict[str, None] = {}
    for row in reading.rows:
        if len(seen_columns) >= MAX_PROFILED_COLUMNS:
            break
        seen_columns.update(dict.fromkeys(row))
    for name in seen_columns:
        if name in tally.columns or _column(tally, name) is not None:
            tally.column_calls[name] = tally.column_calls.get(name, 0) + 1
    for row in reading.rows:
        for name in seen_columns:
            kinds = _column(tally, name)
            if kinds is None:
                continue
            found: str = value_kind(row[name]) if name in row else "missing"
            kinds[found] = kinds.get(found, 0) + 1


def _column(tally: ToolTally, name: object) -> dict[str, int] | None:
    column = _named(name)
    if column is None:
        tally.unnamed += 1
        return None
    kinds = tally.columns.get(column)
    if kinds is None:
        if len(tally.columns) >= MAX_PROFILED_COLUMNS:
            tally.unnamed += 1
            return None
        kinds = tally.columns[column] = {}
    return kinds
