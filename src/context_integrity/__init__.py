"""context-integrity: checks what AI agents and their tools hand each other,
and reports it as OpenTelemetry.

The names here are the ones a user writes (at most 30): ``setup``, ``tool``,
``declare_tool``, ``run``, ``absent``, the shapes of the loop, the errors, and
``CEILINGS``, what each check can never see. Everything else lives in its public
submodule (``context_integrity.checks``, ``.contracts``, ``.judge``, ``.ledger``,
``.findings``, ``.telemetry``, ``.recording``, ``.report``, ``.integrations``); the
pure column judge, for one, is ``context_integrity.checks.column_types.check_column_types``.

Each name is imported on first use, so ``import context_integrity`` is cheap and
``import context_integrity.checks`` (or ``.contracts``, ``.findings``) works
without OpenTelemetry installed.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from . import _lazy

if TYPE_CHECKING:
    from .contracts import ColumnDeclaration, DeclarationError, absent, is_absence
    from .contracts.semantic import semantic
    from .findings import ExternalGround, Finding
    from .integrations.functions import declare_claims, declare_tool, tool
    from .integrations.wire import install_wire_reader
    from .judge import CEILINGS, SetupError
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
    # what each check can never see, by the row it files: CEILINGS["dangling-reference@compose"]
    "CEILINGS": "judge",
}

# Names the top level used to export, and where each lives now. They still resolve, with a
# DeprecationWarning naming the new spelling, but are listed neither in __all__ nor by dir().
_MOVED: dict[str, tuple[str, str]] = {
    "COLUMN_TYPE_CEILING": ("checks.column_types", 'CEILINGS["column-type-mismatch@write"]'),
    "DANGLING_REFERENCE_CEILING": ("checks.dangling_reference", 'CEILINGS["dangling-reference@compose"]'),
    "EMPTY_LOOKUP_CEILING": ("checks.empty_lookup", 'CEILINGS["empty-lookup@write"]'),
    "UNSUPPORTED_ARGUMENT_CEILING": (
        "checks.unsupported_argument",
        'CEILINGS["unsupported-argument@choice"]',
    ),
    "COMPOSE_INVARIANT_CEILING": ("checks.compose_invariant", 'CEILINGS["invariant-violation@compose"]'),
    "WIRE_INVARIANT_CEILING": ("checks.wire_invariant", 'CEILINGS["invariant-violation@wire"]'),
    "UNSUPPORTED_CLAIM_CEILING": ("checks.unsupported_claim", 'CEILINGS["unsupported-claim@claim"]'),
    "PRIOR_TURN_EVIDENCE_CEILING": ("checks.prior_turn_evidence", 'CEILINGS["prior-turn-evidence@claim"]'),
    "DUPLICATE_EXECUTION_CEILING": ("checks.duplicate_execution", 'CEILINGS["duplicate-execution@choice"]'),
}

# Kept literal for tools that read it statically; a test holds it equal to the keys of _HOMES.
__all__ = [
    "CEILINGS",
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
    moved = _MOVED.get(name)
    if moved is not None:
        home, spelling = moved
        warnings.warn(
            f"context_integrity.{name} moved: write ci.{spelling}, or import it from "
            f"context_integrity.{home}.",
            DeprecationWarning,
            stacklevel=2,
        )
        return _lazy.load(__name__, {name: home}, name, {})
    return _lazy.load(__name__, _HOMES, name, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
