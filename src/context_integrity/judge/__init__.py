"""The judge: which checks a run armed, the per-run state they read, one function per seam.

- :mod:`.registry`: THE list of checks (rows, arming, seam function, canary);
- :mod:`.dials`: the operator's dials, each declared once;
- :mod:`.book`: the declared contracts, by tool name;
- :mod:`.state`: the per-run memory and what each seam hands its checks;
- :mod:`.seams`: :class:`RunJudge`, one method per seam.

Never imports OpenTelemetry.
"""

from __future__ import annotations

from .book import ContractBook
from .dials import COLUMN_DIALS, POSTURES, ColumnDial, Dials, ExternalGroundsProvider, Posture, SetupError
from .registry import REGISTERED_CHECKS, REGISTRY, RegisteredCheck, Registry
from .seams import ChoiceVerdict, InternalError, RunJudge, ToolVerdict

__all__ = [
    "COLUMN_DIALS",
    "POSTURES",
    "REGISTERED_CHECKS",
    "REGISTRY",
    "ChoiceVerdict",
    "ColumnDial",
    "ContractBook",
    "Dials",
    "ExternalGroundsProvider",
    "InternalError",
    "Posture",
    "RegisteredCheck",
    "Registry",
    "RunJudge",
    "SetupError",
    "ToolVerdict",
]
