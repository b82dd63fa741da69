"""The judge: which checks a run armed, the per-run state they read, one function per seam.

- :mod:`.registry`: THE list of checks (rows, arming, seam function, canary);
- :mod:`.dials`: the operator's dials, each declared once;
- :mod:`.book`: the declared contracts, by tool name;
- :mod:`.state`: the per-run memory and what each seam hands its checks;
- :mod:`.seams`: :class:`RunJudge`, one method per seam.

Never imports OpenTelemetry. Each name is imported on first use: ``setup()`` reads only the
dials, so the registry, the checks and the run state load when the first run (or tool call
outside one) makes a :class:`RunJudge`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _lazy

if TYPE_CHECKING:
    from .book import ContractBook
    from .dials import COLUMN_DIALS, POSTURES, ColumnDial, Dials, ExternalGroundsProvider, Posture, SetupError
    from .registry import CEILINGS, REGISTERED_CHECKS, REGISTRY, RegisteredCheck, Registry
    from .seams import ChoiceVerdict, InternalError, RunJudge, ToolVerdict

# name -> the module that owns it
_HOMES: dict[str, str] = {
    "ContractBook": "book",
    "COLUMN_DIALS": "dials",
    "POSTURES": "dials",
    "ColumnDial": "dials",
    "Dials": "dials",
    "ExternalGroundsProvider": "dials",
    "Posture": "dials",
    "SetupError": "dials",
    "CEILINGS": "registry",
    "REGISTERED_CHECKS": "registry",
    "REGISTRY": "registry",
    "RegisteredCheck": "registry",
    "Registry": "registry",
    "ChoiceVerdict": "seams",
    "InternalError": "seams",
    "RunJudge": "seams",
    "ToolVerdict": "seams",
}

__all__ = [
    "CEILINGS",
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


def __getattr__(name: str) -> Any:
    return _lazy.load(__name__, _HOMES, name, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
