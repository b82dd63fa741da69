"""Which run is open here: the context's stack of entered runs, and carrying it to other threads.

The context holds each entered run weakly, so a run dropped without exiting can be collected; the
next run that begins in that context gives back the trace context the dropped one took
(:func:`release_abandoned`). Work started on a thread that does not carry the context is bound to
the run with :func:`carry_run` or :class:`CarryingExecutor`.
"""

from __future__ import annotations

import contextvars
import functools
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace

if TYPE_CHECKING:
    from .lifecycle import Run


@dataclass(frozen=True, slots=True)
class EnteredRun:
    """One entered run, as the context holds it: weakly, so a run dropped unexited can be collected.

    ``otel_before`` is the trace context before the run made its span current, and ``span_id`` that
    span: what the thread's context is restored to once the run is found abandoned.
    """

    ref: weakref.ref[Run]
    otel_before: otel_context.Context
    span_id: int | None
    below: EnteredRun | None


open_runs: contextvars.ContextVar[EnteredRun | None] = contextvars.ContextVar(
    "context_integrity_run", default=None
)


def current_run() -> Run | None:
    """The run open in this context, if any (a run dropped without exiting is not)."""
    frame = open_runs.get()
    while frame is not None:
        found = frame.ref()
        if found is not None:
            return found
        frame = frame.below
    return None


def release_abandoned() -> None:
    """Forget the runs this context entered and dropped, and give back the trace context they took.

    Their summaries were written when they were collected (:func:`.run_summary.abandon`); what is left is the
    context: without this, the next run would nest under a run nobody will ever end.
    """
    frame = open_runs.get()
    if frame is None or frame.ref() is not None:
        return
    restore: EnteredRun | None = None
    while frame is not None and frame.ref() is None:
        restore, frame = frame, frame.below
    open_runs.set(frame)
    if restore is not None and restore.span_id is not None:
        current = trace.get_current_span().get_span_context()
        if current.span_id == restore.span_id:
            otel_context.attach(restore.otel_before)


P = ParamSpec("P")
R = TypeVar("R")


def carry_run(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` bound to the run (and the trace) open here, for work started on another thread.

    ``asyncio.to_thread`` carries the context by itself; ``loop.run_in_executor``,
    ``ThreadPoolExecutor.submit`` and ``threading.Thread`` do not, so a tool called there would
    belong to no run. Wrap the function where the work is started::

        loop.run_in_executor(None, ci.carry_run(lookup), "LUN-7")
        pool.submit(ci.carry_run(lookup), "LUN-7")
        threading.Thread(target=ci.carry_run(lookup), args=("LUN-7",)).start()

    The context is captured when ``carry_run`` is called; each call runs in its own copy of it, so
    one wrapped function may run on several threads at once.
    """
    captured = contextvars.copy_context()

    @functools.wraps(fn)
    def carried(*args: P.args, **kwargs: P.kwargs) -> R:
        return captured.copy().run(fn, *args, **kwargs)

    return carried


class CarryingExecutor(ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` whose every task runs in the context it was submitted from.

    Install it as the loop's default executor (``loop.set_default_executor(CarryingExecutor())``)
    and ``run_in_executor(None, ...)`` carries the run too. (Import it from this module.)
    """

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)
