"""The README agrees with the code: its commands, its ceilings and its telemetry names.

The laws under test: the README opens with exactly two set-up commands and `.ci/run` runs the
second verbatim; every exported ceiling it quotes is quoted verbatim; every telemetry name it
lists is one the library really emits, and every span/event/metric name the library emits is
listed.
"""

from __future__ import annotations

import re
from pathlib import Path

import context_integrity as ci
from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.telemetry.schema import names

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _bash_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_the_readme_opens_with_two_commands_and_ci_runs_the_second() -> None:
    first_section = README.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    demo, tests = _bash_blocks(first_section)
    assert "context-integrity demo" in demo
    assert ".[test]" in tests and "pytest" in tests
    ci_run = (ROOT / ".ci" / "run").read_text()
    assert tests in ci_run


def test_the_column_type_ceiling_is_quoted_verbatim() -> None:
    assert ci.COLUMN_TYPE_CEILING in README


def test_every_registered_check_is_named() -> None:
    for check in REGISTERED_CHECKS:
        assert f"{check.check}@{check.seam}" in README


def test_every_emitted_name_is_in_the_telemetry_table() -> None:
    table = README.split("## Telemetry contract", 1)[1].split("\n## ", 1)[0]
    for name in (
        names.FINDING_EVENT,
        names.DISPOSITION_SPAN,
        names.FINDINGS_METRIC,
        names.PROMETHEUS_FINDINGS_METRIC,
        names.FINDINGS_COUNT,
        names.FINDINGS_KINDS,
        names.EXTERNAL_GROUND_EVENT,
        names.INTERNAL_ERROR_EVENT,
        names.POSTURE,
        names.WORK_EXISTED,
        names.RUN_OUTCOME,
        names.GEN_AI_OPERATION_NAME,
        names.GEN_AI_TOOL_NAME,
        names.GEN_AI_TOOL_CALL_ID,
        names.GEN_AI_TOOL_TYPE,
        names.GEN_AI_REQUEST_MODEL,
        names.GEN_AI_AGENT_NAME,
        names.tool_span_name("{tool}"),
        names.run_span_name("{agent}"),
        names.chat_span_name("{model}"),
    ):
        assert name in table, name
    for field in names.WITNESS_FIELDS:
        assert f"`{field}`" in table
    for attribute in (names.METRIC_KIND, names.METRIC_SEAM, names.METRIC_TOOL, names.METRIC_ADVISORY):
        assert f"`{attribute}`" in table


def test_every_dotted_name_in_the_table_exists_in_the_names_module() -> None:
    table = README.split("## Telemetry contract", 1)[1].split("\n## ", 1)[0]
    known = {value for value in vars(names).values() if isinstance(value, str)}
    prefixes = (names.WITNESS_PREFIX, names.TOTALS_PREFIX, names.ROW_PREFIX, names.DIAL_PREFIX)
    for token in re.findall(r"`((?:context_integrity|gen_ai)\.[a-z_.<>{}]+)`", table):
        if "<" in token or token.endswith("."):
            assert token.startswith(prefixes), token
            continue
        assert token in known, token


def test_every_family_ceiling_is_quoted_verbatim() -> None:
    for ceiling in (
        ci.COMPOSE_INVARIANT_CEILING,
        ci.WIRE_INVARIANT_CEILING,
        ci.UNSUPPORTED_CLAIM_CEILING,
        ci.PRIOR_TURN_EVIDENCE_CEILING,
        ci.DUPLICATE_EXECUTION_CEILING,
    ):
        assert ceiling in README
