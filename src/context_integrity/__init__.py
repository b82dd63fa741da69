"""context-integrity: checks what AI agents and their tools hand each other,
and reports it as OpenTelemetry.

The names here are the ones a user writes: ``setup``, ``tool``, ``declare_tool``,
``run``, ``absent``, the shapes of the loop, the errors and each check's ceiling.
Everything else lives in its public submodule (``context_integrity.checks``,
``.contracts``, ``.judge``, ``.ledger``, ``.findings``, ``.telemetry``, ``.recording``,
``.report``, ``.integrations``).

Each name is imported on first use, so ``import context_integrity`` is cheap and
``import context_integrity.checks`` (or ``.contracts``, ``.findings``) works
without OpenTelemetry installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _lazy

if TYPE_CHECKING:
    from .checks.column_types import COLUMN_TYPE_CEILING
    from .checks.compose_invariant import COMPOSE_INVARIANT_CEILING
    from .checks.dangling_reference import DANGLING_REFERENCE_CEILING
    from .checks.duplicate_execution import DUPLICATE_EXECUTION_CEILING
    from .checks.empty_lookup import EMPTY_LOOKUP_CEILING
    from .checks.prior_turn_evidence import PRIOR_TURN_EVIDENCE_CEILING
    from .checks.unsupported_argument import UNSUPPORTED_ARGUMENT_CEILING
    from .checks.unsupported_claim import UNSUPPORTED_CLAIM_CEILING
    from .checks.wire_invariant import WIRE_INVARIANT_CEILING
    from .contracts import ColumnDeclaration, DeclarationError, absent, is_absence
    from .contracts.semantic import semantic
    from .findings import ExternalGround, Finding
    from .integrations.functions import declare_claims, declare_tool, tool
    from .integrations.wire import install_wire_reader
    from .judge import SetupError
    from .ledger import CheckerDeadError, LedgerRow
    from .loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition
    from .telemetry.instrumentation import Instrumentation
    from .telemetry.run.context import carry_run, current_run
    from .telemetry.run.lifecycle import Run, run
    from .telemetry.run.model_call import ModelCall
    from .telemetry.setup import flush, setup, shutdown

# name -> the module that owns it
_HOMES: dict[str, str] = {
    # set-up
    "setup": "telemetry.setup",
    "flush": "telemetry.setup",
    "shutdown": "telemetry.setup",
    "Instrumentation": "telemetry.instrumentation",
    # declaring tools
    "tool": "integrations.functions",
    "declare_tool": "integrations.functions",
    "ColumnDeclaration": "contracts",
    "absent": "contracts",
    "is_absence": "contracts",
    "ExternalGround": "findings",
    "declare_claims": "integrations.functions",
    "semantic": "contracts.semantic",
    "install_wire_reader": "integrations.wire",
    # runs and the loop protocol
    "run": "telemetry.run.lifecycle",
    "current_run": "telemetry.run.context",
    "Run": "telemetry.run.lifecycle",
    "ModelCall": "telemetry.run.model_call",
    "carry_run": "telemetry.run.context",
    "RequestFrame": "loop",
    "Message": "loop",
    "ToolDefinition": "loop",
    "ToolCall": "loop",
    "ModelResponse": "loop",
    # what comes back
    "Finding": "findings",
    "LedgerRow": "ledger",
    # the errors
    "DeclarationError": "contracts",
    "SetupError": "judge",
    "CheckerDeadError": "ledger",
    # what each check can never see
    "COLUMN_TYPE_CEILING": "checks.column_types",
    "DANGLING_REFERENCE_CEILING": "checks.dangling_reference",
    "EMPTY_LOOKUP_CEILING": "checks.empty_lookup",
    "UNSUPPORTED_ARGUMENT_CEILING": "checks.unsupported_argument",
    "COMPOSE_INVARIANT_CEILING": "checks.compose_invariant",
    "WIRE_INVARIANT_CEILING": "checks.wire_invariant",
    "UNSUPPORTED_CLAIM_CEILING": "checks.unsupported_claim",
    "PRIOR_TURN_EVIDENCE_CEILING": "checks.prior_turn_evidence",
    "DUPLICATE_EXECUTION_CEILING": "checks.duplicate_execution",
}

# Kept literal for tools that read it statically; a test holds it equal to the keys of _HOMES.
__all__ = [
    "COLUMN_TYPE_CEILING",
    "COMPOSE_INVARIANT_CEILING",
    "DANGLING_REFERENCE_CEILING",
    "DUPLICATE_EXECUTION_CEILING",
    "EMPTY_LOOKUP_CEILING",
    "PRIOR_TURN_EVIDENCE_CEILING",
    "UNSUPPORTED_ARGUMENT_CEILING",
    "UNSUPPORTED_CLAIM_CEILING",
    "WIRE_INVARIANT_CEILING",
    "CheckerDeadError",
    "ColumnDeclaration",
    "DeclarationError",
    "ExternalGround",
    "Finding",
    "Instrumentation",
    "LedgerRow",
    "Message",
    "ModelCall",
    "ModelResponse",
    "RequestFrame",
    "Run",
    "SetupError",
    "ToolCall",
    "ToolDefinition",
    "absent",
    "carry_run",
    "current_run",
    "declare_claims",
    "declare_tool",
    "flush",
    "install_wire_reader",
    "is_absence",
    "run",
    "semantic",
    "setup",
    "shutdown",
    "tool",
]


def __getattr__(name: str) -> Any:
    return _lazy.load(__name__, _HOMES, name, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
