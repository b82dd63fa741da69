"""The contracts file in process: ``setup(contracts=...)`` arms the same checks code declarations arm.

The laws under test:

1. ``setup(contracts=PATH)`` and ``$CONTEXT_INTEGRITY_CONTRACTS`` declare the file's tools, claims and
   toolsets into the process's book; the path named beats the environment's.
2. A bad file, or a bad ``contracts`` option, raises at ``setup()`` and configures nothing; a tool the
   code declared differently is refused by the re-declaration rule, naming the file, and nothing of the
   file is declared; the same file read twice (a second ``setup()``) is no conflict.
3. A run judges by the file: a tool whose ``result_columns`` the file declares is checked; rows a
   tool's ``settles`` names settle the facts file claims compare any structured answer against; claims
   declared for one agent apply to that agent's answers only, in place of the file's general claims.
4. Toolsets: one declared ``suspended`` is switched off from a run's first request; ``run.suspend(NAME)``
   takes a declared toolset's tools; with no tools and no such toolset it is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import Telemetry
from tests.scenarios.test_family_runs import CHAT, drive, events

import context_integrity as ci
from context_integrity import Message, ModelResponse, ToolCall, ToolDefinition
from context_integrity.contracts import DeclarationError, define_contract
from context_integrity.contracts.file import CONTRACTS_ENV_VAR, ContractsFileError
from context_integrity.telemetry.instrumentation import CONTRACTS
from context_integrity.telemetry.schema import names
from context_integrity.telemetry.setup import current

PORTS = """\
[tools.san_port_state]
result_columns = { port = "string", crc_errors = "number" }
settles = { entity = "port", facts = ["status", "crc_errors"] }

[claims]
status = { entity = "fc1/3", field = "status" }

[agents.auditor.claims]
crc = { entity = "fc1/3", field = "crc_errors" }

