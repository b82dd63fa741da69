"""Every framework test starts from an empty contract book, and with no bad declaration told.

The book is process-wide, and modules imported elsewhere in the suite (the demo among them)
declare tools at import: a framework run would otherwise see those declarations too — as
declarations of the same names, and as declared tools its agent never offers, which the
integrations warn about once per run.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from context_integrity.integrations import functions
from context_integrity.telemetry.setup import CONTRACTS


@pytest.fixture(autouse=True)
def _only_this_tests_declarations() -> Iterator[None]:
    before = list(CONTRACTS)
    for contract in before:
        CONTRACTS.forget(contract.name)
    yield
    for name in CONTRACTS.names():
        CONTRACTS.forget(name)
    for contract in before:
        CONTRACTS.declare(contract)


@pytest.fixture(autouse=True)
def _no_bad_declaration_told_yet() -> Iterator[None]:
    """A bad declaration is logged once per process: each test sees its own first telling."""
    functions._TOLD_BAD_DECLARATIONS.clear()
    yield
    functions._TOLD_BAD_DECLARATIONS.clear()
