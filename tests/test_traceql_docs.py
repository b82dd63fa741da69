"""The TraceQL the docs and the dashboard show is scoped, and names what the library emits.

The laws under test: every TraceQL query in the README, in any page of the docs and in the Grafana
dashboard writes an intrinsic with its scope (``span:name``, ``event:name``), never a bare ``name``;
the docs' finding-kind query reads the finding event's own names; every attribute a query names is
one the library emits.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from context_integrity.telemetry.schema import names

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_hooks" not in p.parts)]
TEXT = "\n".join(document.read_text(encoding="utf-8") for document in DOCUMENTS)
DASHBOARD = json.loads((ROOT / "collector-config/grafana/dashboards/context-integrity.json").read_text())


# What a TraceQL query may begin with: a scoped or dotted attribute (``span.x``, ``event:name``,
# ``.x``) or an intrinsic written bare (which the test below refuses). A brace in the docs that begins
# otherwise (a contracts file's TOML inline table, ``{ type = ..., nullable = true }``) is not TraceQL.
_TRACEQL_START = re.compile(r"\{ (\.|\w+[.:]|(name|status|kind|duration|rootName|rootServiceName)\b)")


def _docs_queries() -> list[str]:
    found = re.findall(r"`(\{ [^`]+ \})`", TEXT)
    return [q for q in found if ("=" in q or ">" in q) and _TRACEQL_START.match(q)]


def _dashboard_queries(node: object) -> list[str]:
    if isinstance(node, dict):
        found = (
            [node["query"]]
            if node.get("queryType") == "traceql" and str(node.get("query")).startswith("{ ")
            else []
        )
        return found + [q for value in node.values() for q in _dashboard_queries(value)]
    if isinstance(node, list):
        return [q for item in node for q in _dashboard_queries(item)]
    return []


def test_every_traceql_query_scopes_its_intrinsics() -> None:
    queries = _docs_queries() + _dashboard_queries(DASHBOARD)
    assert len(queries) >= 4
    for query in queries:
        assert not re.search(r"(?<![:.\w])name\s*=", query), query  # bare `name =` is unscoped
        assert re.search(r"\b(span|event|resource)[.:]", query), query


def test_the_docs_select_findings_of_one_kind_by_the_finding_event() -> None:
    expected = (
        f'{{ event:name = "{names.FINDING_EVENT}" && event.{names.FINDING_KIND} = "column-type-mismatch" }}'
    )
    assert expected in _docs_queries()


def test_every_attribute_a_query_names_is_emitted() -> None:
    emitted = {v for k, v in vars(names).items() if k.isupper() and isinstance(v, str)}
    for query in _docs_queries() + _dashboard_queries(DASHBOARD):
        for attribute in re.findall(r"\b(?:span|event)\.([A-Za-z0-9_.]+)", query):
            assert attribute in emitted, (query, attribute)
