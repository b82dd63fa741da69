"""The docs' generated parts, each read at build time from the code that owns it, so none can drift.

mkdocs loads this file as a hook (``hooks:`` in mkdocs.yml) and calls :func:`on_page_markdown` for
every page. Two markers are replaced there:

- a line ``<!-- generated: NAME -->`` by the text :data:`GENERATORS` makes for ``NAME`` (the
  ``setup()`` options from ``judge/dials.py`` and ``telemetry/export/options.py``, the telemetry
  names from ``telemetry/schema/names.py``, the command line from ``context_integrity.cli.parser()``,
  the ledger table from the registry, the API reference from the top level's table of homes);
- a line ``<!-- ceiling: ROW -->`` by the ceiling of the check that files ``ROW``
  (``dangling-reference@compose``), quoted from ``ci.CEILINGS``.

A marker naming nothing known fails the build, naming the page and the marker. The tests import
this module too (``tests/test_docs_site.py``) to build the site and hold the generated pages to
the code.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

GENERATED = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)
CEILING = re.compile(r"^<!-- ceiling: ([a-z-]+@[a-z]+) -->$", re.M)
# The width --help is rendered at, whatever terminal builds the docs.
HELP_COLUMNS = "100"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def setup_options() -> str:
    """``setup()``'s keyword options in signature order: what each accepts, its default, what it does."""
    import context_integrity as ci
    from context_integrity.judge.dials import dial_specs
    from context_integrity.telemetry.export.options import OPTION_MEANINGS

    dials = dial_specs()
    lines = ["| option | accepts | default | what it does |", "| --- | --- | --- | --- |"]
    for name, parameter in inspect.signature(ci.setup).parameters.items():
        if name in dials:
            spec = dials[name]
            accepts, meaning = spec.expected, spec.meaning
        else:
            accepts = str(parameter.annotation)
            meaning = OPTION_MEANINGS[name]  # a KeyError here names the option nobody explained
        default = "—" if parameter.default is inspect.Parameter.empty else f"`{parameter.default!r}`"
        lines.append(f"| `{name}` | {_cell(accepts)} | {_cell(default)} | {_cell(meaning)} |")
    return "\n".join(lines)


def _names_module() -> tuple[Any, str]:
    from context_integrity.telemetry.schema import names

    return names, Path(inspect.getfile(names)).read_text(encoding="utf-8")


def _section_of(comment: str) -> str | None:
    found = re.match(r"#\s*──\s*(.+?)\s*─*$", comment.strip())
    return found.group(1) if found else None


def telemetry_names() -> str:
    """Every constant and name-making function of ``names.py``, by its section, with the comment above it."""
    names, source = _names_module()
    lines = source.splitlines()
    tree = ast.parse(source)
    out: list[str] = []
    section: str | None = None
    started: set[str] = set()

    def heading(title: str) -> None:
        if title not in started:
            started.add(title)
            out.extend(["", f"### {title}", "", "| name | value | note |", "| --- | --- | --- |"])

    def note_above(lineno: int) -> str:
        notes: list[str] = []
        index = lineno - 2
        while index >= 0 and lines[index].strip().startswith("#") and _section_of(lines[index]) is None:
            notes.insert(0, lines[index].strip().lstrip("#").strip())
            index -= 1
        return " ".join(notes)

    # Section headers are comments, so walk the lines and the statements together.
    headers = {number + 1: title for number, line in enumerate(lines) if (title := _section_of(line))}
    for node in tree.body:
        for header_line in sorted(line for line in headers if line < node.lineno):
            section = headers.pop(header_line)
        title = section or "Instrumentation scope"
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            constant = node.target.id
            if constant.startswith("_"):
                continue
            value = getattr(names, constant)
            # A set is listed sorted: its own order changes from one process to the next.
            listed = sorted(value) if isinstance(value, (set, frozenset)) else value
            shown = ", ".join(f"`{v}`" for v in listed) if isinstance(listed, (tuple, list)) else f"`{value}`"
            heading(title)
            out.append(f"| `{constant}` | {_cell(shown)} | {_cell(note_above(node.lineno))} |")
        elif isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            function = getattr(names, node.name)
            placeholders = [f"<{argument.arg}>" for argument in node.args.args]
            with contextlib.suppress(Exception):
                made = function(*placeholders)
                doc = inspect.getdoc(function) or note_above(node.lineno)
                heading(title)
                call = f"{node.name}({', '.join(argument.arg for argument in node.args.args)})"
                out.append(f"| `{call}` | `{made}` | {_cell(doc.splitlines()[0] if doc else '')} |")
    return "\n".join(out).strip()


@contextlib.contextmanager
def _columns(width: str) -> Iterator[None]:
    held = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = width
    try:
        yield
    finally:
        if held is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = held


def cli_reference() -> str:
    """``context-integrity --help`` and each subcommand's ``--help``, as the parser prints them."""
    from context_integrity.cli import parser

    top = parser()
    subcommands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {action.dest: action.help or "" for action in subcommands._choices_actions}
    with _columns(HELP_COLUMNS):
        out = ["```text", top.format_help().rstrip(), "```"]
        for name, command in subcommands.choices.items():
            out.extend(["", f"## `context-integrity {name}`", ""])
            if summaries.get(name):
                out.extend([summaries[name][:1].upper() + summaries[name][1:] + ".", ""])
            out.extend(["```text", command.format_help().rstrip(), "```"])
    return "\n".join(out)


def ledger_table() -> str:
    from context_integrity.judge.registry import ledger_table as table

    return table()


def api_reference() -> str:
    """One mkdocstrings block per top-level name, read from where the top level says it lives."""
    import context_integrity as ci

    out: list[str] = []
    for name in ci.__all__:
        home = ci._HOMES[name]
        out.extend(
            [f"::: context_integrity.{home}.{name}", "    options:", "      show_root_heading: true", ""]
        )
    return "\n".join(out)


GENERATORS: dict[str, Callable[[], str]] = {
    "setup-options": setup_options,
    "telemetry-names": telemetry_names,
    "cli": cli_reference,
    "ledger-table": ledger_table,
    "api": api_reference,
}


def ceiling_quote(row: str) -> str:
    """The ceiling of the check that files ``row``, as a Markdown quotation."""
    import context_integrity as ci

    return "> " + ci.CEILINGS[row]


def render(markdown: str, where: str) -> str:
    """``markdown`` with every marker replaced; a marker naming nothing known raises, naming ``where``."""

    def generated(found: re.Match[str]) -> str:
        if found.group(1) not in GENERATORS:
            raise ValueError(f"{where}: unknown marker {found.group(0)}; known: {', '.join(GENERATORS)}")
        return GENERATORS[found.group(1)]()

    def ceiling(found: re.Match[str]) -> str:
        try:
            return ceiling_quote(found.group(1))
        except KeyError:
            raise ValueError(f"{where}: {found.group(0)} names no registered row") from None

    return CEILING.sub(ceiling, GENERATED.sub(generated, markdown))


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return render(markdown, page.file.src_uri)
