"""``context-integrity report --html`` renders in a real headless Chromium, offline.

The laws under test: the page written from the demo's recording (a) loads nothing from anywhere but
itself; (b) shows every finding the recording holds, its message beside its witnesses; (c) shows
each run's ledger with one row per registered check, and a never-ran row stands out; (d) charts
findings per kind and per tool; (e) draws each run's calls on a timeline. A screenshot is kept as a
test artifact.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from context_integrity import cli
from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.recording import read_recording

from ._services import ARTIFACTS, CHROMIUM_BIN, library_env, missing, run_demo

pytestmark = pytest.mark.live

SCREENSHOT = ARTIFACTS / "report-html.png"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    where = tmp_path_factory.mktemp("html")
    recording = where / "demo.jsonl"
    # A process of its own: the global tracer provider can be set once per process.
    run_demo(library_env(CONTEXT_INTEGRITY_RECORDING=str(recording)))
    out = where / "report.html"
    assert cli.main(["report", "--html", str(out), str(recording)]) == 0
    return recording, out


def test_the_page_renders_offline_with_findings_ledgers_charts_and_timelines(
    page_file: tuple[Path, Path],
) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("the playwright Python package", "pip install playwright (the test extra has it)")
    if not CHROMIUM_BIN.exists():
        missing(str(CHROMIUM_BIN), "the Debian chromium package")
    recording_path, html = page_file
    recording = read_recording(recording_path)
    findings = [f for run in recording.runs for f in run.findings]
    assert findings
    ARTIFACTS.mkdir(exist_ok=True)

    requested: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM_BIN), headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("request", lambda request: requested.append(request.url))
            page.goto(html.as_uri())
            body = page.inner_text("body")
            finding_boxes = page.locator(".finding").count()
            ledger_rows = page.locator("table.ledger tr").count()
            timeline_bars = page.locator(".timeline .bar").count()
            kind_bars = page.locator(".chart .row").count()
            page.screenshot(path=str(SCREENSHOT), full_page=True)
        finally:
            browser.close()

    assert requested == [html.as_uri()]
    assert finding_boxes == len(findings)
    for finding in findings:
        assert finding.message[:80] in body
        for witness in finding.witnesses:
            assert str(witness["value"]) in body
    runs = len(recording.runs)
    assert ledger_rows == runs * (1 + len(REGISTERED_CHECKS))  # a header and one row per check, per run
    for row in REGISTERED_CHECKS:
        assert row.check in body
    assert timeline_bars == sum(len(run.tool_calls) + len(run.other_calls) for run in recording.runs)
    assert kind_bars >= 2  # at least one kind and one tool
    assert Path(SCREENSHOT).stat().st_size > 10_000


def test_a_never_ran_row_stands_out(tmp_path: Path) -> None:
    from tests.recording_shapes import emit_summary, run_span, tracer_into

    from context_integrity.ledger import DispositionLedger
    from context_integrity.report.html import format_html

    path = tmp_path / "r.jsonl"
    provider, tracer = tracer_into(path)
    ledger = DispositionLedger(REGISTERED_CHECKS)
    for row in REGISTERED_CHECKS[1:]:
        ledger.note(row, "not-applicable")
    with run_span(tracer, "agent") as run:
        pass
    emit_summary(tracer, run, ledger, work_existed=True)
    provider.shutdown()
    page = format_html(read_recording(path))
    assert page.count('class="never-ran"') == 1
    assert "registered but never ran" in page
