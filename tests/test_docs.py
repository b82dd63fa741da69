"""The README is the front door and the docs agree with the code: commands, links, names, ceilings.

The laws under test: the README fits on a page (at most 15 KB), opens with exactly two set-up
commands, and `.ci/run` runs the second verbatim; every relative link in the README and the docs
names a file that exists, and the picture it shows is committed; the project's URLs are declared;
every registered check has a page naming it; the telemetry contract page's table lists every
span, event and metric name the library emits, and every dotted name it shows is one the names
module defines; no README, docs or benchmarks file dates anything by a work-period label.
"""

from __future__ import annotations

import re
from pathlib import Path

from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.telemetry.schema import names

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"
TELEMETRY = (DOCS / "reference" / "telemetry.md").read_text(encoding="utf-8")
README_MAX_BYTES = 15 * 1024


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "_hooks" not in p.parts)


def _bash_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def _contract_table() -> str:
    return TELEMETRY.split("## How the names fit together", 1)[1].split("\n## ", 1)[0]


def test_the_readme_fits_on_a_page() -> None:
    assert len(README.encode("utf-8")) <= README_MAX_BYTES


def test_the_readme_opens_with_two_commands_and_ci_runs_the_second() -> None:
    first_section = README.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    demo, tests = _bash_blocks(first_section)
    assert "context-integrity demo" in demo
    assert ".[test]" in tests and "pytest" in tests
    ci_run = (ROOT / ".ci" / "run").read_text()
    assert tests in ci_run


def test_every_relative_link_names_a_file_that_exists() -> None:
    for document in [ROOT / "README.md", *_pages(), ROOT / "benchmarks" / "HISTORY.md"]:
        text = document.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            assert (document.parent / path).exists(), f"{document.relative_to(ROOT)} links to {target}"


def test_the_readme_shows_findings_in_a_trace_ui_and_links_into_the_docs() -> None:
    pictures = re.findall(r"!\[[^\]]+\]\(([^)]+\.png)\)", README)
    assert pictures and all((ROOT / p).is_file() for p in pictures)
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)", README))
    for page in (
        "docs/get-started.md",
        "docs/concepts.md",
        "docs/checks/index.md",
        "docs/reference/setup.md",
    ):
        assert page in linked, page


def test_the_project_declares_where_its_docs_source_and_issues_live() -> None:
    # read as text: tomllib is not in Python 3.10, which the project supports
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = pyproject.split("\n[project.urls]\n", 1)[1].split("\n[", 1)[0]
    urls = dict(re.findall(r'^(\w+) = "([^"]+)"$', section, flags=re.M))
    assert set(urls) >= {"Documentation", "Source", "Issues"}
    assert all(url.startswith("https://") for url in urls.values())


def test_every_registered_check_has_a_page_naming_it() -> None:
    checks = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "checks").glob("*.md"))
    for check in REGISTERED_CHECKS:
        assert re.search(rf"^# .*{re.escape(check.check)}.*", checks, flags=re.M), check.render()


def test_every_emitted_name_is_in_the_telemetry_table() -> None:
    table = _contract_table()
    for name in (
        names.FINDING_EVENT,
        names.DISPOSITION_SPAN,
        names.FINDINGS_METRIC,
        names.PROMETHEUS_FINDINGS_METRIC,
        names.FINDINGS_COUNT,
        names.FINDINGS_KINDS,
        names.EXTERNAL_GROUND_EVENT,
        names.INTERNAL_ERROR_EVENT,
        names.RECORDING_DROPPED_EVENT,
        names.GEN_AI_EVALUATION_RESULT_EVENT,
        names.POSTURE,
        names.WORK_EXISTED,
        names.RUN_OUTCOME,
        names.RESULT_REFUSED,
        names.ERROR_RESULT_REJECTED,
        names.GEN_AI_OPERATION_NAME,
        names.GEN_AI_TOOL_NAME,
        names.GEN_AI_TOOL_CALL_ID,
        names.GEN_AI_TOOL_TYPE,
        names.GEN_AI_REQUEST_MODEL,
        names.GEN_AI_AGENT_NAME,
        names.tool_span_name("{tool}"),
        names.run_span_name("{agent}"),
        names.chat_span_name("{model}"),
        names.user_run_span_name("{agent}"),
        *names.CONTENT_ATTRIBUTES,
    ):
        assert name in table, name
    for field in names.WITNESS_FIELDS:
        assert f"`{field}`" in table
    for attribute in (names.METRIC_KIND, names.METRIC_SEAM, names.METRIC_TOOL, names.METRIC_ADVISORY):
        assert f"`{attribute}`" in table


def test_every_dotted_name_in_the_table_exists_in_the_names_module() -> None:
    table = _contract_table()
    known = {value for value in vars(names).values() if isinstance(value, str)}
    prefixes = (names.WITNESS_PREFIX, names.TOTALS_PREFIX, names.ROW_PREFIX, names.DIAL_PREFIX)
    tokens = re.findall(r"`((?:context_integrity|gen_ai)\.[a-z_.<>{}]+)`", table)
    assert len(tokens) > 20
    for token in tokens:
        if "<" in token or token.endswith("."):
            assert token.startswith(prefixes) or token == names.evaluation_name("<kind>"), token
            continue
        assert token in known, token


def test_no_document_dates_anything_by_a_work_period_label() -> None:
    label = re.compile(r"\b(stops? \d+|phase \d+|this session|work stream)\b", re.I)
    documents = [ROOT / "README.md", *_pages(), *(ROOT / "benchmarks").glob("*.md")]
    for document in documents:
        found = label.search(document.read_text(encoding="utf-8"))
        assert found is None, f"{document.relative_to(ROOT)}: {found.group(0) if found else ''}"
