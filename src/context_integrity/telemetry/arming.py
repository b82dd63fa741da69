"""Arming the framework integrations ``setup(instrument=...)`` selects.

The table of integrations is :data:`context_integrity.integrations.SUPPORTED`; each module there
exposes ``instrument_all()`` and ``uninstrument_all()``. A framework that is not installed is
skipped (said at debug level under ``"auto"``, as a warning when the user named it); an
integration that fails to arm is logged once and never fails ``setup()``.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable
from types import ModuleType
from typing import Final

from ..judge import SetupError

logger = logging.getLogger("context_integrity")

AUTO: Final = "auto"
# The integrations this process armed, by name, with the module that can disarm each.
_armed: dict[str, ModuleType] = {}
_arm_failures_logged: set[str] = set()


def _integration_table() -> tuple[tuple[str, str], ...]:
    # The table names modules by path, and the package holding it imports nothing, so reading it
    # here never imports a framework (nor makes telemetry depend on an integration's code).
    from ..integrations import SUPPORTED

    return SUPPORTED


def selected_integrations(instrument: object) -> tuple[tuple[str, ...], bool]:
    """The framework names ``instrument`` selects, and whether it was ``"auto"``; refuses a bad value."""
    known = tuple(name for name, _ in _integration_table())
    listing = ", ".join(map(repr, known))
    if instrument == AUTO:
        return known, True
    if isinstance(instrument, (str, bytes)) or not isinstance(instrument, Iterable):
        raise SetupError(
            f"instrument must be 'auto', a list of framework names, or () for none (got {instrument!r}). "
            f"The supported names are: {listing}."
        )
    chosen = tuple(instrument)
    for name in chosen:
        if name not in known:
            raise SetupError(
                f"instrument names {name!r}, which is not a supported framework. The supported names "
                f"are: {listing}; pass instrument=() to instrument none."
            )
    return chosen, False


def _log_arming_once(
    name: str, level: int, message: str, *args: object, error: BaseException | None = None
) -> None:
    if name in _arm_failures_logged:
        logger.debug("context_integrity: " + message, *args)
        return
    _arm_failures_logged.add(name)
    logger.log(level, "context_integrity: " + message, *args, exc_info=error)


def arm_integrations(selected: tuple[str, ...], *, auto: bool) -> None:
    """Arm the selected integrations and disarm the others. Never raises."""
    for name, path in _integration_table():
        if name not in selected:
            if name in _armed:
                _disarm(name)
            continue
        if name in _armed:
            continue
        try:
            module = importlib.import_module(path)
            module.instrument_all()
        except ModuleNotFoundError as missing:
            if (missing.name or "").startswith("context_integrity"):
                _log_arming_once(
                    name, logging.ERROR, "could not instrument %s: %r", name, missing, error=missing
                )
            elif auto:
                logger.debug("context_integrity: %s is not installed, so it is not instrumented", name)
            else:
                _log_arming_once(
                    name,
                    logging.WARNING,
                    "instrument names %r but it is not installed (%s); pip install 'context-integrity[%s]'",
                    name,
                    missing.name,
                    name.replace("_", "-"),
                )
            continue
        except Exception as error:
            _log_arming_once(
                name,
                logging.ERROR,
                "could not instrument %s (the agent is not affected): %r",
                name,
                error,
                error=error,
            )
            continue
        _armed[name] = module
        logger.debug("context_integrity: instrumented %s", name)


def _disarm(name: str) -> None:
    module = _armed.pop(name, None)
    if module is None:
        return
    try:
        module.uninstrument_all()
    except Exception as error:
        _log_arming_once(name, logging.ERROR, "could not uninstrument %s: %r", name, error, error=error)


def instrumented() -> tuple[str, ...]:
    """The framework integrations armed now, in table order."""
    return tuple(name for name, _ in _integration_table() if name in _armed)


def disarm_all() -> None:
    """Disarm every integration this process armed (``shutdown()``)."""
    for name in tuple(_armed):
        _disarm(name)
