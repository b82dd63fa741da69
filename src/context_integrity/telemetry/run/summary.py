"""A run's disposition summary, and the end of a run entered and never exited (abandoned).

The summary is read from the run's judge. For a run of ours the span processor asks for it when the
run span ends (:func:`weak_summary`, which holds the run weakly); a run dropped without exiting is
ended by its finalizer (:func:`abandon`), its summary's outcome :data:`ABANDONED`.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from ...limits import MAX_PROFILE_CHARS
from ...redaction import Redaction, Redactor
from ..emit import record_internal_error
from ..schema import names
from .posture import DEFAULT_DIALS
from .processor import RunSummary

if TYPE_CHECKING:
    from ...judge import RunJudge
    from ..instrumentation import Instrumentation
    from ..spans import HeldSpan
    from .lifecycle import Run

# The outcome of a run entered and never exited, found when it was collected or at exit.
ABANDONED: Final = "abandoned"


def summary_of(judge: RunJudge | None, outcome: str, redact: Redactor | None = None) -> RunSummary:
    """The run's summary; ``redact`` is the application's hook, which every name the profile holds
    passes before it leaves."""
    ledger = judge.ledger if judge is not None else None
    with judge.lock if judge is not None else contextlib.nullcontext():
        rows = ledger.report() if ledger is not None else []
        totals = ledger.totals() if ledger is not None else {}
    return RunSummary(
        rows=rows,
        totals=totals,
        posture=(judge.dials if judge is not None else DEFAULT_DIALS).reported_posture(),
        work_existed=judge.work_existed if judge is not None else False,
        outcome=outcome,
        dials=(judge.dials if judge is not None else DEFAULT_DIALS).in_force(),
        profile=profile_of(judge, redact),
    )


def profile_of(judge: RunJudge | None, redact: Redactor | None = None) -> str | None:
    """The run's profile in its summary-span form, or ``None`` when profiling is off. Its names come
    from the world (a tool's column keys, the model's argument paths and tool names), so with a hook
    each is handed to it whole, once, and the profile is written with what it returned."""
    if judge is None or judge.profiler is None:
        return None
    with judge.lock:
        profile = judge.profiler.profile
        if redact is None:
            return profile.encode(MAX_PROFILE_CHARS) or None
        # A copy under the lock; the application's hook runs outside it (it may be slow, or log).
        profile = profile.renamed(str)
    return profile.renamed(Redaction(redact).whole).encode(MAX_PROFILE_CHARS) or None


def abandon(judge: RunJudge | None, held: HeldSpan | None, inst: Instrumentation | None) -> None:
    """A run entered and never exited was collected (or the process is exiting): end it as abandoned.

    Runs from the garbage collector or at exit, on whatever thread: it touches no context, only
    the run's own span and its summary. Never raises.
    """
    try:
        if held is None:
            return
        if held.owned:
            held.span.set_attribute(names.RUN_OUTCOME, ABANDONED)
            held.span.end()  # the processor writes the summary, from the judge, as abandoned
        elif inst is not None and inst.processor is not None:
            inst.processor.emit_under(held.span.get_span_context(), summary_of(judge, ABANDONED, inst.redact))
    except Exception as ours:
        record_internal_error(None, "ending an abandoned run", ours)


def weak_summary(agent_run: Run, judge: RunJudge, redact: Redactor | None) -> Callable[[], RunSummary]:
    """The run's summary source for the processor, holding the run weakly (so it can be collected)."""
    ref = weakref.ref(agent_run)

    def source() -> RunSummary:
        alive = ref()
        if alive is None or alive.outcome == "open":  # collected, or its span ended at exit unexited
            return summary_of(judge, ABANDONED, redact)
        return alive.summary()

    return source
