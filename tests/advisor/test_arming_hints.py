"""The ledger says what arms a row: every unarmed row names the cheapest declaration that arms it, in
the text report, the HTML report and find_context_errors, and points to suggest where it proposes it."""

from __future__ import annotations

from pathlib import Path

from context_integrity.judge.registry import BUILT_IN
from context_integrity.recording import read_recording_text
from context_integrity.report import format_report
from context_integrity.report.arming import SUGGESTED, how_to_arm, looks_unarmed, unarmed_hints
from context_integrity.report.find import find_context_errors
from context_integrity.report.html import format_html

DATA = Path(__file__).parents[1] / "data" / "demo_runs.jsonl"


def _row(check: str, seam: str, **counts: int) -> dict[str, object]:
    return {
        "check": check,
        "seam": seam,
        "checked": 0,
        "findings": 0,
        "not_applicable": 0,
        "unreachable": 0,
        **counts,
    }


def test_every_built_row_has_a_sentence_from_the_registry() -> None:
    for entry in BUILT_IN:
        for row in entry.rows:
            sentence = how_to_arm(row.check, row.seam)
            assert sentence is not None and entry.armed_by in sentence
            assert ("suggest` proposes" in sentence) == (entry.declared_by in SUGGESTED)


def test_only_a_row_that_looked_at_nothing_reads_unarmed() -> None:
    assert looks_unarmed(_row("empty-lookup", "write", not_applicable=2))
    assert not looks_unarmed(_row("empty-lookup", "write", not_applicable=2, checked=1))
    assert not looks_unarmed(_row("empty-lookup", "write", not_applicable=1, unreachable=1))
    assert not looks_unarmed(_row("empty-lookup", "write"))  # never touched: wiring rot, said elsewhere
    rows = [
        _row("column-type-mismatch", "write", not_applicable=1),
        _row("missing-column", "write", not_applicable=1),
        _row("unsupported-argument", "choice", checked=3),
    ]
    ((said, sentence),) = unarmed_hints(rows)
    assert said == "column-type-mismatch @write, missing-column @write"
    assert "`context-integrity suggest` proposes result_columns" in sentence


def test_text_find_and_html_name_what_arms_the_unarmed_rows() -> None:
    recording = read_recording_text(DATA.read_text(encoding="utf-8").splitlines(keepends=True))
    sentence = how_to_arm("empty-lookup", "write")
    assert sentence is not None
    assert f"unarmed empty-lookup @write: {sentence}" in format_report(recording)
    assert f"unarmed: {sentence}" in find_context_errors(recording)
    html = format_html(recording)
    assert "Unarmed checks, and what arms them" in html and "notice_empty_lookups=True" in html
    # The column check ran in these runs: its rows are armed, and name nothing.
    assert "unarmed column-type-mismatch" not in format_report(recording)
