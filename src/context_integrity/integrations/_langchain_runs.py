"""The runs of LangChain agents: one per invocation, found from the agent's state, always closed.

``before_agent`` opens an :class:`AgentRun` and puts its key into the agent's state (a private
field: never in the agent's input or output), so every later hook of the same invocation, on
whatever thread, finds it. ``after_agent`` closes it; when the agent raises, LangChain skips
``after_agent``, and :class:`RunEnds`, a callback LangChain adds to every run through its
configure hook, closes it when the agent's root run ends. Only imported by :mod:`.langchain`.
"""

from __future__ import annotations

import contextvars
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Annotated, Any, Final

from langchain.agents.middleware import AgentState
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers import context as lc_tracer_context
from typing_extensions import NotRequired

from ..limits import MAX_OPEN_HOST_RUNS
from ..telemetry.emit import record_internal_error
from ..telemetry.run import Run
from ..telemetry.run_context import current_run
from . import _langchain_frames as frames
from ._langchain_frames import declare_tools

MIDDLEWARE_NAME: Final = "context_integrity"
# The agent's state key holding this invocation's run key (private: never in input or output).
STATE_KEY: Final = "context_integrity_run"
_BEFORE_AGENT_NODE: Final = f"{MIDDLEWARE_NAME}.before_agent"

# The agent a tool of ours is running in: an agent invoked inside that tool is its own run.
enclosing: contextvars.ContextVar[AgentRun | None] = contextvars.ContextVar(
    "context_integrity_langchain_enclosing", default=None
)

# The tool call ``wrap_tool_call`` is running, for the judged copy of its tool to read.
tool_call_var: contextvars.ContextVar[tuple[AgentRun, Any] | None] = contextvars.ContextVar(
    "context_integrity_langchain_tool_call", default=None
)


class RunKeyState(AgentState[Any]):
    context_integrity_run: NotRequired[Annotated[str, PrivateStateAttr]]


class AgentRun:
    """One invocation of an agent: the judge's run, the context it lives in, and its lock."""

    def __init__(self, key: str, agent_name: str, question: str | None, host_span: Any = None) -> None:
        self.key = key
        self.lock = threading.Lock()
        # The run is opened and closed inside this context, so the span and run it makes
        # current are made current there, never in the host's (a node's, a worker thread's).
        self.context = contextvars.copy_context()
        adopted = current_run() if enclosing.get() is None else None
        self.own = adopted is None
        self.run: Run = (
            adopted if adopted is not None else Run(question, agent_name=agent_name, host_span=host_span)
        )
        self.opened = adopted is not None
        self.closed = False
        self.messages = frames.MessageCache()

    def open(self, tools: Iterable[object] = ()) -> None:
        """Open the run once, after declaring the tools offered (arming reads declarations)."""
        if self.opened:  # every model and tool call asks; only ever set to True, under the lock
            return
        with self.lock:
            if self.opened or self.closed:
                return
            self.opened = True
            tools = tuple(tools)
            declare_tools(tools, strict=False)
            frames.warn_unoffered(self.run.agent_name, tools)
            self.context.run(self.run.__enter__)

    def close(self, error: BaseException | None = None) -> None:
        """Close the run once: its summary is written, whatever ended it."""
        _forget(self.key)
        if not self.own:
            with self.lock:
                self.closed = True
            return
        self.open()
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self.context.run(self.run.__exit__, type(error) if error else None, error, None)


_runs: OrderedDict[str, AgentRun] = OrderedDict()
_runs_lock = threading.Lock()


def remember(record: AgentRun) -> None:
    evicted: list[AgentRun] = []
    with _runs_lock:
        _runs[record.key] = record
        while len(_runs) > MAX_OPEN_HOST_RUNS:
            evicted.append(_runs.popitem(last=False)[1])
    for stale in evicted:
        stale.close()


def _forget(key: str) -> None:
    with _runs_lock:
        _runs.pop(key, None)


