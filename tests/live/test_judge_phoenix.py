"""``context-integrity judge`` against a real Phoenix: an agent traced by OpenInference alone, judged
from Phoenix's API, its findings posted back as annotations and seen in Phoenix's UI.

Phoenix runs from its own venv (.ci/system-deps). The agent (``_openinference_agent.py``, pydantic-ai
with OpenInference's span processor, no ``ci.setup``) exports its spans over OTLP/HTTP into its own
project; the command line then reads the project back through Phoenix's REST span API.

The laws under test:

- the command reads the agent's trace from Phoenix and files the one unsupported-argument finding its
  made-up host makes, on the model call that chose it, exiting 1 under ``--fail-on``;
- ``--phoenix`` posts that finding as a span annotation which Phoenix answers back on the same span,
  named, labelled by kind, by deterministic code;
- judged again, the annotation is replaced, not doubled (its identifier is the finding's);
- in Phoenix's UI (headless Chromium) the judged span shows the annotation; the screenshot is kept as
  a test artifact.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from context_integrity.telemetry.export.phoenix import ANNOTATOR_KIND
from context_integrity.telemetry.schema import names

from ._services import (
    ARTIFACTS,
    REPO,
    Phoenix,
    http_json,
    library_env,
    phoenix_span_page,
    running_phoenix,
    wait_until,
)

pytestmark = pytest.mark.live

PROJECT = "ci-judge-openinference"
AGENT = Path(__file__).with_name("_openinference_agent.py")
ARRIVE_TIMEOUT_S = 60
ANNOTATIONS_ARRIVE_TIMEOUT_S = 90  # Phoenix inserts annotations asynchronously
SCREENSHOT = ARTIFACTS / "phoenix-judge-annotations.png"
CONTRACTS = """\
[tools.list_hosts]
result_columns = { host = "string", wwpn = "string" }

[tools.host_paths]
arguments_from = ["list_hosts"]
"""


@dataclass(frozen=True)
class Judged:
    phoenix: Phoenix
    trace_id: str
    spans: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    status: int
    stderr: str


def _judge(phoenix: Phoenix, contracts: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "context_integrity.cli",
            "judge",
            f"phoenix+{phoenix.base_url}",
            "--project",
            PROJECT,
            "--contracts",
            str(contracts),
            "--format",
            "json",
            "--fail-on",
            "unsupported-argument",
            "--phoenix",
            phoenix.base_url,
        ],
        env=library_env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=REPO,
    )


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Judged]:
    workdir = tmp_path_factory.mktemp("phoenix-judge")
    with running_phoenix(workdir / "phoenix") as phoenix:
        agent = subprocess.run(
            [sys.executable, str(AGENT), f"{phoenix.base_url}/v1/traces", PROJECT],
            env=library_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert agent.returncode == 0, agent.stderr
        trace_id = agent.stdout.strip()

        def arrived() -> list[dict[str, Any]] | None:
            # The agent's run span ends last: once Phoenix holds the root, it holds the trace.
            spans = list(http_json(f"{phoenix.base_url}/v1/projects/{PROJECT}/spans?limit=1000")["data"])
            return spans if any(s["parent_id"] is None for s in spans) else None

        spans = wait_until(
            arrived,
            timeout_s=ARRIVE_TIMEOUT_S,
            what=f"the agent's spans in {PROJECT}",
            log=phoenix.service.log_tail(),
        )
        contracts = workdir / "contracts.toml"
        contracts.write_text(CONTRACTS)
        result = _judge(phoenix, contracts)
        findings = [json.loads(line) for line in result.stdout.splitlines()]
        yield Judged(phoenix, trace_id, spans, findings, result.returncode, result.stderr)


def _annotations(phoenix: Phoenix, span_id: str) -> list[dict[str, Any]]:
    url = f"{phoenix.base_url}/v1/projects/{PROJECT}/span_annotations?span_ids={span_id}&limit=100"
    return [a for a in http_json(url)["data"] if a["name"] == names.PHOENIX_ANNOTATION_NAME]


def test_the_agents_trace_is_read_from_phoenix_and_its_made_up_host_is_a_finding(judged: Judged) -> None:
    assert judged.status == 1, judged.stderr  # --fail-on unsupported-argument
    (finding,) = judged.findings
    assert (finding["kind"], finding["seam"], finding["tool"], finding["predicate"]) == (
        "unsupported-argument",
        "choice",
        "host_paths",
        "host",
    )
    assert finding["trace_id"] == judged.trace_id
    assert "esx-99" in finding["message"]
    by_id = {s["context"]["span_id"]: s for s in judged.spans}
    judged_span = by_id[finding["span_id"]]  # a span Phoenix holds: the model call that chose the host
    assert judged_span["span_kind"] == "LLM"
    assert "posted 1 findings to Phoenix" in judged.stderr


def test_the_finding_reads_back_from_phoenix_as_an_annotation_on_its_span(judged: Judged) -> None:
    (finding,) = judged.findings

    def annotated() -> list[dict[str, Any]] | None:
        found = _annotations(judged.phoenix, finding["span_id"])
        return found or None

    (annotation,) = wait_until(
        annotated,
        timeout_s=ANNOTATIONS_ARRIVE_TIMEOUT_S,
        what="the finding's annotation read back from Phoenix",
        log=judged.phoenix.service.log_tail(),
    )
    assert annotation["span_id"] == finding["span_id"]
    assert annotation["annotator_kind"] == ANNOTATOR_KIND
    assert annotation["result"]["label"] == "unsupported-argument"
    assert annotation["result"]["explanation"] == finding["message"]
    assert annotation["metadata"][names.GEN_AI_TOOL_CALL_ID] == "call_2"


def test_judged_again_the_annotation_is_replaced_not_doubled(judged: Judged, tmp_path: Path) -> None:
    (finding,) = judged.findings
    contracts = tmp_path / "contracts.toml"
    contracts.write_text(CONTRACTS)
    again = _judge(judged.phoenix, contracts)
    assert again.returncode == 1, again.stderr
    wait_until(
        lambda: _annotations(judged.phoenix, finding["span_id"]) or None,
        timeout_s=ANNOTATIONS_ARRIVE_TIMEOUT_S,
        what="the annotation",
    )
    assert len(_annotations(judged.phoenix, finding["span_id"])) == 1


def test_phoenix_ui_shows_the_annotation_on_the_judged_span(judged: Judged) -> None:
    (finding,) = judged.findings
    wait_until(
        lambda: _annotations(judged.phoenix, finding["span_id"]) or None,
        timeout_s=ANNOTATIONS_ARRIVE_TIMEOUT_S,
        what="the annotation before the UI is opened",
    )
    ARTIFACTS.mkdir(exist_ok=True)
    with phoenix_span_page(judged.phoenix.base_url, finding["span_id"]) as page:
        page.get_by_text(names.PHOENIX_ANNOTATION_NAME).first.wait_for()
        # The span's Info tab lists its annotations by name; opened, each shows its label.
        page.get_by_text(re.compile(r"^Annotations\s*\d+$")).first.click()
        page.get_by_text("Table", exact=True).first.click()  # the table shows each one's label
        page.get_by_text("unsupported-argument").first.wait_for()
        page.screenshot(path=str(SCREENSHOT), full_page=True)
        body = page.inner_text("body")
    assert names.PHOENIX_ANNOTATION_NAME in body
    assert "unsupported-argument" in body
    assert SCREENSHOT.stat().st_size > 10_000