[toolsets.ticketing]
tools = ["open_ticket", "close_ticket"]
"""


@pytest.fixture
def ports_file(tmp_path: Path) -> Path:
    path = tmp_path / "contracts.toml"
    path.write_text(PORTS)
    return path


def _port_rows(port: str) -> list[dict[str, object]]:
    return [{"port": port, "status": "down", "crc_errors": "212"}]


def _ask_ports(run: ci.Run, answer: str) -> list[ci.Finding]:
    offered = [ToolDefinition("san_port_state")]
    drive(
        run,
        [Message("user", "Is fc1/3 healthy?")],
        [
            ModelResponse(calls=(ToolCall("san_port_state", "c1", {"port": "fc1/3"}),)),
            ModelResponse(text=answer),
        ],
        {"san_port_state": lambda port: run.tool_result("san_port_state", "c1", _port_rows(port))},
        offered,
    )
    return run.answer(answer)


# ── 1. loading ───────────────────────────────────────────────────────────


def test_setup_declares_the_files_tools_claims_and_toolsets(telemetry: Telemetry, ports_file: Path) -> None:
    telemetry.configure(contracts=ports_file)
    held = CONTRACTS.get("san_port_state")
    assert held is not None and held.settles is not None
    assert held == define_contract(
        "san_port_state",
        result_columns={"port": "string", "crc_errors": "number"},
        settles={"entity": "port", "facts": ["status", "crc_errors"]},
    )
    ticketing = CONTRACTS.toolset("ticketing")
    assert ticketing is not None and ticketing.tools == ("open_ticket", "close_ticket")
    assert CONTRACTS.any_claims()


def test_the_environment_names_the_file_when_setup_does_not(
    telemetry: Telemetry, ports_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONTRACTS_ENV_VAR, str(ports_file))
    telemetry.configure()
    assert CONTRACTS.get("san_port_state") is not None
    ci.shutdown()
    CONTRACTS.forget("san_port_state")
    other = tmp_path / "other.toml"
    other.write_text("[tools.inventory_hosts]\n")
    telemetry.configure(contracts=other)  # the path named beats the environment's
    assert CONTRACTS.get("inventory_hosts") is not None and CONTRACTS.get("san_port_state") is None


# ── 2. refusals ──────────────────────────────────────────────────────────


def test_a_bad_file_raises_at_setup_and_configures_nothing(telemetry: Telemetry, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[tools.inventory_paths]\narguments_from = ["inventory_host"]\n[tools.inventory_hosts]\n')
    with pytest.raises(
        ContractsFileError, match=r"tools\.inventory_paths\.arguments_from\[0\].*'inventory_hosts'"
    ):
        telemetry.configure(contracts=bad)
    assert current() is None
    assert CONTRACTS.get("inventory_hosts") is None
    with pytest.raises(ContractsFileError, match="cannot be read"):
        telemetry.configure(contracts=tmp_path / "absent.toml")
    assert current() is None


@pytest.mark.parametrize("value", [3, "", b"contracts.toml"])
def test_a_contracts_option_that_is_no_path_is_refused(telemetry: Telemetry, value: object) -> None:
    with pytest.raises(ci.SetupError, match=r"setup\(contracts=\.\.\.\)"):
        telemetry.configure(contracts=value)
    assert current() is None


def test_a_tool_declared_differently_in_code_is_refused_naming_the_file(
    telemetry: Telemetry, ports_file: Path
) -> None:
    ci.declare_tool("san_port_state", result_columns={"port": "string"})
    with pytest.raises(DeclarationError) as caught:
        telemetry.configure(contracts=ports_file)
    message = str(caught.value)
    assert "'san_port_state'" in message and str(ports_file) in message
    assert "result_columns, settles differ" in message and "not in both" in message
    assert current() is None
    assert CONTRACTS.toolset("ticketing") is None  # all or nothing


def test_the_same_file_twice_is_no_conflict(telemetry: Telemetry, ports_file: Path) -> None:
    telemetry.configure(contracts=ports_file)
    telemetry.configure(contracts=ports_file, check_column_types="warn")
    assert CONTRACTS.get("san_port_state") is not None


# ── 3. runs judged by the file ───────────────────────────────────────────


def test_a_run_checks_the_columns_and_the_claims_the_file_declares(
    telemetry: Telemetry, ports_file: Path
) -> None:
    telemetry.configure(contracts=ports_file, check_column_types="warn")
    with ci.run("Is fc1/3 healthy?", agent_name="triage") as run:
        found = _ask_ports(run, json.dumps({"status": "healthy", "crc": 0}))
    (claim,) = found
    assert (claim.kind, claim.predicate) == ("unsupported-claim", "status")
    assert claim.witnesses[0].value == "down"
    assert "tool 'san_port_state' call 'c1'" in claim.witnesses[0].provenance
    tool_span = telemetry.one(names.tool_span_name("san_port_state"))
    (mismatch,) = [e for e in tool_span.events if e.name == names.FINDING_EVENT]
    assert (mismatch.attributes or {})[names.FINDING_KIND] == "column-type-mismatch"


def test_an_agents_own_claims_take_the_place_of_the_general_ones(
    telemetry: Telemetry, ports_file: Path
) -> None:
    telemetry.configure(contracts=ports_file)
    with ci.run("Is fc1/3 healthy?", agent_name="auditor") as run:
        found = _ask_ports(run, json.dumps({"status": "healthy", "crc": 0}))
    (claim,) = found
    assert claim.predicate == "crc"  # the auditor's claim, read from its settled crc_errors
    assert claim.witnesses[0].value == "212"


def test_an_honest_answer_passes_and_prose_is_unreachable(telemetry: Telemetry, ports_file: Path) -> None:
    telemetry.configure(contracts=ports_file)
    with ci.run("Is fc1/3 healthy?", agent_name="triage") as run:
        assert _ask_ports(run, json.dumps({"status": "down"})) == []
        rows = {(r.check, r.seam): r for r in run.ledger()}
    assert rows["unsupported-claim", "claim"].checked == 1
    with ci.run("Is fc1/3 healthy?", agent_name="triage") as run:
        assert _ask_ports(run, "It is down.") == []
        rows = {(r.check, r.seam): r for r in run.ledger()}
    assert rows["unsupported-claim", "claim"].unreachable == 1


def test_settles_declared_in_code_is_read_the_same_way(telemetry: Telemetry) -> None:
    telemetry.configure()
    ci.declare_tool("san_port_state", settles={"entity": "port", "facts": ["status"]})
    from pydantic import BaseModel

    class Answer(BaseModel):
        status: str

    ci.declare_claims(Answer, {"status": ("fc1/3", "status")})
    with ci.run("Is fc1/3 healthy?") as run:
        _ask_ports(run, "")
        (finding,) = run.answer(output=Answer(status="healthy"))
    assert finding.witnesses[0].value == "down"


# ── 4. toolsets ──────────────────────────────────────────────────────────


def test_a_toolset_declared_suspended_is_off_from_the_first_request(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    path = tmp_path / "contracts.toml"
    path.write_text('[toolsets.ticketing]\ntools = ["open_ticket"]\nsuspended = true\n')
    telemetry.configure(contracts=path)
    offered = [ToolDefinition("inventory_hosts"), ToolDefinition("open_ticket")]
    with ci.run("triage") as run:
        drive(run, [Message("user", "triage")], [ModelResponse(text="done")], {}, offered)
    (event,) = events(telemetry.one(CHAT))
    assert (event[names.FINDING_KIND], event[names.FINDING_SEAM]) == ("invariant-violation", "compose")
    assert "'ticketing'" in event[names.FINDING_MESSAGE] and "'open_ticket'" in event[names.FINDING_MESSAGE]


def test_run_suspend_takes_a_declared_toolsets_tools(telemetry: Telemetry, ports_file: Path) -> None:
    telemetry.configure(contracts=ports_file)
    offered = [ToolDefinition("close_ticket")]
    with ci.run("triage") as run:
        run.suspend("ticketing")
        drive(run, [Message("user", "triage")], [ModelResponse(text="done")], {}, offered)
        with pytest.raises(DeclarationError, match=r"no toolset 'billing' is declared"):
            run.suspend("billing")
    (event,) = events(telemetry.one(CHAT))
    assert "'close_ticket'" in event[names.FINDING_MESSAGE]
