"""``context-integrity report --html`` renders in a real headless Chromium, offline, at 1024 and 1400 px.

The laws under test: the page written from the demos' recording (the whole family, then the short
column demo's two runs) (a) loads nothing from anywhere but itself; (b) shows every finding the
recording holds, its message beside its witnesses; (c) shows each run's ledger with one row per
registered check, and a never-ran row stands out; (d) charts findings per kind and per tool;
(e) draws each run as a waterfall: one row per span (the run, each model call, each tool call),
named whole, on a time axis with labelled ticks, every finding marked on the span that carries it
and linked to its card, under a legend; (f) says what a witness's epoch and stratum mean; and
(g) at either width, no element reaches past the card it sits in. A screenshot at each width is
kept as a test artifact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from context_integrity import cli
from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.recording import read_recording
from context_integrity.recording.model import Recording

from ._services import ARTIFACTS, CHROMIUM_BIN, library_env, missing, run_demo

pytestmark = pytest.mark.live

WIDTHS = (1024, 1400)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]

# Every element of a card (a run's section, the summary, a finding) lies within it; an element
# inside a scroll box (a table too wide to wrap) is held to the box, and the box to the card.
OVERFLOWING = """
() => {
  const out = [];
  const cards = document.querySelectorAll("header, section.run, section.summary, .finding");
  for (const card of cards) {
    const edge = card.getBoundingClientRect();
    if (card.scrollWidth > card.clientWidth + 1) out.push(`${card.className || card.tagName} scrolls`);
    for (const el of card.querySelectorAll("*")) {
      const box = el.parentElement.closest(".scroll, .wf-track");
      if (box && card.contains(box) && box !== el) continue;
      const r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      if (r.right > edge.right + 1 || r.left < edge.left - 1) {
        out.push(`${el.tagName}.${el.className} in ${card.className || card.tagName}: ` +
                 `${Math.round(r.left)}..${Math.round(r.right)} outside ${Math.round(edge.left)}..${Math.round(edge.right)}`);
      }
    }
  }
  for (const box of document.querySelectorAll(".scroll")) {
    if (box.scrollWidth > box.clientWidth + 1) out.push(`a table scrolls in ${box.closest(".finding, section")?.className}`);
  }
  return out;
}
"""


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recording, Path]:
    where = tmp_path_factory.mktemp("html")
    recording = where / "demo.jsonl"
    # Processes of their own: the global tracer provider can be set once per process.
    env = library_env(CONTEXT_INTEGRITY_RECORDING=str(recording))
    run_demo(env, args=())
    run_demo(env)
    out = where / "report.html"
    assert cli.main(["report", "--html", str(out), str(recording)]) == 0
    return read_recording(recording), out


def _render(html: Path, width: int) -> dict[str, Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("the playwright Python package", "pip install playwright (the test extra has it)")
    if not CHROMIUM_BIN.exists():
        missing(str(CHROMIUM_BIN), "the Debian chromium package")
    ARTIFACTS.mkdir(exist_ok=True)
    requested: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM_BIN), headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": width, "height": 1000})
            page.on("request", lambda request: requested.append(request.url))
            page.goto(html.as_uri())
            page.evaluate("document.querySelector('details#reading').open = true")
            seen = {
                "requested": requested,
                "body": page.inner_text("body"),
                "reading": page.inner_text("#reading"),
                "finding_boxes": page.locator(".finding").count(),
                "ledger_rows": page.locator("table.ledger tr").count(),
                "kind_bars": page.locator(".chart .row").count(),
                "waterfalls": page.locator(".waterfall").count(),
                "rows": page.locator(".waterfall .wf-row:not(.axis)").count(),
                "names": page.locator(".waterfall .wf-row:not(.axis) .wf-name").all_inner_texts(),
                "ticks": page.locator(".waterfall .axis .wf-tick span").all_inner_texts(),
                "legends": page.locator(".legend").count(),
                "marks": page.locator(".wf-mark").evaluate_all(
                    "marks => marks.map(m => m.getAttribute('href'))"
                ),
                "anchors": page.locator(".finding[id]").evaluate_all("cards => cards.map(c => c.id)"),
                "overflowing": page.evaluate(OVERFLOWING),
            }
            page.screenshot(path=str(ARTIFACTS / f"report-html-{width}.png"), full_page=True)
        finally:
            browser.close()
    return seen


@pytest.mark.parametrize("width", WIDTHS)
def test_the_page_renders_offline_readable_at_each_width(
    page_file: tuple[Recording, Path], width: int
) -> None:
    recording, html = page_file
    seen = _render(html, width)
    findings = [f for run in recording.runs for f in run.findings]
    assert len(recording.runs) == 3 and findings

    assert seen["requested"] == [html.as_uri()]
    assert seen["overflowing"] == [], seen["overflowing"]
    assert Path(ARTIFACTS / f"report-html-{width}.png").stat().st_size > 10_000

    body = seen["body"]
    assert seen["finding_boxes"] == len(findings)
    for finding in findings:
        assert finding.message[:80] in body
        for witness in finding.witnesses:
            assert str(witness["value"]) in body
    assert seen["ledger_rows"] == len(recording.runs) * (1 + len(REGISTERED_CHECKS))
    for row in REGISTERED_CHECKS:
        assert row.check in body
    assert seen["kind_bars"] >= 2  # at least one kind and one tool

    # the waterfall: one row per span, named whole, on an axis, every finding marked and linked
    assert seen["waterfalls"] == seen["legends"] == len(recording.runs)
    spans = [run for run in recording.runs] + [
        c for run in recording.runs for c in (*run.tool_calls, *run.other_calls)
    ]
    assert seen["rows"] == len(spans)
    assert any(
        call.operation == "chat" and not call.findings for run in recording.runs for call in run.other_calls
    )
    for run in recording.runs:
        for call in run.tool_calls:
            assert any(call.tool_name in name for name in seen["names"]), call.tool_name
    assert not any(name.strip() in ("exe", "execute_tool") for name in seen["names"])
    assert len(seen["ticks"]) >= 2 * len(recording.runs) and all(seen["ticks"])
    assert len(seen["marks"]) == len(findings)
    assert set(seen["marks"]) <= {f"#{anchor}" for anchor in seen["anchors"]}

    # the terms a reader cannot guess are explained
    reading = " ".join(seen["reading"].split())
    assert "epoch" in reading and "model requests" in reading
    assert "stratum" in reading and "asserted" in reading and "quoted" in reading


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
