"""The dials as options of the commands that judge traces (``judge``, ``serve``): derived from the
dials' own specs, so a new dial is an option of both without a line here."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..judge import Dials

# Where traces are judged after the fact nothing is refused, so declared columns are checked.
JUDGED_COLUMN_DIAL = "warn"


def add_dial_arguments(command: argparse.ArgumentParser, *, column_choices: Sequence[str], why: str) -> None:
    """``--check-column-types`` (``column_choices``, default warn: ``why``), one flag per boolean
    dial, and ``--posture``."""
    from ..judge.dials import POSTURES, dial_specs

    dials = command.add_argument_group("dials")
    dials.add_argument(
        "--check-column-types",
        choices=column_choices,
        default=JUDGED_COLUMN_DIAL,
        help=f"the column check (default: {JUDGED_COLUMN_DIAL}; {why})",
    )
    for name, spec in dial_specs().items():
        if spec.annotation == "bool":
            dials.add_argument(
                "--" + name.replace("_", "-"), dest=name, action="store_true", help=spec.meaning
            )
    dials.add_argument(
        "--posture", choices=POSTURES, default="observe", help="'dev' also runs every check's canary"
    )


def dials_of(args: argparse.Namespace) -> Dials:
    from ..judge import Dials
    from ..judge.dials import dial_specs

    chosen: dict[str, object] = {"check_column_types": args.check_column_types, "posture": args.posture}
    for name, spec in dial_specs().items():
        if spec.annotation == "bool":
            chosen[name] = bool(getattr(args, name))
    return Dials.validated(**chosen)
