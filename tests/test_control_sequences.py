"""No recorded string reaches a terminal, a page or a model as a control sequence (issue 38, part 2).

The laws under test:
(a) ``text.visible`` writes every control, bidi and invisible format character (Unicode's Cc, Cf,
    Cs, Zl and Zp, as the running Python knows them) as its escape, leaves everything else alone,
    and is idempotent;
(b) a recording whose tool results, argument values, tool and agent names, call ids and status
    messages hold ESC, BEL, CR, an OSC 52 clipboard write and bidi overrides: ``report``,
    ``report -v`` and ``report --find`` write none of those bytes, and the HTML page writes no bidi
    override or control;
(c) property: whatever text stands in any string position of a recording, the text report, the
    verbose report, ``find_context_errors`` and the HTML page hold no such character but the
    newlines that end their own lines.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.otlp_documents import TEXT_FIELDS, line, recording

from context_integrity.recording import read_recording_text
from context_integrity.report import format_report
from context_integrity.report.find import call_tool, find_context_errors
from context_integrity.report.html import format_html
from context_integrity.text import visible

ROOT = Path(__file__).resolve().parents[1]
UNSEEN_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}
# Format controls newer Unicode versions added (Egyptian hieroglyph controls, Unicode 15): escaped
# already, whichever Unicode the running Python knows.
NEWER_FORMAT = range(0x13439, 0x13440)
ESC, BEL, CR = "\x1b", "\x07", "\r"
# A window title, a screen clear, a cursor move, a clipboard write, and text shown reversed.
ATTACKS = (
    f"{ESC}]0;pwned{BEL}",
    f"{ESC}[2J{ESC}[H",
    f"{ESC}]52;c;cm0gLXJmIH4={BEL}",
    f"over{CR}written",
    "\u202egnp.exe",
    "\u2066isolated\u2069",
    "tag\U000e0041\U000e0042hidden",
)


def _unseen(text: str, allowed: str = "") -> list[str]:
    return sorted(
        {hex(ord(ch)) for ch in text if ch not in allowed and unicodedata.category(ch) in UNSEEN_CATEGORIES}
    )


def test_visible_escapes_every_control_and_format_character_and_nothing_else() -> None:
    for point in range(sys.maxunicode + 1):
        character = chr(point)
        shown = visible(character)
        if unicodedata.category(character) in UNSEEN_CATEGORIES or point in NEWER_FORMAT:
            assert shown != character and shown.startswith("\\") and shown.isascii(), hex(point)
        else:
            assert shown == character, hex(point)
    hostile = "".join(ATTACKS)
    assert visible(visible(hostile)) == visible(hostile)
    assert visible("\x1b") == "\\x1b" and visible("\u202e") == "\\u202e"
    assert visible("\U000e0041") == "\\U000e0041"


def _hostile_recording(tmp_path: Path) -> Path:
    attack = "".join(ATTACKS)
    texts = {
        field: f"{value}{attack}"
        for field, value in TEXT_FIELDS.items()
        if field
        in (
            "agent",
            "tool",
            "call_id",
            "message",
            "witness_value",
            "ground_value",
            "status_message",
            "subject",
        )
    }
    path = tmp_path / "hostile.jsonl"
    path.write_text(line(recording(texts)), encoding="utf-8")
    return path


def _cli(*args: str) -> bytes:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "context_integrity.cli", "report", *args],
        capture_output=True,
        env=env,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_no_control_reaches_the_terminal_from_any_reader(tmp_path: Path) -> None:
    path = _hostile_recording(tmp_path)
    for args in ((), ("-v",), ("--find",)):
        out = _cli(*args, str(path))
        assert b"lookup" in out  # the hostile recording was read, not refused
        text = out.decode("utf-8")
        assert out.count(ESC.encode()) == 0 and out.count(BEL.encode()) == 0, args
        assert _unseen(text, allowed="\n") == [], args
    answer = call_tool(path, {})
    assert "lookup" in answer and _unseen(answer, allowed="\n") == []
    page = tmp_path / "page.html"
    _cli("--html", str(page), str(path))
    assert _unseen(page.read_text(encoding="utf-8"), allowed="\n") == []


_ANY_TEXT = st.one_of(
    st.text(
        alphabet=st.one_of(st.characters(categories=("Cc", "Cf", "Cs", "Zl", "Zp")), st.characters()),
        max_size=40,
    ),
    st.lists(st.sampled_from(ATTACKS), min_size=1, max_size=3).map("".join),
)


@settings(max_examples=150, deadline=None)
@given(fields=st.dictionaries(st.sampled_from(sorted(TEXT_FIELDS)), _ANY_TEXT, min_size=1, max_size=6))
def test_every_renderer_shows_what_any_string_position_holds(fields: dict[str, str]) -> None:
    read = read_recording_text([line(recording(fields))])
    rendered = {
        "report": format_report(read),
        "report -v": format_report(read, verbose=True),
        "find": find_context_errors(read),
        "html": format_html(read),
    }
    for name, text in rendered.items():
        assert _unseen(text, allowed="\n") == [], name
        assert not re.search("[\ud800-\udfff]", text), name
        text.encode("utf-8")  # printable: a lone surrogate cannot even be written
