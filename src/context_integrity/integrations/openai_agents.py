"""The OpenAI Agents SDK, judged at its own seams: ``ci.setup()`` is all a user writes.

:func:`instrument_all` (what ``ci.setup(instrument="auto")`` calls when the SDK is importable)
wraps ``AgentRunner.run`` and ``run_streamed``, which every ``Runner.run`` / ``run_sync`` /
``run_streamed`` and every nested ``agent.as_tool`` run goes through, and ``Agent.get_all_tools``,
which the run loop calls every turn: agents created before setup are covered too.

The seams, each fed by the SDK itself:
- compose: ``on_llm_start``'s instructions and input (after ``call_model_input_filter``, so an
  eviction the filter makes is seen by dangling-reference) with the tools that turn offered;
- choice: ``on_llm_end``'s function calls, with the model's call ids;
- write: the raw tool result, in a tool output guardrail placed first; enforce replaces it through
  ``reject_content``, so the model reads the refusal as the call's result;
- claim: ``on_agent_end``'s final output, typed when the agent has an ``output_type``.

The SDK is imported only when one of these functions is called.
"""

from __future__ import annotations

from typing import Any


def _sdk() -> Any:
    from . import _openai_agents_hooks

    return _openai_agents_hooks


def instrument_all() -> None:
    """Judge every Agents SDK run in this process (idempotent)."""
    _sdk().patch_all()


def uninstrument_all() -> None:
    """Undo :func:`instrument_all`: runs and tools are the SDK's own again."""
    _sdk().unpatch_all()


def instrument(agent_or_runner: Any) -> Any:
    """Judge one agent, or every run of one runner; returns it.

    An ``Agent`` gets hooks that judge its model calls and answer, and its tools the guardrail that
    judges their results; its runs must still have a boundary: a runner passed here, or
    :func:`instrument_all`, or a ``ci.run`` written around the call. An ``AgentRunner`` (or the
    ``Runner`` class, meaning the SDK's default runner) gets every run opened and closed.
    """
    sdk = _sdk()
    from agents import Agent, Runner
    from agents.run import AgentRunner, get_default_agent_runner

    if isinstance(agent_or_runner, Agent):
        sdk.instrument_agent(agent_or_runner)
    elif isinstance(agent_or_runner, AgentRunner):
        sdk.instrument_runner(agent_or_runner)
    elif agent_or_runner is Runner:
        sdk.instrument_runner(get_default_agent_runner())
    else:
        from ..contracts import DeclarationError

        raise DeclarationError(
            f"instrument() takes an agents.Agent, an agents.run.AgentRunner or agents.Runner; "
            f"got {type(agent_or_runner).__name__}. Fix: pass the agent or the runner."
        )
    return agent_or_runner
