"""The dials a run begins with, and who hears when dev posture finds a check dead.

A run takes setup()'s dials (the defaults before setup()), unless the pytest plugin forced a
posture for the whole test session; the plugin also listens for every
:class:`~context_integrity.CheckerDeadError` a run raises, so a session fails even when the
application swallows the error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from ...judge import Dials, SetupError
from ...judge.dials import POSTURES, Posture
from ...ledger import CheckerDeadError

if TYPE_CHECKING:
    from ..instrumentation import Instrumentation

DEFAULT_DIALS = Dials()

# Set by the pytest plugin for a whole test session: every run is a dev run, whatever setup() said.
_posture_override: Posture | None = None
_dead_listeners: list[Callable[[CheckerDeadError], None]] = []


def force_posture(posture: Posture | None) -> None:
    """Make every run that begins from now on use ``posture`` (``None`` gives the dial back)."""
    global _posture_override
    if posture is not None and posture not in POSTURES:
        raise SetupError(f"posture must be one of {', '.join(map(repr, POSTURES))} (got {posture!r}).")
    _posture_override = posture


def on_checker_dead(listener: Callable[[CheckerDeadError], None]) -> Callable[[], None]:
    """Call ``listener`` with every :class:`CheckerDeadError` a run raises; returns the unsubscriber.

    The pytest plugin listens, so a session fails even when the application swallows the error.
    """
    _dead_listeners.append(listener)
    return lambda: _dead_listeners.remove(listener) if listener in _dead_listeners else None


def dials_in_force(inst: Instrumentation | None) -> Dials:
    dials = inst.dials if inst is not None else DEFAULT_DIALS
    override = _posture_override
    return dials if override is None or override == dials.posture else replace(dials, posture=override)


def tell_checker_dead(dead: CheckerDeadError) -> None:
    """Hand ``dead`` to every listener; a listener that raises is skipped, never the run's business."""
    for listener in list(_dead_listeners):
        with contextlib.suppress(Exception):
            listener(dead)
