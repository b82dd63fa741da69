"""The marker sweep: a secret in every position a tool, a model or a user controls leaves by no channel.

``tests/redaction_scenario.py`` runs one agent in a process of its own with ``setup(redact=...)``,
a distinct secret in each position (the question, a user message, the instructions, tool results,
argument values, argument keys, the keys of a tool's rows, which the run's profile names, model
text, the final answer and a typed answer field, a settled fact, a value the application vouches
for, a tool's exception), several of them past the 80 characters a quoted value is clipped to. Every channel is then searched for any stretch of any
secret: the recording (spans, events, log records, metrics), what the process logged, every body
posted to Phoenix, and ``report``, ``report -v``, ``report --html`` and ``report --find`` over the
recording. With a constant hook and with a pattern hook, with content capture off and on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.fake_phoenix import FakePhoenix, serve
from tests.redaction_scenario import CONTENT_ONLY, NEVER_EXPORTED, PATTERN, SECRETS

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "tests" / "redaction_scenario.py"
# The findings the scenario must file for the sweep to mean anything.
EXPECTED_KINDS = {
    "column-type-mismatch",
    "duplicate-execution",
    "empty-lookup",
    "unsupported-argument",
    "unsupported-claim",
}
# A leak is any stretch this long of any secret: a hook handed half a secret lets the other half out.
FRAGMENT = 10


@pytest.fixture
def phoenix() -> Iterator[FakePhoenix]:
    yield from serve(200)


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CONTEXT_INTEGRITY_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )


def _leaks(channel: str, text: str) -> list[str]:
    """Each secret a stretch of which appears in ``text``, named with the channel."""
    found = []
    for position, secret in SECRETS.items():
        if any(secret[start : start + FRAGMENT] in text for start in range(len(secret) - FRAGMENT + 1)):
            found.append(f"{channel}: {position}")
    return found


def test_every_secret_is_distinct_from_ids_and_from_each_other() -> None:
    # A stretch of a secret must never occur by chance in a hex trace id or another secret.
    for position, secret in SECRETS.items():
        for start in range(len(secret) - FRAGMENT + 1):
            stretch = secret[start : start + FRAGMENT]
            assert set(stretch) - set("0123456789abcdef"), (position, stretch)
            assert sum(stretch in other for other in SECRETS.values()) == 1, (position, stretch)


@pytest.mark.parametrize("capture", ["off", "on"])
@pytest.mark.parametrize("hook", ["constant", "pattern"])
def test_no_secret_leaves_by_any_channel(
    tmp_path: Path, phoenix: FakePhoenix, hook: str, capture: str
) -> None:
    recording = tmp_path / "recording.jsonl"
    seen = tmp_path / "seen.jsonl"
    done = _python(str(SCENARIO), str(recording), phoenix.url, hook, capture, str(seen))
    assert done.returncode == 0, done.stderr
    kinds = set(json.loads(done.stdout.strip().splitlines()[-1])["kinds"])
    assert kinds >= EXPECTED_KINDS
    recorded = recording.read_text(encoding="utf-8")
    assert all(kind in recorded for kind in EXPECTED_KINDS), "the findings reached the recording"
    assert phoenix.bodies, "the findings were posted to Phoenix"

    html = tmp_path / "report.html"
    report = _python("-m", "context_integrity.cli", "report", str(recording))
    verbose = _python("-m", "context_integrity.cli", "report", "-v", str(recording))
    find = _python("-m", "context_integrity.cli", "report", "--find", "--limit", "25", str(recording))
    paged = _python("-m", "context_integrity.cli", "report", "--html", str(html), str(recording))
    for reader in (report, verbose, find, paged):
        assert reader.returncode == 0, reader.stderr
    assert "unsupported-argument" in verbose.stdout and "duplicate-execution" in find.stdout

    leaks = [
        *_leaks("recording", recorded),
        *_leaks("the agent's log", done.stderr),
        *(leak for body in phoenix.bodies for leak in _leaks("Phoenix", body)),
        *_leaks("report", report.stdout + report.stderr),
        *_leaks("report -v", verbose.stdout + verbose.stderr),
        *_leaks("report --find", find.stdout + find.stderr),
        *_leaks("report --html", html.read_text(encoding="utf-8")),
    ]
    assert not leaks

    handed = [json.loads(line) for line in seen.read_text(encoding="utf-8").splitlines()]
    if hook == "pattern":
        # Each value reached the hook whole, never cut at the quote's 80 characters.
        whole = {position for position, secret in SECRETS.items() for text in handed if secret in text}
        expected = set(SECRETS) - NEVER_EXPORTED - (set() if capture == "on" else CONTENT_ONLY)
        assert expected <= whole
        assert [text for text in handed if PATTERN.search(text) is None and "zq7" in text] == []
