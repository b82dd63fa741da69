"""The runs of LangChain agents: one per invocation, keyed by the agent's root run, always closed.

The agent's first model or tool call opens an :class:`AgentRun` for the invocation it is part
of, found through :class:`RunEnds`: a callback LangChain adds to every run through its configure
hook, which learns the root run of each of the agent's own nodes (``model``, ``tools``) as they
start, and closes the run when that root run ends, whether it returned or raised. The agent's
graph gets no node and no state of ours. Only imported by :mod:`.langchain`.
"""

from __future__ import annotations

import contextvars
import logging
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, Final

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers import context as lc_tracer_context

from .._memo import ToldOnce
from ..ledger import CheckerDeadError
from ..limits import MAX_OPEN_HOST_RUNS, MAX_QUOTED_CHARS, MAX_WARNED_UNARMED_AGENTS
from ..telemetry.emit import record_internal_error
from ..telemetry.run.context import current_run
from ..telemetry.run.lifecycle import Run
from . import _langchain_frames as frames
from ._langchain_frames import declare_tools

logger = logging.getLogger("context_integrity")

MIDDLEWARE_NAME: Final = "context_integrity"
# The nodes of ``create_agent``'s graph our hooks run inside: each one's run is a child of the
# agent's root run (a subgraph's, when the agent is a node of a larger graph).
_AGENT_NODES: Final = frozenset({"model", "tools"})
_MODEL_NODE: Final = "model"
# What ``create_agent`` writes into its agent's run metadata, and the key naming the agent: a model
# node carrying it is one of a create_agent agent, whose every invocation our middleware must see.
_CREATE_AGENT_METADATA: Final = ("ls_integration", "langchain_create_agent")
_AGENT_NAME_METADATA: Final = "lc_agent_name"

_TOLD_UNARMED: Final[ToldOnce[str]] = ToldOnce(MAX_WARNED_UNARMED_AGENTS)


def _tell_unarmed(agent_name: str) -> None:
    """Say once per agent name that a create_agent agent ran without our middleware."""
    if not _TOLD_UNARMED.first(agent_name):
        return
    logger.warning(
        "context_integrity: LangChain agent %r ran without context-integrity's middleware, so nothing in "
        "it is judged: it was created before ci.setup() armed create_agent (LangChain reads an agent's "
        "middleware once, when it builds it). Call ci.setup() before create_agent(...), or pass "
        "middleware=[ContextIntegrityMiddleware()] to it (from context_integrity.integrations.langchain).",
        agent_name[:MAX_QUOTED_CHARS],
    )


# The agent a tool of ours is running in: an agent invoked inside that tool is its own run.
enclosing: contextvars.ContextVar[AgentRun | None] = contextvars.ContextVar(
    "context_integrity_langchain_enclosing", default=None
)

# The tool call ``wrap_tool_call`` is running, for the judged copy of its tool to read.
tool_call_var: contextvars.ContextVar[tuple[AgentRun, Any] | None] = contextvars.ContextVar(
    "context_integrity_langchain_tool_call", default=None
)


class AgentRun:
    """One invocation of an agent: the judge's run, the context it lives in, and its lock."""

    def __init__(self, key: Any, agent_name: str, question: str | None, host_span: Any = None) -> None:
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


_runs: OrderedDict[Any, AgentRun] = OrderedDict()
_runs_lock = threading.Lock()


def run_of_root(root: Any, make: Callable[[], AgentRun]) -> AgentRun:
    """The run of the invocation whose root run is ``root``; its first caller makes it."""
    evicted: list[AgentRun] = []
    with _runs_lock:  # the parallel tool calls of one response may ask at once
        record = _runs.get(root)
        if record is not None:
            return record
        record = _runs[root] = make()
        while len(_runs) > MAX_OPEN_HOST_RUNS:
            evicted.append(_runs.popitem(last=False)[1])
    RUN_ENDS.watch(root, record)
    for stale in evicted:
        stale.close()
    return record


def _forget(key: Any) -> None:
    with _runs_lock:
        _runs.pop(key, None)


class RunEnds(BaseCallbackHandler):
    """Knows the agent's root run of each of its running nodes, and closes a run when its root
    run ends, which it does even when a tool or the model raised.

    Installed process-wide through LangChain's configure hook; it looks only at chain runs.
    """

    run_inline = True
    # Only a dead check in dev posture leaves these methods (each catches all else), and that
    # one is meant to fail the run loudly, as ``ci.run`` does: LangChain would log and drop it.
    raise_error = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._roots: OrderedDict[Any, Any] = OrderedDict()  # a running node's run -> its root run
        self._watched: dict[Any, AgentRun] = {}
        # The root runs of create_agent agents whose model node ran, by agent name: one whose root
        # ends without ever being watched ran without our middleware (built before setup()).
        self._agents: OrderedDict[Any, str] = OrderedDict()

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
        try:
            name = kwargs.get("name")
            if parent_run_id is None or name not in _AGENT_NODES:
                return
            with self._lock:
                self._roots[run_id] = parent_run_id
                while len(self._roots) > MAX_OPEN_HOST_RUNS:
                    self._roots.popitem(last=False)
            if name == _MODEL_NODE and parent_run_id not in self._agents:
                metadata = kwargs.get("metadata") or {}
                key, value = _CREATE_AGENT_METADATA
                if metadata.get(key) == value:
                    agent = metadata.get(_AGENT_NAME_METADATA)
                    with self._lock:
                        self._agents[parent_run_id] = agent if isinstance(agent, str) and agent else "agent"
                        while len(self._agents) > MAX_OPEN_HOST_RUNS:
                            self._agents.popitem(last=False)
        except Exception as ours:
            record_internal_error(None, "following a LangChain run", ours)

    def root_of(self, node_run_id: Any) -> Any:
        """The root run of the agent whose node ``node_run_id`` is running, if we saw it start."""
        return self._roots.get(node_run_id)

    def watch(self, root_run_id: Any, record: AgentRun) -> None:
        with self._lock:
            self._watched[root_run_id] = record
            while len(self._watched) > MAX_OPEN_HOST_RUNS:
                self._watched.pop(next(iter(self._watched)))

    def _ended(self, run_id: Any, error: BaseException | None) -> None:
        if run_id in self._roots:  # a node ended: its root is asked for no more
            with self._lock:
                self._roots.pop(run_id, None)
            return
        if run_id in self._agents:
            with self._lock:
                agent = self._agents.pop(run_id, None)
            if agent is not None and run_id not in self._watched:
                _tell_unarmed(agent)
        if run_id not in self._watched:
            return
        with self._lock:
            record = self._watched.pop(run_id, None)
        if record is not None:
            try:
                record.close(error)
            except CheckerDeadError:
                if error is None:
                    raise  # dev posture: a run whose check is dead fails loudly
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
