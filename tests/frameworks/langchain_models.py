"""A LangChain chat model that answers from the messages it is sent.

For tests whose runs interleave (a scripted list of responses would be consumed in whatever order
the runs reach it): each answer is ``respond(messages)``. It has the ``bind_tools`` that
``create_agent`` asks of a model. Imported only by tests that run when LangChain is installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class ReadingChatModel(BaseChatModel):
    respond: Callable[[list[BaseMessage]], AIMessage]

    @property
    def _llm_type(self) -> str:
        return "reading"

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self.bind(tools=list(tools), tool_choice=tool_choice, **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.respond(list(messages)))])


def calling(name: str, arguments: dict[str, Any], call_id: str) -> AIMessage:
    """A response asking for one tool call."""
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": arguments, "id": call_id, "type": "tool_call"}]
    )
