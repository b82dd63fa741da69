"""A pytest plugin: run a project's test session in dev posture, so its CI fails when a check dies.

Installed with the package (entry point ``pytest11``) and inert until asked for, by the flag
``--context-integrity-dev`` or the ini option ``context_integrity_dev = true``. Then every run
that begins during the session mints its canaries, and a successful run whose registered check
is dead raises :class:`~context_integrity.CheckerDeadError`. The session also fails when the
application swallowed that error, and its summary names each dead check and seam.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import pytest

from .ledger import CheckerDeadError

FLAG: Final = "--context-integrity-dev"
INI: Final = "context_integrity_dev"

_STATE_KEY: Final = pytest.StashKey[tuple[list[CheckerDeadError], Callable[[], None]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("context-integrity")
    group.addoption(
        FLAG,
        action="store_true",
        default=False,
        help="Run every context-integrity run in dev posture: canaries, and fail when a check is dead.",
    )
    parser.addini(
        INI, "Run the session in context-integrity dev posture (true/false).", type="bool", default=False
    )


def _wanted(config: pytest.Config) -> bool:
    return bool(config.getoption(FLAG)) or bool(config.getini(INI))


def pytest_configure(config: pytest.Config) -> None:
    if not _wanted(config):
        return
    from .telemetry.run.posture import force_posture, on_checker_dead

    dead: list[CheckerDeadError] = []
    force_posture("dev")
    config.stash[_STATE_KEY] = (dead, on_checker_dead(dead.append))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(_STATE_KEY, None)
    if state is not None and state[0] and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    state = terminalreporter.config.stash.get(_STATE_KEY, None)
    if state is None or not state[0]:
        return
    terminalreporter.section("context-integrity: dead checks", red=True)
    seen: set[tuple[str, str]] = set()
    for error in state[0]:
        if (error.check, error.seam) not in seen:
            seen.add((error.check, error.seam))
            terminalreporter.line(str(error))


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE_KEY, None)
    if state is None:
        return
    from .telemetry.run.posture import force_posture

    state[1]()
    force_posture(None)
    del config.stash[_STATE_KEY]
