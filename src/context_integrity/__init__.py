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
from .ledger import REGISTERED_CHECKS, CheckerDeadError, CheckId, DispositionLedger, LedgerRow

__all__ = [
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
    "Disposition",
    "DispositionLedger",
    "Encounter",
    "Finding",
    "Kind",
    "LedgerRow",
    "NormalizedColumn",
    "Seam",
    "Subject",
    "ToolContract",
    "Witness",
    "assert_arguments_from",
    "assert_result_columns",
    "dedupe_findings",
    "define_contract",
    "finding_identity",
    "normalize_columns",
]
