"""context-integrity: checks what AI agents and their tools hand each other,
and reports it as OpenTelemetry."""

from __future__ import annotations

from .contracts import (
    COLUMN_TYPES,
    ColumnDeclaration,
    ColumnType,
    DeclarationError,
    NormalizedColumn,
    ToolContract,
    assert_arguments_from,
    assert_result_columns,
    define_contract,
    normalize_columns,
)
from .findings import (
    DISPOSITIONS,
    KINDS,
    SEAMS,
    Disposition,
    Encounter,
    Finding,
    Kind,
    Seam,
    Subject,
    Witness,
    dedupe_findings,
    finding_identity,
)
from .judge import COLUMN_DIALS, Dials, SetupError
from .ledger import REGISTERED_CHECKS, CheckerDeadError, CheckId, DispositionLedger, LedgerRow
from .telemetry.instrument import Run, current_run, declare_tool, run, tool
from .telemetry.setup import Instrumentation, flush, setup, shutdown

__all__ = [
    "COLUMN_DIALS",
    "COLUMN_TYPES",
    "DISPOSITIONS",
    "KINDS",
    "REGISTERED_CHECKS",
    "SEAMS",
    "CheckId",
    "CheckerDeadError",
    "ColumnDeclaration",
    "ColumnType",
    "DeclarationError",
    "Dials",
    "Disposition",
    "DispositionLedger",
    "Encounter",
    "Finding",
    "Instrumentation",
    "Kind",
    "LedgerRow",
    "NormalizedColumn",
    "Run",
    "Seam",
    "SetupError",
    "Subject",
    "ToolContract",
    "Witness",
    "assert_arguments_from",
    "assert_result_columns",
    "current_run",
    "declare_tool",
    "dedupe_findings",
    "define_contract",
    "finding_identity",
    "flush",
    "normalize_columns",
    "run",
    "setup",
    "shutdown",
    "tool",
]