def record_of(state: object) -> AgentRun | None:
    key = state.get(STATE_KEY) if isinstance(state, dict) else None
    if not isinstance(key, str):
        return None
    with _runs_lock:
        return _runs.get(key)


class RunEnds(BaseCallbackHandler):
    """Closes a run when the agent's root run ends, which it does even when a tool raised.

    Installed process-wide through LangChain's configure hook; it looks only at chain runs:
    the start of our ``before_agent`` node (to learn its root run) and the end of a root run
    it watches.
    """

    run_inline = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parents: OrderedDict[Any, Any] = OrderedDict()
        self._watched: dict[Any, AgentRun] = {}

    @property
    def ignore_llm(self) -> bool:
        return True

    @property
    def ignore_chat_model(self) -> bool:
        return True

    @property
    def ignore_retriever(self) -> bool:
        return True

    @property
    def ignore_agent(self) -> bool:
        return True

    @property
    def ignore_retry(self) -> bool:
        return True

    @property
    def ignore_custom_event(self) -> bool:
        return True

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any
    ) -> None:
        if kwargs.get("name") != _BEFORE_AGENT_NODE or parent_run_id is None:
            return
        with self._lock:
            self._parents[run_id] = parent_run_id
            while len(self._parents) > MAX_OPEN_HOST_RUNS:
                self._parents.popitem(last=False)

    def root_of(self, node_run_id: Any) -> Any:
        """The agent's root run, for the run of our ``before_agent`` node (once)."""
        with self._lock:
            return self._parents.pop(node_run_id, None)

    def watch(self, root_run_id: Any, record: AgentRun) -> None:
        with self._lock:
            self._watched[root_run_id] = record
            while len(self._watched) > MAX_OPEN_HOST_RUNS:
                self._watched.pop(next(iter(self._watched)))

    def _ended(self, run_id: Any, error: BaseException | None) -> None:
        if run_id not in self._watched:
            return
        with self._lock:
            record = self._watched.pop(run_id, None)
        if record is not None:
            try:
                record.close(error)
            except Exception as ours:
                record_internal_error(None, "closing a LangChain run", ours)

    def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        self._ended(run_id, None)

    def on_chain_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        self._ended(run_id, error)


RUN_ENDS: Final = RunEnds()
_run_ends_var: Final[contextvars.ContextVar[RunEnds | None]] = contextvars.ContextVar(
    "context_integrity_langchain_run_ends", default=RUN_ENDS
)
_hook_lock = threading.Lock()


def _hook_entry() -> tuple[Any, ...] | None:
    for entry in lc_tracer_context._configure_hooks:
        if entry[0] is _run_ends_var:
            return entry
    return None


def install_run_ends() -> None:
    with _hook_lock:
        if _hook_entry() is None:
            lc_tracer_context.register_configure_hook(_run_ends_var, True)


def remove_run_ends() -> None:
    with _hook_lock:
        entry = _hook_entry()
        if entry is not None:
            lc_tracer_context._configure_hooks.remove(entry)


# OpenInference's LangChain instrumentor, when the application installed it, traces every
# LangChain run itself, but its spans are never made current: they are found by run id.
_OPENINFERENCE: Final = "openinference.instrumentation.langchain"


def openinference_span(run_id: Any = None) -> Any:
    """OpenInference's span for ``run_id`` (else for the LangChain run we are inside), if it traces.

    ``None`` unless the application imported and switched on its instrumentor: then our spans join
    its trace, and its agent and tool spans are adopted rather than doubled.
    """
    if _OPENINFERENCE not in sys.modules:
        return None
    try:
        from openinference.instrumentation.langchain import LangChainInstrumentor, get_current_span

        instrumentor = LangChainInstrumentor()
        if not instrumentor.is_instrumented_by_opentelemetry:
            return None
        span = instrumentor.get_span(run_id) if run_id is not None else get_current_span()
        return span if span is not None and span.is_recording() else None
    except Exception as ours:
        record_internal_error(None, "finding OpenInference's LangChain span", ours)
        return None
